"""Reconstruction and Markdown of every real dev page, computed once per test session.

Pages go through our own ``simplify`` (the reference's map_html is not available in CI without
running the reference); the label sets and the reference's output hashes come from
``tests/golden/prepost.json.gz`` (``make golden``).
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

from parity.label_sets import LABEL_SETS, label_set
from pulpie_rt.corpus import load_pages

GOLDEN = Path(__file__).parent / "golden" / "prepost.json.gz"


@lru_cache(maxsize=1)
def golden() -> dict:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as fh:
        return json.load(fh)


@lru_cache(maxsize=1)
def map_htmls() -> tuple[tuple[str, str], ...]:
    """``(page_id, map_html)`` of every dev page, from our ``simplify``."""
    from pulpie_rt.runtime.stages.simplify import simplify

    return tuple((p["id"], simplify(p["html"])[1]) for p in load_pages("dev"))


@lru_cache(maxsize=1)
def main_htmls() -> dict[tuple[str, str], str]:
    """``{(page_id, label_set): main_html}`` by our ``extract_main_html``."""
    from pulpie_rt.runtime.stages.reconstruct import extract_main_html

    out = {}
    for page_id, map_html in map_htmls():
        item_ids = golden()[page_id]["item_ids"]
        for name in LABEL_SETS:
            out[(page_id, name)] = extract_main_html(map_html, label_set(name, item_ids))
    return out
