"""The one batcher: every chunk exactly once, length buckets, padded-token budget, flat layout;
the core's grouping (``core/src/ort/batches.rs``) against its specification on dev chunks."""

from __future__ import annotations

import random

import numpy as np
import pytest
from rt_helpers import dev_subset
from spec import batches_spec

from pulpie_rt.runtime.flow.pages import Preparer
from pulpie_rt.runtime.model.bundle import load_bundle
from pulpie_rt.runtime.model.resolve import embedded_model_dir
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


# ── the core's batcher against its specification (tests/spec/batches_spec.py) ─────────────


def _plan(batches):
    return [(b.keys, b.bucket, b.input_ids.tolist(), b.cumulative_seq_lengths.tolist())
            for b in batches]


CONFIGS = [  # (max_batch_tokens, buckets, max_batch_attention, padded)
    (16384, None, None, True),
    (16384, None, 8192 * 8192, False),
    (4096, None, 2048 * 2048, True),
    (3000, [Bucket(256, 4), Bucket(512, 2), Bucket(1024)], None, True),
    (3000, [Bucket(256, 4), Bucket(512, 2), Bucket(1024)], None, False),
    (100, [128, 64], None, True),  # every row over the budget: one row a batch
]


@pytest.fixture(scope="module")
def dev_chunk_items():
    """Every chunk of every third dev page, as the default model's preparer cuts them."""
    bundle = load_bundle(embedded_model_dir(), "accurate")  # the transformer's chunks
    preparer = Preparer.from_bundle(bundle)
    items = []
    for page in dev_subset(3):
        prepared = preparer.prepare(page["html"])
        items += [((page["id"], c), chunk.token_ids) for c, chunk in enumerate(prepared.chunks)]
    return items


@pytest.mark.parametrize("config", CONFIGS, ids=[str(i) for i in range(len(CONFIGS))])
def test_core_batches_as_the_specification_on_dev_chunks(dev_chunk_items, config):
    tokens, buckets, attention, padded = config
    assert len(dev_chunk_items) > 200
    ours = make_batches(dev_chunk_items, tokens, buckets, attention, padded)
    spec = batches_spec.make_batches(dev_chunk_items, tokens, buckets, attention, padded)
    assert len(ours) > 3
    assert _plan(ours) == _plan(spec)


def test_core_batches_as_the_specification_on_random_lengths():
    """Lengths past the last bucket, equal lengths (the sort is stable), row caps."""
    rng = random.Random(7)
    lengths = [rng.choice([1, 5, 128, 129, 300, 8192, 8193, 20_000]) for _ in range(300)]
    items = _items(lengths)
    for tokens, buckets, attention, padded in CONFIGS:
        ours = make_batches(items, tokens, buckets, attention, padded)
        assert _plan(ours) == _plan(batches_spec.make_batches(items, tokens, buckets, attention,
                                                              padded))
