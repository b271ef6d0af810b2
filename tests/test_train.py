"""Training the default model: the labelling rule, the chunks it trains on, seeded training."""

from __future__ import annotations

from dataclasses import replace

import pytest
from rt_helpers import tiny_bundle

from eval.labels import block_text, label_blocks
from eval.metrics import words
from pulpie_rt.runtime.stages.chunks import pack_chunks
from pulpie_rt.runtime.stages.labels import sep_positions
from pulpie_rt.runtime.stages.tokens import encode_blocks, load_tokenizer, sep_id
from train.fit import Recipe, build_chunks, train_model


def test_words_are_wcxb_tokens():
    assert words("Hello, World! l'été 2024_x") == ["hello", "world", "l", "été", "2024_x"]
    assert block_text('<p _item_id="3">Fish &amp; <b>chips</b></p>') == " Fish &  chips  "


def test_label_rule_uses_up_reference_words_so_repeated_navigation_stays_other():
    reference = "Home. The quick brown fox jumps over the lazy dog."
    blocks = [
        '<a _item_id="1">Home</a>',  # in the reference once: the first copy is main …
        '<p _item_id="2">The quick brown fox</p>',
        '<p _item_id="3">jumps over the lazy dog</p>',
        '<a _item_id="4">Home</a>',  # … a second copy finds no word left
        '<p _item_id="5">The quick brown fox</p>',
        '<div _item_id="6"><img src="x.png"></div>',  # no words: other
    ]
    assert label_blocks(blocks, reference) == [1, 1, 1, 0, 0, 0]


def test_label_rule_threshold_is_seventy_percent_of_the_block_words():
    reference = "alpha beta gamma delta epsilon"
    assert label_blocks(["<p>alpha beta gamma zeta</p>"], reference) == [1]  # 3/4
    assert label_blocks(["<p>alpha beta eta zeta</p>"], reference) == [0]  # 2/4
    assert label_blocks(["<p>alpha beta eta zeta</p>"], reference, min_available=0.5) == [1]


def test_training_chunks_are_the_runtime_chunks_with_one_label_per_sep():
    tokenizer = load_tokenizer(tiny_bundle())
    sep = sep_id(tokenizer)
    blocks = [f'<p _item_id="{i}">block number {i} ' + "word " * (i % 7) + "</p>"
              for i in range(60)]
    labels = [i % 3 == 0 for i in range(60)]
    record = {"id": "x", "blocks": blocks, "labels": [int(v) for v in labels]}
    chunks = build_chunks([record], tokenizer, max_tokens=128)
    runtime = pack_chunks(encode_blocks(tokenizer, blocks), 128, sep_id=sep, bos_id=0, eos_id=1)
    assert [c.token_ids for c in chunks] == [c.token_ids for c in runtime]
    assert [v for c in chunks for v in c.labels] == record["labels"]
    for chunk in chunks:
        assert len(sep_positions(chunk.token_ids, sep)) == len(chunk.labels)
    # A literal <|sep|> in page text would shift the runtime's labels: that chunk is left out.
    broken = {**record, "blocks": ["<p>a <|sep|> b</p>", *blocks[1:]]}
    kept = build_chunks([broken], tokenizer, max_tokens=128)
    assert len(kept) == len(chunks) - 1
    assert build_chunks([{**record, "labels": None}], tokenizer, max_tokens=128) == []


def test_training_is_seeded():
    """Same seed, same recipe: bitwise identical weights, both runs on this machine in this
    process (one thread, the same kernels). Nothing is claimed across CPUs: the training
    matmuls and reductions run ISA-specific kernels, so another CPU's weights may differ in the
    last bits (``make default-model``'s byte-identical rerun is a same-machine claim too)."""
    pytest.importorskip("torch")
    tokenizer = load_tokenizer(tiny_bundle())
    blocks = [f'<li _item_id="{i}">item {i}</li>' for i in range(40)]
    record = {"id": "x", "blocks": blocks, "labels": [i % 2 for i in range(40)]}
    chunks = build_chunks([record], tokenizer, max_tokens=64)
    recipe = replace(Recipe(), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                     num_attention_heads=2, epochs=2.0, batch_chunks=2, warmup_steps=2,
                     max_tokens=64, threads=1)
    vocab = tokenizer.get_vocab_size()
    first, second = (train_model(chunks, recipe, vocab, log=lambda _: None) for _ in range(2))
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items(),
                                 strict=True):
        assert a.equal(b), name
    other_seed = train_model(chunks, replace(recipe, seed=1), vocab, log=lambda _: None)
    assert not other_seed.classifier.weight.equal(first.classifier.weight)


def test_second_phase_from_a_saved_first_phase_equals_both_phases_in_one_run(tmp_path):
    """Bitwise identical on this machine (both runs in this process; saving and loading
    float32 weights is exact); a same-machine claim like ``test_training_is_seeded``."""
    pytest.importorskip("torch")
    from transformers import EuroBertForTokenClassification

    tokenizer = load_tokenizer(tiny_bundle())
    blocks = [f'<p _item_id="{i}">para {i} text</p>' for i in range(40)]
    record = {"id": "x", "blocks": blocks, "labels": [int(i % 3 == 0) for i in range(40)]}
    chunks = build_chunks([record], tokenizer, max_tokens=64)
    recipe = replace(Recipe(), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                     num_attention_heads=2, epochs=1.0, second_epochs=1.0, batch_chunks=2,
                     warmup_steps=2, second_warmup_steps=2, max_tokens=64, threads=1)
    vocab = tokenizer.get_vocab_size()
    saved = tmp_path / "first-phase"
    both = train_model(chunks, recipe, vocab, log=lambda _: None,
                       after_first_phase=lambda m: m.save_pretrained(saved))
    first = EuroBertForTokenClassification.from_pretrained(saved, attn_implementation="sdpa")
    second_only = train_model(chunks, recipe, vocab, log=lambda _: None, first_phase=first)
    for (name, a), (_, b) in zip(both.state_dict().items(), second_only.state_dict().items(),
                                 strict=True):
        assert a.equal(b), name
