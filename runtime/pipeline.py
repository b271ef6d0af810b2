"""``Pipeline``: many pages, CPU pre/post-processing overlapped with inference.

    pages --> [process pool: simplify+tokenize+pack] --> prepared queue
          --> [one inference thread per device: batch + predict] --> [process pool:
              reconstruct+Markdown] --> reorder buffer --> results in input order

Memory is bounded: at most ``window`` pages are between the input and the output at once, so
``run()`` streams inputs larger than RAM. Worker counts are sized from stage times measured on
the first pages (prepare+finish vs inference per page) unless ``workers`` is given;
``workers=0`` does the CPU stages in threads of this process (no pool).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pulpie_rt.runtime.backends import BackendError, create_backend
from pulpie_rt.runtime.batches import DEFAULT_MAX_BATCH_TOKENS
from pulpie_rt.runtime.models import DEFAULT_MODEL, resolve_model
from pulpie_rt.runtime.pages import (
    ExtractionResult,
    PageError,
    PreparedPage,
    Preparer,
    describe,
    finish_page,
    predict_pages,
)

CALIBRATION_PAGES = 8
# Pages an inference thread gathers before running them (more pages: fuller batches).
GROUP_PAGES = 32
GROUP_WAIT_S = 0.02


@dataclass
class PageInput:
    """One page for the pipeline; ``page_id`` and ``metadata`` are echoed on its result."""

    html: str | bytes
    page_id: Any = 0
    metadata: dict | None = None


@dataclass
class PageResult:
    """One page's output; ``error`` ("<stage>: <reason>") is set, and content empty, on failure."""

    page_id: Any
    labels: dict[str, str] = field(default_factory=dict)
    html: str = ""
    markdown: str = ""
    error: str | None = None
    metadata: dict | None = None

    @property
    def n_main(self) -> int:
        return sum(1 for v in self.labels.values() if v == "main")

    @property
    def n_other(self) -> int:
        return len(self.labels) - self.n_main


# ---------------------------------------------------------------------------- worker side

_worker_preparer: Preparer | None = None


def _init_worker(preparer: Preparer) -> None:
    global _worker_preparer
    _worker_preparer = preparer
    # A parent killed with SIGKILL cannot stop its pool: the workers would wait forever.
    parent = os.getppid()
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _prepare(html: str | bytes, preparer: Preparer | None = None) -> PreparedPage | str:
    """Worker: a prepared page, or the page's error string."""
    try:
        return (preparer or _worker_preparer).prepare(html)
    except PageError as exc:
        return str(exc)
    except Exception as exc:  # a bug of ours: still only this page fails
        return f"prepare: {describe(exc)}"


def _finish(page: PreparedPage, predictions: list[int]) -> ExtractionResult | str:
    try:
        return finish_page(page, predictions)
    except PageError as exc:
        return str(exc)
    except Exception as exc:
        return f"finish: {describe(exc)}"


def _noop() -> None:
    return None


# ---------------------------------------------------------------------------- sizing


def size_workers(
    prepare_s: float, finish_s: float, infer_s: float, n_devices: int, cpus: int, cpu_infer: bool
) -> int:
    """CPU workers needed so pre/post-processing keeps up with ``n_devices`` inference threads.

    With CPU inference the model shares the cores, so the pool gets what the model leaves.
    """
    per_page_device = max(infer_s, 1e-4) / max(n_devices, 1)
    wanted = math.ceil((prepare_s + finish_s) / per_page_device)
    spare = cpus - (n_devices if cpu_infer else 1)
    return max(1, min(wanted, spare, 32))


# ---------------------------------------------------------------------------- pipeline


