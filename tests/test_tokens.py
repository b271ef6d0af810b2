"""Token ids equal the reference's ``AutoTokenizer.encode(block, add_special_tokens=False)``."""

from __future__ import annotations

import pytest
from rt_helpers import TINY_CHECKPOINT, reference_tokenizer, simplified, train_tokenizer

from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.tokens import SEP_TOKEN, encode_blocks, load_tokenizer, sep_id

TRICKY = [
    "plain text",
    "  leading and trailing spaces  ",
    "literal <|sep|> in the middle <|sep|><|sep|>",
    "<|begin_of_text|> specials in text <|end_of_text|>",
    "NUL \x00 byte and \ufffd replacement",
    "emoji 🙂 and CJK 中文 and Ελληνικά",
    "tabs\tand\r\nnewlines\n\n",
    "",
]


def _tokenizer_dirs(tmp_path_factory) -> list:
    dirs = [
        train_tokenizer(tmp_path_factory.mktemp("tok_sep"), with_sep=True),
        train_tokenizer(tmp_path_factory.mktemp("tok_nosep"), with_sep=False),
    ]
    if (TINY_CHECKPOINT / "tokenizer.json").is_file():
        dirs.append(TINY_CHECKPOINT)
    return dirs


@pytest.fixture(scope="module")
def tokenizer_dirs(tmp_path_factory):
    return _tokenizer_dirs(tmp_path_factory)


def test_ids_match_reference_on_dev_blocks(tokenizer_dirs):
    pages = simplified()[::3]
    for path in tokenizer_dirs:
        ours = load_tokenizer(path)
        ref = reference_tokenizer(path)
        assert sep_id(ours) == ref.convert_tokens_to_ids(SEP_TOKEN)
        n = 0
        for page_id, simple, _map in pages:
            blocks, _ids = extract_blocks(simple)
            expected = [ref.encode(b, add_special_tokens=False) for b in blocks]
            assert encode_blocks(ours, blocks) == expected, (path, page_id)
            n += sum(map(len, expected))
        assert n > 50_000


def test_ids_match_reference_on_tricky_text(tokenizer_dirs):
    for path in tokenizer_dirs:
        ours = load_tokenizer(path)
        ref = reference_tokenizer(path)
        expected = [ref.encode(t, add_special_tokens=False) for t in TRICKY]
        assert encode_blocks(ours, TRICKY) == expected, path
        # the quirk that matters: a literal <|sep|> in page text is the SEP id
        assert encode_blocks(ours, ["<|sep|>"]) == [[sep_id(ours)]]


def test_stored_truncation_is_ignored(tokenizer_dirs):
    # the trained tokenizers store truncation at 64 tokens; the reference encodes in full
    ours = load_tokenizer(tokenizer_dirs[0])
    assert len(encode_blocks(ours, ["word " * 500])[0]) >= 500


def test_missing_tokenizer_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="tokenizer file not found"):
        load_tokenizer(tmp_path)


def test_empty_block_list():
    assert encode_blocks(None, []) == []
