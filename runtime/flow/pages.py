"""What a page is on its way through pulpie-rt, whoever asks: ``PageInput`` in, ``PageResult``
out, ``PageLimits`` bounding its cost, ``RunStats`` counting a run's pages, errors and
fallbacks.

Every door runs its pages through the one engine (``runtime/flow/engine.py``: the compiled
core's page flow, the C library's). ``Preparer`` and ``finish`` below expose the core's
prepare (decode -> simplify -> blocks -> tokens -> chunks -> features) and finish (labels ->
reconstruct -> Markdown) one page at a time, for the tools that look inside a page (training,
parity, the tests); their readable specifications are ``tests/spec/{prepare,finish}_spec.py``.

A page's failure is ``"<stage>: <reason>"``, which becomes that page's ``PageResult.error``,
so one page never takes down a batch.
"""

from __future__ import annotations

import logging
import operator
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from pulpie_rt.runtime import native
from pulpie_rt.runtime.stages.chunks import Chunk
from pulpie_rt.runtime.stages.features import (
    FEATURES_V2,
    FEATURES_V3,
    FEATURES_V4,
    FEATURES_V5,
    FEATURES_V6,
    FEATURES_VERSION,
)
from pulpie_rt.runtime.stages.labels import labels_from_predictions
from pulpie_rt.runtime.stages.tokens import load_tokenizer

logger = logging.getLogger("pulpie_rt")


class PageError(Exception):
    """One page failed in one stage; ``str()`` is ``"<stage>: <reason>"``."""

    def __init__(self, stage: str, reason: str):
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason


def describe(exc: BaseException) -> str:
    """A one-line reason for an exception (type and first line of its message)."""
    message = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__


def as_text(html: str | bytes | None, content_type: str | None = None
            ) -> tuple[str, str | None]:
    """``(text, encoding)`` of a page: bytes decoded by ``stages.decode`` (BOM, the
    transport's ``content_type``, ``<meta>``, the detector, UTF-8), a ``str`` as it is
    (encoding None)."""
    if isinstance(html, (str, bytes, bytearray, memoryview, native.PageText)):
        from pulpie_rt.runtime.stages.decode import decode_input

        try:
            return decode_input(html, content_type)
        except Exception as exc:
            raise PageError("decode", describe(exc)) from exc
    raise PageError("input", f"html must be str or bytes, not {type(html).__name__}")


@dataclass(frozen=True)
class PageLimits:
    """What one page may cost, so that no page stalls a run of a billion.

    ``max_input_bytes``: a longer page is cut to its first ``max_input_bytes`` (UTF-8) before
    parsing (Common Crawl already cuts records at 1 MiB; the dev and train pages reach 5.3 MB).
    ``max_page_tokens``: the model reads the page's first chunks up to this many tokens; blocks
    in later chunks are not classified and come out as "other". The default, 16 chunks of
    8,192 tokens, leaves every one of the 1,240 dev and train pages whole with the default
    model's tokenizer (their largest is 122,555 tokens; p99 51,267) and bounds the model's
    work on a page to 16 full chunks. None turns a limit off.
    """

    max_input_bytes: int | None = native.engine_defaults().max_input_bytes
    max_page_tokens: int | None = native.engine_defaults().max_page_tokens


DEFAULT_LIMITS = PageLimits()
# the engine's padded tokens per model batch and simplify's cut of long inline runs (the
# core's defaults, pulpie_rt_options_init)
DEFAULT_MAX_BATCH_TOKENS: int = native.engine_defaults().max_batch_tokens
DEFAULT_CUTOFF_LENGTH: int = native.engine_defaults().cutoff_length


@dataclass
class PreparedPage:
    """A page ready for the model: its blocks' ids, chunks and the map HTML to rebuild from.

    ``n_classified``: the blocks the chunks hold (the first ones); the rest were cut by
    ``PageLimits`` and ``truncated`` says what was cut (None: nothing).
    """

    item_ids: list[str | None]
    chunks: list[Chunk]
    map_html: str
    features: np.ndarray | None = None  # block_features, when the bundle has a rescorer
    truncated: str | None = None
    n_classified: int | None = None  # None: every block
    encoding: str | None = None  # what page bytes were decoded with (None: given as str)

    @property
    def n_blocks(self) -> int:
        return len(self.item_ids)


