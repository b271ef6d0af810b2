"""The batcher: one thread that fills batches with pages from every request under a token budget.

Prepared pages from all requests wait in one queue. The thread takes the oldest page, then every
page already queued and those arriving until ``max_wait_s`` after the oldest one was queued, as
long as the batch stays within ``max_batch_tokens`` (the chunk tokens of its pages); a page that
would overflow the batch waits for the next one, where it comes first. A page over the budget on
its own makes a batch alone (it must run somehow; the page flow splits its chunks into engine
batches). While the engine runs a batch, pages queue up, so under load a batch fills from what
is already there without waiting: continuous batching, as in text-embeddings-inference.

The batch itself runs in ``run_batch`` (the service's: ``predict_pages`` over the pages); the
batcher only decides which pages go together.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

logger = logging.getLogger("pulpie_rt.serve")


class Waiting(Protocol):
    """What the batcher reads of a queued page."""

    tokens: int  # the page's chunk tokens
    enqueued_at: float  # time.monotonic() when it was queued
    cancelled: bool  # its request gave up (timed out): skipped


_CLOSE = object()
_FLUSH = object()  # shutting down: stop waiting for batches to fill


class Batcher:
    """Pages in (``put``, any thread), batches out (``run_batch``, on the batcher's thread)."""

    def __init__(self, run_batch: Callable[[list], None], max_batch_tokens: int,
                 max_wait_s: float) -> None:
        self.run_batch = run_batch
        self.max_batch_tokens = max_batch_tokens
        self.max_wait_s = max_wait_s
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._held: deque = deque()  # the page that overflowed the last batch (thread-only)
        self._closing = False
        self._flushing = False  # no new request can come: batches take only what is queued
        self._thread = threading.Thread(target=self._loop, name="pulpie-rt-batcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def put(self, page: Waiting) -> None:
        self._queue.put(page)

    def size(self) -> int:
        """Pages waiting for a batch."""
        return self._queue.qsize() + len(self._held)

    def stop_waiting(self) -> None:
        """From now on a batch takes what is queued and runs: waiting for more is pointless once
        the service accepts no new request (a graceful shutdown would otherwise wait out
        ``max_wait_s`` for pages that cannot come). Safe to call from a signal handler."""
        self._queue.put(_FLUSH)

    def close(self, timeout: float | None = None) -> None:
        """Run every page queued so far, then stop the thread."""
        self._queue.put(_CLOSE)
        if self._thread.is_alive():
            self._thread.join(timeout)

    # -- the batcher's thread

    def _loop(self) -> None:
        while (batch := self.next_batch()) is not None:
            try:
                self.run_batch(batch)
            except Exception:  # run_batch answers every page itself; this guards the thread
                logger.exception("pulpie-rt serve: a batch failed")

    def _take(self, deadline: float | None) -> Waiting | None:
        """The next live page: held over first, then the queue (None: none before
        ``deadline``, a ``time.monotonic()``, or closing). Past the deadline it takes only
        what is already queued."""
        while True:
            if self._held:
                page = self._held.popleft()
            elif self._closing:
                return None
            else:
                try:
                    if deadline is None:
                        page = self._queue.get()
                    else:
                        timeout = deadline - time.monotonic()
                        page = (self._queue.get(timeout=timeout) if timeout > 0
                                else self._queue.get_nowait())
                except queue.Empty:
                    return None
                if page is _CLOSE:
                    self._closing = True
                    return None
                if page is _FLUSH:
                    self._flushing = True
                    if deadline is None:  # waiting for a first page: keep waiting
                        continue
                    return None
            if not page.cancelled:
                return page

    def next_batch(self) -> list | None:
        """The next batch (see the module's docstring); None once closed and drained."""
        first = self._take(deadline=None)
        if first is None:
            return None
        batch = [first]
        tokens = first.tokens
        deadline = time.monotonic() if self._flushing else first.enqueued_at + self.max_wait_s
        while tokens < self.max_batch_tokens:
            page = self._take(deadline)
            if page is None:
                break
            if tokens + page.tokens > self.max_batch_tokens:
                self._held.append(page)
                break
            batch.append(page)
            tokens += page.tokens
        return batch
