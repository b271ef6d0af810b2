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
Markdown into ``text`` and ``n_main`` / ``n_other`` (blocks kept / dropped) into ``metadata``.

Stats (datatrove's, per task in ``logging_dir/stats/`` and merged in ``stats.json``):
``total`` documents in, ``forwarded`` out, ``dropped``, ``errors`` (pages that failed; with
``keep_failed`` they go on with empty ``text`` and the reason, ``"<stage>: <reason>"``, in
``metadata["error"]``) and ``empty`` (no main content found; kept with ``keep_empty``), so
``total == forwarded + dropped`` and every document comes out or is counted.

Resume is datatrove's own: a task that finishes writes ``logging_dir/completions/<rank>`` and a
rerun with the same ``logging_dir`` skips it (``skip_completed=True``, the default); a task
that did not finish runs again from its start, and its writer rewrites its output file.
"""

from __future__ import annotations

import os

try:
    from datatrove.data import DocumentsPipeline
    from datatrove.pipeline.base import PipelineStep
    from datatrove.pipeline.extractors.base import BaseExtractor
    from datatrove.utils.logging import logger
    from datatrove.utils.typeshelper import StatHints
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("pulpie_rt.integrations.datatrove needs datatrove: "
                      "pip install 'pulpie-rt[datatrove]'") from exc

from pulpie_rt import PageInput, Pipeline
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL

# Our stat names beside datatrove's total / forwarded / dropped.
STAT_ERRORS = "errors"
STAT_EMPTY = "empty"


class PulpieExtractor(PipelineStep):
    """HTML in ``Document.text`` -> its main content as Markdown.

    ``model``: anything ``Extractor`` takes; None is the embedded default model.
    ``keep_failed`` / ``keep_empty``: forward a failed page (empty ``text``,
    ``metadata["error"]``) / a page without main content instead of dropping it.
    ``devices``, ``workers``, ``threads``, ``backend``: ``Pipeline``'s, per task. Several
    tasks on one machine share its cores: give each ``workers=0`` and ``threads`` = its share
    (``Pipeline`` sizes ``workers=None`` from the whole machine's core count).
    """

    name = "pulpie-rt main content"
    type = BaseExtractor.type

    def __init__(self, model: str | os.PathLike | None = None, *, keep_failed: bool = False,
                 keep_empty: bool = False, devices: list[str] | str | None = None,
                 workers: int | None = None, threads: int | None = None, backend: str = "auto",
                 profile: str | None = None):
        super().__init__()
        self.model = DEFAULT_MODEL if model is None else model
        self.keep_failed = keep_failed
        self.keep_empty = keep_empty
        self.devices = devices
        self.workers = workers
        self.threads = threads
        self.backend = backend
        self.profile = profile

    def pipeline(self) -> Pipeline:
        """This task's ``Pipeline`` (the model loaded here, in the task's process)."""
        return Pipeline(self.model, devices=self.devices, workers=self.workers,
                        threads=self.threads, backend=self.backend, profile=self.profile)

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1
            ) -> DocumentsPipeline:
        if data is None:
            return
        pipeline = self.pipeline()
        pages = (PageInput(doc.text, page_id=doc.id, metadata={"document": doc}) for doc in data)
        for result in pipeline.run(pages):
            doc = result.metadata["document"]
            self.stat_update(StatHints.total)
            if result.error is not None:
                self.stat_update(STAT_ERRORS)
                doc.metadata["error"] = result.error
                keep = self.keep_failed
            elif not result.markdown:
                self.stat_update(STAT_EMPTY)
                keep = self.keep_empty
            else:
                keep = True
            if not keep:
                self.stat_update(StatHints.dropped)
                continue
            doc.text = result.markdown
            doc.metadata["n_main"] = result.n_main
            doc.metadata["n_other"] = result.n_other
            self.stat_update(StatHints.forwarded)
            self.update_doc_stats(doc)
            yield doc
        logger.info(f"pulpie-rt, task {rank}: {pipeline.stats.summary()}")