@dataclass
class PageInput:
    """One page to extract; ``page_id`` and ``metadata`` are echoed on its result."""

    html: str | bytes | None
    page_id: Any = 0
    metadata: dict | None = None
    content_type: str | None = None  # the transport's Content-Type (its charset decodes bytes)
    # precision, balanced or recall for this page (``engine.favor_settings``); None: the
    # engine's own
    favor: str | None = None


@dataclass
class PageResult:
    """One page's output: the main content as HTML and Markdown, each block's label, or
    ``error`` ("<stage>: <reason>") with empty content."""

    page_id: Any = None
    html: str = ""
    markdown: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    metadata: dict | None = None
    truncated: str | None = None  # what PageLimits cut from the page (None: nothing)
    empty_reason: str | None = None  # why ``markdown`` is empty when there is no error
    encoding: str | None = None  # what page bytes were decoded with (None: given as str)
    # what each label was decided from (the engine's; ``pulpie-rt inspect`` shows them): per
    # block id its score, the log-odds that it is main (NaN: none, a block the limits cut),
    # and the page's decision threshold in the same units (None for a failed page, or a result
    # not made by the engine); not compared (a NaN is not equal to itself)
    scores: dict[str, float] = field(default_factory=dict, repr=False, compare=False)
    threshold: float | None = field(default=None, compare=False)
    # what the page's markup says of it (schema.METADATA_FIELDS; the engine's results only)
    title: str | None = None
    authors: list[str] = field(default_factory=list)
    published: str | None = None  # ISO 8601
    modified: str | None = None  # ISO 8601
    site_name: str | None = None
    language: str | None = None  # ISO 639
    canonical_url: str | None = None
    description: str | None = None
    # content() by (format, what it drops): made once, where it is first asked for
    _rendered: dict = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def text(self) -> str:
        """Plain text of the main content (``stages.markdown.to_text``)."""
        from pulpie_rt.runtime.stages.markdown import to_text

        return to_text(self.html) if self.html else ""

    def content(self, format: str = "markdown", *, links: bool = True, images: bool = True,
                tables: bool = True) -> str:
        """The main content as ``markdown``, ``html`` or ``text``; without the links' tags
        (their text stays), the images or the tables when told (the core's ``prune`` of
        ``html``, then its Markdown or text renderer: the same content dropped in each
        format)."""
        if format not in ("markdown", "html", "text"):
            raise ValueError(f"format {format!r} is not one of markdown, html, text")
        drop = sum(native.declarations().constants[f"PULPIE_RT_DROP_{name.upper()}"]
                   for name, keep in (("links", links), ("images", images), ("tables", tables))
                   if not keep)
        if not drop or not self.html:
            return getattr(self, format)
        if (format, drop) not in self._rendered:
            pruned = native.prune(self.html, drop)
            self._rendered[format, drop] = (
                pruned if format == "html" else native.text(pruned) if format == "text"
                else native.markdown(pruned))
        return self._rendered[format, drop]

    @property
    def n_blocks(self) -> int:
        return len(self.labels)

    @property
    def n_main(self) -> int:
        # list.count: each record asks for n_main and n_other (~100 blocks a page), 2x a
        # generator's sum
        return list(self.labels.values()).count("main")

    @property
    def n_other(self) -> int:
        return self.n_blocks - self.n_main

    def __repr__(self) -> str:
        return (
            f"PageResult(page_id={self.page_id!r}, blocks={self.n_blocks}, main={self.n_main}, "
            f"other={self.n_other}, markdown_len={len(self.markdown)}"
            + (f", error={self.error!r})" if self.error else ")")
        )


# The reference's name for what ``Extractor.extract`` returns: the same type.
ExtractionResult = PageResult


