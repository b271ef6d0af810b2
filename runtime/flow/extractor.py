"""``Extractor``: raw HTML in, main content out (the reference's API, without torch).

    from pulpie_rt import Extractor
    result = Extractor("path/to/bundle").extract(html)
    print(result.markdown)

A thin layer over the one engine (``flow.engine.Engine``, the C library's page flow).
"""

from __future__ import annotations

import os

from pulpie_rt.runtime.flow.engine import DEFAULT_FAVOR, Engine, favor_value
from pulpie_rt.runtime.flow.pages import (
    DEFAULT_CUTOFF_LENGTH,
    DEFAULT_LIMITS,
    DEFAULT_MAX_BATCH_TOKENS,
    PageInput,
    PageLimits,
    PageResult,
    RunStats,
)
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL


class ExtractionError(RuntimeError):
    """``extract`` failed for the page; the message names the stage and the reason."""


class Extractor:
    """Extract main content from raw HTML with a Pulpie model.

    ``model``: hub name, checkpoint directory, bundle directory or ``default`` (see
    ``pulpie_rt.runtime.model.resolve``). ``backend``: ``auto``, ``tensorrt`` or
    ``onnxruntime``. ``device``: ``cpu``, ``cuda`` or ``cuda:N``; None picks a GPU when one is
    usable (a device asked for by name is used or ``BackendError`` says why). ``limits``
    bounds what one page may cost (``PageLimits``; a result says what was cut in
    ``truncated``). ``stats`` counts the pages, errors and fallbacks of every call.
    ``profile``: the bundle's speed/quality profile (the embedded default model: ``fast``, its
    block rescorer alone, or ``accurate``, its transformer and rescorer; None: the bundle's
    default, see ``runtime.model.bundle``). ``threads``: ONNX Runtime's intra-op threads.
    ``favor``: ``precision``, ``balanced`` (the bundle's own decision) or ``recall`` (see
    ``Engine``), the default of every call; ``extract(..., favor=)`` and
    ``extract_batch(..., favor=)`` take another for one call, on the same engine.
    ``metadata``: read each page's title, authors, dates, language, canonical URL and
    description (``PageResult``'s attributes; False: they stay empty).
    """

    def __init__(
        self,
        model: str | os.PathLike = DEFAULT_MODEL,
        backend: str = "auto",
        device: str | None = None,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        cutoff_length: int = DEFAULT_CUTOFF_LENGTH,
        threads: int | None = None,
        limits: PageLimits = DEFAULT_LIMITS,
        profile: str | None = None,
        favor: str = DEFAULT_FAVOR,
        metadata: bool = True,
    ):
        self.stats = RunStats()
        self.engine = Engine(model, profile=profile, backend=backend, device=device,
                             threads=threads, limits=limits, max_batch_tokens=max_batch_tokens,
                             cutoff_length=cutoff_length, stats=self.stats, favor=favor,
                             metadata=metadata)
        self.bundle = self.engine.bundle

    @property
    def device(self) -> str:
        """Where the model runs (``cpu`` or ``cuda:N``)."""
        return self.engine.device

    @property
    def provider(self) -> str:
        """ONNX Runtime's execution provider the model runs on (``cpu``, ``cuda``,
        ``tensorrt``), or ``none`` for a profile without a model."""
        return self.engine.provider

    def extract(self, html: str | bytes, content_type: str | None = None,
                favor: str | None = None) -> PageResult:
        """Main content of one page; ``ExtractionError`` ("<stage>: <reason>") on failure.

        Bytes are decoded with ``content_type``'s charset when it has one (the HTTP header's
        ``text/html; charset=...``), else as ``stages.decode`` decides (BOM, ``<meta>``,
        detector); ``PageResult.encoding`` says with what. ``favor``: ``precision``,
        ``balanced`` or ``recall`` for this call (None: the extractor's)."""
        (result,) = self.extract_batch([html], None if content_type is None else [content_type],
                                       favor=favor)
        if result.error is not None:
            raise ExtractionError(result.error)
        return result

    def extract_batch(self, htmls: list[str | bytes], content_types: list[str | None] | None = None,
                      favor: str | None = None) -> list[PageResult]:
        """Results in input order (``page_id``: the index); a page that fails gets ``error``
        set and empty content. ``content_types``: each page's transport content type (see
        ``extract``); ``favor``: the call's (None: the extractor's; ``ValueError`` naming the
        choices for another name)."""
        if favor is not None:
            favor_value(favor)  # refused before any page runs
        if content_types is None:
            content_types = [None] * len(htmls)
        pages = [PageInput(html, page_id=index, content_type=content_type, favor=favor)
                 for index, (html, content_type) in enumerate(zip(htmls, content_types,
                                                                  strict=True))]
        results = self.engine.extract_pages(pages)
        self.stats.count(results)
        return results
