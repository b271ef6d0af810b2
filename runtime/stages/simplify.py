"""html -> (simplified_html, map_html): the segmentation the Pulpie models were trained on.

The Orange models were distilled on MinerU-HTML's ``simplify_html`` segmentation (as the
reference ``pulpie.simplify`` reproduces it). One block differing means the model reads a page
it was never trained on, so this stage reproduces that segmentation's output exactly,
including its quirks.

Outputs:
- ``simplified_html``: ``<html><head><meta charset="utf-8"></head><body>`` + one element per
  block, each carrying ``_item_id="N"`` (N = 1, 2, …) + ``</body></html>``, whitespace
  collapsed. What the model reads.
- ``map_html``: the original page (as libxml2 parsed it) with the same ``_item_id``s on block
  elements and ``<cc-alg-uc-text _item_id="N">`` wrappers around unwrapped text runs. What
  ``reconstruct`` maps labels back onto.

The stage runs in the compiled core (``core/``, through ``native``): lexbor, linked into it,
parses and serializes the page; the core builds libxml2's tree of that serialization and
segments it, without recursion (20,000-deep pages keep their text). Its readable
specification, the Python implementation it is tested against, is
``tests/spec/simplify_spec.py``.

``keep_hidden`` (off by default, and off for the Orange models): segment without removing the
elements the reference removes as hidden (inline ``display:none``, ``visibility:hidden``,
``opacity:0``, ``font-size:0px``, ``color:transparent``; the content of a closed
``<details>`` but its summary; a ``class``/``id`` ``nav`` child of ``<body>``); everything
else is the same. Pages that fade their main content in (``style="opacity:0"`` until a
script runs) or fold it into accordions lose it to that removal, and no model can keep a
block that does not exist; a bundle profile trained on this segmentation asks for it
(manifest ``keep_hidden``, see ``runtime.model.bundle``).

``drop_noscript`` (off by default, and off for the Orange models): remove each ``noscript``
element that holds nothing but text and inline elements, with all it holds, before
segmenting (its tail text stays where it was); everything else is the same. A browser running
scripts never renders ``<noscript>`` content, and pages put tracking pixels there (an
``<img src="http://...">``, or that markup escaped as text, which the model reads as words)
and "please enable JavaScript" notices, too rarely for a model to learn they are boilerplate;
a bundle profile trained on this segmentation asks for it (manifest ``drop_noscript``). A
``noscript`` that holds blocks stays: Discourse and Flarum forums serve the whole thread in
one, the page's main content as it was scraped (dropping those would empty 16 of the 986
train pages). ``map_html`` keeps the removed elements, without ids.
"""

from __future__ import annotations

import operator

from pulpie_rt.runtime import native

__all__ = ["simplify", "SimplifyError"]


class SimplifyError(ValueError):
    """A page that cannot be segmented (not text, say); the message names the reason."""


def simplify(html: str, cutoff_length: int = 500, *, keep_hidden: bool = False,
             drop_noscript: bool = False) -> tuple[str, str]:
    """Segment a page into blocks: ``(simplified_html, map_html)``.

    Same contract and output as ``pulpie.simplify.simplify`` (with ``keep_hidden``: without
    removing hidden elements; with ``drop_noscript``: without the ``noscript`` elements that hold
    no block); see the
    module docstring. A
    lone surrogate in ``html`` (a ``str`` can hold one) is ignored, as the reference's parser
    ignores it; it still counts as a character XML does not allow (which changes how blocks
    are cleaned, as in the reference).
    Raises ``SimplifyError`` for input that is not a string, a negative ``cutoff_length``,
    or a page the core cannot take (the message names the reason).
    """
    if not isinstance(html, str):
        raise SimplifyError(f"page HTML must be str, not {type(html).__name__}")
    try:
        cutoff = operator.index(cutoff_length)
    except TypeError:
        cutoff = -1
    if cutoff < 0:
        raise SimplifyError(f"cutoff_length must be a non-negative int, not {cutoff_length!r}")
    try:
        return native.simplify_page(html, cutoff, bool(keep_hidden), bool(drop_noscript))
    except native.CoreError as exc:
        raise SimplifyError(str(exc)) from exc
