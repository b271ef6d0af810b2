"""The specification of the block rescorer, in Python on onnxruntime's own Python API: the
compiled core (``core/src/ort/rescorer.rs``), which ``runtime.stages.rescore.BlockRescorer``
runs on, gives the same log-odds and scores; ``tests/test_rescore.py`` compares the two.

A block's score is the ensemble's log-odds of "main" (from its float32 probability clipped to
[1e-7, 1 - 1e-7], in float64, then float32) plus ``margin_weight`` times the transformer's
margin at the block's SEP (a block without a margin, NaN, is scored by the ensemble alone).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class SpecRescorer:
    """One onnxruntime session over ``rescorer.onnx`` (CPU, one thread)."""

    def __init__(self, onnx_path: str | Path, margin_weight: float):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx_path), options,
                                            providers=["CPUExecutionProvider"])
        self.input_name = self.session.get_inputs()[0].name
        self.margin_weight = float(margin_weight)

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        (probabilities,) = self.session.run(
            ["probabilities"], {self.input_name: np.ascontiguousarray(features, np.float32)})
        return probabilities

    def log_odds(self, features: np.ndarray) -> np.ndarray:
        """The ensemble's log-odds of "main" per row of ``features``."""
        if len(features) == 0:
            return np.zeros(0, dtype=np.float32)
        p = np.clip(self.probabilities(features)[:, 1].astype(np.float64), 1e-7, 1 - 1e-7)
        return np.log(p / (1 - p)).astype(np.float32)

    def scores(self, features: np.ndarray, margins: np.ndarray) -> np.ndarray:
        """Per block: log-odds + ``margin_weight`` x margin (NaN margins count as 0)."""
        return self.log_odds(features) + self.margin_weight * np.nan_to_num(margins, nan=0.0)
