"""Ray Data: main-content extraction as one ``map_batches`` step (extra ``[ray]``).

    import ray
    from pulpie_rt.integrations.ray import extract_dataset

    pages = ray.data.read_parquet("s3://bucket/crawl/")          # columns id, html, ...
    main = extract_dataset(pages, checkpoint_path="s3://bucket/checkpoint/")
    main.write_parquet("s3://bucket/main-content/")

``PulpieExtractor`` is the callable class Ray runs in each actor: it loads the model once, takes
batches (Arrow, pandas or numpy) with an HTML column (str or bytes, and optionally a
content-type column), keeps every column and adds the result's fields
(``runtime.flow.schema``: ``markdown``, ``n_main``, ``n_other``, ``error``, ``truncated``,
``empty_reason``, ``encoding``; the row keeps its own id). One row in, one row out.
``extract_dataset`` builds the ``map_batches`` call: an actor pool sized to the cluster (one
CPU left to the reads and writes), a GPU per actor when asked.

Failures
--------
A page's error is permanent or transient (``integrations.failures``). A permanent one (the
page: its input, decoding, parsing, ...) is written once, in ``error`` ("<stage>: <reason>",
as ``pulpie-rt run`` writes it), with empty content: it would fail again. A transient one (the
engine, inference, a crashed worker, a failure of ours) is never written: the actor runs those
pages again (``TRANSIENT_ATTEMPTS`` in all, the model reopened between attempts), and if they
still fail it raises ``TransientPageError``, which ``extract_dataset`` tells Ray Data to retry
as a task (``task_retries`` times, on a restarted actor if it died). A job whose retries are
spent fails, naming the pages; with a checkpoint, its rerun resumes at the rows not written.
An actor that dies (killed, out of memory) is restarted by Ray and its task retried: every row
comes out exactly once.

Resume
------
Ray Data 2.60 checkpoints by id column, and ``checkpoint_path`` turns it on:
``extract_dataset`` puts ``CheckpointConfig(id_column, checkpoint_path,
delete_checkpoint_on_success=False)`` on the dataset's ``DataContext``. When the job reads
files (``read_parquet``, ``read_json``, ...) and ends in a file write (``write_parquet``, ...),
Ray records the ids of every block it writes, in two phases: a pending record before the data
file, made final after it; on the next run, a data file whose record is still pending is
deleted and its rows run again. The next run of the same job drops the rows whose ids are
recorded right after reading them, before any model sees them. So a job killed half-way
resumes with the rows it had not written (none twice, none lost), and a rerun of a finished
job processes 0 pages and writes nothing. The checkpoint is kept after success (Ray's default
deletes it, which would make a rerun start over): delete ``checkpoint_path`` to run afresh.
The id column must be unique and never null, and ``checkpoint_path`` reachable from every node
(object storage or a shared file system). A job of another shape (a dataset built in memory,
results iterated instead of written) runs without resume, and Ray warns so.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

try:
    import numpy as np
    import pyarrow as pa
    import ray
    import ray.data
    from ray.data.checkpoint import CheckpointConfig
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("pulpie_rt.integrations.ray needs Ray Data: "
                      "pip install 'pulpie-rt[ray]'") from exc

from pulpie_rt import PageInput, PageResult, Pipeline
from pulpie_rt.integrations.failures import (
    TRANSIENT_ATTEMPTS,
    TransientPageError,
    is_transient,
    transient_failure,
)
from pulpie_rt.runtime.flow.engine import DEFAULT_FAVOR
from pulpie_rt.runtime.flow.pages import describe
from pulpie_rt.runtime.flow.schema import Output, columns, output_of, result_fields
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL

logger = logging.getLogger("pulpie_rt")

# Ray Data's retries of a task whose pages kept failing for a transient reason, or whose actor
# died (Ray's own default for actor tasks is to retry without end).
TASK_RETRIES = 3
# Seconds before the first in-actor retry of transient failures (doubled for each next one).
RETRY_BACKOFF_S = 0.5
# CPUs a GPU actor asks for when not told: four threads calling its engine, each running its
# pages' CPU stages while another's run on the GPU (see README, "Scale out", for sizing them to
# a GPU).
GPU_ACTOR_CPUS = 4
DEFAULT_BATCH_SIZE = 64


class PulpieExtractor:
    """The ``map_batches`` callable: one per Ray actor, the model loaded once.

    ``model``: anything ``Extractor`` takes (a hub name, bundle, checkpoint directory or engine
    file); None is the embedded default model. ``device``: ``cpu``, ``cuda`` or ``cuda:N``;
    None takes the GPU Ray gave this actor, else the CPU. ``workers``: threads calling the
    actor's one engine (each runs whole pages, the GIL released; in your own ``map_batches``
    pass the ``num_cpus`` you give the actor, as ``extract_dataset`` does). ``threads``: ONNX
    Runtime's intra-op threads per call (None: its default, every core of the machine).
    ``output``: the content's format and switches (``Output("text", links=False)``, or a
    format's name), which decide the columns added (``output_types``). ``favor``:
    ``precision``, ``balanced`` or ``recall`` (``Extractor``'s).
    """

    def __init__(self, model: str | os.PathLike | None = None, *, html_column: str = "html",
                 content_type_column: str | None = None, device: str | None = None,
                 workers: int = 1, threads: int | None = 1, backend: str = "auto",
                 profile: str | None = None, output: Output | str = "markdown",
                 favor: str = DEFAULT_FAVOR):
        if device is None:
            device = "cuda" if ray.is_initialized() and ray.get_gpu_ids() else "cpu"
        self.html_column = html_column
        self.content_type_column = content_type_column
        self.output = output_of(output)
        # the columns every output row gets (the result's fields) and their Arrow types
        self.output_types = {f.name: f.arrow_type() for f in result_fields(self.output)}
        self._settings = {"model": DEFAULT_MODEL if model is None else model,
                          "devices": device, "workers": workers, "threads": threads,
                          "backend": backend, "profile": profile, "favor": favor}
        self.pipeline = self.open_pipeline()

    def open_pipeline(self) -> Pipeline:
        """The model, loaded (again after a transient failure: a broken session or worker
        pool is not reused)."""
        settings = dict(self._settings)
        return Pipeline(settings.pop("model"), **settings)

    def __call__(self, batch: Any) -> Any:
        """``batch`` with the output columns added (replaced, when it already has them), in the
        batch's own format: ``pyarrow.Table``, ``pandas.DataFrame`` or dict of numpy arrays."""
        if isinstance(batch, pa.Table):
            return self._arrow(batch)
        if isinstance(batch, dict):
            return self._numpy(batch)
        if type(batch).__name__ == "DataFrame":
            return self._pandas(batch)
        raise TypeError("PulpieExtractor takes a pyarrow.Table, a pandas.DataFrame or a dict of "
                        f"numpy arrays, not {type(batch).__name__}")

    def extract(self, htmls: Sequence, content_types: Sequence | None = None
                ) -> list[PageResult]:
        """One result per page, in order; a permanent failure is the page's ``error``.
        Pages that failed for a transient reason run again (``TRANSIENT_ATTEMPTS`` in all);
        ``TransientPageError`` when some still fail (never a row written with such an
        error)."""
        if content_types is None:
            content_types = [None] * len(htmls)
        pages = [PageInput(_cell(html), page_id=index, content_type=_cell(content_type))
                 for index, (html, content_type) in enumerate(zip(htmls, content_types,
                                                                  strict=True))]
        results: list[PageResult | None] = [None] * len(pages)
        todo = list(range(len(pages)))
        for attempt in range(1, TRANSIENT_ATTEMPTS + 1):
            if self.pipeline is None:
                self.pipeline = self.open_pipeline()
            batch = [pages[i] for i in todo]
            try:
                got = self.pipeline.extract_batch(batch)
            except Exception as exc:  # not a page's failure: the batch as a whole
                logger.exception("pulpie-rt: a batch of %d pages failed as a whole", len(batch))
                got = [PageResult(page.page_id, error=f"pipeline: {describe(exc)}")
                       for page in batch]
            failed = []
            for index, result in zip(todo, got, strict=True):
                results[index] = result
                if is_transient(result.error):
                    failed.append(index)
            if not failed:
                return results
            todo = failed
            logger.warning("pulpie-rt: %d of %d pages failed for a transient reason (attempt %d "
                           "of %d; first: %s)", len(failed), len(pages), attempt,
                           TRANSIENT_ATTEMPTS, results[failed[0]].error)
            self.pipeline = None  # reopened for the next attempt
            if attempt < TRANSIENT_ATTEMPTS:
                time.sleep(RETRY_BACKOFF_S * 2 ** (attempt - 1))
        raise transient_failure([f"row {i} of the batch" for i in todo],
                                [results[i].error for i in todo])

    # -- batch formats

    def _inputs(self, names: Sequence[str], column) -> tuple[list, list | None]:
        if self.html_column not in names:
            raise KeyError(f"no column {self.html_column!r} in the batch (columns: "
                           f"{', '.join(map(str, names))}); pass html_column=")
        if self.content_type_column is not None and self.content_type_column not in names:
            raise KeyError(f"no column {self.content_type_column!r} in the batch (columns: "
                           f"{', '.join(map(str, names))})")
        htmls = column(self.html_column)
        types = column(self.content_type_column) if self.content_type_column else None
        return htmls, types

    def _arrow(self, table: pa.Table) -> pa.Table:
        htmls, types = self._inputs(table.column_names,
                                    lambda name: table.column(name).to_pylist())
        for name, values in columns(self.extract(htmls, types), self.output).items():
            array = pa.array(values, type=self.output_types[name])
            if name in table.column_names:
                table = table.set_column(table.column_names.index(name), name, array)
            else:
                table = table.append_column(name, array)
        return table

    def _pandas(self, frame):
        htmls, types = self._inputs(list(frame.columns), lambda name: frame[name].tolist())
        return frame.assign(**columns(self.extract(htmls, types), self.output))

    def _numpy(self, batch: dict) -> dict:
        htmls, types = self._inputs(list(batch), lambda name: list(batch[name]))
        out = dict(batch)
        for name, values in columns(self.extract(htmls, types), self.output).items():
            dtype = np.int64 if self.output_types[name] == pa.int64() else object
            out[name] = np.array(values, dtype=dtype)
        return out


def _cell(value: Any) -> Any:
    """A cell as the flow takes it: a missing value (None, NaN, pandas' NA) as None, anything
    else unchanged (str and bytes pass as they are; another type fails that page alone)."""
    if value is None or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ == "NAType":
        return None
    return value


def actors_for_cluster(num_gpus: float = 0, cpus_per_actor: float = 1) -> int:
    """How many actors the cluster holds now: one per ``num_gpus`` of its GPUs, or on the CPU
    one per ``cpus_per_actor`` CPUs, one CPU left to the read and write tasks (with every CPU
    held by an actor, the reads that feed them cannot be scheduled and the job stalls)."""
    if not ray.is_initialized():
        ray.init()
    resources = ray.cluster_resources()
    cpus = resources.get("CPU", 0)
    by_cpu = int(max(cpus - 1, 0) // cpus_per_actor)
    if num_gpus > 0:
        by_gpu = int(resources.get("GPU", 0) // num_gpus)
        if by_gpu == 0:
            raise ValueError(f"num_gpus={num_gpus}, but the Ray cluster has "
                             f"{resources.get('GPU', 0):g} GPUs")
        if by_cpu == 0:
            raise ValueError(f"a GPU actor asks for {cpus_per_actor:g} CPUs and the cluster has "
                             f"{cpus:g} (one stays for reads): lower cpus_per_actor")
        return min(by_gpu, by_cpu)
    if by_cpu == 0:
        logger.warning("pulpie-rt: the Ray cluster has %g CPUs: its one actor takes every CPU, "
                       "and reads wait for it", cpus)
    return max(1, by_cpu)


def _check_cpus_left(actors: int, cpus_per_actor: float) -> None:
    """Warn when a fixed actor pool takes every CPU the cluster has now: the read and write
    tasks then wait for an actor's CPU, and an actor restarted after a crash can wait for
    ever (a 2-CPU cluster with 2 actors stalled so)."""
    if not ray.is_initialized():
        return
    cpus = ray.cluster_resources().get("CPU", 0)
    if actors * cpus_per_actor > cpus - 1:
        logger.warning("pulpie-rt: %d actors of %g CPUs leave none of the cluster's %g CPUs to "
                       "the reads and writes; the job may stall (actors=None sizes the pool "
                       "to leave one)", actors, cpus_per_actor, cpus)


def extract_dataset(
    ds: ray.data.Dataset,
    model: str | os.PathLike | None = None,
    *,
    html_column: str = "html",
    id_column: str = "id",
    content_type_column: str | None = None,
    actors: int | tuple[int, int] | None = None,
    num_gpus: float = 0,
    cpus_per_actor: float | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    checkpoint_path: str | os.PathLike | None = None,
    backend: str = "auto",
    profile: str | None = None,
    task_retries: int = TASK_RETRIES,
    extractor: type[PulpieExtractor] = PulpieExtractor,
    output: Output | str = "markdown",
    favor: str = DEFAULT_FAVOR,
) -> ray.data.Dataset:
    """``ds`` with the result's fields (``PulpieExtractor.output_types``) added to every row, by a
    pool of ``PulpieExtractor`` actors (lazy, like every Ray Data transform).

    ``actors``: a fixed count, or ``(min, max)`` for an autoscaling pool; None: as many as the
    cluster holds now (``actors_for_cluster``). ``num_gpus``: GPUs per actor (0: CPU actors;
    0.5: two actors share a GPU). ``cpus_per_actor``: None is 1 for a CPU actor and
    ``GPU_ACTOR_CPUS`` for a GPU actor; an actor runs that many threads on its one engine.
    ``batch_size``: pages per call of an actor, and at most the rows of a block (larger
    blocks are split so that every actor gets some; pass
    ``min_rows_per_file=`` to ``write_parquet`` for fewer, larger output files).
    ``checkpoint_path``: resume by ``id_column`` (see the module docstring); it takes effect
    when ``ds`` is read from files and the result is written. ``task_retries``: Ray Data's
    retries of a task whose pages kept failing for a transient reason or whose actor died.
    ``extractor``: the callable class (a subclass of ``PulpieExtractor`` that adds columns).
    ``output``: the content's format and switches, ``favor`` the decision's shift
    (``PulpieExtractor``'s).
    """
    gpu = num_gpus > 0
    if cpus_per_actor is None:
        cpus_per_actor = GPU_ACTOR_CPUS if gpu else 1
    if actors is None:
        actors = actors_for_cluster(num_gpus, cpus_per_actor)
    if isinstance(actors, int):
        _check_cpus_left(actors, cpus_per_actor)
        compute = ray.data.ActorPoolStrategy(size=actors)
    else:
        compute = ray.data.ActorPoolStrategy(min_size=actors[0], max_size=actors[1])
    if checkpoint_path is not None:
        path = os.fspath(checkpoint_path)
        if "://" not in path:
            path = os.path.abspath(path)  # pyarrow's file systems take absolute paths only
        ds.context.checkpoint_config = CheckpointConfig(
            id_column=id_column, checkpoint_path=path, delete_checkpoint_on_success=False)
    # a batch whose pages keep failing for a transient reason is retried as a task
    ds.context.actor_task_retry_on_errors = [TransientPageError]
    whole_cpus = max(1, int(cpus_per_actor))
    constructor = {
        "model": model, "html_column": html_column, "content_type_column": content_type_column,
        "device": "cuda" if gpu else "cpu", "backend": backend, "profile": profile,
        "output": output, "favor": favor,
        # one thread per CPU of the actor calls its engine, each with one ONNX Runtime
        # thread: pages run side by side (on a GPU, one thread's CPU stages run while
        # another's batch is on the device)
        "workers": whole_cpus,
        "threads": 1,
    }
    # Ray hands an actor a whole block, and a block read from one file can hold thousands of
    # pages: blocks of at most a batch let every actor of the pool take a share.
    blocks = ds.repartition(target_num_rows_per_block=batch_size)
    return blocks.map_batches(
        extractor, fn_constructor_kwargs=constructor, batch_format="pyarrow",
        batch_size=batch_size, compute=compute, num_cpus=cpus_per_actor,
        num_gpus=num_gpus if gpu else None,
        # Ray Data retries an actor's task without end by default; keyword remote arguments of
        # map_batches are deprecated: the retries go in through the per-actor arguments
        ray_remote_args_fn=partial(dict, max_task_retries=task_retries))
