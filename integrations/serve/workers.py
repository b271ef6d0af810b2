"""The service's CPU worker processes: ``prepare`` and ``finish`` of the page flow, timed.

The pool is started with ``spawn``: the service forks nothing from a process that already runs
an event loop, the engine's threads and the batcher (``fork`` there can copy a held lock).
Each worker keeps the ``Preparer`` it was started with (its tokenizer loads once per worker).
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

from pulpie_rt.runtime.flow.pages import PageResult, PreparedPage, Preparer, finish, prepare
from pulpie_rt.runtime.flow.pipeline import exit_with_parent

# This worker process's preparer, set once by ``start_worker`` (a per-process cache: the
# tokenizer it loads is reused by every page the worker prepares).
_worker_preparer: Preparer | None = None

# A small real-looking page (synthetic) that makes each worker load its tokenizer at start.
WARM_UP_PAGE = "<html><body><article><h1>Warm up</h1><p>One paragraph.</p></article></body></html>"


def start_worker(preparer: Preparer) -> None:
    """Pool initializer: keep ``preparer``; exit when the service process goes away."""
    global _worker_preparer
    _worker_preparer = preparer
    # finish's stages import lazily: import them now, not in the first request
    import pulpie_rt.runtime.stages.markdown  # noqa: F401
    import pulpie_rt.runtime.stages.reconstruct  # noqa: F401

    exit_with_parent()


def prepare_timed(html: str | bytes | None, content_type: str | None
                  ) -> tuple[PreparedPage | str, float]:
    """decode -> simplify -> blocks -> tokens -> chunks for one page (``pages.prepare``) and its
    seconds; ``content_type`` (the request's, or the page's in a JSON batch) decodes bytes."""
    start = time.perf_counter()
    outcome = prepare(_worker_preparer, html, content_type)
    return outcome, time.perf_counter() - start


def finish_timed(page: PreparedPage, predictions: list[int], with_text: bool = False
                 ) -> tuple[PageResult | str, float]:
    """labels -> reconstruct -> Markdown for one page (``pages.finish``) and its seconds;
    ``with_text``: the plain text too (``PageResult.text`` is cached on the result, so it
    travels back with it)."""
    start = time.perf_counter()
    outcome = finish(page, predictions)
    if with_text and isinstance(outcome, PageResult):
        outcome.text  # noqa: B018 (computed here, in the worker, not in the event loop)
    return outcome, time.perf_counter() - start


def start_pool(preparer: Preparer, workers: int) -> ProcessPoolExecutor:
    """``workers`` processes, each started and warmed up (tokenizer loaded) before returning."""
    pool = ProcessPoolExecutor(max_workers=workers,
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=start_worker, initargs=(preparer,))
    # Submitted together, the warm-up pages start every worker (the pool starts one more
    # process whenever none is idle).
    warm_ups = [pool.submit(prepare_timed, WARM_UP_PAGE, None) for _ in range(workers)]
    for future in warm_ups:
        outcome, _ = future.result()
        if isinstance(outcome, str):
            pool.shutdown(wait=False, cancel_futures=True)
            raise RuntimeError(f"a worker could not prepare the warm-up page: {outcome}")
    return pool
