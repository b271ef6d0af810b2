"""Write core/src/py_tables.rs: the tables of Python and html2text the compiled core needs
(Markdown; the HTML5 character references html.unescape and libxml2 read; re's \\w; the block
features' str.isdigit and str.lower), taken from the Python that is its specification
(html.entities, html's unescape tables, html2text 2025.4.15's config and utils, and
unicodedata through str methods and the re module), so that none is copied by hand.

    python core/tools/gen_tables.py        # from the repository root, in the project's venv

Rerun it after a change of Python's minor version or of html2text, and check the diff: the
tables are only right for the versions they were generated from (printed in the file).
"""

from __future__ import annotations

import html
import html.entities
import re
import sys
import unicodedata
from pathlib import Path

import html2text
import html2text.config
import html2text.utils

OUT = Path(__file__).resolve().parent.parent / "src" / "py_tables.rs"
MAX = sys.maxunicode + 1
CAPITAL_SIGMA, FINAL_SIGMA, SMALL_SIGMA = "\u03a3", "\u03c2", "\u03c3"
DOTTED_CAPITAL_I = "\u0130"


def rust_str(s: str) -> str:
    out = []
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif 0x20 <= c < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\u{{{c:x}}}")
    return '"' + "".join(out) + '"'


def ranges(pred) -> list[tuple[int, int]]:
    """Inclusive code-point ranges where ``pred(chr(c))`` holds (surrogates included)."""
    out: list[tuple[int, int]] = []
    start = None
    for c in range(MAX):
        if pred(chr(c)):
            if start is None:
                start = c
        elif start is not None:
            out.append((start, c - 1))
            start = None
    if start is not None:
        out.append((start, MAX - 1))
    return out


def runs(code_points: list[int]) -> list[tuple[int, int]]:
    """Sorted code points as inclusive (first, last) runs."""
    out: list[tuple[int, int]] = []
    for c in code_points:
        if out and out[-1][1] + 1 == c:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def range_table(name: str, doc: str, table: list[tuple[int, int]]) -> str:
    body = "".join(f"    (0x{a:x}, 0x{b:x}),\n" for a, b in table)
    return f"/// {doc}\npub static {name}: &[(u32, u32)] = &[\n{body}];\n\n"


