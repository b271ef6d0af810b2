"""datatrove: main-content extraction as a pipeline step (extra ``[datatrove]``).

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import WarcReader
    from datatrove.pipeline.writers import JsonlWriter
    from pulpie_rt.integrations.datatrove import PulpieExtractor

    LocalPipelineExecutor([WarcReader("crawl/warc/"), PulpieExtractor(), JsonlWriter("main/")],
                          tasks=64, workers=2, logging_dir="logs/").run()

``PulpieExtractor`` reads each document's HTML from ``Document.text`` (as datatrove's readers
fill it: ``WarcReader`` decodes the response, ``JsonlReader(text_key="html")`` takes a field),
streams the task's documents through one ``Pipeline`` (the model loads once per task, in the
task's own process: until then the step is only its settings, so every executor can pickle
and ship it, ``SlurmPipelineExecutor`` and ``RayPipelineExecutor`` unchanged), and writes the
Markdown into ``text`` and the result's other fields (``runtime.flow.schema``: ``n_main``,
``n_other``, ``error``, ``truncated``, ``empty_reason``, ``encoding``) into ``metadata``.

Stats (datatrove's, per task in ``logging_dir/stats/`` and merged in ``stats.json``):
``total`` documents in, ``forwarded`` out, ``dropped``, ``errors`` (pages that failed; with
``keep_failed`` they go on with empty ``text`` and the reason, ``"<stage>: <reason>"``, in
``metadata["error"]``) and ``empty`` (no main content found; kept with ``keep_empty``), so
``total == forwarded + dropped`` and every document comes out or is counted.

Resume is datatrove's own: a task that finishes writes ``logging_dir/completions/<rank>`` and a
rerun with the same ``logging_dir`` skips it (``skip_completed=True``, the default); a task
that did not finish runs again from its start, and its writer rewrites its output file.

Failures (``integrations.failures``): a page whose error is permanent (the page: its input,
decoding, parsing, ...) is counted in ``errors`` and dropped or kept with its error, once. A
transient one (the engine, inference, a crashed worker, a failure of ours) is never written:
the page runs again in a freshly opened model (``TRANSIENT_ATTEMPTS`` in all), and if it
still fails the step raises ``TransientPageError``: the task fails, writes no completion, and
the next run of the executor runs it again.

Sizing: a task's model gets the task's share of the machine, not the whole machine:
``DATATROVE_CPUS_PER_TASK`` where the executor sets it (Slurm, Ray), else the CPUs this
process may use divided among the tasks that can run at once on it (``LocalPipelineExecutor``
runs up to ``tasks`` of them; with ``workers`` below that, pass ``workers=cores // workers``).
"""

from __future__ import annotations

import os
import time

try:
    from datatrove.data import DocumentsPipeline
    from datatrove.pipeline.base import PipelineStep
    from datatrove.pipeline.extractors.base import BaseExtractor
    from datatrove.utils.logging import logger
    from datatrove.utils.typeshelper import StatHints
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("pulpie_rt.integrations.datatrove needs datatrove: "
                      "pip install 'pulpie-rt[datatrove]'") from exc

from pulpie_rt import PageInput, PageResult, Pipeline
from pulpie_rt.integrations.failures import (
    TRANSIENT_ATTEMPTS,
    is_transient,
    transient_failure,
)
from pulpie_rt.runtime.flow.engine import DEFAULT_FAVOR
from pulpie_rt.runtime.flow.pages import describe
from pulpie_rt.runtime.flow.schema import Output, output_of, result_values
from pulpie_rt.runtime.model.devices import usable_cpus
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL

# Our stat names beside datatrove's total / forwarded / dropped.
STAT_ERRORS = "errors"
STAT_EMPTY = "empty"


