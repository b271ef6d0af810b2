"""The one batcher (the core's ``plan_batches``, which the engine batches with): every chunk
exactly once, shortest first, length buckets, the padded-token budget, row caps and the
attention cap; and the core against its specification (``tests/spec/batches_spec.py``) on
the dev pages' chunks."""

from __future__ import annotations

import random

import pytest
from rt_helpers import dev_subset
from spec import batches_spec
from spec.batches_spec import Bucket

from pulpie_rt.runtime import native
from pulpie_rt.runtime.flow.pages import Preparer
from pulpie_rt.runtime.model.bundle import load_bundle
from pulpie_rt.runtime.model.resolve import embedded_model_dir

SEQ_BUCKETS = native.seq_buckets()


def plan(lengths, max_batch_tokens, buckets=None, max_batch_attention=None, padded=True):
    """The core's batches: per batch the items' indices and its bucket."""
    core_buckets = None if buckets is None else [
        (b.max_length, b.max_rows) if isinstance(b, Bucket) else (int(b), None)
        for b in buckets]
    return [(order.tolist(), Bucket(size, cap)) for order, size, cap in native.plan_batches(
        list(lengths), max_batch_tokens, core_buckets, max_batch_attention, padded)]


def test_the_engine_buckets():
    assert SEQ_BUCKETS == (128, 256, 512, 1024, 2048, 4096, 8192)
    assert native.max_batch_attention() == 8192 * 8192


def test_every_chunk_once_sorted_within_budget_and_bucket():
    rng = random.Random(3)
    lengths = [rng.choice([5, 60, 130, 300, 700, 2000, 5000, 8192]) for _ in range(400)]
    batches = plan(lengths, 16384)
    rows = [i for order, _ in batches for i in order]
    assert sorted(rows) == list(range(len(lengths)))  # every chunk once
    assert [lengths[i] for i in rows] == sorted(lengths)  # shortest first: minimal padding
    for order, bucket in batches:
        longest = max(lengths[i] for i in order)
        assert len(order) * longest <= 16384 or len(order) == 1
        bounds = [b for b in SEQ_BUCKETS if b >= longest]
        assert bucket.max_length == bounds[0]
        below = SEQ_BUCKETS[SEQ_BUCKETS.index(bounds[0]) - 1] if bounds[0] != SEQ_BUCKETS[0] else 0
        assert all(lengths[i] > below for i in order)


def test_row_caps_and_oversize_rows():
    batches = plan([10] * 7 + [20_000], 1000, [Bucket(16, 3), Bucket(8192)])
    assert [len(order) for order, _ in batches] == [3, 3, 1, 1]
    assert batches[-1] == ([7], Bucket(20_000, 1))  # longer than every bucket: alone
    assert plan([], 1000) == []


def test_attention_budget_caps_rows_of_long_chunks():
    lengths = [8000] * 3 + [4000] * 5 + [1000] * 40
    batches = plan(lengths, 1 << 30, max_batch_attention=8192 * 8192)
    assert [len(order) for order, _ in batches] == [40, 4, 1, 1, 1, 1]
    assert all(len(order) * max(lengths[i] for i in order) ** 2 <= 8192 * 8192
               for order, _ in batches)


CONFIGS = [  # (max_batch_tokens, buckets, max_batch_attention, padded)
    (16384, None, None, True),
    (16384, None, 8192 * 8192, False),
    (4096, None, 2048 * 2048, True),
    (3000, [Bucket(256, 4), Bucket(512, 2), Bucket(1024)], None, True),
    (3000, [Bucket(256, 4), Bucket(512, 2), Bucket(1024)], None, False),
    (100, [128, 64], None, True),  # every row over the budget: one row a batch
]


@pytest.fixture(scope="module")
def dev_chunk_lengths():
    """The length of every chunk of every third dev page, as the default model's preparer
    cuts them."""
    bundle = load_bundle(embedded_model_dir(), "accurate")  # the transformer's chunks
    preparer = Preparer.from_bundle(bundle)
    return [len(chunk.token_ids) for page in dev_subset(3)
            for chunk in preparer.prepare(page["html"]).chunks]


@pytest.mark.parametrize("config", CONFIGS, ids=[str(i) for i in range(len(CONFIGS))])
def test_core_batches_as_the_specification_on_dev_chunks(dev_chunk_lengths, config):
    tokens, buckets, attention, padded = config
    assert len(dev_chunk_lengths) > 200
    ours = plan(dev_chunk_lengths, tokens, buckets, attention, padded)
    assert len(ours) > 3
    assert ours == batches_spec.make_batches(dev_chunk_lengths, tokens, buckets, attention,
                                             padded)


def test_core_batches_as_the_specification_on_random_lengths():
    """Lengths past the last bucket, equal lengths (the sort is stable), row caps."""
    rng = random.Random(7)
    lengths = [rng.choice([1, 5, 128, 129, 300, 8192, 8193, 20_000]) for _ in range(300)]
    for tokens, buckets, attention, padded in CONFIGS:
        assert plan(lengths, tokens, buckets, attention, padded) == batches_spec.make_batches(
            lengths, tokens, buckets, attention, padded)
