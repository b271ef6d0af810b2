"""Chunk packing (on the compiled core) equals the reference's ``pack_chunks`` and the
specification's (``tests/spec/chunks_spec.py``) on real pages and on edge cases."""

from __future__ import annotations

import random

import pytest
from pulpie.chunker import pack_chunks as ref_pack_chunks
from rt_helpers import simplified, train_tokenizer
from spec.chunks_spec import pack_chunks as spec_pack_chunks

from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.chunks import Chunk, pack_chunks
from pulpie_rt.runtime.stages.tokens import encode_blocks, load_tokenizer, sep_id


def _as_pairs(chunks: list[Chunk]) -> list[tuple[list[int], list[int]]]:
    return [(c.token_ids, c.block_indices) for c in chunks]


@pytest.mark.parametrize("max_tokens", [8192, 512, 64])
def test_packing_matches_reference_on_dev_pages(tmp_path_factory, max_tokens):
    tok = load_tokenizer(train_tokenizer(tmp_path_factory.mktemp("tok"), with_sep=False))
    sep = sep_id(tok)
    n_chunks = 0
    for page_id, simple, _map in simplified()[::2]:
        blocks, _ = extract_blocks(simple)
        ids = encode_blocks(tok, blocks)
        ours = pack_chunks(ids, max_tokens=max_tokens, sep_id=sep, bos_id=0, eos_id=1)
        ref = ref_pack_chunks(
            ids, max_tokens=max_tokens, sep_token_id=sep, bos_token_id=0, eos_token_id=1
        )
        assert _as_pairs(ours) == ref, page_id
        assert all(len(c) <= max_tokens for c in ours)
        n_chunks += len(ours)
    assert n_chunks > 40


def test_packing_matches_reference_on_random_blocks():
    rng = random.Random(7)
    for _ in range(300):
        ids = [[rng.randrange(10, 99)] * rng.choice([0, 1, 3, 9, 30, 80]) for _ in range(12)]
        max_tokens = rng.choice([4, 8, 16, 33, 100])
        bos = rng.choice([None, 0])
        eos = rng.choice([None, 1])
        ours = pack_chunks(ids, max_tokens=max_tokens, sep_id=5, bos_id=bos, eos_id=eos)
        ref = ref_pack_chunks(
            ids, max_tokens=max_tokens, sep_token_id=5, bos_token_id=bos, eos_token_id=eos
        )
        assert _as_pairs(ours) == ref, (ids, max_tokens, bos, eos)
        spec = spec_pack_chunks(ids, max_tokens=max_tokens, sep_id=5, bos_id=bos, eos_id=eos)
        assert ours == spec, (ids, max_tokens, bos, eos)


def test_tiny_budgets_and_empty_pages_as_the_specification():
    for max_tokens in range(0, 6):
        for ids in ([], [[]], [[3, 4, 5]], [[3], [], [4, 4, 4, 4]]):
            assert pack_chunks(ids, max_tokens, sep_id=2, bos_id=0, eos_id=1) == \
                spec_pack_chunks(ids, max_tokens, sep_id=2, bos_id=0, eos_id=1), (ids, max_tokens)


def test_oversize_block_is_truncated_and_keeps_its_sep():
    chunks = pack_chunks([[7] * 3, [8] * 20, [9] * 2], max_tokens=10, sep_id=5, bos_id=0, eos_id=1)
    assert _as_pairs(chunks) == [
        ([0, 7, 7, 7, 5, 1], [0]),
        ([0] + [8] * 7 + [5, 1], [1]),
        ([0, 9, 9, 5, 1], [2]),
    ]


def test_sep_id_is_required():
    with pytest.raises(ValueError, match="sep_id is required"):
        pack_chunks([[1]], sep_id=None)