class PulpieExtractor(PipelineStep):
    """HTML in ``Document.text`` -> its main content as Markdown.

    ``model``: anything ``Extractor`` takes; None is the embedded default model.
    ``keep_failed`` / ``keep_empty``: forward a failed page (empty ``text``,
    ``metadata["error"]``) / a page without main content instead of dropping it.
    ``devices``, ``workers``, ``threads``, ``backend``: ``Pipeline``'s, per task; None
    (the default) sizes them to the task's share of the machine (the module's docstring).
    ``output``: the content's format and switches (``Output("text", tables=False)``, or a
    format's name); ``text`` gets the content, ``metadata`` the other result fields.
    ``favor``: ``precision``, ``balanced`` or ``recall`` (``Extractor``'s).
    """

    name = "pulpie-rt main content"
    type = BaseExtractor.type

    def __init__(self, model: str | os.PathLike | None = None, *, keep_failed: bool = False,
                 keep_empty: bool = False, devices: list[str] | str | None = None,
                 workers: int | None = None, threads: int | None = None, backend: str = "auto",
                 profile: str | None = None, output: Output | str = "markdown",
                 favor: str = DEFAULT_FAVOR):
        super().__init__()
        self.favor = favor
        self.output = output_of(output)
        self.model = DEFAULT_MODEL if model is None else model
        self.keep_failed = keep_failed
        self.keep_empty = keep_empty
        self.devices = devices
        self.workers = workers
        self.threads = threads
        self.backend = backend
        self.profile = profile

    def pipeline(self, world_size: int = 1) -> Pipeline:
        """This task's ``Pipeline`` (the model loaded here, in the task's process), sized to
        the task's share of the machine unless told."""
        workers, threads = self.workers, self.threads
        if workers is None and threads is None:
            # one thread per CPU of the task's share calls its engine (one ONNX Runtime
            # thread each): not the whole machine for every task
            workers, threads = task_cpus(world_size), 1
        return Pipeline(self.model, devices=self.devices, workers=workers, threads=threads,
                        backend=self.backend, profile=self.profile, favor=self.favor)

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1
            ) -> DocumentsPipeline:
        if data is None:
            return
        pipeline = self.pipeline(world_size)
        retrying: list[Pipeline] = []  # a fresh model for pages that failed transiently
        pages = (PageInput(doc.text, page_id=doc.id, metadata={"document": doc}) for doc in data)
        for result in pipeline.run(pages):
            if is_transient(result.error):
                result = self._retry(result, retrying, world_size)
            doc = result.metadata["document"]
            self.stat_update(StatHints.total)
            if result.error is not None:
                self.stat_update(STAT_ERRORS)
                keep = self.keep_failed
            elif not result.markdown:  # no main content (in any format)
                self.stat_update(STAT_EMPTY)
                keep = self.keep_empty
            else:
                keep = True
            if not keep:
                self.stat_update(StatHints.dropped)
                continue
            values = result_values(result, self.output)
            doc.text = values.pop(self.output.content_format)  # the rest is metadata
            doc.metadata.update(values)
            self.stat_update(StatHints.forwarded)
            self.update_doc_stats(doc)
            yield doc
        logger.info(f"pulpie-rt, task {rank}: {pipeline.stats.summary()}")

    def _retry(self, failed: PageResult, retrying: list[Pipeline], world_size: int
               ) -> PageResult:
        """``failed``'s page run again in a freshly opened model, up to ``TRANSIENT_ATTEMPTS``
        in all; ``TransientPageError`` (the task fails, to be run again) if it still fails."""
        doc = failed.metadata["document"]
        page = PageInput(doc.text, page_id=doc.id, metadata=failed.metadata)
        result = failed
        for attempt in range(2, TRANSIENT_ATTEMPTS + 1):
            logger.warning(f"pulpie-rt: document {doc.id!r} failed for a transient reason "
                           f"({result.error}); attempt {attempt} of {TRANSIENT_ATTEMPTS}")
            time.sleep(0.5 * 2 ** (attempt - 2))
            try:
                retrying[:] = [self.pipeline(world_size)]  # not the one that failed
                (result,) = retrying[0].extract_batch([page])
            except Exception as exc:
                result = PageResult(doc.id, error=f"pipeline: {describe(exc)}",
                                    metadata=failed.metadata)
            if not is_transient(result.error):
                return result
        raise transient_failure([doc.id], [result.error])


def task_cpus(world_size: int) -> int:
    """CPUs for one task's model: ``DATATROVE_CPUS_PER_TASK`` when the executor sets it (Slurm,
    Ray), else this process's usable CPUs shared among the tasks that may run on them at
    once (at most ``world_size``), at least 1."""
    try:
        given = int(os.environ.get("DATATROVE_CPUS_PER_TASK", "-1"))
    except ValueError:
        given = -1
    if given > 0:
        return given
    cpus = usable_cpus()
    return max(1, cpus // max(1, min(world_size, cpus)))
