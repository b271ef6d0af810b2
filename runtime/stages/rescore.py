"""The bundle's block rescorer: block features and the transformer's margins -> one score per
block.

A bundle may carry a rescorer (``manifest.rescorer``, see ``runtime.model.bundle``): a
gradient-boosted tree ensemble over ``runtime.stages.features.block_features`` saved as ONNX
(``ai.onnx.ml`` tree operators). A block's score is the ensemble's log-odds plus
``margin_weight`` times the transformer's margin at the block's SEP; the bundle's
``main_margin`` is then the threshold on that score. Only the embedded default model has one;
the Orange bundles decide by the transformer alone, as the reference does.

The ensemble runs in the compiled core (``core/src/ort/rescorer.rs``: ONNX Runtime's C API,
the C library's rescorer too), and ``runtime.flow.pages`` decodes a page with it in the core
(``native.decide_blocks``). ``tests/spec/rescore_spec.py`` is the specification, on
onnxruntime's Python API.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pulpie_rt.runtime import native
from pulpie_rt.runtime.stages.features import FEATURES_VERSION, N_FEATURES


class RescorerError(ValueError):
    """A rescorer that this runtime cannot run (unknown feature layout, bad file)."""


class BlockRescorer:
    """One ONNX Runtime session over ``rescorer.onnx`` in the core (CPU, one thread each way:
    the trees are small); threads may share it."""

    def __init__(self, onnx_path: str | Path, margin_weight: float, features: str):
        if features != FEATURES_VERSION:
            raise RescorerError(f"{onnx_path}: rescorer reads features {features!r}, this "
                                f"runtime computes {FEATURES_VERSION!r}")
        try:
            self.core = native.CoreRescorer(onnx_path, margin_weight)
        except native.CoreError as exc:
            raise RescorerError(f"{onnx_path}: {exc}") from exc
        self.margin_weight = float(margin_weight)

    def _run(self, features: np.ndarray, margins: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        features = np.asarray(features, np.float32)
        if not len(features):
            return np.zeros((0, 2), np.float32), np.zeros(0, np.float32), np.zeros(0, np.float32)
        if features.shape[1] != N_FEATURES:
            raise RescorerError(f"features have {features.shape[1]} columns, the rescorer "
                                f"reads {N_FEATURES}")
        if margins is None:
            margins = np.zeros(len(features), np.float32)
        try:
            return self.core.run(features, margins)
        except native.CoreError as exc:
            raise RescorerError(str(exc)) from exc

    def log_odds(self, features: np.ndarray) -> np.ndarray:
        """The ensemble's log-odds of "main" per row of ``features``."""
        return self._run(features)[1]

    def scores(self, features: np.ndarray, margins: np.ndarray) -> np.ndarray:
        """Per block: log-odds + ``margin_weight`` x margin (a block without a margin, NaN,
        is scored by the ensemble alone)."""
        return self._run(features, margins)[2]


_RESCORER_CACHE: dict[tuple[str, float, str], BlockRescorer] = {}  # one session per file


def load_rescorer(onnx_path: str | Path, margin_weight: float, features: str) -> BlockRescorer:
    """The (cached) rescorer of a bundle."""
    key = (str(onnx_path), float(margin_weight), features)
    if key not in _RESCORER_CACHE:
        _RESCORER_CACHE[key] = BlockRescorer(onnx_path, margin_weight, features)
    return _RESCORER_CACHE[key]
