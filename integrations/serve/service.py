"""The service's page flow: one engine, one queue of pages, a few threads.

    request -> PageTicket -> queue (the pages of every request)
            --[extraction thread: a group of queued pages under a byte budget]-->
            engine.extract_pages(group) --> each ticket's future, in the request's event loop

The engine runs a group's pages whole (prepare -> batches of their chunks -> the model ->
labels -> finish) with the GIL released, so the threads run groups side by side on one loaded
model. No process does page work: nothing here can be left half-alive by a killed child.
Nothing blocks the event loop: ``submit`` only queues the page; results come back through
``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import logging
import threading
import time
from collections import deque
from typing import Any

from pulpie_rt.integrations.failures import is_transient
from pulpie_rt.integrations.serve.limits import Limits, default_workers
from pulpie_rt.integrations.serve.metrics import ServiceMetrics
from pulpie_rt.runtime.flow.engine import DEFAULT_FAVOR, Engine
from pulpie_rt.runtime.flow.pages import PageInput, PageResult, RunStats, describe
from pulpie_rt.runtime.flow.schema import Output
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL
from pulpie_rt.runtime.native import CoreError, SpecificationRaises

logger = logging.getLogger("pulpie_rt.serve")

# Groups in a row whose every page failed for the machine's reason (engine, inference,
# internal) before the service says it is not ready (one hostile page alone does not), and
# seconds between runs of the warm-up page from then on, until one passes.
FAILING_GROUPS = 3
PROBE_INTERVAL_S = 2.0
# A small real-looking page (synthetic) run once before the service says it is ready, and
# again while the engine fails.
WARM_UP_PAGE = "<html><body><article><h1>Warm up</h1><p>One paragraph.</p></article></body></html>"
# A group's byte budget per token of --max-batch-tokens: a page's HTML bytes per chunk token
# (markup the model never reads included) are 15 on the median dev page (p10 4, p90 61; 27 over
# all bytes; the accurate profile's tokenizer), so a group holds about one engine batch of
# chunks. Pages are grouped before they are tokenized: bytes are what is known.
GROUP_BYTES_PER_TOKEN = 15
# Seconds without a page in the queue or the engine before the service hands the heap's free
# memory back to the system (release_free_heap). Long enough that steady traffic never pays
# for it; short enough that a load spike does not stay resident.
IDLE_RELEASE_S = 1.0


# glibc's heap thresholds in the service, fixed (fix_heap_thresholds): a heap's free top past
# HEAP_TRIM_THRESHOLD_BYTES goes back to the system when a block beside it is freed (8 MiB: as
# fast as glibc's own on the dev pages, where 1 MiB cost 3.5% of pages/CPU-s, bench.heap); a
# block of HEAP_MMAP_THRESHOLD_BYTES or more is mapped on its own (glibc's largest dynamic
# value on 64-bit, so big blocks stay in the heaps as they do once glibc has raised it).
HEAP_TRIM_THRESHOLD_BYTES = 8 << 20
HEAP_MMAP_THRESHOLD_BYTES = 32 << 20
# mallopt's parameters, from glibc's <malloc.h>
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


@functools.cache
def fix_heap_thresholds() -> bool:
    """Fix glibc's trim and mmap thresholds for this process (once); False where the C
    library has no ``mallopt`` (musl, macOS).

    Why: glibc raises its trim threshold as large blocks are freed (up to 64 MiB), and
    ``malloc_trim`` never shrinks the free top of a thread's heap, only the main heap's: after
    a load spike each extraction thread's heap kept its top resident, out of
    ``release_free_heap``'s reach (hostile pages from 6 callers, 3 rounds: 87 to 95 MiB idle
    after against 42 before; with the thresholds fixed, 62 against 47). Set, glibc no longer
    moves either. Speed and memory beside glibc's own: ``python -m bench.heap``.
    """
    mallopt = c_library_function("mallopt", (ctypes.c_int, ctypes.c_int), ctypes.c_int)
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_THRESHOLD_BYTES)
                and mallopt(M_TRIM_THRESHOLD, HEAP_TRIM_THRESHOLD_BYTES))


def release_free_heap() -> bool:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim(0)``); False
    where the C library has no such call (musl, macOS).

    Why: the request bodies (up to the payload limit) and a hostile page's parse trees are
    freed after each request, but glibc keeps freed memory in each thread's arena, so the
    service's RSS stays near its largest spike (the soak's load for 4 minutes, the trim called
    from gdb outside the project: 191 MiB idle after the load, 107 MiB after the trim, 755 MiB
    at its highest under load). The engine's Rust code and Python's large objects use the same
    C heap.
    """
    trim = c_library_function("malloc_trim", (ctypes.c_size_t,), ctypes.c_int)
    if trim is None:
        return False
    trim(0)
    return True


