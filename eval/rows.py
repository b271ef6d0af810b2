"""A page's block feature rows as the default model's rescorers read them, for the tools that
run the rescorers apart from the engine (``parity.trees``, ``bench.trees``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.features import FEATURES_VERSION, block_features
from pulpie_rt.runtime.stages.simplify import simplify

if TYPE_CHECKING:
    import numpy as np


def fast_layout() -> str:
    """The layout the embedded default model's fast profile reads (its manifest's)."""
    from pulpie_rt.runtime.model.bundle import load_bundle
    from pulpie_rt.runtime.model.resolve import embedded_model_dir

    return load_bundle(embedded_model_dir(), "fast").feature_layout


def page_rows(html: str, fast: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One page's rows in ``fast`` (the fast profile's layout, ``fast_layout()`` when None)
    and ``blocks-v1`` (the accurate profile's rescorer's), segmented as the fast profile
    segments it."""
    simplified, map_html = simplify(html, keep_hidden=True, drop_noscript=True)
    _, item_ids = extract_blocks(simplified)
    return (block_features(map_html, item_ids, fast or fast_layout()),
            block_features(map_html, item_ids, FEATURES_VERSION))
