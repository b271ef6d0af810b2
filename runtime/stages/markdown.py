"""Main-content HTML -> Markdown (the reference's exact output) or plain text.

``to_markdown`` is the reference ``pulpie.markdown.to_markdown``: spacer/tracking ``<img>``
tags removed with the same pattern, then html2text 2025.4.15 (the reference's library) with no
line wrapping, links and images kept, and the result stripped. It runs on the compiled core
(``core/src/markdown``, a port of html2text and of the ``html.parser`` it runs on), byte for
byte the same: ``python -m parity.markdown_parity`` and ``tests/test_markdown.py``
compare it with the specification, ``tests/spec/markdown_spec.py`` (html2text itself).

``to_text`` is for users who do not need Markdown: the visible text, one line per block.
"""

from __future__ import annotations

from pulpie_rt.runtime import native


def to_markdown(html: str) -> str:
    """Markdown of main-content HTML, exactly as the reference renders it.

    Where the reference raises for an input (html.parser's assertions on unknown marked
    sections, ``int()``'s digit limit, html2text's on ``<ol start>`` without a value), the
    same exception is raised here; ``native.CoreError`` where the core itself failed (a caught
    panic: the page's error, never another implementation's output).
    """
    if not isinstance(html, str):
        raise TypeError(f"html must be str, not {type(html).__name__}")
    try:
        return native.markdown(html)
    except native.SpecificationRaises as raised:
        raise raised.exception from None


def to_text(html: str) -> str:
    """Plain text of main-content HTML (on the compiled core).

    Behaviour: every block element (paragraph, heading, list item, table row, ``div`` …)
    and every ``<br>`` starts a new line; table cells on a row are separated by `` | ``;
    within a line, runs of any whitespace (no-break spaces too) become one space and the line
    is stripped; empty lines are dropped; ``<pre>`` content keeps its own line breaks.
    Scripts, styles, templates and form/embedded widgets contribute nothing; neither does
    ``<img alt>``. ``<noscript>`` content counts: reconstruction keeps it when it holds main
    blocks (server-rendered forums put the whole thread there), and so does the Markdown.
    """
    if not isinstance(html, str):
        raise TypeError(f"html must be str, not {type(html).__name__}")
    return native.text(html)
