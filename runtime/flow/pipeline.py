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

from pulpie_rt.runtime.flow.pages import (
    DEFAULT_LIMITS,
    PageError,
    PageInput,
    PageLimits,
    PageResult,
    PreparedPage,
    Preparer,
    RunStats,
    describe,
    failure_of,
    finish,
    predict_pages,
    prepare,
    result_for,
)
from pulpie_rt.runtime.model.backends import BackendError, create_backend, gpu_devices
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL, resolve_model
from pulpie_rt.runtime.stages.batches import DEFAULT_MAX_BATCH_TOKENS

CALIBRATION_PAGES = 8
# Pages an inference thread gathers before running them (more pages: fuller batches).
GROUP_PAGES = 32
GROUP_WAIT_S = 0.02


# ---------------------------------------------------------------------------- worker side

_worker_preparer: Preparer | None = None


def _init_worker(preparer: Preparer) -> None:
    global _worker_preparer
    _worker_preparer = preparer
    exit_with_parent()


def exit_with_parent() -> None:
    """In a pool worker: end this process when its parent goes away. A parent killed with
    SIGKILL cannot stop its pool, and a worker holds both ends of the pool's queues, so it
    would wait for work forever; a daemon thread watches the parent instead."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def _prepare(html: str | bytes | None, content_type: str | None = None
             ) -> PreparedPage | str:
    """Worker: a prepared page, or the page's error string."""
    return prepare(_worker_preparer, html, content_type)


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
    measured stage speeds; 0: no processes). ``threads``: ONNX Runtime's threads per CPU
    backend (None: its default, every core), for a process that owns only some of the
    machine's cores (a Ray actor, a datatrove task). ``limits`` bounds what one page may
    cost (``PageLimits``). ``stats`` counts pages, errors and fallbacks. ``profile``: the
    bundle's speed/quality profile (see ``Extractor``).
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
        limits: PageLimits = DEFAULT_LIMITS,
        threads: int | None = None,
        profile: str | None = None,
    ):
        resolved = resolve_model(model, profile=profile)
        self.bundle = resolved.bundle
        self.stats = RunStats()
        if isinstance(devices, str):
            devices = [devices]
        if not self.bundle.uses_transformer:
            devices = ["cpu"]  # a rescorer-only profile has no model to place on a device
        auto_devices = devices is None
        if devices is None:
            devices = gpu_devices() or ["cpu"]
        try:
            self.backends = [
                create_backend(self.bundle, backend, d, engine_path=resolved.engine_paths,
                               threads=threads)
                for d in devices
            ]
        except BackendError as exc:
            if not auto_devices or backend == "tensorrt":
                raise
            # a GPU but neither an engine nor onnxruntime-gpu: run on the CPU
            self.stats.fell_back(f"no GPU backend could be created ({exc}): CPU instead")
            self.backends = [create_backend(self.bundle, backend, "cpu", threads=threads)]
        for created in self.backends:
            if created.fallback:
                self.stats.fell_back(created.fallback)
        self.devices = [b.device for b in self.backends]
        self.workers = workers
        self.max_batch_tokens = max_batch_tokens
        self.window = max(window, GROUP_PAGES)
        self.preparer = Preparer.from_bundle(self.bundle, cutoff_length, limits)
        self.stage_seconds: dict[str, float] = {}

    def extract_batch(self, pages: Iterable[PageInput | str | bytes]) -> list[PageResult]:
        """All results, in input order."""
        return list(self.run(pages))

    def run(self, pages: Iterable[PageInput | str | bytes]) -> Iterator[PageResult]:
        """Stream results in input order; at most ``window`` pages held at once."""
        for result in self._run(pages):
            self.stats.count((result,))
            yield result

    # -- internals

    def _run(self, pages: Iterable[PageInput | str | bytes]) -> Iterator[PageResult]:
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

    def _calibrate(self, pages: list[PageInput]) -> Iterator[PageResult]:
        """Run the first pages serially, timing each stage, and size the worker pool."""
        if not pages:
            return  # nothing to measure: this run needs no pool, the next one calibrates
        prepare_s = infer_s = finish_s = 0.0
        results = []
        for page in pages:
            t0 = time.perf_counter()
            prepared = prepare(self.preparer, page.html, page.content_type)
            t1 = time.perf_counter()
            preds: list[int] | PageError | None = None
            if isinstance(prepared, PreparedPage):
                (preds,) = predict_pages(self.backends[0], [prepared], self.max_batch_tokens,
                                         self.stats)
            t2 = time.perf_counter()
            failure = failure_of(prepared, preds)
            results.append(result_for(page, failure if failure is not None
                                      else finish(prepared, preds)))
            t3 = time.perf_counter()
            prepare_s += t1 - t0
            infer_s += t2 - t1
            finish_s += t3 - t2
        n = len(pages)
        self.stage_seconds = {"prepare": prepare_s / n, "infer": infer_s / n,
                              "finish": finish_s / n}
        cpu_infer = any(d == "cpu" for d in self.devices)
        self.workers = size_workers(prepare_s / n, finish_s / n, infer_s / n,
                                    len(self.backends), os.cpu_count() or 1, cpu_infer)
        yield from results

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
            finished(index, result_for(inputs[index], outcome))

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
                        finished(index, result_for(inputs[index], prepared))
                try:
                    preds = predict_pages(backend, [p for _, p in ready], self.max_batch_tokens,
                                          self.stats)
                except Exception as exc:  # predict_pages isolates pages; this is a bug guard
                    preds = [PageError("inference", describe(exc))] * len(ready)
                for (index, prepared), page_preds in zip(ready, preds, strict=True):
                    failure = failure_of(prepared, page_preds)
                    if failure is not None:
                        finished(index, result_for(inputs[index], failure))
                        continue
                    future = pool.submit(finish, prepared, page_preds)
                    future.add_done_callback(lambda f, i=index: on_finished(i, f))

        threads = [threading.Thread(target=infer_loop, args=(b,), daemon=True)
                   for b in self.backends]
        for thread in threads:
            thread.start()
        n_in = n_out = 0

        def take_next() -> PageResult:
            nonlocal n_out
            with done_changed:
                done_changed.wait_for(lambda k=n_out: k in done)
                result = done.pop(n_out)
            inputs.pop(n_out)
            n_out += 1
            return result

        try:
            for page in source:
                while n_in - n_out >= self.window:  # keep the window: wait for the oldest
                    yield take_next()
                page = _as_input(page)
                inputs[n_in] = page
                if in_process:
                    future = pool.submit(prepare, self.preparer, page.html, page.content_type)
                else:
                    future = pool.submit(_prepare, page.html, page.content_type)
                future.add_done_callback(lambda f, i=n_in: on_prepared(i, f))
                n_in += 1
                while True:  # yield what is already done, in order, without waiting
                    with done_changed:
                        ready_now = n_out in done
                    if not ready_now:
                        break
                    yield take_next()
            while n_out < n_in:
                yield take_next()
        finally:
            prepared_q.put(stop)
            for thread in threads:
                thread.join()


def _as_input(page: PageInput | str | bytes) -> PageInput:
    return page if isinstance(page, PageInput) else PageInput(html=page)
