"""What the Ray Data and datatrove tests share: the real dev pages they run, and what
``Extractor`` (the embedded default model) makes of each, computed once per test run.

The tests take every 4th dev page of at most 40,000 characters (real pages, a few seconds of
model time on 2 cores); ``PULPIE_RT_INTEGRATION_PAGES=all`` takes all 254 dev pages instead.
"""

from __future__ import annotations

import os
from functools import lru_cache

from pulpie_rt.corpus import load_pages

SUBSET_STEP = 4
SUBSET_MAX_CHARS = 40_000
# Rows a wrong integration mishandles: markup with no content in it, and no page at all.
GARBAGE_HTML = "<<<\x00>>> &#xZZ; </p></div><div <!-- \x7f\x7f\ufffd"


@lru_cache(maxsize=1)
def integration_pages() -> tuple[dict, ...]:
    """``{id, html}`` of the dev pages the integration tests run."""
    pages = load_pages("dev")
    if os.environ.get("PULPIE_RT_INTEGRATION_PAGES") != "all":
        pages = [p for p in pages if len(p["html"]) <= SUBSET_MAX_CHARS][::SUBSET_STEP]
    return tuple({"id": p["id"], "html": p["html"]} for p in pages)


@lru_cache(maxsize=1)
def extractor_results() -> dict[str, tuple[str, int, int, str | None]]:
    """``Extractor()``'s ``(markdown, n_main, n_other, error)`` by page id, for the pages and
    the garbage row."""
    from pulpie_rt import Extractor

    pages = [*integration_pages(), {"id": "garbage", "html": GARBAGE_HTML}]
    results = Extractor().extract_batch([p["html"] for p in pages])
    return {p["id"]: (r.markdown, r.n_main, r.n_other, r.error)
            for p, r in zip(pages, results, strict=True)}