class Preparer:
    """simplify -> blocks -> tokens -> chunks for one page (picklable: workers rebuild it)."""

    def __init__(
        self,
        tokenizer_path: str | Path,
        sep_id: int,
        bos_id: int | None,
        eos_id: int | None,
        max_tokens: int = 8192,
        cutoff_length: int = DEFAULT_CUTOFF_LENGTH,
        with_features: bool = False,
        limits: PageLimits = DEFAULT_LIMITS,
        with_tokens: bool = True,
        keep_hidden: bool = False,
        feature_layout: str = FEATURES_VERSION,
        drop_noscript: bool = False,
    ):
        self.tokenizer_path = str(tokenizer_path)
        self.sep_id, self.bos_id, self.eos_id = sep_id, bos_id, eos_id
        self.max_tokens = max_tokens
        self.cutoff_length = cutoff_length
        self.with_features = with_features
        self.limits = limits
        self.with_tokens = with_tokens  # False: a rescorer-only profile (no chunks)
        # True: segmented without removing hidden elements (a profile's keep_hidden)
        self.keep_hidden = keep_hidden
        # True: segmented without the noscript elements that hold no block (drop_noscript)
        self.drop_noscript = drop_noscript
        # the rescorer's (blocks-v2: with the extras; blocks-v3: and the container columns;
        # blocks-v4: and the dialog columns; blocks-v5: and the rail columns; blocks-v6: and
        # the teaser columns)
        self.feature_layout = feature_layout
        self._tokenizer = None

    @classmethod
    def from_bundle(cls, bundle, cutoff_length: int = DEFAULT_CUTOFF_LENGTH,
                    limits: PageLimits = DEFAULT_LIMITS) -> Preparer:
        """The preparer for a model bundle's tokenizer, special tokens and chunk size (and
        block features when the engine prepares them, ``Bundle.prepared_features``: a
        rescorer's, or the words an ``expected_f1`` selection reads; no tokens when its
        profile runs no transformer; hidden elements kept when its profile says
        ``keep_hidden``, noscript elements dropped when it says ``drop_noscript``)."""
        return cls(
            bundle.tokenizer_path,
            bundle.sep_id,
            bundle.bos_id,
            bundle.eos_id,
            max_tokens=bundle.max_tokens,
            cutoff_length=cutoff_length,
            with_features=bundle.prepared_features is not None,
            limits=limits,
            with_tokens=bundle.uses_transformer,
            keep_hidden=bundle.keep_hidden,
            feature_layout=bundle.feature_layout,
            drop_noscript=bundle.drop_noscript,
        )

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_tokenizer": None}

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.tokenizer_path)
        return self._tokenizer

    def prepare(self, html: str | bytes, content_type: str | None = None) -> PreparedPage:
        """decode -> cut -> simplify -> blocks -> tokens -> chunks -> limits (-> features):
        the decode stage here, the rest in the compiled core (``native.prepare_page``: the C
        library's prepare; its readable specification is ``tests/spec/prepare_spec.py``).
        ``PageError`` names the failing stage."""
        html, encoding = as_text(html, content_type)
        try:
            cutoff = operator.index(self.cutoff_length)
        except TypeError:
            cutoff = -1
        if cutoff < 0:
            raise PageError("simplify", "SimplifyError: cutoff_length must be a non-negative "
                                        f"int, not {self.cutoff_length!r}")
        tokenizer = None
        if self.with_tokens:
            try:
                tokenizer = self.tokenizer
            except Exception as exc:
                raise PageError("tokenize", describe(exc)) from exc
        try:
            page = native.prepare_page(
                tokenizer, html, self.limits.max_input_bytes, self.limits.max_page_tokens,
                cutoff, self.max_tokens, self.sep_id, self.bos_id, self.eos_id,
                self.with_features, self.keep_hidden,
                extras=self.feature_layout == FEATURES_V2,
                containers=self.feature_layout == FEATURES_V3, drop_noscript=self.drop_noscript,
                dialogs=self.feature_layout == FEATURES_V4,
                rails=self.feature_layout == FEATURES_V5,
                teasers=self.feature_layout == FEATURES_V6)
        except native.PageFailed as exc:
            stage, _, reason = str(exc).partition(": ")
            raise PageError(stage, reason) from exc
        chunks = [Chunk(token_ids, blocks)
                  for token_ids, blocks in zip(page.chunk_token_ids, page.chunk_blocks,
                                               strict=True)]
        return PreparedPage(page.item_ids, chunks, page.map_html, page.features,
                            page.truncated, page.n_classified, encoding)


