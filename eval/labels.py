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

from pulpie_rt.eval.metrics import words

TAG_RE = re.compile(r"<[^>]*>")
MIN_AVAILABLE = 0.7


def block_text(block_html: str) -> str:
    """Visible text of one simplified block (tags dropped, entities decoded)."""
    return html_lib.unescape(TAG_RE.sub(" ", block_html))


def label_blocks(blocks: list[str], reference: str, min_available: float = MIN_AVAILABLE
                 ) -> list[int]:
    """1 (main) or 0 (other) per block of a page, by greedy overlap with ``reference``.

    A block without words is other: it cannot change a word-level score, and marking it main
    would teach the model to keep empty wrappers.
    """
    remaining = Counter(words(reference))
    labels = []
    for block in blocks:
        block_words = Counter(words(block_text(block)))
        total = sum(block_words.values())
        if total == 0:
            labels.append(0)
            continue
        available = sum(min(n, remaining[w]) for w, n in block_words.items())
        if available >= min_available * total:
            remaining.subtract(block_words)
            labels.append(1)
        else:
            labels.append(0)
    return labels
