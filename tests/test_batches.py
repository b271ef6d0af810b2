"""The one batcher: every chunk exactly once, length buckets, padded-token budget, flat layout."""

from __future__ import annotations

import random

import numpy as np

from pulpie_rt.runtime.stages.batches import SEQ_BUCKETS, Bucket, make_batches


def _items(lengths):
    return [(("page", i), list(range(1, n + 1))) for i, n in enumerate(lengths)]


def test_every_chunk_once_sorted_within_budget_and_bucket():
    rng = random.Random(3)
    lengths = [rng.choice([5, 60, 130, 300, 700, 2000, 5000, 8192]) for _ in range(400)]
    items = _items(lengths)
    batches = make_batches(items, max_batch_tokens=16384)
    keys = [k for b in batches for k in b.keys]
    assert sorted(keys) == sorted(k for k, _ in items)
    seen_lengths = [n for b in batches for n in b.lengths.tolist()]
    assert seen_lengths == sorted(lengths)  # shortest first: minimal padding
    for batch in batches:
        assert batch.rows * batch.max_length <= 16384 or batch.rows == 1
        bounds = [b for b in SEQ_BUCKETS if b >= batch.max_length]
        assert batch.bucket.max_length == bounds[0]
        assert all(n > (SEQ_BUCKETS[SEQ_BUCKETS.index(bounds[0]) - 1]
                        if bounds[0] != SEQ_BUCKETS[0] else 0) for n in batch.lengths)


def test_flat_layout_and_padding():
    (batch,) = make_batches([("a", [7, 8, 9]), ("b", [4, 5])], max_batch_tokens=100)
    assert batch.keys == ["b", "a"]
    assert batch.input_ids.tolist() == [4, 5, 7, 8, 9]
    assert batch.position_ids.tolist() == [0, 1, 0, 1, 2]
    assert batch.cumulative_seq_lengths.tolist() == [0, 2, 5]
    ids, mask = batch.padded(pad_id=0)
    assert ids.tolist() == [[4, 5, 0], [7, 8, 9]]
    assert mask.tolist() == [[1, 1, 0], [1, 1, 1]]
    assert ids.dtype == np.int64


def test_row_caps_and_oversize_rows():
    items = _items([10] * 7 + [20_000])
    batches = make_batches(items, max_batch_tokens=1000, buckets=[Bucket(16, 3), Bucket(8192)])
    assert [b.rows for b in batches] == [3, 3, 1, 1]
    assert batches[-1].max_length == 20_000  # longer than every bucket: alone
    assert make_batches([]) == []


def test_attention_budget_caps_rows_of_long_chunks():
    items = _items([8000] * 3 + [4000] * 5 + [1000] * 40)
    batches = make_batches(items, max_batch_tokens=1 << 30, max_batch_attention=8192 * 8192)
    assert [b.rows for b in batches] == [40, 4, 1, 1, 1, 1]
    assert all(b.rows * b.max_length**2 <= 8192 * 8192 for b in batches)
