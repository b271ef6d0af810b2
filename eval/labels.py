"""Labels for training: which blocks of a page are main content, read off its ground truth.

The rule (the "rule labels (ceiling)" row of ``make quality``: its word-F1 when applied
perfectly):
walk the blocks in page order; a block is main when at least ``MIN_AVAILABLE`` of its words
are still available in the ground truth's remaining word counts, and only a main block uses
those counts up. Plain set membership would also mark the second, third … copy of a
navigation link whose words appear once in the article.

Words are WCXB's evaluation tokens: lowercase ``\\w+`` runs.
"""

from __future__ import annotations

import html as html_lib
import re
from collections import Counter
from collections.abc import Sequence

from eval.metrics import words

TAG_RE = re.compile(r"<[^>]*>")
MIN_AVAILABLE = 0.7
MIN_CUT_WORDS = 10  # the words a block cut short (stages.blocks' cutoff) holds at least


def block_text(block_html: str) -> str:
    """Visible text of one simplified block (tags dropped, entities decoded)."""
    return html_lib.unescape(TAG_RE.sub(" ", block_html))


def label_blocks(blocks: list[str], reference: str, min_available: float = MIN_AVAILABLE,
                 added_main: Sequence[str] = ()) -> list[int]:
    """1 (main) or 0 (other) per block of a page, by greedy overlap with ``reference``.

    A block without words is other: it cannot change a word-level score, and marking it main
    would teach the model to keep empty wrappers.

    ``added_main``: texts that ``reference`` holds because they were added to the page as main
    content (``train.stories``' paragraphs). A block whose words are one of them (or begin
    it, by ``MIN_CUT_WORDS`` words at least: a long block is cut short) is main; the rule
    reads the other blocks against the reference less their words, so the added words never
    make a block of the page main that was not.
    """
    remaining = Counter(words(reference))
    added: list[list[str]] = []
    for text in added_main:
        added.append(words(text))
        remaining.subtract(added[-1])
    labels = []
    for block in blocks:
        in_order = words(block_text(block))
        block_words = Counter(in_order)
        total = sum(block_words.values())
        if total == 0:
            labels.append(0)
            continue
        match = next((i for i, text in enumerate(added) if _begins(text, in_order)), None)
        if match is not None:
            del added[match]
            labels.append(1)
            continue
        available = sum(min(n, remaining[w]) for w, n in block_words.items())
        if available >= min_available * total:
            remaining.subtract(block_words)
            labels.append(1)
        else:
            labels.append(0)
    return labels


def _begins(text: list[str], cut: list[str]) -> bool:
    """Whether the words ``cut`` are ``text``'s, or their beginning cut short by ``stages
    .blocks``' cutoff (``MIN_CUT_WORDS`` of them at least; the last one may be cut too)."""
    if cut == text:
        return True
    n = len(cut)
    return (MIN_CUT_WORDS <= n <= len(text) and text[:n - 1] == cut[:-1]
            and text[n - 1].startswith(cut[-1]))
