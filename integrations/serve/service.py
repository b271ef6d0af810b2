"""The service's page flow: the runtime's flow functions spread over workers and the batcher.

    request -> PageTicket --[worker: prepare]--> batcher queue (all requests)
            --[batcher thread: predict_pages on a batch]--> [worker: finish] --> the ticket's
            future, in the request's event loop

Nothing here blocks the event loop: ``submit`` only hands the page to the pool; results come
back through ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from typing import Any

from pulpie_rt.integrations.serve.batcher import Batcher
from pulpie_rt.integrations.serve.limits import Limits, default_workers
from pulpie_rt.integrations.serve.metrics import ServiceMetrics
from pulpie_rt.integrations.serve.workers import (
    WARM_UP_PAGE,
    finish_timed,
    prepare_timed,
    start_pool,
)
from pulpie_rt.runtime.flow.pages import (
    PageError,
    PageInput,
    PageResult,
    PreparedPage,
    Preparer,
    RunStats,
    describe,
    failure_of,
    predict_pages,
    result_for,
)
from pulpie_rt.runtime.model.backends import create_backend
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL, resolve_model
from pulpie_rt.runtime.stages.batches import Batch

logger = logging.getLogger("pulpie_rt.serve")


class PageTicket:
    """One page of one request, from its request to its result."""

    __slots__ = ("page", "loop", "with_text", "future", "prepared", "tokens", "enqueued_at",
                 "cancelled", "prepare_future")

    def __init__(self, page: PageInput, loop: asyncio.AbstractEventLoop, with_text: bool):
        self.page = page
        self.loop = loop
        self.with_text = with_text  # the request wants the plain text (made in the worker)
        self.future: asyncio.Future = loop.create_future()
        self.prepared: PreparedPage | None = None
        self.tokens = 0
        self.enqueued_at = 0.0
        self.cancelled = False  # set by the request when it gives up; the batcher skips it
        self.prepare_future: Future | None = None

    def cancel(self) -> None:
        """The request gave up on this page: drop it wherever it is (a worker already
        preparing it finishes; a batch already running it runs it)."""
        self.cancelled = True
        if self.prepare_future is not None:
            self.prepare_future.cancel()

    def deliver(self, result: PageResult) -> None:
        """Hand ``result`` to the request (from any thread)."""
        self.prepared = None
        try:
            self.loop.call_soon_threadsafe(_resolve, self.future, result)
        except RuntimeError:  # the event loop is closed: nobody waits any more
            pass


def _resolve(future: asyncio.Future, result: PageResult) -> None:
    if not future.done():
        future.set_result(result)


class MeteredBackend:
    """The engine backend, counting the rows and tokens of every call it runs."""

    def __init__(self, backend, metrics: ServiceMetrics):
        self._backend = backend
        self._metrics = metrics

    def __getattr__(self, name: str):
        return getattr(self._backend, name)

    def predict(self, batch: Batch):
        padded = self._backend.is_padded()
        tokens = batch.rows * batch.max_length if padded else int(batch.lengths.sum())
        self._metrics.engine_rows.observe(batch.rows)
        self._metrics.engine_tokens.observe(tokens)
        return self._backend.predict(batch)


class ExtractionService:
    """Model, engine backend, CPU workers and the batcher of one ``pulpie-rt serve``.

    ``load()`` (blocking, run in a thread at start-up) resolves the model and starts them;
    until it has, ``state`` is ``"loading"``; after, ``"ready"``, or ``"failed"`` with
    ``load_error``. ``close()`` runs what is queued and stops.
    """

    def __init__(self, model: str = DEFAULT_MODEL, backend: str = "auto",
                 device: str | None = None, workers: int | None = None,
                 threads: int | None = None, limits: Limits | None = None,
                 metrics: ServiceMetrics | None = None, cutoff_length: int = 500,
                 profile: str | None = None):
        self.model = str(model)
        self.profile = profile
        self.backend_name = backend
        self.device = device
        self.workers = workers if workers is not None else default_workers()
        self.threads = threads
        self.limits = limits or Limits()
        self.metrics = metrics or ServiceMetrics()
        self.cutoff_length = cutoff_length
        self.stats = RunStats()
        self.state = "loading"
        self.load_error: str | None = None
        self.loaded = threading.Event()  # set once load() has ended, either way
        self.backend = None
        self.bundle = None
        self._pool: ProcessPoolExecutor | None = None
        self._batcher: Batcher | None = None

    # -- start and stop

    def load(self) -> None:
        """Resolve the model, create the backend, start the workers and the batcher."""
        try:
            resolved = resolve_model(self.model, profile=self.profile)
            self.bundle = resolved.bundle
            backend = create_backend(self.bundle, self.backend_name, self.device,
                                     engine_path=resolved.engine_paths, threads=self.threads)
            if backend.fallback:
                self.stats.fell_back(backend.fallback)
            self.backend = backend
            preparer = Preparer.from_bundle(self.bundle, self.cutoff_length)
            self._pool = start_pool(preparer, self.workers)
            self._warm_up(backend)
            self._metered = MeteredBackend(backend, self.metrics)
            self._batcher = Batcher(self._run_batch, self.limits.max_batch_tokens,
                                    self.limits.max_batch_wait_ms / 1000)
            self.metrics.queue_size.set_function(self._batcher.size)
            self._batcher.start()
        except Exception as exc:
            self.load_error = describe(exc)
            self.state = "failed"
            logger.error("pulpie-rt serve: the model did not load: %s", self.load_error)
        else:
            self.state = "ready"
        finally:
            self.loaded.set()

    def _warm_up(self, backend) -> None:
        """One page through the whole flow before the service says it is ready: the engine's
        first call is slow, and a flow that cannot finish a page should not report ready."""
        prepared, _ = self._pool.submit(prepare_timed, WARM_UP_PAGE, None).result()
        predictions = (predict_pages(backend, [prepared], self.limits.max_batch_tokens)[0]
                       if isinstance(prepared, PreparedPage) else None)
        failure = failure_of(prepared, predictions)
        if failure is None:
            outcome, _ = self._pool.submit(finish_timed, prepared, predictions).result()
            failure = outcome if isinstance(outcome, str) else None
        if failure is not None:
            raise RuntimeError(f"the warm-up page failed: {failure}")

    def stop_waiting(self) -> None:
        """The server takes no new request (SIGTERM): run queued pages without waiting for
        batches to fill. Safe to call from a signal handler."""
        if self._batcher is not None:
            self._batcher.stop_waiting()

    def close(self) -> None:
        """Run every page queued, then stop the batcher and the workers."""
        if self.state == "ready":
            self.state = "closing"
        if self._batcher is not None:
            self._batcher.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self.state = "closed"

    # -- pages

    def submit(self, page: PageInput, loop: asyncio.AbstractEventLoop,
               with_text: bool = False) -> PageTicket:
        """Start ``page`` on its way; its ``PageResult`` arrives in ``ticket.future`` (with
        ``text`` already made when ``with_text``: the event loop never parses HTML)."""
        ticket = PageTicket(page, loop, with_text)
        try:
            future = self._pool.submit(prepare_timed, page.html, page.content_type)
        except RuntimeError as exc:  # the pool is shutting down
            self._answer(ticket, f"prepare: {describe(exc)}")
            return ticket
        ticket.prepare_future = future
        future.add_done_callback(partial(self._on_prepared, ticket))
        return ticket

    def _answer(self, ticket: PageTicket, outcome: PageResult | PageError | str) -> None:
        if ticket.cancelled:  # its request answered 504 already
            return
        result = result_for(ticket.page, outcome)
        self.metrics.pages.labels(outcome="ok" if result.error is None else "error").inc()
        self.stats.count((result,))
        ticket.deliver(result)

    def _on_prepared(self, ticket: PageTicket, future: Future) -> None:
        """In the pool's thread: a prepared page joins the batcher's queue."""
        try:
            outcome, seconds = future.result()
            self.metrics.stage_seconds.labels(stage="prepare").observe(seconds)
        except Exception as exc:  # the worker died (e.g. killed for memory) or was cancelled
            outcome = f"prepare: {describe(exc)}"
        if isinstance(outcome, str):
            self._answer(ticket, outcome)
            return
        if ticket.cancelled:
            return
        ticket.prepared = outcome
        ticket.prepare_future = None
        ticket.tokens = sum(len(chunk) for chunk in outcome.chunks)
        ticket.enqueued_at = time.monotonic()
        self._batcher.put(ticket)

    def _run_batch(self, tickets: list[PageTicket]) -> None:
        """On the batcher's thread: the batch's pages through the engine, then to the workers
        to finish."""
        started = time.monotonic()
        for ticket in tickets:
            self.metrics.stage_seconds.labels(stage="queue").observe(started - ticket.enqueued_at)
        self.metrics.batch_pages.observe(len(tickets))
        self.metrics.batch_tokens.observe(sum(t.tokens for t in tickets))
        pages = [ticket.prepared for ticket in tickets]
        try:
            predictions = predict_pages(self._metered, pages, self.limits.max_batch_tokens,
                                        self.stats)
        except Exception as exc:  # predict_pages isolates pages; this guards against a bug
            predictions = [PageError("inference", describe(exc))] * len(tickets)
        self.metrics.stage_seconds.labels(stage="infer").observe(time.monotonic() - started)
        for ticket, page, page_predictions in zip(tickets, pages, predictions, strict=True):
            failure = failure_of(page, page_predictions)
            if failure is not None:
                self._answer(ticket, failure)
                continue
            try:
                future = self._pool.submit(finish_timed, page, page_predictions,
                                           ticket.with_text)
            except RuntimeError as exc:  # the pool is shutting down
                self._answer(ticket, f"finish: {describe(exc)}")
                continue
            ticket.prepared = None
            future.add_done_callback(partial(self._on_finished, ticket))

    def _on_finished(self, ticket: PageTicket, future: Future) -> None:
        try:
            outcome, seconds = future.result()
            self.metrics.stage_seconds.labels(stage="finish").observe(seconds)
        except Exception as exc:
            outcome = f"finish: {describe(exc)}"
        self._answer(ticket, outcome)

    # -- description

    def info(self) -> dict[str, Any]:
        """What ``GET /info`` shows: model, backend, device, workers, fallbacks."""
        backend = self.backend
        return {
            "model": self.model,
            "profile": self.bundle.profile if self.bundle is not None else None,
            "bundle": str(self.bundle.path) if self.bundle is not None else None,
            "max_tokens_per_chunk": self.bundle.max_tokens if self.bundle is not None else None,
            "backend": backend.name if backend is not None else None,
            "device": backend.device if backend is not None else None,
            "workers": self.workers,
            "state": self.state,
            "fallbacks": dict(self.stats.fallbacks),
        }
