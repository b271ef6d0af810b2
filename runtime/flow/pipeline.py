"""``Pipeline``: many pages through the one engine, in parallel by threads, results in order.

    pages --> groups of pages --> [threads, each calling Engine.extract_pages on one engine per
              device; the GIL is released for the whole call] --> results in input order

Memory is bounded: at most ``window`` pages are between the input and the output at once, so
``run()`` streams inputs larger than RAM. No process pool: a thread that calls the engine
holds no Python state another needs, so one engine serves every thread of the process.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from pulpie_rt.runtime.flow.engine import DEFAULT_FAVOR, Engine
from pulpie_rt.runtime.flow.pages import (
    DEFAULT_CUTOFF_LENGTH,
    DEFAULT_LIMITS,
    DEFAULT_MAX_BATCH_TOKENS,
    PageInput,
    PageLimits,
    PageResult,
    RunStats,
    describe,
)
from pulpie_rt.runtime.model.devices import gpu_devices, usable_cpus
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL

# Pages per engine call: a profile that runs the transformer batches the chunks of a call's
# pages together (more pages: fuller batches); one without needs no batching, and small
# groups keep every thread busy to the end of a run.
GROUP_PAGES_TRANSFORMER = 32
GROUP_PAGES_BLOCKS = 8
# calling threads per GPU engine: one prepares and finishes pages while another's run the model
THREADS_PER_GPU = 2
# the pages read ahead of the results (``window`` None): on GPUs, enough to fill the model's
# batches; on CPUs, a few groups per calling thread (a thread never waits for a group while a
# slow page holds the results back), at most the GPU's. A page read too early is memory held
# for nothing: on the dev pages, all read at once by the 512, a run's peak RSS was ~1.25x.
WINDOW_PAGES_GPU = 512
WINDOW_GROUPS_PER_THREAD = 4


class Pipeline:
    """Parallel extraction over many pages, threads sharing one engine per device.

    ``devices``: e.g. ``["cuda:0", "cuda:1"]`` or ``"cpu"``; None: every visible GPU when the
    profile runs a model (a GPU whose provider cannot load is an error, never a CPU run), else
    the CPU.
    ``workers``: threads calling the engines (None: the usable CPUs for a CPU engine, two per
    GPU). ``threads``: ONNX Runtime's intra-op threads per engine (None: its default), for a
    process that owns only some of the machine's cores (a Ray actor, a datatrove task).
    ``limits`` bounds what one page may cost (``PageLimits``). ``stats`` counts pages, errors
    and fallbacks. ``profile``: the bundle's speed/quality profile; ``favor``: precision,
    balanced or recall (see ``Extractor``). ``window``: pages between the input and the
    results at most (None: ``WINDOW_PAGES_GPU`` where an engine runs on a GPU, else
    ``WINDOW_GROUPS_PER_THREAD`` groups per calling thread, at most that many).
    """

    def __init__(
        self,
        model: str | os.PathLike = DEFAULT_MODEL,
        devices: list[str] | str | None = None,
        workers: int | None = None,
        backend: str = "auto",
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        window: int | None = None,
        cutoff_length: int = DEFAULT_CUTOFF_LENGTH,
        limits: PageLimits = DEFAULT_LIMITS,
        threads: int | None = None,
        profile: str | None = None,
        favor: str = DEFAULT_FAVOR,
    ):
        self.stats = RunStats()
        if isinstance(devices, str):
            devices = [devices]

        def open_engine(device: str | None) -> Engine:
            return Engine(model, profile=profile, backend=backend, device=device,
                          threads=threads, limits=limits, max_batch_tokens=max_batch_tokens,
                          cutoff_length=cutoff_length, stats=self.stats, favor=favor)

        if devices is None:
            first = open_engine(None)  # auto: the first GPU, or the CPU (said in stats)
            self.engines = [first]
            if first.device.startswith("cuda"):
                self.engines += [open_engine(d) for d in gpu_devices()[1:]]
        else:
            self.engines = [open_engine(d) for d in devices]
        self.bundle = self.engines[0].bundle
        self.devices = [e.device for e in self.engines]
        if workers is None:
            per_engine = [THREADS_PER_GPU if e.device.startswith("cuda") else usable_cpus()
                          for e in self.engines]
        else:
            per_engine = [max(1, workers // len(self.engines))] * len(self.engines)
        self.threads_per_engine = per_engine
        self.workers = sum(per_engine)
        self.group_pages = (GROUP_PAGES_TRANSFORMER if self.bundle.uses_transformer
                            else GROUP_PAGES_BLOCKS)
        if window is None:
            on_gpu = any(e.device.startswith("cuda") for e in self.engines)
            window = WINDOW_PAGES_GPU if on_gpu else min(
                WINDOW_PAGES_GPU, WINDOW_GROUPS_PER_THREAD * self.group_pages * self.workers)
        self.window = max(window, self.group_pages)

    def extract_batch(self, pages: Iterable[PageInput | str | bytes]) -> list[PageResult]:
        """All results, in input order."""
        return list(self.run(pages))

    def run(self, pages: Iterable[PageInput | str | bytes]) -> Iterator[PageResult]:
        """Stream results in input order; at most ``window`` pages held at once."""
        pools = [ThreadPoolExecutor(max_workers=n, thread_name_prefix=f"pulpie-rt-{e.device}")
                 for e, n in zip(self.engines, self.threads_per_engine, strict=True)]
        in_flight = [0] * len(self.engines)  # groups submitted to each engine, not yet done
        pending: deque[tuple[Future, int, int]] = deque()  # (future, engine, pages), in order
        held = 0

        def submit(group: list[PageInput]) -> None:
            nonlocal held
            engine_index = min(range(len(self.engines)),
                               key=lambda i: in_flight[i] / self.threads_per_engine[i])
            in_flight[engine_index] += 1
            future = pools[engine_index].submit(_extract, self.engines[engine_index], group)
            pending.append((future, engine_index, len(group)))
            held += len(group)

        def take() -> list[PageResult]:
            nonlocal held
            future, engine_index, size = pending.popleft()
            results = future.result()
            in_flight[engine_index] -= 1
            held -= size
            self.stats.count(results)
            return results

        try:
            group: list[PageInput] = []
            for page in pages:
                group.append(page if isinstance(page, PageInput) else PageInput(html=page))
                if len(group) >= self.group_pages:
                    submit(group)
                    group = []
                while pending and (pending[0][0].done() or held >= self.window):
                    yield from take()
            if group:
                submit(group)
            while pending:
                yield from take()
        finally:
            for future, _, _ in pending:
                future.cancel()
            for pool in pools:
                pool.shutdown(wait=True, cancel_futures=True)


def _extract(engine: Engine, group: list[PageInput]) -> list[PageResult]:
    """A group's results; a failure of the whole call fails each of its pages, not the run."""
    try:
        return engine.extract_pages(group)
    except Exception as exc:
        return [PageResult(page.page_id, metadata=page.metadata,
                           error=f"engine: {describe(exc)}") for page in group]
