"""Flat batches for the parity tools and tests that feed the core's ONNX Runtime layer and
onnxruntime's Python API the same padded rows (``parity/ort_core_parity.py``,
``tests/test_ort_core.py``). Not a door: the engine batches inside the core.

A batch is flat, as in text-embeddings-inference: the rows' token ids concatenated, their
position ids, and ``cumulative_seq_lengths``; ``padded`` makes the rectangle both sides run.
The grouping is the core's (``native.plan_batches``, the engine's batcher).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from pulpie_rt.runtime import native

# Sequence-length buckets: a batch is padded to the smallest that holds its longest chunk. The
# TensorRT engine builder (``export.profiles``) makes one optimisation profile per bucket.
# the engine's (the core defines them: core/src/ort/batches.rs)
SEQ_BUCKETS: tuple[int, ...] = native.seq_buckets()
DEFAULT_MAX_BATCH_TOKENS: int = native.engine_defaults().max_batch_tokens
# rows * length**2 cap for engines whose attention materialises [rows, heads, L, L] scores
# (ONNX Runtime's eager graph): as much memory as one full 8192-token chunk, no more.
DEFAULT_MAX_BATCH_ATTENTION: int = native.max_batch_attention()


@dataclass(frozen=True)
class Bucket:
    """Rows of at most ``max_length`` tokens, at most ``max_rows`` per batch (None: no cap)."""

    max_length: int
    max_rows: int | None = None


@dataclass
class Batch:
    """A flat batch of token sequences; ``keys[i]`` tells the caller whose row ``i`` is."""

    keys: list[Hashable]
    input_ids: np.ndarray  # int64 [total_tokens]
    position_ids: np.ndarray  # int64 [total_tokens]
    cumulative_seq_lengths: np.ndarray  # int64 [rows + 1]
    bucket: Bucket

    @property
    def rows(self) -> int:
        return len(self.keys)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.cumulative_seq_lengths)

    @property
    def max_length(self) -> int:
        return int(self.lengths.max()) if self.rows else 0

    def row(self, index: int) -> np.ndarray:
        """Token ids of row ``index`` (no padding)."""
        start, end = self.cumulative_seq_lengths[index], self.cumulative_seq_lengths[index + 1]
        return self.input_ids[start:end]

    def padded(self, pad_id: int, length: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(input_ids, attention_mask)`` as ``[rows, length]`` int64, right-padded."""
        length = length or self.max_length
        ids = np.full((self.rows, length), pad_id, dtype=np.int64)
        mask = np.zeros((self.rows, length), dtype=np.int64)
        for index, n in enumerate(self.lengths):
            ids[index, :n] = self.row(index)
            mask[index, :n] = 1
        return ids, mask

    def padded_positions(self, length: int | None = None) -> np.ndarray:
        """``position_ids`` as ``[rows, length]`` int64, right-padded with 0."""
        length = length or self.max_length
        positions = np.zeros((self.rows, length), dtype=np.int64)
        starts = self.cumulative_seq_lengths
        for index, n in enumerate(self.lengths):
            positions[index, :n] = self.position_ids[starts[index]:starts[index] + n]
        return positions


def as_buckets(bounds: Iterable[int | Bucket] | None) -> list[Bucket]:
    """Sorted buckets from lengths or ``Bucket``s (``SEQ_BUCKETS`` when None)."""
    items = SEQ_BUCKETS if bounds is None else bounds
    return sorted(
        (b if isinstance(b, Bucket) else Bucket(int(b)) for b in items),
        key=lambda b: b.max_length,
    )


def make_batch(keys: list[Hashable], sequences: list[Sequence[int]], bucket: Bucket) -> Batch:
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    cumulative = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=cumulative[1:])
    input_ids = (
        np.concatenate([np.asarray(s, dtype=np.int64) for s in sequences])
        if sequences
        else np.zeros(0, dtype=np.int64)
    )
    position_ids = np.arange(int(cumulative[-1]), dtype=np.int64) - np.repeat(
        cumulative[:-1], lengths
    )
    return Batch(list(keys), input_ids, position_ids, cumulative, bucket)


def make_batches(
    items: Iterable[tuple[Hashable, Sequence[int]]],
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    buckets: Iterable[int | Bucket] | None = None,
    max_batch_attention: int | None = None,
    padded: bool = True,
) -> list[Batch]:
    """Group ``(key, token_ids)`` items into batches, shortest first.

    The token budget counts what the engine computes: ``rows * longest <= max_batch_tokens``
    for a backend that pads every row to the longest (``Backend.is_padded()``), the sum of the
    rows' lengths for one that does not. Within a batch also ``rows * longest**2 <=
    max_batch_attention`` (when given) and ``rows <= bucket.max_rows`` (a single row over a
    budget is allowed: it must run somehow); rows of one batch share a bucket.

    The grouping runs in the compiled core (``core/src/ort/batches.rs``, the C library's
    batcher too); ``tests/spec/batches_spec.py`` is its specification in Python.
    """
    item_list = list(items)
    bucket_list = as_buckets(buckets)
    plans = native.plan_batches([len(sequence) for _, sequence in item_list], max_batch_tokens,
                                [(b.max_length, b.max_rows) for b in bucket_list],
                                max_batch_attention, padded)
    batches = []
    for rows, max_length, max_rows in plans:
        chosen = [item_list[i] for i in rows.tolist()]
        batches.append(make_batch([key for key, _ in chosen], [seq for _, seq in chosen],
                                  Bucket(max_length, max_rows)))
    return batches


def sep_logits(
    logits: np.ndarray, input_ids: np.ndarray, lengths: np.ndarray, sep_id: int
) -> list[np.ndarray]:
    """Per row of a padded ``[rows, length, labels]`` output, the logits at its SEP tokens."""
    out = []
    for row, n in enumerate(lengths):
        positions = np.flatnonzero(input_ids[row, :n] == sep_id)
        out.append(np.asarray(logits[row, positions], dtype=np.float32))
    return out
