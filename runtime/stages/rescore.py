"""The bundle's block rescorer: block features and the transformer's margins -> one score per
block.

A bundle may carry a rescorer (``manifest.rescorer``, see ``runtime.bundle``): a
gradient-boosted tree ensemble over ``runtime.features.block_features`` saved as ONNX
(``ai.onnx.ml`` tree operators, run by onnxruntime like the model, so it needs no other
library). A block's score is the ensemble's log-odds plus ``margin_weight`` times the
transformer's margin at the block's SEP; the bundle's ``main_margin`` is then the threshold on
that score. Only the embedded default model has one; the Orange bundles decide by the
transformer alone, as the reference does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pulpie_rt.runtime.stages.features import FEATURES_VERSION, N_FEATURES


class RescorerError(ValueError):
    """A rescorer that this runtime cannot run (unknown feature layout, bad file)."""


class BlockRescorer:
    """One onnxruntime session over ``rescorer.onnx`` (CPU; it is small)."""

    def __init__(self, onnx_path: str | Path, margin_weight: float, features: str):
        if features != FEATURES_VERSION:
            raise RescorerError(f"{onnx_path}: rescorer reads features {features!r}, this "
                                f"runtime computes {FEATURES_VERSION!r}")
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx_path), options,
                                            providers=["CPUExecutionProvider"])
        self.input_name = self.session.get_inputs()[0].name
        outputs = [o.name for o in self.session.get_outputs()]
        if "probabilities" not in outputs:
            raise RescorerError(f"{onnx_path}: no 'probabilities' output (has {outputs})")
        self.margin_weight = float(margin_weight)

    def log_odds(self, features: np.ndarray) -> np.ndarray:
        """The ensemble's log-odds of "main" per row of ``features``."""
        if len(features) == 0:
            return np.zeros(0, dtype=np.float32)
        if features.shape[1] != N_FEATURES:
            raise RescorerError(f"features have {features.shape[1]} columns, the rescorer "
                                f"reads {N_FEATURES}")
        (probabilities,) = self.session.run(
            ["probabilities"], {self.input_name: np.ascontiguousarray(features, np.float32)})
        p = np.clip(probabilities[:, 1].astype(np.float64), 1e-7, 1 - 1e-7)
        return np.log(p / (1 - p)).astype(np.float32)

    def scores(self, features: np.ndarray, margins: np.ndarray) -> np.ndarray:
        """Per block: log-odds + ``margin_weight`` x margin (a block without a margin, NaN,
        is scored by the ensemble alone)."""
        return self.log_odds(features) + self.margin_weight * np.nan_to_num(margins, nan=0.0)


_RESCORER_CACHE: dict[tuple[str, float, str], BlockRescorer] = {}  # one session per file


def load_rescorer(onnx_path: str | Path, margin_weight: float, features: str) -> BlockRescorer:
    """The (cached) rescorer of a bundle."""
    key = (str(onnx_path), float(margin_weight), features)
    if key not in _RESCORER_CACHE:
        _RESCORER_CACHE[key] = BlockRescorer(onnx_path, margin_weight, features)
    return _RESCORER_CACHE[key]
