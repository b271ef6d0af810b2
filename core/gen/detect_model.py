"""Writes core/src/detect_model.rs: the character statistics the encoding detector
(core/src/detect.rs) scores a candidate decoding with, counted on the train pages' text.

The model is a class-based character bigram: each character belongs to a class (its script
and, for cased scripts, its case: ``CLASSES`` below), and a text's log-probability is the sum
over its characters of log P(class | previous class) + log P(character | class). Every train
page weighs the same (its counts are divided by its length), so one long page does not make
the model. Within a page a character weighs as the square root of its count (``CHAR_POWER``;
the page's weights then sum to one): a page's thousands of one symbol (box-drawing art, runs of
NBSP) would otherwise make that symbol look as frequent as a language's letters. Measured on
the re-encoded pages with no declaration (``python -m pulpie_rt.bench.detector``), counts
as they are read 2,807 of 2,887 right (NBSP-only pages went to KOI8-R, whose 0xA0 is a
box-drawing character one train page is full of), square roots 2,845. Characters seen fewer
than ``MIN_COUNT`` times are left out (they get their class's floor, below every kept
character's log-probability).

    python core/gen/detect_model.py > core/src/detect_model.rs

reads ``train.jsonl.gz`` through ``pulpie_rt.corpus`` (``$PULPIE_RT_CORPUS``); the dev pages
are left out, so that measuring the detector on them measures pages it has not seen.
"""

from __future__ import annotations

import math
import sys
from collections import Counter, defaultdict

import numpy as np

from pulpie_rt.corpus import iter_pages

MIN_COUNT = 2
CHAR_POWER = 0.5

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
        f"{MIN_COUNT} times, and each class's floor for the others.\n\n"
    )
    out.write(f"pub const N_CLASSES: usize = {n_classes};\n\n")
    out.write("/// Class names, in class order.\n")
    out.write(f"pub const CLASS_NAMES: [&str; {n_classes}] = [\n")
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
    out.write(f"pub const CLASS_BIGRAM: [[f32; {n_classes}]; {n_classes}] = [\n")
    for row in bigram:
        out.write("    [" + ", ".join(f"{v:.3f}" for v in row) + "],\n")
    out.write("];\n\n")
    out.write("/// log P(character | its class) for a character the model has not kept.\n")
    out.write(f"pub const CLASS_FLOOR: [f32; {n_classes}] = [\n")
    out.write("    " + ", ".join(f"{v:.3f}" for v in floors) + ",\n];\n\n")
    out.write("/// (code point, log P(character | its class)), sorted by code point.\n")
    out.write(f"pub const CHAR_LOGP: [(u32, f32); {len(kept)}] = [\n")
    for i in range(0, len(kept), 6):
        row = kept[i:i + 6]
        out.write("    " + " ".join(f"(0x{cp:X}, {logp[cp]:.2f})," for cp in row) + "\n")
    out.write("];\n")


if __name__ == "__main__":
    main()
