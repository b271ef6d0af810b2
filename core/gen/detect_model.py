"""Writes core/src/detect_model.rs: the character statistics the encoding detector
(core/src/detect.rs) scores a candidate decoding with, counted on the train pages' text.

The model is a class-based character bigram: each character belongs to a class (its script
and, for cased scripts, its case: ``CLASSES`` below), and a text's log-probability is the sum
over its characters of log P(class | previous class) + log P(character | class). Every train
page weighs the same (its counts are divided by its length), so one long page does not make
the model. Within a page a character weighs as the square root of its count (``CHAR_POWER``;
the page's weights then sum to one): a page's thousands of one symbol (box-drawing art, runs of
NBSP) would otherwise make that symbol look as frequent as a language's letters. Measured on
the re-encoded pages with no declaration (``python -m bench.detector``), counts
as they are read 2,807 of 2,887 right (NBSP-only pages went to KOI8-R, whose 0xA0 is a
box-drawing character one train page is full of), square roots 2,845. Characters seen fewer
than ``MIN_COUNT`` times are left out (they get their class's floor, below every kept
character's log-probability).

On top of it, the pairs of adjacent characters with a non-ASCII one (what a language's words
look like: Czech "ře", "ně", "př" against the "øe", "nì", "pø" its ISO-8859-2 bytes spell in
windows-1254): the model's P(character | previous character) is a Dirichlet mixture of what
followed that character on the train pages and the class model, so that a character the pages
rarely show (Czech is a few pages of them) keeps the class model's estimate and a pair the pages
show often, or a frequent character's pairs the pages never show, move the score:

    P(class | previous) = (n(previous, class) + CLASS_PRIOR * P(class | previous's class))
                          / (n(previous) + CLASS_PRIOR)             (non-ASCII previous only)
    P(c | previous, class) = (n(previous, c) + PAIR_PRIOR * P(c | class))
                             / (n(previous, class) + PAIR_PRIOR)

with ``PAIR_PRIOR`` times ``ASCII_CONTEXT_FACTOR`` after an ASCII character (whose pairs are
counted mostly on English text: an ASCII context moves the score only when the pages say so
strongly). Counts are raw (pairs are rarer than characters; a page's many of one pair is the
evidence). A run of one character is scored apart, by class and the run's length so far
(``RUN_BUCKETS``: 1, 2-3, 4-7, ... 64+): P(the run goes on | class, length), learned on the
train pages with each page weighing as the square root of its runs' events (``RUN_POWER``) and
a prior of ``RUN_PRIOR`` events at the shorter length's rate. That is what separates a line of
box-drawing characters (KOI8-R's 0xA0 is U+2550: lines of 30 to 80 in source comments) from
runs of NBSP (windows-125x's 0xA0: runs of 1 to 15 in text): on the train pages symbols' runs
go on past 8 characters 98% of the time, NBSP's 85%, and both rarely go past 2. (Lengths alone
do not carry the train page of ═ lines, wcxb/dev/0018: counted without it, the pairs of a space
and a ═ no other page writes cost more than its runs gain, and it is read as windows-1252.)

Last, lone characters: a non-ASCII character that is an element's whole text is scored by what
elements of that name (read from the end tag) held alone on the train pages, mixed with the
pair model's P(character | ">") by ``LONE_PRIOR`` (raw counts, as the pairs):

    P(c | alone in <name>) = (n(name, c) + LONE_PRIOR * P(c | ">")) / (n(name) + LONE_PRIOR)

A middle dot (KOI8-R's 0x9E) is alone in a ``<span>`` 279 times, a zero-width joiner
(windows-1256's 0x9E) in a ``<p>`` 246 times and never in a ``<span>``: the pairs alone read a
KOI8-R page of dot separators (wcxb/dev/4317) as windows-1256; with lone characters it is read
as KOI8-R, also by the model counted without that page, and no other re-encoded page's reading
changed (``python -m bench.detector``).

Measured the same way (``python -m bench.detector``), the class model alone read
2,845 of 2,868 right (dev 666 of 669), with pairs and runs 2,862 (dev 665: two English dev
pages lost, "Agnès" read as windows-1250's "Agnčs" because "slovenčina" is in the language
menus of 20 train pages and no train page writes "nè"; four right-to-left marks read as
windows-1254's ş), train 2,197 of 2,199 (from 2,179).

    python core/gen/detect_model.py > core/src/detect_model.rs

reads ``train.jsonl.gz`` through ``pulpie_rt.corpus`` (``$PULPIE_RT_CORPUS``); the dev pages
are left out, so that measuring the detector on them measures pages it has not seen.
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter, defaultdict

import numpy as np

from pulpie_rt.corpus import iter_pages

MIN_COUNT = 2
CHAR_POWER = 0.5
MIN_PAIR_COUNT = 2
PAIR_PRIOR = 10.0
CLASS_PRIOR = 10.0
ASCII_CONTEXT_FACTOR = 1.0
RUN_BUCKETS = 7
RUN_PRIOR = 2.0
RUN_POWER = 0.5
LONE_PRIOR = 10.0
MIN_LONE_COUNT = 2

# (name, [(first, last), ...]): a character's class is the first whose ranges hold it; cased
# scripts are split in two by str.isupper() (the detector uses char::is_uppercase, the same
# property for these scripts)
CLASSES: list[tuple[str, list[tuple[int, int]]]] = [
    ("ascii_lower", [(0x61, 0x7A)]),
    ("ascii_upper", [(0x41, 0x5A)]),
    ("ascii_digit", [(0x30, 0x39)]),
    ("ascii_space", [(0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)]),
    ("ascii_punct", [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)]),
    ("ascii_control", [(0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0x7F, 0x7F)]),
    ("c1_control", [(0x80, 0x9F)]),
    ("other_space", [(0xA0, 0xA0), (0x2000, 0x200B), (0x202F, 0x202F), (0x205F, 0x205F)]),
    ("latin1_symbol", [(0xA1, 0xBF), (0xD7, 0xD7), (0xF7, 0xF7)]),
    ("latin_upper", []),
    ("latin_lower", [(0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x24F), (0x1E00, 0x1EFF)]),
    ("greek_upper", []),
    ("greek_lower", [(0x370, 0x3FF), (0x1F00, 0x1FFF)]),
    ("cyrillic_upper", []),
    ("cyrillic_lower", [(0x400, 0x52F)]),
    ("hebrew", [(0x590, 0x5FF), (0xFB1D, 0xFB4F)]),
    ("arabic", [(0x600, 0x6FF), (0x750, 0x77F), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)]),
    ("thai", [(0xE00, 0xE7F)]),
    ("combining", [(0x300, 0x36F)]),
    ("general_punct", [(0x200C, 0x202E), (0x2030, 0x205E), (0x2060, 0x206F)]),
    ("symbols", [(0x2070, 0x2BFF)]),
    ("cjk_ideograph", [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3FFFF)]),
    ("kana", [(0x3040, 0x30FF), (0x31F0, 0x31FF)]),
    ("halfwidth_kana", [(0xFF61, 0xFF9F)]),
    ("hangul", [(0xAC00, 0xD7AF), (0x1100, 0x11FF), (0x3130, 0x318F)]),
    ("cjk_punct", [(0x3000, 0x303F), (0xFF00, 0xFF60), (0xFFE0, 0xFFEF)]),
    ("private_use", [(0xE000, 0xF8FF), (0xF0000, 0x10FFFF)]),
    ("replacement", [(0xFFFD, 0xFFFD)]),
    ("other", []),
]
CASED = {"latin_lower": "latin_upper", "greek_lower": "greek_upper",
         "cyrillic_lower": "cyrillic_upper"}
CLASS_INDEX = {name: i for i, (name, _) in enumerate(CLASSES)}
RANGES = sorted((lo, hi, CLASS_INDEX[name]) for name, ranges in CLASSES for lo, hi in ranges)
assert all(a[1] < b[0] for a, b in zip(RANGES, RANGES[1:], strict=False)), "class ranges overlap"
OTHER = CLASS_INDEX["other"]


def class_of(ch: str) -> int:
    cp = ord(ch)
    lo, hi = 0, len(RANGES)
    while lo < hi:
        mid = (lo + hi) // 2
        if RANGES[mid][1] < cp:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(RANGES) and RANGES[lo][0] <= cp <= RANGES[lo][1]:
        index = RANGES[lo][2]
        name = CLASSES[index][0]
        if name in CASED and ch.isupper():
            return CLASS_INDEX[CASED[name]]
        return index
    return OTHER


def count(pages) -> tuple[dict[int, float], Counter, list[list[float]], int]:
    """Per-page-normalised character weights, raw character counts, class-transition weights."""
    n_classes = len(CLASSES)
    char_weight: dict[int, float] = defaultdict(float)
    char_count: Counter = Counter()
    transitions = np.zeros(n_classes * n_classes)
    class_cache: dict[int, int] = {}
    n_pages = 0
    for page in pages:
        text = page["html"]
        if not text:
            continue
        n_pages += 1
        weight = 1.0 / len(text)
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        distinct, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
        tempered = counts.astype(np.float64) ** CHAR_POWER
        tempered /= tempered.sum()
        for cp, n, w in zip(distinct.tolist(), counts.tolist(), tempered.tolist(), strict=True):
            char_weight[cp] += w
            char_count[cp] += n
            if cp not in class_cache:
                class_cache[cp] = class_of(chr(cp))
        classes = np.array([class_cache[cp] for cp in distinct.tolist()], dtype=np.int64)[inverse]
        previous = np.concatenate(([CLASS_INDEX["ascii_space"]], classes[:-1]))
        transitions += np.bincount(previous * n_classes + classes,
                                   minlength=n_classes * n_classes) * weight
    return char_weight, char_count, transitions.reshape(n_classes, n_classes).tolist(), n_pages


def run_bucket(length: int) -> int:
    """0 for a run of 1 so far, 1 for 2-3, 2 for 4-7, ... ``RUN_BUCKETS - 1`` for 64 and more."""
    return min(length.bit_length(), RUN_BUCKETS) - 1


_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")
_RUN_RE = re.compile(r"([^\x00-\x7f])\1*")


def count_pairs(text: str, pairs: Counter) -> None:
    """Adds to ``pairs`` the pairs of adjacent characters of ``text`` with a non-ASCII one,
    a character repeated left out (runs are scored apart)."""
    for match in _NON_ASCII_RE.finditer(text):
        i = match.start()
        if i > 0 and text[i - 1] != text[i]:
            pairs[text[i - 1:i + 1]] += 1
        # a non-ASCII next character counts the pair as its own previous one
        if i + 1 < len(text) and text[i + 1] < "\x80":
            pairs[text[i:i + 2]] += 1


def count_runs(text: str, going_on: Counter, ending: Counter) -> None:
    """Adds to ``going_on`` / ``ending`` [(class, run bucket)] how often a run of one non-ASCII
    character of that length so far goes on / ends."""
    for match in _RUN_RE.finditer(text):
        length = match.end() - match.start()
        c = class_of(match.group(1))
        for so_far in range(1, length):
            going_on[(c, run_bucket(so_far))] += 1
        ending[(c, run_bucket(length))] += 1


def build_pairs(pages) -> dict:
    """The pair tables: ``pair`` {two characters: count}, ``context_class`` {(character,
    class): count of the pairs it starts whose second character is of that class},
    ``context`` {non-ASCII character: count of the pairs it starts}, ``run_logp`` [class]
    [bucket] (log P(goes on), log P(ends))."""
    pairs: Counter = Counter()
    going_on_w: dict = defaultdict(float)
    ending_w: dict = defaultdict(float)
    for page in pages:
        text = page["html"]
        count_pairs(text, pairs)
        going_on: Counter = Counter()
        ending: Counter = Counter()
        count_runs(text, going_on, ending)
        for key in set(going_on) | set(ending):
            n = going_on[key] + ending[key]
            weight = n ** RUN_POWER / n
            going_on_w[key] += going_on[key] * weight
            ending_w[key] += ending[key] * weight
    context_class: dict = defaultdict(float)
    context: dict = defaultdict(float)
    for pair, n in pairs.items():
        first, second = pair
        context_class[(first, class_of(second))] += n
        if ord(first) > 127:
            context[first] += n
    n_classes = len(CLASSES)
    # a run's first repeat at the rate of all classes together; each longer length backs off to
    # the shorter one's rate
    first_on = sum(v for (_, b), v in going_on_w.items() if b == 0)
    first_end = sum(v for (_, b), v in ending_w.items() if b == 0)
    run_logp = []
    for c in range(n_classes):
        rate = first_on / (first_on + first_end)
        row = []
        for b in range(RUN_BUCKETS):
            on, end = going_on_w.get((c, b), 0.0), ending_w.get((c, b), 0.0)
            rate = (on + RUN_PRIOR * rate) / (on + end + RUN_PRIOR)
            row.append((math.log(rate), math.log(1.0 - rate)))
        run_logp.append(row)
    kept = {pair: n for pair, n in pairs.items() if n >= MIN_PAIR_COUNT}
    return {"pair": kept, "context_class": dict(context_class), "context": dict(context),
            "run_logp": run_logp}


# one non-ASCII character making up an element's whole text (whitespace around it allowed),
# and the element's name from its end tag
_LONE_RE = re.compile(r">[ \t\r\n\f]*([^\x00-\x7f])[ \t\r\n\f]*</([A-Za-z][A-Za-z0-9]*)")


def build_lone(pages) -> dict:
    """The lone-character tables: ``count`` {(element name, character): how many elements of
    that name hold just that non-ASCII character, at least ``MIN_LONE_COUNT``}, ``total``
    {element name: how many elements of that name hold just one non-ASCII character}."""
    counts: Counter = Counter()
    for page in pages:
        for match in _LONE_RE.finditer(page["html"]):
            counts[(match.group(2).lower(), match.group(1))] += 1
    total: Counter = Counter()
    for (name, _), n in counts.items():
        total[name] += n
    kept = {key: n for key, n in counts.items() if n >= MIN_LONE_COUNT}
    names = {name for name, _ in kept}
    return {"count": kept, "total": {name: n for name, n in total.items() if name in names}}


def build(pages) -> dict:
    """The model's tables from ``pages``: ``logp`` {code point: log P(character | class)},
    ``floors`` [class], ``bigram`` [previous class][class], ``n_pages``."""
    char_weight, char_count, transitions, n_pages = count(pages)
    n_classes = len(CLASSES)
    class_weight = [0.0] * n_classes
    for cp, w in char_weight.items():
        class_weight[class_of(chr(cp))] += w
    kept = sorted(cp for cp in char_weight
                  if char_count[cp] >= MIN_COUNT and not 0xD800 <= cp <= 0xDFFF)
    logp = {cp: math.log(char_weight[cp] / class_weight[class_of(chr(cp))]) for cp in kept}
    floors = []
    for c in range(n_classes):
        seen = [v for cp, v in logp.items() if class_of(chr(cp)) == c]
        # an unseen character of a class: below the rarest kept one (or, for a class the pages
        # never use, a uniform choice among a thousand)
        floors.append(min(seen) - math.log(4) if seen else -math.log(1000))
    # P(class | previous class), with every transition given one page's worth of a single
    # occurrence (add-k smoothing, k = the weight of one character of an average page)
    total = sum(map(sum, transitions))
    k = total / n_pages / 20_000
    bigram = []
    for a in range(n_classes):
        row_total = sum(transitions[a]) + k * n_classes
        bigram.append([math.log((transitions[a][b] + k) / row_total) for b in range(n_classes)])
    return {"logp": logp, "floors": floors, "bigram": bigram, "n_pages": n_pages}


def main() -> None:
    model = build(iter_pages("train"))
    pair_model = build_pairs(iter_pages("train"))
    lone_model = build_lone(iter_pages("train"))
    n_classes = len(CLASSES)
    logp, floors, bigram, n_pages = (model["logp"], model["floors"], model["bigram"],
                                     model["n_pages"])
    kept = sorted(logp)
    out = sys.stdout
    out.write(
        "//! Generated by core/gen/detect_model.py from the train pages "
        f"({n_pages} pages): do not edit.\n"
        "//! The detector's character model: classes, log P(class | previous class),\n"
        "//! log P(character | class) for the characters seen at least "
        f"{MIN_COUNT} times, and each class's floor for the others.\n"
        "// Some log-probabilities round to the digits of pi or tau: data, not those constants.\n"
        "#![allow(clippy::approx_constant)]\n\n"
    )
    out.write(f"pub const N_CLASSES: usize = {n_classes};\n\n")
    out.write("/// Class names, in class order.\n")
    out.write("#[allow(dead_code)] // for readers: the detector reads class numbers\n")
    out.write("pub const CLASS_NAMES: [&str; N_CLASSES] = [\n")
    for name, _ in CLASSES:
        out.write(f"    \"{name}\",\n")
    out.write("];\n\n")
    out.write("/// The cased classes: (lower-case class, upper-case class).\n")
    out.write(f"pub const CASED: [(u8, u8); {len(CASED)}] = [\n")
    for lower, upper in CASED.items():
        out.write(f"    ({CLASS_INDEX[lower]}, {CLASS_INDEX[upper]}),\n")
    out.write("];\n\n")
    out.write(f"pub const OTHER: u8 = {OTHER};\n\n")
    out.write("/// (first, last, class) code point ranges, sorted; the rest is `OTHER`.\n")
    out.write(f"pub const CLASS_RANGES: [(u32, u32, u8); {len(RANGES)}] = [\n")
    for lo, hi, c in RANGES:
        out.write(f"    (0x{lo:X}, 0x{hi:X}, {c}),\n")
    out.write("];\n\n")
    out.write("/// log P(class | previous class), [previous][class].\n")
    out.write("pub const CLASS_BIGRAM: [[f32; N_CLASSES]; N_CLASSES] = [\n")
    for row in bigram:
        out.write("    [" + ", ".join(f"{v:.3f}" for v in row) + "],\n")
    out.write("];\n\n")
    out.write("/// log P(character | its class) for a character the model has not kept.\n")
    out.write("pub const CLASS_FLOOR: [f32; N_CLASSES] = [\n")
    out.write("    " + ", ".join(f"{v:.3f}" for v in floors) + ",\n];\n\n")
    out.write("/// (code point, log P(character | its class)), sorted by code point.\n")
    out.write(f"pub const CHAR_LOGP: [(u32, f32); {len(kept)}] = [\n")
    for i in range(0, len(kept), 6):
        row = kept[i:i + 6]
        out.write("    " + " ".join(f"(0x{cp:X}, {logp[cp]:.2f})," for cp in row) + "\n")
    out.write("];\n\n")
    write_pairs(out, pair_model)
    write_lone(out, lone_model)


def write_pairs(out, pair_model: dict) -> None:
    out.write(f"pub const PAIR_PRIOR: f64 = {PAIR_PRIOR};\n")
    out.write(f"pub const CLASS_PRIOR: f64 = {CLASS_PRIOR};\n")
    out.write(f"pub const ASCII_CONTEXT_FACTOR: f64 = {ASCII_CONTEXT_FACTOR};\n")
    out.write(f"pub const RUN_BUCKETS: usize = {RUN_BUCKETS};\n\n")
    out.write("/// (log P(a run goes on), log P(it ends)) [class][run bucket].\n")
    out.write(f"pub const RUN_LOGP: [[(f32, f32); {RUN_BUCKETS}]; {len(CLASSES)}] = [\n")
    for row in pair_model["run_logp"]:
        out.write("    [" + ", ".join(f"({a:.3f}, {b:.3f})" for a, b in row) + "],\n")
    out.write("];\n\n")
    pairs = sorted(((ord(p[0]) << 32) | ord(p[1]), n) for p, n in pair_model["pair"].items())
    out.write("/// ((first << 32) | second, count) of the pairs with a non-ASCII character seen at "
              f"least {MIN_PAIR_COUNT} times, sorted.\n")
    out.write(f"pub static PAIR_COUNT: [(u64, f32); {len(pairs)}] = [\n")
    for i in range(0, len(pairs), 5):
        out.write("    " + " ".join(f"(0x{k:X}, {int(n)}.0)," for k, n in pairs[i:i + 5]) + "\n")
    out.write("];\n\n")
    contexts = sorted(((ord(ch) << 8) | c, n) for (ch, c), n in pair_model["context_class"].items())
    out.write("/// ((first << 8) | class of second, count) of the same pairs (all of them), "
              "sorted.\n")
    out.write(f"pub static CONTEXT_CLASS_COUNT: [(u64, f32); {len(contexts)}] = [\n")
    for i in range(0, len(contexts), 5):
        out.write("    " + " ".join(f"(0x{k:X}, {int(n)}.0)," for k, n in contexts[i:i + 5]) + "\n")
    out.write("];\n\n")
    firsts = sorted((ord(ch), n) for ch, n in pair_model["context"].items())
    out.write("/// (non-ASCII first character, count of the pairs it starts), sorted.\n")
    out.write(f"pub static CONTEXT_COUNT: [(u32, f32); {len(firsts)}] = [\n")
    for i in range(0, len(firsts), 6):
        out.write("    " + " ".join(f"(0x{k:X}, {int(n)}.0)," for k, n in firsts[i:i + 6]) + "\n")
    out.write("];\n")


def write_lone(out, lone_model: dict) -> None:
    out.write(f"\npub const LONE_PRIOR: f64 = {LONE_PRIOR};\n\n")
    totals = sorted(lone_model["total"].items())
    out.write("/// (element name, how many elements of that name hold one non-ASCII character and "
              "nothing else), sorted.\n")
    out.write(f"pub const LONE_TOTAL: [(&str, f32); {len(totals)}] = [\n")
    for name, n in totals:
        out.write(f"    (\"{name}\", {n}.0),\n")
    out.write("];\n\n")
    counts = sorted((name, ord(ch), n) for (name, ch), n in lone_model["count"].items())
    out.write("/// (element name, character, how many elements of that name hold it alone) seen at "
              f"least {MIN_LONE_COUNT} times, sorted.\n")
    out.write(f"pub const LONE_COUNT: [(&str, u32, f32); {len(counts)}] = [\n")
    for name, cp, n in counts:
        out.write(f"    (\"{name}\", 0x{cp:X}, {n}.0),\n")
    out.write("];\n")


if __name__ == "__main__":
    main()
