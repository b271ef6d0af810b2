"""A page's block feature rows as the default model's rescorers read them, for the tools that
run the rescorers apart from the engine (``parity.trees``, ``bench.trees``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.features import FEATURES_V3, FEATURES_VERSION, block_features
from pulpie_rt.runtime.stages.simplify import simplify

if TYPE_CHECKING:
    import numpy as np


def page_rows(html: str) -> tuple[np.ndarray, np.ndarray]:
    """One page's ``blocks-v3`` (the fast profile's) and ``blocks-v1`` (the accurate
    profile's rescorer) rows, segmented as the fast profile segments it."""
    simplified, map_html = simplify(html, keep_hidden=True, drop_noscript=True)
    _, item_ids = extract_blocks(simplified)
    return (block_features(map_html, item_ids, FEATURES_V3),
            block_features(map_html, item_ids, FEATURES_VERSION))