class RunStats:
    """What a run did besides extracting: pages, failed pages, and every fallback it took (a
    slower or other path than the one asked for), so that a user sees when a run fell back.
    Shared by a run's threads."""

    def __init__(self) -> None:
        self.pages = 0
        self.errors = 0
        self.fallbacks: Counter[str] = Counter()
        self._lock = threading.Lock()

    def count(self, results: Sequence[PageResult]) -> None:
        with self._lock:
            self.pages += len(results)
            self.errors += sum(1 for r in results if r.error is not None)

    def fell_back(self, what: str, times: int = 1) -> None:
        """Record a fallback (logged once per kind, counted every time)."""
        with self._lock:
            first = what not in self.fallbacks
            self.fallbacks[what] += times
        if first:
            logger.warning("pulpie-rt fell back: %s", what)

    def summary(self) -> str:
        """``"N pages, E errors"`` and the fallbacks taken, for a run's last line."""
        with self._lock:
            text = f"{self.pages} pages, {self.errors} errors"
            if self.fallbacks:
                text += "; fell back: " + ", ".join(
                    f"{what} ({n}x)" for what, n in sorted(self.fallbacks.items()))
        return text


def _decide(page: PreparedPage, chunk_outputs: list[np.ndarray], margins: bool,
            threshold: float | None, keep_best: bool, rescorer, expected_f1: bool = False
            ) -> list[int]:
    if rescorer is not None and rescorer.core is None:
        return _decide_in_context(page, threshold, keep_best, rescorer, expected_f1)
    return native.decide_blocks(
        page.n_blocks, [c.block_indices for c in page.chunks], chunk_outputs,
        rescorer=None if rescorer is None else rescorer.core, features=page.features,
        n_classified=page.n_classified, margins=margins, threshold=threshold,
        keep_best=keep_best, expected_f1=expected_f1)


def _decide_in_context(page: PreparedPage, threshold: float | None, keep_best: bool,
                       rescorer, expected_f1: bool = False) -> list[int]:
    """A rescorer that reads blocks in context (the default model's ``fast`` profile, no
    transformer): its scores are computed first (``rescore.BlockRescorer.log_odds``: the
    core's ``ContextRescorer``, the C library's engine runs the same), then the core decides
    the page from them as it does from margins: one
    "chunk" holding every block, the blocks the limits cut without a score."""
    import numpy as np
    if page.chunks:
        raise ValueError("a rescorer that reads blocks in context runs without the "
                         "transformer (a rescorer-only profile)")
    if page.features is None:
        raise ValueError("the bundle has a rescorer but the page has no block features "
                         "(prepared without Preparer.from_bundle?)")
    scores = rescorer.log_odds(page.features).astype(np.float32)
    if page.n_classified is not None:
        scores[page.n_classified:] = np.nan  # cut by the limits: "other"
    return native.decide_blocks(page.n_blocks, [list(range(page.n_blocks))], [scores],
                                features=page.features, margins=True, threshold=threshold,
                                keep_best=keep_best, expected_f1=expected_f1)


def _rescore_error(exc: Exception) -> PageError:
    """The page's error for a failed decoding: the core's ``"rescore: …"`` as it is."""
    if isinstance(exc, native.DecodeError):
        return PageError("rescore", str(exc).removeprefix("rescore: "))
    return PageError("rescore", describe(exc))