@functools.cache
def c_library_function(name: str, argtypes: tuple, restype: Any) -> Any:
    """The C library's function ``name`` with its signature, looked up once (among the
    symbols this process has loaded already: no search for the library file), or None where
    the C library has none (musl has no ``malloc_trim``)."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, restype
    return function


class PageTicket:
    """One page of one request, from its request to its result."""

    __slots__ = ("page", "loop", "output", "future", "size", "enqueued_at", "cancelled")

    def __init__(self, page: PageInput, loop: asyncio.AbstractEventLoop, output: Output):
        self.page = page
        self.loop = loop
        self.output = output  # what the request asks of the content (made in the thread)
        self.future: asyncio.Future = loop.create_future()
        html = page.html
        self.size = len(html) if isinstance(html, (str, bytes, bytearray)) else 0
        self.enqueued_at = time.monotonic()
        self.cancelled = False  # its request gave up (timed out, shut down): skipped

    def cancel(self) -> None:
        self.cancelled = True

    def deliver(self, result: PageResult) -> None:
        """Hand ``result`` to the request (from any thread)."""
        try:
            self.loop.call_soon_threadsafe(_resolve, self.future, result)
        except RuntimeError:  # the event loop is closed: nobody waits any more
            pass


def _resolve(future: asyncio.Future, result: PageResult) -> None:
    if not future.done():
        future.set_result(result)


class ExtractionService:
    """The engine and the extraction threads of one ``pulpie-rt serve``.

    ``load()`` (blocking, run in a thread at start-up) opens the engine, runs one page through
    it and starts the threads; until it has, ``state`` is ``"loading"``; after, ``"ready"``,
    or ``"failed"`` with ``load_error``. ``close(timeout)`` runs what is queued (until the
    timeout) and stops.
    """

    def __init__(self, model: str = DEFAULT_MODEL, backend: str = "auto",
                 device: str | None = None, workers: int | None = None,
                 threads: int | None = None, limits: Limits | None = None,
                 metrics: ServiceMetrics | None = None, profile: str | None = None,
                 favor: str = DEFAULT_FAVOR):
        self.model = str(model)
        self.profile = profile
        self.favor = favor
        self.backend_name = backend
        self.device = device
        self.workers = workers if workers is not None else default_workers()
        self.threads = threads
        self.limits = limits or Limits()
        self.metrics = metrics or ServiceMetrics()
        self.group_bytes = self.limits.max_batch_tokens * GROUP_BYTES_PER_TOKEN
        self.stats = RunStats()
        self._stats_lock = threading.Lock()
        self.state = "loading"
        self.load_error: str | None = None
        self.loaded = threading.Event()  # set once load() has ended, either way
        self.engine = None
        self._queue: deque[PageTicket] = deque()
        self._queued = threading.Condition()
        self._closing = False  # no page joins the queue any more; threads drain it and end
        self._flushing = False  # no request can come: groups take what is queued, no waiting
        self._threads: list[threading.Thread] = []
        # the engine failed every page of the last FAILING_GROUPS groups for the machine's
        # reason: not ready until a group or the warm-up page passes again
        self.engine_failing = False
        self._failed_groups = 0
        self._probing = threading.Event()
        self._prober: threading.Thread | None = None
        # groups in the engine now, and whether pages ran since the heap was last released
        self._groups_running = 0
        self._heap_used = False
        self.metrics.queue_size.set_function(lambda: len(self._queue))

    # -- start and stop

    def load(self) -> None:
        """Open the engine, run the warm-up page, start the extraction threads."""
        try:
            fix_heap_thresholds()  # before the engine and the threads allocate
            self.engine = self.open_engine()
            failure = self._warm_up()
            if failure is not None:
                raise RuntimeError(f"the warm-up page failed: {failure}")
            for index in range(self.workers):
                thread = threading.Thread(target=self._run, name=f"pulpie-rt-extract-{index}",
                                          daemon=True)
                thread.start()
                self._threads.append(thread)
        except Exception as exc:
            self.load_error = describe(exc)
            self.state = "failed"
            logger.error("pulpie-rt serve: the model did not load: %s", self.load_error)
        else:
            if self.state == "loading":
                self.state = "ready"
        finally:
            self.loaded.set()

    def open_engine(self) -> Engine:
        """The engine (a method, so that a test can put a fake one in its place); its
        fallbacks (a GPU asked for by ``auto`` and not found, batches run row by row) are
        counted in the service's ``stats``."""
        return Engine(self.model, profile=self.profile, backend=self.backend_name,
                      device=self.device, threads=self.threads,
                      max_batch_tokens=self.limits.max_batch_tokens, stats=self.stats,
                      favor=self.favor)

    def _warm_up(self) -> str | None:
        """The warm-up page through the engine; its error, or None."""
        try:
            (warm,) = self.engine.extract_pages([PageInput(WARM_UP_PAGE, page_id="warm-up")])
        except Exception as exc:
            return f"engine: {describe(exc)}"
        return warm.error

    def serving(self) -> bool:
        """Whether a page submitted now would be extracted: ready, every extraction thread
        alive, and the engine not failing every page."""
        return (self.state == "ready" and not self.engine_failing
                and all(t.is_alive() for t in self._threads))

    def _group_done(self, all_failed: bool) -> None:
        """After each group: whether the engine failed all of it for the machine's reason.
        ``FAILING_GROUPS`` such groups in a row make the service not ready, and a probe
        thread runs the warm-up page every ``PROBE_INTERVAL_S`` until it passes, so that
        readiness comes back even when no request arrives (a balancer sends none to a
        service that is not ready)."""
        with self._queued:
            self._failed_groups = self._failed_groups + 1 if all_failed else 0
            if self._failed_groups < FAILING_GROUPS:
                self.engine_failing = False
                return
            self.engine_failing = True
            if self._probing.is_set():
                return
            self._probing.set()
            self._prober = threading.Thread(target=self._probe, name="pulpie-rt-probe",
                                            daemon=True)
        self._prober.start()

    def _probe(self) -> None:
        while True:
            with self._queued:  # the decision to stop is taken where _group_done decides
                if not self.engine_failing or self._closing:
                    self._probing.clear()
                    return
            time.sleep(PROBE_INTERVAL_S)
            if self._closing:  # the engine may be closing: no call on it now
                continue
            failure = self._warm_up()
            if failure is None:
                with self._queued:
                    self._failed_groups = 0
                    self.engine_failing = False
            else:
                logger.warning("pulpie-rt serve: the engine still fails: %s", failure)

    def stop_waiting(self) -> None:
        """No new request can come (SIGTERM): groups take what is queued without waiting for
        more. Takes the queue's lock: call it from the event loop, not a signal handler."""
        if self.state in ("ready", "loading"):
            self.state = "closing"
        with self._queued:
            self._flushing = True
            self._queued.notify_all()

    def close(self, timeout: float | None = None) -> None:
        """Run the pages queued (for at most ``timeout`` seconds), then stop the threads; pages
        still queued then are dropped (their requests were answered or cancelled already)."""
        if self.state in ("ready", "loading"):
            self.state = "closing"
        self._flushing = True
        with self._queued:
            self._closing = True
            self._queued.notify_all()
        deadline = None if timeout is None else time.monotonic() + timeout
        callers = [*self._threads, *([self._prober] if self._prober is not None else [])]
        for thread in callers:
            if thread.is_alive():
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        with self._queued:
            dropped = list(self._queue)
            self._queue.clear()
        for ticket in dropped:
            ticket.cancel()
        running = sum(t.is_alive() for t in callers)
        if running:
            logger.warning("pulpie-rt serve: %d threads still in the engine at exit", running)
        elif self.engine is not None:
            self.engine.close()
        self.state = "closed"

    # -- pages

    def submit(self, page: PageInput, loop: asyncio.AbstractEventLoop,
               output: Output | None = None) -> PageTicket:
        """Queue ``page``; its ``PageResult`` arrives in ``ticket.future`` (with the content
        ``output`` asks for made already: the event loop never parses HTML)."""
        ticket = PageTicket(page, loop, output or Output())
        with self._queued:
            if self._closing:
                ticket.future.set_result(PageResult(page.page_id, error="internal: the service "
                                                    "is shutting down"))
                return ticket
            self._queue.append(ticket)
            self._queued.notify()
        return ticket

    def _next_group(self) -> list[PageTicket] | None:
        """The oldest live page and those queued after it within the byte budget (waiting up
        to --max-batch-wait-ms after the first one was queued for more, unless shutting down);
        None once closing and the queue is empty."""
        wait_s = self.limits.max_batch_wait_ms / 1000
        with self._queued:
            group: list[PageTicket] = []
            size = 0
            while True:
                while self._queue:
                    ticket = self._queue[0]
                    if ticket.cancelled:
                        self._queue.popleft()
                        continue
                    if group and size + ticket.size > self.group_bytes:
                        return self._taken(group)
                    group.append(self._queue.popleft())
                    size += ticket.size
                if group:
                    remaining = group[0].enqueued_at + wait_s - time.monotonic()
                    if self._flushing or self._closing or remaining <= 0:
                        return self._taken(group)
                    self._queued.wait(remaining)
                elif self._closing:
                    return None
                elif self._heap_used and self._groups_running == 0:
                    # a countdown, not a wait for a page alone: woken (a page queued, a group
                    # ended), the loop looks at the queue again; idle for IDLE_RELEASE_S, this
                    # thread releases the heap, once per busy spell
                    if (not self._queued.wait(IDLE_RELEASE_S) and not self._queue
                            and self._groups_running == 0):
                        self._heap_used = False
                        self._queued.release()
                        try:
                            release_free_heap()
                        finally:
                            self._queued.acquire()
                else:
                    self._queued.wait()

    def _taken(self, group: list[PageTicket]) -> list[PageTicket]:
        """``group`` leaves the queue for the engine (under the queue's lock)."""
        self._groups_running += 1
        self._heap_used = True
        return group

    def _run(self) -> None:
        """An extraction thread: groups through the engine until closed."""
        while (group := self._next_group()) is not None:
            try:
                self._extract(group)
            except Exception as exc:  # _extract answers every page; this guards the thread
                logger.exception("pulpie-rt serve: a group failed")
                for ticket in group:
                    self._answer(ticket, PageResult(ticket.page.page_id,
                                                    error=f"internal: {describe(exc)}"))
            finally:
                with self._queued:
                    self._groups_running -= 1
                    self._queued.notify_all()  # an idle thread starts its release countdown

    def _extract(self, group: list[PageTicket]) -> None:
        started = time.monotonic()
        for ticket in group:
            self.metrics.stage_seconds.labels(stage="queue").observe(started - ticket.enqueued_at)
        self.metrics.batch_pages.observe(len(group))
        self.metrics.batch_bytes.observe(sum(t.size for t in group))
        try:
            results = self.engine.extract_pages([t.page for t in group])
        except Exception as exc:  # the engine isolates pages; this guards against a bug
            results = [PageResult(t.page.page_id, error=f"engine: {describe(exc)}")
                       for t in group]
        self.metrics.stage_seconds.labels(stage="extract").observe(time.monotonic() - started)
        self._group_done(all(is_transient(r.error) for r in results))
        for ticket, result in zip(group, results, strict=True):
            if result.error is None:  # rendered here, in this thread, not in the event loop
                # a content the core cannot render: the answer's record says why
                with contextlib.suppress(CoreError, SpecificationRaises):
                    ticket.output.content(result)
            self._answer(ticket, result)

    def _answer(self, ticket: PageTicket, result: PageResult) -> None:
        result.page_id, result.metadata = ticket.page.page_id, ticket.page.metadata
        if ticket.cancelled:  # its request answered already
            return
        self.metrics.pages.labels(outcome="ok" if result.error is None else "error").inc()
        with self._stats_lock:
            self.stats.count((result,))
        ticket.deliver(result)

    # -- description

    def info(self) -> dict[str, Any]:
        """What ``GET /info`` shows: model (its name, never a file system path), profile,
        favor, provider, device, threads, fallbacks."""
        engine = self.engine
        bundle = getattr(engine, "bundle", None)
        return {
            "model": self.model if "/" not in self.model else self.model.rstrip("/")
            .rsplit("/", 1)[-1],
            "profile": bundle.profile if bundle is not None else None,
            "favor": self.favor,
            "max_tokens_per_chunk": bundle.max_tokens if bundle is not None else None,
            "provider": getattr(engine, "provider", None),
            "device": getattr(engine, "device", None),
            "workers": self.workers,
            "state": self.state,
            "fallbacks": dict(self.stats.fallbacks),
        }
