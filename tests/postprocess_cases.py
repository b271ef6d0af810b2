"""Reconstruction and Markdown of every real dev page, computed once per test session.

Pages go through our own ``simplify`` (the reference's map_html is not available in CI without
running the reference); the label sets and the reference's output hashes come from
``tests/golden/prepost.json.gz`` (``make golden``).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from functools import lru_cache
from pathlib import Path

from pulpie_rt.corpus import load_pages

GOLDEN = Path(__file__).parent / "golden" / "prepost.json.gz"
LABEL_SETS = ("all_main", "all_other", "alternating")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def label_set(name: str, item_ids: list[str]) -> dict[str, str]:
    if name == "all_main":
        return {i: "main" for i in item_ids}
    if name == "all_other":
        return {i: "other" for i in item_ids}
    return {i: ("main" if int(i) % 2 else "other") for i in item_ids}


@lru_cache(maxsize=1)
def golden() -> dict:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as fh:
        return json.load(fh)


@lru_cache(maxsize=1)
def map_htmls() -> tuple[tuple[str, str], ...]:
    """``(page_id, map_html)`` of every dev page, from our ``simplify``."""
    from pulpie_rt.runtime.simplify import simplify

    return tuple((p["id"], simplify(p["html"])[1]) for p in load_pages("dev"))


@lru_cache(maxsize=1)
def main_htmls() -> dict[tuple[str, str], str]:
    """``{(page_id, label_set): main_html}`` by our ``extract_main_html``."""
    from pulpie_rt.runtime.reconstruct import extract_main_html

    out = {}
    for page_id, map_html in map_htmls():
        item_ids = golden()[page_id]["item_ids"]
        for name in LABEL_SETS:
            out[(page_id, name)] = extract_main_html(map_html, label_set(name, item_ids))
    return out