class Pipeline:
    """Overlapped extraction over many pages, one inference thread per device.

    ``devices``: e.g. ``["cuda:0", "cuda:1"]`` or ``"cpu"``; None: every GPU (TensorRT / ORT
    CUDA) or else the CPU. ``workers``: CPU processes for pre/post-processing (None: sized from
    measured stage speeds; 0: no processes).
    """

    def __init__(
        self,
        model: str | os.PathLike = DEFAULT_MODEL,
        devices: list[str] | str | None = None,
        workers: int | None = None,
        backend: str = "auto",
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        window: int = 512,
        cutoff_length: int = 500,
    ):
        resolved = resolve_model(model)
        self.bundle = resolved.bundle
        if isinstance(devices, str):
            devices = [devices]
        auto_devices = devices is None
        if devices is None:
            devices = _default_devices()
        try:
            self.backends = [
                create_backend(self.bundle, backend, d, engine_path=resolved.engine_paths)
                for d in devices
            ]
        except BackendError:
            if not auto_devices or backend == "tensorrt":
                raise
            # a GPU but neither an engine nor onnxruntime-gpu: run on the CPU
            self.backends = [create_backend(self.bundle, backend, "cpu")]
        self.devices = [b.device for b in self.backends]
        self.workers = workers
        self.max_batch_tokens = max_batch_tokens
        self.window = max(window, GROUP_PAGES)
        self.preparer = Preparer.from_bundle(self.bundle, cutoff_length)
        self.stage_seconds: dict[str, float] = {}

    def extract_batch(self, pages: Iterable[PageInput | str]) -> list[PageResult]:
        """All results, in input order."""
        return list(self.run(pages))

    def run(self, pages: Iterable[PageInput | str]) -> Iterator[PageResult]:
        """Stream results in input order; at most ``window`` pages held at once."""
        source = iter(pages)
        calibration = []
        if self.workers is None:
            for page in source:
                calibration.append(_as_input(page))
                if len(calibration) >= CALIBRATION_PAGES:
                    break
            yield from self._calibrate(calibration)
        workers = self.workers if self.workers is not None else 0
        if workers == 0:
            pool: Executor = ThreadPoolExecutor(max_workers=1)
        else:
            # fork: the workers need no __main__ guard in the user's script. All processes
            # start at the first submit (fork start method), before any inference thread runs.
            pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_init_worker,
                initargs=(self.preparer,),
            )
            pool.submit(_noop).result()
        try:
            yield from self._stream(source, pool, in_process=workers == 0)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    # -- internals

    def _calibrate(self, pages: list[PageInput]) -> Iterator[PageResult]:
        """Run the first pages serially, timing each stage, and size the worker pool."""
        if not pages:
            return  # nothing to measure: this run needs no pool, the next one calibrates
        prepare_s = infer_s = finish_s = 0.0
        results = []
        for page in pages:
            t0 = time.perf_counter()
            prepared = _prepare(page.html, self.preparer)
            t1 = time.perf_counter()
            preds: list[int] | PageError | None = None
            if isinstance(prepared, PreparedPage):
                (preds,) = predict_pages(self.backends[0], [prepared], self.max_batch_tokens)
            t2 = time.perf_counter()
            result = self._result(page, prepared, preds)
            if result is None:
                result = _to_result(page, _finish(prepared, preds))
            t3 = time.perf_counter()
            prepare_s += t1 - t0
            infer_s += t2 - t1
            finish_s += t3 - t2
            results.append(result)
        n = len(pages)
        self.stage_seconds = {"prepare": prepare_s / n, "infer": infer_s / n,
                              "finish": finish_s / n}
        cpu_infer = any(d == "cpu" for d in self.devices)
        self.workers = size_workers(prepare_s / n, finish_s / n, infer_s / n,
                                    len(self.backends), os.cpu_count() or 1, cpu_infer)
        yield from results

    @staticmethod
    def _result(page: PageInput, prepared, preds) -> PageResult | None:
        """The final result when a page failed before finishing, else None."""
        if isinstance(prepared, str):
            return PageResult(page.page_id, error=prepared, metadata=page.metadata)
        if isinstance(preds, PageError):
            return PageResult(page.page_id, error=str(preds), metadata=page.metadata)
        return None

    def _stream(self, source: Iterator, pool: Executor, in_process: bool) -> Iterator[PageResult]:
        prepared_q: queue.Queue = queue.Queue()
        inputs: dict[int, PageInput] = {}  # pages between input and output (<= window)
        done: dict[int, PageResult] = {}
        done_changed = threading.Condition()
        stop = object()

        def finished(index: int, result: PageResult) -> None:
            with done_changed:
                done[index] = result
                done_changed.notify_all()

        def on_prepared(index: int, future: Future) -> None:
            try:
                prepared = future.result()
            except Exception as exc:  # the worker process died (e.g. killed for memory)
                prepared = f"prepare: {describe(exc)}"
            prepared_q.put((index, prepared))

        def on_finished(index: int, future: Future) -> None:
            try:
                outcome = future.result()
            except Exception as exc:
                outcome = f"finish: {describe(exc)}"
            finished(index, _to_result(inputs[index], outcome))

        def next_group() -> list | None:
            """Up to GROUP_PAGES prepared pages (waits for the first); None at the end."""
            first = prepared_q.get()
            if first is stop:
                prepared_q.put(stop)  # the other inference threads must see it too
                return None
            group = [first]
            deadline = time.monotonic() + GROUP_WAIT_S
            while len(group) < GROUP_PAGES:
                try:
                    item = prepared_q.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is stop:
                    prepared_q.put(stop)
                    break
                group.append(item)
            return group

        def infer_loop(backend) -> None:
            while (group := next_group()) is not None:
                ready = []
                for index, prepared in group:
                    if isinstance(prepared, PreparedPage):
                        ready.append((index, prepared))
                    else:
                        finished(index, self._result(inputs[index], prepared, None))
                try:
                    preds = predict_pages(backend, [p for _, p in ready], self.max_batch_tokens)
                except Exception as exc:  # predict_pages isolates pages; this is a bug guard
                    preds = [PageError("inference", describe(exc))] * len(ready)
                for (index, prepared), page_preds in zip(ready, preds, strict=True):
                    failed = self._result(inputs[index], prepared, page_preds)
                    if failed is not None:
                        finished(index, failed)
                        continue
                    future = pool.submit(_finish, prepared, page_preds)
                    future.add_done_callback(lambda f, i=index: on_finished(i, f))

        threads = [threading.Thread(target=infer_loop, args=(b,), daemon=True)
                   for b in self.backends]
        for thread in threads:
            thread.start()
        n_in = n_out = 0
        try:
            for page in source:
                # keep the window: wait for the oldest page before taking a new one
                while n_in - n_out >= self.window:
                    with done_changed:
                        done_changed.wait_for(lambda k=n_out: k in done)
                        result = done.pop(n_out)
                    inputs.pop(n_out)
                    n_out += 1
                    yield result
                page = _as_input(page)
                inputs[n_in] = page
                args = (page.html, self.preparer) if in_process else (page.html,)
                future = pool.submit(_prepare, *args)
                future.add_done_callback(lambda f, i=n_in: on_prepared(i, f))
                n_in += 1
                while True:  # yield what is already done, in order, without waiting
                    with done_changed:
                        result = done.pop(n_out, None)
                    if result is None:
                        break
                    inputs.pop(n_out)
                    n_out += 1
                    yield result
            while n_out < n_in:
                with done_changed:
                    done_changed.wait_for(lambda k=n_out: k in done)
                    result = done.pop(n_out)
                inputs.pop(n_out)
                n_out += 1
                yield result
        finally:
            prepared_q.put(stop)
            for thread in threads:
                thread.join()


def _as_input(page: PageInput | str | bytes) -> PageInput:
    return page if isinstance(page, PageInput) else PageInput(html=page)


def _to_result(page: PageInput, outcome: ExtractionResult | str) -> PageResult:
    if isinstance(outcome, str):
        return PageResult(page.page_id, error=outcome, metadata=page.metadata)
    return PageResult(page.page_id, outcome.labels, outcome.html, outcome.markdown,
                      metadata=page.metadata)


def _default_devices() -> list[str]:
    """Every usable GPU, else the CPU."""
    from pulpie_rt.runtime.backends import gpu_available

    if not gpu_available():
        return ["cpu"]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        return [f"cuda:{i}" for i in range(len(visible.split(",")))]
    count = len([p for p in os.listdir("/dev") if p.startswith("nvidia") and p[6:].isdigit()])
    return [f"cuda:{i}" for i in range(max(count, 1))]
