"""The label assignments parity checks reconstruct with: every block main, every block other,
and alternating (odd ids main). One definition for the golden files, the tests and the
whole-corpus comparisons."""

from __future__ import annotations

from pulpie_rt.runtime.constants import ITEM_ID_RE

LABEL_SETS = ("all_main", "all_other", "alternating")


def label_set(name: str, item_ids: list[str]) -> dict[str, str]:
    """One of ``LABEL_SETS`` over ``item_ids``."""
    if name == "all_main":
        return dict.fromkeys(item_ids, "main")
    if name == "all_other":
        return dict.fromkeys(item_ids, "other")
    if name == "alternating":
        return {i: ("main" if int(i) % 2 else "other") for i in item_ids}
    raise ValueError(f"unknown label set {name!r} (one of {', '.join(LABEL_SETS)})")


def label_sets(item_ids: list[str]) -> dict[str, dict[str, str]]:
    """Every label set over ``item_ids``, by name."""
    return {name: label_set(name, item_ids) for name in LABEL_SETS}


def item_ids_of(simplified_html: str) -> list[str]:
    """The block ids of simplified HTML, in order."""
    return ITEM_ID_RE.findall(simplified_html)
