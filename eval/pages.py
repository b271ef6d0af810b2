"""Which pages a measurement runs on: the corpus (``pulpie_rt.corpus``), its ground-truth
and calibration subsets, or the user's own files (read by ``pulpie_rt.runtime.io``, the same
readers ``pulpie-rt run`` uses), evenly spread when fewer are asked for."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from pulpie_rt.corpus import load_pages

# The dev corpus's pages whose references are Readability.js's expected output: the default
# model's calibration pages (no training page, no ground-truth page).
CALIBRATION_SOURCE = "mozilla/readability"


def spread(items: Sequence, n: int | None) -> list:
    """``n`` items evenly spaced over ``items`` (all when ``n`` is None or too large).

    The corpus is ordered by source, so the first ``n`` pages would all be readability
    fixtures; an even spread keeps every source in a small subset.
    """
    if n is None or n >= len(items):
        return list(items)
    if n <= 0:
        return []
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def read_input_pages(paths: Iterable[str | Path], html_field: str = "html") -> list[dict]:
    """``{"id", "html"}`` of every usable page of the user's files (JSONL[.gz], WARC[.gz],
    Parquet); a record that is not a page stops the benchmark with its reason."""
    from pulpie_rt.runtime.io import check_inputs, iter_inputs
    from pulpie_rt.runtime.stages.decode import decode_input

    files = [Path(p) for p in paths]
    check_inputs(files)
    pages = []
    for page in iter_inputs(files, html_field=html_field):
        if page.error is not None:
            raise ValueError(page.error)
        # WARC records are bytes: decoded as the run decodes them (the reference takes str)
        pages.append({"id": page.id, "html": decode_input(page.html, page.content_type)[0]})
    return pages


def bench_pages(n: int | None = None, inputs: Sequence[str] | None = None,
                corpus: str = "dev") -> list[dict]:
    """``n`` real pages (evenly spread): the user's files if given, else the corpus ``corpus``.

    ``corpus`` may join names with '+' ("dev+train") to draw from several files in order.
    """
    if inputs:
        pages = read_input_pages(inputs)
    else:
        pages = [page for name in corpus.split("+") for page in load_pages(name)]
    return spread(pages, n)


def groundtruth_pages(limit: int | None = None, corpus: str = "dev") -> list[dict]:
    """The corpus pages with a ground-truth reference (``limit``: evenly spread subset)."""
    pages = [p for p in load_pages(corpus) if p.get("reference_kind") == "groundtruth"
             and isinstance(p.get("reference"), str)]
    return spread(pages, limit)


# Mozilla's hand-written test cases among the readability pages (a paragraph or two of
# lorem ipsum around the markup under test), as against its saved news and blog pages: each
# saved page holds over 10,000 characters of HTML; each test case under 5,000, but one whose
# lorem ipsum sits beside an inline data-URL image
FIXTURE_MAX_HTML_CHARS = 5_000


# the two kinds of readability page, scored apart (bench.quality, train.fast)
READABILITY_KINDS = ("articles", "test cases")


def is_readability_fixture(page: dict) -> bool:
    """Whether a ``calibration_pages`` page is one of Readability.js's hand-written test
    cases rather than a saved article: under ``FIXTURE_MAX_HTML_CHARS`` characters of HTML, or
    a reference in lorem ipsum."""
    return (len(page["html"]) < FIXTURE_MAX_HTML_CHARS
            or "lorem ipsum" in page["reference"].lower())


def readability_kind(page: dict) -> str:
    """A readability page's kind of ``READABILITY_KINDS``."""
    return READABILITY_KINDS[is_readability_fixture(page)]


def references_of_kinds(pages: Iterable[dict], kinds: Sequence[str],
                        kind_of: Callable[[dict], str]) -> dict[str, dict[str, str]]:
    """The references of ``pages`` (by id) under each of ``kinds``, in that order, each page
    under ``kind_of(page)`` (a kind none of them is: empty)."""
    by_kind: dict[str, dict[str, str]] = {kind: {} for kind in kinds}
    for page in pages:
        by_kind[kind_of(page)][page["id"]] = page["reference"]
    return by_kind


def references_by_kind(pages: list[dict]) -> dict[str, dict[str, str]]:
    """The references of readability ``pages`` (by id) under each of ``READABILITY_KINDS``, in
    that order (a kind none of them is: empty)."""
    return references_of_kinds(pages, READABILITY_KINDS, readability_kind)


def calibration_pages() -> list[dict]:
    """The dev pages the default model's decoding is calibrated on (``CALIBRATION_SOURCE``)."""
    return [p for p in load_pages("dev")
            if p["source"] == CALIBRATION_SOURCE and isinstance(p.get("reference"), str)]
