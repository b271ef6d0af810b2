"""Token ids equal the reference's ``AutoTokenizer.encode(block, add_special_tokens=False)``,
and the compiled core's tokenizer gives the ids of the ``tokenizers`` library exactly (on real
dev blocks, edge cases and random strings), refusing what it does not support by name."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rt_helpers import TINY_CHECKPOINT, reference_tokenizer, simplified, train_tokenizer

from parity.tokenizer_parity import (
    DEFAULT_MODEL_TOKENIZER,
    EDGE_CASES,
    llama3_tokenizer_path,
    random_strings,
)
from pulpie_rt.runtime import native
from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.tokens import (
    SEP_TOKEN,
    encode_blocks,
    library_tokenizer,
    load_tokenizer,
    sep_id,
)

REPO = Path(__file__).resolve().parent.parent

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


# ---------------------------------------------------------------- the compiled core's tokenizer


@pytest.fixture(scope="module")
def core() -> None:
    assert native.available(), "the compiled core is not built: `make core`"


@pytest.fixture(scope="module")
def core_tokenizer_files(core, tokenizer_dirs) -> list[Path]:
    """tokenizer.json files of both pre-tokenizer kinds: the tiny and default models'
    (ByteLevel, GPT-2 regex), the trained ones and Llama-3's where installed (Split, Llama-3
    regex; merges as pairs and as strings)."""
    files = [DEFAULT_MODEL_TOKENIZER, *(d / "tokenizer.json" for d in tokenizer_dirs)]
    llama3 = llama3_tokenizer_path()
    return files + ([llama3] if llama3 else [])


def _library_ids(path: Path, texts: list[str]) -> list[list[int]]:
    library = library_tokenizer(path)
    return [e.ids for e in library.encode_batch_fast(texts, add_special_tokens=False)]


def test_core_is_the_runtime_tokenizer(core):
    assert isinstance(load_tokenizer(TINY_CHECKPOINT), native.CoreTokenizer)


def test_core_ids_equal_tokenizers_on_dev_blocks(core):
    # the tokenizers of the tiny and the embedded default model, on every 3rd dev page
    pages = [extract_blocks(simple)[0] for _id, simple, _map in simplified()]
    for path in (TINY_CHECKPOINT / "tokenizer.json", DEFAULT_MODEL_TOKENIZER):
        ours = load_tokenizer(path)
        library = library_tokenizer(path)
        assert ours.token_to_id(SEP_TOKEN) == library.token_to_id(SEP_TOKEN)
        n = 0
        for blocks in pages:
            expected = [e.ids for e in library.encode_batch_fast(blocks,
                                                                  add_special_tokens=False)]
            assert encode_blocks(ours, blocks) == expected, path
            n += sum(map(len, expected))
        assert n > 500_000, path


def test_core_ids_equal_tokenizers_on_edge_cases(core_tokenizer_files):
    texts = [*EDGE_CASES, *random_strings(3000, seed=1)]
    for path in core_tokenizer_files:
        assert encode_blocks(load_tokenizer(path), texts) == _library_ids(path, texts), path


def test_vocab_size_as_tokenizers_counts_it(core_tokenizer_files):
    for path in [TINY_CHECKPOINT / "tokenizer.json", *core_tokenizer_files]:
        ours, library = load_tokenizer(path), library_tokenizer(path)
        for with_added in (True, False):
            assert ours.get_vocab_size(with_added) == library.get_vocab_size(with_added), path


def test_literal_special_tokens_in_text(core_tokenizer_files):
    for path in core_tokenizer_files:
        ours = load_tokenizer(path)
        sep, bos = sep_id(ours), ours.token_to_id("<|begin_of_text|>")
        assert encode_blocks(ours, ["<|sep|>", "<|begin_of_text|>"]) == [[sep], [bos]], path


def test_sep_added_after_the_vocabulary_when_missing(core):
    # the tiny tokenizer has <|sep|> (id 4); the raw Llama-3 file lacks it: it takes the id
    # after its 128,000-token vocabulary and 256 added tokens, as tokenizers gives it
    assert sep_id(load_tokenizer(TINY_CHECKPOINT)) == 4
    llama3 = llama3_tokenizer_path()
    if llama3 is not None:
        assert sep_id(load_tokenizer(llama3)) == 128256
        assert library_tokenizer(llama3).token_to_id(SEP_TOKEN) == 128256


def test_lone_surrogates_raise(core):
    # a Python string may hold one, UTF-8 (and Rust) cannot: the page fails, as it does with
    # the tokenizers library (which raises a TypeError)
    with pytest.raises(UnicodeEncodeError):
        encode_blocks(load_tokenizer(TINY_CHECKPOINT), ["fine", "lone \ud800 surrogate"])


def test_one_tokenizer_shared_by_threads(core):
    ours = load_tokenizer(DEFAULT_MODEL_TOKENIZER)
    pages = [extract_blocks(simple)[0] for _id, simple, _map in simplified()][:24]
    expected = [encode_blocks(ours, blocks) for blocks in pages]
    results: dict[int, list] = {}

    def work(worker: int) -> None:
        results[worker] = [encode_blocks(ours, blocks) for blocks in pages]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [results[i] for i in range(4)] == [expected] * 4


def test_no_tokenizers_import_at_run_time(core):
    code = ("import sys\n"
            "from pulpie_rt.runtime.stages.tokens import encode_blocks, load_tokenizer\n"
            f"tokenizer = load_tokenizer({str(TINY_CHECKPOINT)!r})\n"
            "assert encode_blocks(tokenizer, ['a b'])\n"
            "print('tokenizers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


UNSUPPORTED = [
    (lambda t: t.update(normalizer={"type": "NFC"}),
     'normalizer "NFC" is not supported (only null)'),
    (lambda t: t.update(pre_tokenizer={"type": "Whitespace"}),
     'pre_tokenizer "Whitespace" is not supported (only ByteLevel, Split and Sequence)'),
    (lambda t: t["pre_tokenizer"].update(add_prefix_space=True),
     "ByteLevel pre_tokenizer with add_prefix_space=true is not supported"),
    (lambda t: t.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Isolated",
         "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]}),
     'Split pre_tokenizer regex "\\\\d+" is not supported (only the GPT-2 and Llama-3 '
     "regexes)"),
    (lambda t: t.update(pre_tokenizer=None),
     "a pre_tokenizer without ByteLevel is not supported (the model must be byte-level BPE)"),
    (lambda t: t["model"].update(type="WordPiece"),
     'model "WordPiece" is not supported (only "BPE")'),
    (lambda t: t["model"].update(dropout=0.1), "BPE dropout 0.1 is not supported (only null)"),
    (lambda t: t["model"].update(byte_fallback=True), "BPE byte_fallback=true is not supported"),
    (lambda t: t["model"].update(continuing_subword_prefix="##"),
     'BPE continuing_subword_prefix "##" is not supported (only null)'),
    (lambda t: t["added_tokens"][0].update(lstrip=True),
     'added token "<|begin_of_text|>": lstrip=true is not supported'),
    (lambda t: t["added_tokens"][1].update(single_word=True),
     'added token "<|end_of_text|>": single_word=true is not supported'),
]


@pytest.mark.parametrize("change, message", UNSUPPORTED)
def test_unsupported_tokenizer_is_refused_by_name(core, tmp_path, change, message):
    data = json.loads((TINY_CHECKPOINT / "tokenizer.json").read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(native.TokenizerLoadError) as raised:
        load_tokenizer(path)
    assert str(raised.value) == f"{path}: {message}"


def test_broken_json_names_the_byte(core, tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text('{"version": "1.0", "model": [1, 2', encoding="utf-8")
    with pytest.raises(native.TokenizerLoadError) as raised:
        load_tokenizer(path)
    assert str(raised.value) == (f"{path}: invalid JSON at byte 33: expected ',' or ']', "
                                 "found the end of input")


def test_unicode_tables_are_oniguruma_s(core):
    # the core's \p{L}, \p{N} and \s tables (core/src/tokenizer/unicode_tables.rs) against
    # what tokenizers' regex engine matches, on every code point but the surrogates
    spec = importlib.util.spec_from_file_location("gen_unicode",
                                                  REPO / "core" / "tools" / "gen_unicode.py")
    gen_unicode = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_unicode)
    assert gen_unicode.differences(gen_unicode.read_table(),
                                   gen_unicode.classes_from_oniguruma()) == []
