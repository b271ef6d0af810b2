"""The specification of the one batcher, in Python: the compiled core
(``core/src/ort/batches.rs``' ``plan_batches``), which ``runtime.stages.batches.make_batches``
and the C library's engine call, groups chunks the same way; ``tests/test_batches.py``
compares the two on the chunks of the dev pages.

Chunks are sorted by length and cut greedily so that ``rows * longest_row`` (or, for an
engine that does not pad, the sum of the lengths) stays within ``max_batch_tokens``, within
``max_batch_attention`` and the bucket's ``max_rows``, and no batch crosses a bucket boundary.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

from pulpie_rt.runtime.stages.batches import (
    DEFAULT_MAX_BATCH_TOKENS,
    Batch,
    Bucket,
    as_buckets,
    make_batch,
)


def bucket_for(length: int, buckets: Sequence[Bucket]) -> Bucket:
    """The smallest bucket that holds ``length`` tokens (an unbounded one past the last)."""
    for bucket in buckets:
        if length <= bucket.max_length:
            return bucket
    return Bucket(length, 1)


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
    """
    bucket_list = as_buckets(buckets)
    ordered = sorted(items, key=lambda item: len(item[1]))
    batches: list[Batch] = []
    keys: list[Hashable] = []
    sequences: list[Sequence[int]] = []
    current: Bucket | None = None
    unpadded_tokens = 0  # sum of the lengths in the current batch
    for key, sequence in ordered:
        bucket = bucket_for(len(sequence), bucket_list)
        rows = len(keys) + 1
        length = len(sequence)  # the longest so far: items come shortest first
        too_many = current is not None and current.max_rows is not None and rows > current.max_rows
        tokens = rows * length if padded else unpadded_tokens + length
        over = tokens > max_batch_tokens or (
            max_batch_attention is not None and rows * length * length > max_batch_attention
        )
        if keys and (bucket != current or over or too_many):
            batches.append(make_batch(keys, sequences, current))
            keys, sequences, unpadded_tokens = [], [], 0
        keys.append(key)
        sequences.append(sequence)
        unpadded_tokens += length
        current = bucket
    if keys:
        batches.append(make_batch(keys, sequences, current))
    return batches
