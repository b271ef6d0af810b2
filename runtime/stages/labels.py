"""Labels: model outputs at SEP positions -> one label per block -> ``{item_id: label}``.

The decoding itself (SEP logits -> one prediction per block: the reference's argmax at every
SEP, or a bundle's own margins, threshold, rescorer and ``keep_best_block``) runs in the
compiled core (``core/src/engine/decode.rs``, ``native.decide_blocks``), the one
implementation the C library's engine runs too; ``runtime.flow.pages`` calls it.
``tests/spec/labels_spec.py`` is its readable specification, with the reference's rules and
quirks.

This module keeps what the Python API hands out: the label names, the margins a caller reads
from SEP logits (``sep_margins``, for the tools in ``eval.margins``), and the
``{item_id: label}`` dict (a repeated item id keeps its first position with the last block's
label; blocks without an item id get no label).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

MAIN, OTHER = "main", "other"


def sep_positions(token_ids: np.ndarray, sep_id: int) -> np.ndarray:
    """Indices of the SEP tokens of one unpadded row."""
    import numpy as np
    return np.flatnonzero(np.asarray(token_ids) == sep_id)


def sep_margins(sep_logits: np.ndarray) -> np.ndarray:
    """logit(main) - logit(other) per SEP row."""
    import numpy as np
    logits = np.asarray(sep_logits, dtype=np.float32)
    if len(logits) == 0:
        return np.zeros(0, dtype=np.float32)
    return logits[:, 1] - logits[:, 0]


def labels_from_predictions(
    item_ids: Sequence[str | None], predictions: Sequence[int]
) -> dict[str, str]:
    """``{item_id: "main"|"other"}`` in block order."""
    labels: dict[str, str] = {}
    for item_id, pred in zip(item_ids, predictions, strict=True):
        if item_id is not None:
            labels[item_id] = MAIN if pred == 1 else OTHER
    return labels
