"""The specification of the blocks stage (``runtime.stages.blocks``, which runs on the compiled
core): ``tests/test_blocks.py`` compares the two on the dev pages.

Blocks: split simplified HTML into the strings the model classifies, one per ``_item_id``.

A block runs from the ``<`` that opens the tag carrying an ``_item_id`` attribute up to the
``<`` that opens the next such tag (or the end of the document), stripped of surrounding
whitespace. This is the reference's segmentation, kept exact: labels are assigned to blocks by
position, so any difference in segmentation shifts every later label.
"""

from __future__ import annotations

from pulpie_rt.runtime.constants import ITEM_ID_RE


def extract_blocks(simplified_html: str) -> tuple[list[str], list[str | None]]:
    """Blocks of ``simplified_html`` in document order, and each block's ``_item_id``.

    The id of a block is the first ``_item_id`` found inside the block's text; it is ``None``
    when the block holds none (two ids inside one tag make the first block empty).
    """
    attr_starts = [m.start() for m in ITEM_ID_RE.finditer(simplified_html)]
    if not attr_starts:
        return [], []
    # rfind of -1 (no "<" before the attribute) is kept as is: it slices like the reference.
    tag_starts = [simplified_html.rfind("<", 0, start) for start in attr_starts]
    ends: list[int | None] = [*tag_starts[1:], None]
    blocks = [simplified_html[s:e].strip() for s, e in zip(tag_starts, ends, strict=True)]
    item_ids = []
    for block in blocks:
        found = ITEM_ID_RE.search(block)
        item_ids.append(found.group(1) if found else None)
    return blocks, item_ids
