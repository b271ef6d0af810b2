"""The specification of the one batcher, in Python: the compiled core
(``core/src/ort/batches.rs``' ``plan_batches``, which the engine batches with) groups chunks
the same way; ``tests/test_batches.py`` compares the two on the chunks of the dev pages.

Chunks are sorted by length and cut greedily so that ``rows * longest_row`` (or, for an
engine that does not pad, the sum of the lengths) stays within ``max_batch_tokens``, within
``max_batch_attention`` and the bucket's ``max_rows``, and no batch crosses a bucket boundary.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pulpie_rt.runtime import native


@dataclass(frozen=True)
class Bucket:
    """Rows of at most ``max_length`` tokens, at most ``max_rows`` per batch (None: no cap)."""

    max_length: int
    max_rows: int | None = None


def as_buckets(bounds: Iterable[int | Bucket] | None) -> list[Bucket]:
    """Sorted buckets from lengths or ``Bucket``s (the engine's own when None)."""
    items = native.seq_buckets() if bounds is None else bounds
    return sorted((b if isinstance(b, Bucket) else Bucket(int(b)) for b in items),
                  key=lambda b: b.max_length)


def bucket_for(length: int, buckets: Sequence[Bucket]) -> Bucket:
    """The smallest bucket that holds ``length`` tokens (an unbounded one past the last)."""
    for bucket in buckets:
        if length <= bucket.max_length:
            return bucket
    return Bucket(length, 1)


def make_batches(
    lengths: Sequence[int],
    max_batch_tokens: int,
    buckets: Iterable[int | Bucket] | None = None,
    max_batch_attention: int | None = None,
    padded: bool = True,
) -> list[tuple[list[int], Bucket]]:
    """Group items of these token ``lengths`` into batches, shortest first: per batch the
    items' indices in row order and its bucket.

    The token budget counts what the engine computes: ``rows * longest <= max_batch_tokens``
    for an engine that pads every row to the longest, the sum of the rows' lengths for one
    that does not. Within a batch also ``rows * longest**2 <= max_batch_attention`` (when
    given) and ``rows <= bucket.max_rows`` (a single row over a budget is allowed: it must run
    somehow); rows of one batch share a bucket.
    """
    bucket_list = as_buckets(buckets)
    ordered = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[tuple[list[int], Bucket]] = []
    rows_of: list[int] = []
    current: Bucket | None = None
    unpadded_tokens = 0  # sum of the lengths in the current batch
    for index in ordered:
        length = lengths[index]  # the longest so far: items come shortest first
        bucket = bucket_for(length, bucket_list)
        rows = len(rows_of) + 1
        too_many = current is not None and current.max_rows is not None and rows > current.max_rows
        tokens = rows * length if padded else unpadded_tokens + length
        over = tokens > max_batch_tokens or (
            max_batch_attention is not None and rows * length * length > max_batch_attention
        )
        if rows_of and (bucket != current or over or too_many):
            batches.append((rows_of, current))
            rows_of, unpadded_tokens = [], 0
        rows_of.append(index)
        unpadded_tokens += length
        current = bucket
    if rows_of:
        batches.append((rows_of, current))
    return batches
