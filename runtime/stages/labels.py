"""Labels: model outputs at SEP positions -> one label per block -> ``{item_id: label}``.

Exactly the reference's rules, quirks included:

- a chunk's predictions are the argmax of the logits at *every* SEP id in the chunk, in order
  (a literal ``<|sep|>`` inside page text is a SEP too and shifts the rest of the chunk);
- prediction ``j`` goes to the chunk's ``j``-th block; blocks left without one stay 0 (other);
- prediction 1 is "main", anything else "other"; blocks without an item id get no label, and a
  repeated item id keeps its first position in the dict with the last block's label.

``keep_best_block`` is not the reference's: a bundle opts in to it (see ``runtime.bundle``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MAIN, OTHER = "main", "other"


def sep_positions(token_ids: np.ndarray, sep_id: int) -> np.ndarray:
    """Indices of the SEP tokens of one unpadded row."""
    return np.flatnonzero(np.asarray(token_ids) == sep_id)


def argmax_labels(sep_logits: np.ndarray) -> list[int]:
    """Class index per SEP row of logits (first maximum on ties, as torch)."""
    if len(sep_logits) == 0:
        return []
    return np.asarray(sep_logits).argmax(axis=-1).tolist()


def block_predictions(
    n_blocks: int, chunk_block_indices: Sequence[Sequence[int]], chunk_preds: Sequence[list[int]]
) -> list[int]:
    """One prediction per block from each chunk's SEP predictions (0 where a chunk ran short)."""
    predictions = [0] * n_blocks
    for block_indices, preds in zip(chunk_block_indices, chunk_preds, strict=True):
        for block_index, pred in zip(block_indices, preds, strict=False):
            predictions[block_index] = pred
    return predictions


def sep_margins(sep_logits: np.ndarray) -> np.ndarray:
    """logit(main) - logit(other) per SEP row."""
    logits = np.asarray(sep_logits, dtype=np.float32)
    if len(logits) == 0:
        return np.zeros(0, dtype=np.float32)
    return logits[:, 1] - logits[:, 0]


def margin_labels(margins: np.ndarray, threshold: float) -> list[int]:
    """1 where the margin is above ``threshold`` (a bundle's ``main_margin``), else 0."""
    return (np.asarray(margins) > threshold).astype(int).tolist()


def block_margins(
    n_blocks: int, chunk_block_indices: Sequence[Sequence[int]],
    chunk_margins: Sequence[np.ndarray]
) -> np.ndarray:
    """One margin per block, mapped exactly as ``block_predictions`` maps predictions (NaN
    where a chunk ran short)."""
    margins = np.full(n_blocks, np.nan, dtype=np.float32)
    for block_indices, values in zip(chunk_block_indices, chunk_margins, strict=True):
        count = min(len(block_indices), len(values))
        margins[list(block_indices[:count])] = values[:count]
    return margins


def keep_best_block(predictions: list[int], scores: np.ndarray) -> list[int]:
    """``predictions`` with the block of the highest score made main when no block is.

    ``scores`` has one value per block (NaN: none); a page without any score is left alone.
    """
    if 1 in predictions or len(scores) == 0 or np.isnan(scores).all():
        return predictions
    kept = list(predictions)
    kept[int(np.nanargmax(scores))] = 1
    return kept


def labels_from_predictions(
    item_ids: Sequence[str | None], predictions: Sequence[int]
) -> dict[str, str]:
    """``{item_id: "main"|"other"}`` in block order."""
    labels: dict[str, str] = {}
    for item_id, pred in zip(item_ids, predictions, strict=True):
        if item_id is not None:
            labels[item_id] = MAIN if pred == 1 else OTHER
    return labels
