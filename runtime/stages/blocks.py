"""Blocks: split simplified HTML into the strings the model classifies, one per ``_item_id``.

A block runs from the ``<`` that opens the tag carrying an ``_item_id`` attribute up to the
``<`` that opens the next such tag (or the end of the document), stripped of surrounding
whitespace. This is the reference's segmentation, kept exact: labels are assigned to blocks by
position, so any difference in segmentation shifts every later label.

The stage runs in the compiled core (``core/src/engine/prepare.rs``, the C library's); its
readable specification, the Python implementation it is tested against, is
``tests/spec/blocks_spec.py``.
"""

from __future__ import annotations

from pulpie_rt.runtime import native


def extract_blocks(simplified_html: str) -> tuple[list[str], list[str | None]]:
    """Blocks of ``simplified_html`` in document order, and each block's ``_item_id``.

    The id of a block is the first ``_item_id`` found inside the block's text; it is ``None``
    when the block holds none (two ids inside one tag make the first block empty).
    """
    if not isinstance(simplified_html, str):
        raise TypeError(f"simplified_html must be str, not {type(simplified_html).__name__}")
    return native.extract_blocks(simplified_html)