def main() -> None:
    # html2text sets UNIFIABLE["nbsp"] when a converter is made: the table a conversion sees
    html2text.HTML2Text()
    unifiable = dict(html2text.config.UNIFIABLE)
    decimal_blocks = []
    for a, b in ranges(lambda ch: ch.isdecimal()):
        for zero in range(a, b + 1, 10):
            # int() reads every decimal digit by its value: blocks of ten, 0..9 in order
            assert all(unicodedata.decimal(chr(zero + k)) == k for k in range(10)), hex(zero)
        assert (b + 1 - a) % 10 == 0
        decimal_blocks.append((a, b))
    word = re.compile(r"\w")
    space = re.compile(r"\s")
    digit = re.compile(r"\d")
    for c in range(MAX):
        ch = chr(c)
        assert bool(space.match(ch)) == ch.isspace()
        assert bool(digit.match(ch)) == ch.isdecimal()
        assert bool(word.match(ch)) == (ch.isalnum() or ch == "_")
    folds = []
    for letter in "abcdefghijklmnopqrstuvwxyz":
        pattern = re.compile(letter, re.IGNORECASE)
        for c in range(128, MAX):
            if pattern.fullmatch(chr(c)):
                folds.append((c, letter))
    # str.lower: every character it maps to one other; the one it maps to two (U+0130 ->
    # "i" U+0307) is written in the code that reads the table
    lower = []
    for c in range(MAX):
        low = chr(c).lower()
        if low != chr(c):
            if len(low) == 1:
                lower.append((c, ord(low)))
            else:
                assert chr(c) == DOTTED_CAPITAL_I and low == "i\u0307", hex(c)
    # the two properties str.lower reads around a capital sigma to choose its final form;
    # CPython does not expose them, so they are probed through lower() itself: ("a" + c +
    # "Σ").lower() ends in "ς" when c is case-ignorable or cased, and ("aΣ" + c).lower()[1] is
    # "σ" when c is cased and not case-ignorable (the rule skips case-ignorable characters
    # before it looks at casedness, so only those cased ones are written as cased)
    case_ignorable, cased = [], []
    for c in range(MAX):
        ch = chr(c)
        if ch == CAPITAL_SIGMA:
            cased.append(c)  # cased, not case-ignorable; as a neighbour it is lowered itself
        elif ("a" + CAPITAL_SIGMA + ch).lower()[1] == SMALL_SIGMA:
            cased.append(c)
        elif ("a" + ch + CAPITAL_SIGMA).lower()[-1] == FINAL_SIGMA:
            case_ignorable.append(c)
    lower_to_ascii = [(c, chr(c).lower()) for c in range(128, MAX)
                      if 0xD800 > c or c > 0xDFFF
                      if len(chr(c).lower()) == 1 and ord(chr(c).lower()) < 128]

    parts = [
        "//! Generated by core/tools/gen_tables.py from Python "
        f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro} "
        f"(Unicode {unicodedata.unidata_version}) and html2text "
        f"{'.'.join(map(str, html2text.__version__))}; do not edit.\n\n",
    ]
    entities = sorted(html.entities.html5.items(), key=lambda kv: kv[0].encode())
    parts.append("/// `html.entities.html5`: name (with its `;` where the name has one) -> text, "
                 "sorted by name's bytes.\npub static HTML5: &[(&str, &str)] = &[\n")
    parts += [f"    ({rust_str(k)}, {rust_str(v)}),\n" for k, v in entities]
    parts.append("];\n\n")
    parts.append("/// `html2text.config.UNIFIABLE` as a converter sees it (its constructor sets "
                 "`nbsp` to the placeholder `finish` replaces), sorted by name.\n"
                 "pub static UNIFIABLE: &[(&str, &str)] = &[\n")
    parts += [f"    ({rust_str(k)}, {rust_str(v)}),\n"
              for k, v in sorted(unifiable.items(), key=lambda kv: kv[0].encode())]
    parts.append("];\n\n")
    parts.append("/// `html2text.utils.unifiable_n`: code point -> text, sorted.\n"
                 "pub static UNIFIABLE_N: &[(u32, &str)] = &[\n")
    parts += [f"    (0x{k:x}, {rust_str(v)}),\n"
              for k, v in sorted(html2text.utils.unifiable_n.items())]
    parts.append("];\n\n")
    parts.append("/// `html2text.utils.control_character_replacements`, sorted.\n"
                 "pub static CONTROL_CHARACTER_REPLACEMENTS: &[(u32, u32)] = &[\n")
    parts += [f"    (0x{k:x}, 0x{v:x}),\n"
              for k, v in sorted(html2text.utils.control_character_replacements.items())]
    parts.append("];\n\n")
    parts.append("/// `html._invalid_charrefs` (what `html.unescape` writes for these numbers), "
                 "sorted.\npub static INVALID_CHARREFS: &[(u32, &str)] = &[\n")
    parts += [f"    (0x{k:x}, {rust_str(v)}),\n" for k, v in sorted(html._invalid_charrefs.items())]
    parts.append("];\n\n")
    parts.append("/// `html._invalid_codepoints` (`html.unescape` drops them), sorted.\n"
                 "pub static INVALID_CODEPOINTS: &[u32] = &[\n")
    parts += [f"    0x{k:x},\n" for k in sorted(html._invalid_codepoints)]
    parts.append("];\n\n")
    parts.append(range_table("PY_SPACE", "`str.isspace` (what `\\s` matches in a `str` pattern).",
                             ranges(str.isspace)))
    parts.append(range_table("PY_DECIMAL", "`str.isdecimal` (what `\\d` matches; `int()` reads "
                             "these, each range in blocks of ten from 0 to 9).", decimal_blocks))
    parts.append(range_table("PY_WORD", "`str.isalnum` or `_` (what `\\w` matches).",
                             ranges(lambda ch: ch.isalnum() or ch == "_")))
    parts.append(range_table("PY_DIGIT", "`str.isdigit`.", ranges(str.isdigit)))
    parts.append(range_table("PY_CASE_IGNORABLE", "Case_Ignorable, as `str.lower` reads it "
                             "around a capital sigma.", runs(case_ignorable)))
    parts.append(range_table("PY_CASED", "Cased and not Case_Ignorable, as `str.lower` reads it "
                             "around a capital sigma.", runs(cased)))
    parts.append("/// `str.lower` of the characters it maps to one other character: (character, "
                 "lowercase), sorted.\npub static PY_LOWER: &[(u32, u32)] = &[\n")
    parts += [f"    (0x{c:x}, 0x{low:x}),\n" for c, low in lower]
    parts.append("];\n\n")
    parts.append(range_table("PY_PRINTABLE", "`str.isprintable` (what `repr` leaves unescaped).",
                             ranges(str.isprintable)))
    parts.append("/// Non-ASCII characters that a case-insensitive `re` pattern matches with an "
                 "ASCII letter: (character, letter).\n"
                 "pub static IGNORECASE_FOLDS: &[(u32, u8)] = &[\n")
    parts += [f"    (0x{c:x}, b'{letter}'),\n" for c, letter in folds]
    parts.append("];\n\n")
    parts.append("/// Non-ASCII characters whose `str.lower()` is one ASCII character.\n"
                 "pub static LOWER_TO_ASCII: &[(u32, u8)] = &[\n")
    parts += [f"    (0x{c:x}, b'{low}'),\n" for c, low in lower_to_ascii]
    parts.append("];\n")
    OUT.write_text("".join(parts), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