def decide_blocks(page: PreparedPage, chunk_margins: list[np.ndarray], threshold: float | None,
                  keep_best: bool, rescorer=None) -> list[int]:
    """A bundle's own decoding of one page from its chunks' SEP margins (or ``[n_sep,
    labels]`` logits): per-block scores (the margins, or the rescorer's scores when the bundle
    has one) above ``threshold`` (None: 0) are main, and with ``keep_best`` a page without any
    main block keeps its best-scoring one. In the core (``native.decide_blocks``); raises
    ``native.DecodeError`` (``"rescore: …"``) where the page cannot be decoded."""
    return _decide(page, chunk_margins, True, threshold, keep_best, rescorer)


EMPTY_NO_TEXT = "the page has no visible text"
EMPTY_NO_MAIN = "no block was labelled main"
EMPTY_MAIN_WITHOUT_TEXT = "the blocks labelled main hold no text"


# why an empty result is empty, by native.finish_page's code
_EMPTY_REASONS = {native.EMPTY_NONE: None, native.EMPTY_NO_TEXT: EMPTY_NO_TEXT,
                  native.EMPTY_NO_MAIN: EMPTY_NO_MAIN,
                  native.EMPTY_MAIN_WITHOUT_TEXT: EMPTY_MAIN_WITHOUT_TEXT}


def _finish(page: PreparedPage, predictions: list[int]) -> PageResult:
    """labels -> main HTML -> Markdown; ``PageError`` names the failing stage.

    A page without blocks (plain text, text outside any element the segmentation keeps) has
    nothing to label: its whole visible text is its main content, one paragraph a line. An
    empty result says why it is empty (``empty_reason``). Reconstruct and Markdown run in the
    compiled core (``native.finish_page``: the C library's finish); its readable
    specification is ``tests/spec/finish_spec.py``.
    """
    whole_text = page.n_blocks == 0
    labels = {} if whole_text else labels_from_predictions(page.item_ids, predictions)
    if not isinstance(page.map_html, str):
        stage, name = ("markdown", "html") if whole_text else ("reconstruct", "map_html")
        raise PageError(stage, f"TypeError: {name} must be str, not "
                               f"{type(page.map_html).__name__}")
    try:
        main_html, markdown, empty = native.finish_page(page.map_html, labels, whole_text)
    except native.FinishError as exc:
        stage, _, reason = str(exc).partition(": ")
        raise PageError(stage, reason) from exc
    return PageResult(html=main_html, markdown=markdown, labels=labels,
                      truncated=page.truncated, empty_reason=_EMPTY_REASONS[empty],
                      encoding=page.encoding)


def prepare(preparer: Preparer, html: str | bytes | None, content_type: str | None = None
            ) -> PreparedPage | str:
    """decode -> simplify -> blocks -> tokens -> chunks for one page, or the page's error
    string."""
    try:
        return preparer.prepare(html, content_type)
    except PageError as exc:
        return str(exc)
    except Exception as exc:  # a bug of ours: still only this page fails
        return f"prepare: {describe(exc)}"


def finish(page: PreparedPage, predictions: list[int]) -> PageResult | str:
    """labels -> reconstruct -> Markdown for one page, or the page's error string."""
    try:
        return _finish(page, predictions)
    except PageError as exc:
        return str(exc)
    except Exception as exc:  # a bug of ours: still only this page fails
        return f"finish: {describe(exc)}"


def failure_of(prepared: PreparedPage | str, predictions) -> str | None:
    """A page's error when it failed before finishing (in ``prepare`` or in inference)."""
    if isinstance(prepared, str):
        return prepared
    if isinstance(predictions, PageError):
        return str(predictions)
    return None


def result_for(page: PageInput, outcome: PageResult | PageError | str) -> PageResult:
    """``page``'s result: ``outcome`` with the page's id and metadata, or its error."""
    if isinstance(outcome, PageResult):
        outcome.page_id, outcome.metadata = page.page_id, page.metadata
        return outcome
    return PageResult(page.page_id, error=str(outcome), metadata=page.metadata)
