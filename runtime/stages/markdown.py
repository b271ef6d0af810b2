"""Main-content HTML -> Markdown (the reference's exact output) or plain text.

``to_markdown`` is the reference ``pulpie.markdown.to_markdown``: spacer/tracking ``<img>``
tags removed with the same pattern, then html2text 2025.4.15 (the reference's library) with no
line wrapping, links and images kept, and the result stripped. It runs on the compiled core
(``core/src/markdown``, a port of html2text and of the ``html.parser`` it runs on), byte for
byte the same: ``python -m pulpie_rt.parity.markdown_parity`` and ``tests/test_markdown.py``
compare it with the specification, ``tests/spec/markdown_spec.py`` (html2text itself).
Without the core, html2text runs here (then it must be installed; it is a test dependency).

``to_text`` is for users who do not need Markdown: the visible text, one line per block.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

from pulpie_rt.runtime import native

# <img> tags that carry no content: width/height 1, spacer/transparent/blank/pixel/1x1/clear
# images, data-URI placeholders (matched on the whole tag, case-insensitively).
_SPACER_IMG_RE = re.compile(
    r"<img\b[^>]*?"
    r"(?:(?:width|height)\s*=\s*[\"']?\s*1\b"
    r"|src\s*=\s*[\"'][^\"']*(?:trans(?:parent)?|spacer|blank|pixel|1x1|clear)[^\"']*[\"']"
    r"|src\s*=\s*[\"']data:image[^\"']*[\"'])"
    r"[^>]*>",
    re.IGNORECASE,
)


def strip_spacer_images(html: str) -> str:
    """``html`` without zero-content / tracking-pixel ``<img>`` tags."""
    return _SPACER_IMG_RE.sub("", html)


def to_markdown(html: str) -> str:
    """Markdown of main-content HTML, exactly as the reference renders it.

    Where the reference raises for an input (html.parser's assertions on unknown marked
    sections, ``int()``'s digit limit, html2text's on ``<ol start>`` without a value), the
    same exception is raised here.
    """
    if not isinstance(html, str):
        raise TypeError(f"html must be str, not {type(html).__name__}")
    try:
        markdown = native.markdown(html)
    except native.SpecificationRaises as raised:
        raise raised.exception from None
    if markdown is not None:
        return markdown
    return to_markdown_python(html)


def to_markdown_python(html: str) -> str:
    """``to_markdown`` without the compiled core: html2text, as the reference runs it."""
    try:
        import html2text
    except ImportError as exc:
        raise RuntimeError(
            "Markdown needs the compiled core (make core, with a Rust toolchain) or html2text "
            "(pip install 'html2text==2025.4.15')"
        ) from exc
    converter = html2text.HTML2Text(bodywidth=0)
    converter.ignore_links = False
    converter.ignore_images = False
    return converter.handle(strip_spacer_images(html)).strip()


# ── plain text ───────────────────────────────────────────────────────────────────────────

# Elements that start and end a line of text.
_BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption center dd details dialog dir div dl dt "
    "fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html legend li "
    "listing main menu nav ol option p pre section summary table tbody tfoot thead tr ul "
    "xmp".split()
)
# Elements whose content is not text a reader sees.
_SKIP_TAGS = frozenset(
    "head script style template iframe object embed svg math select "
    "textarea".split()
)
_CELL_TAGS = frozenset(("td", "th"))
_WS_RUN_RE = re.compile(r"\s+")  # any Unicode whitespace (no-break spaces too)
_LINE_BREAK = "\x02"  # a block boundary (text keeps its own "\\n" until collapsed)


def to_text(html: str) -> str:
    """Plain text of main-content HTML (on the compiled core; ``to_text_python`` without it).

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
    text = native.text(html)
    return text if text is not None else to_text_python(html)


def to_text_python(html: str) -> str:
    """``to_text`` on lexbor's HTML5 tree of ``html``: the specification the compiled core
    (``core/src/markdown/text.rs``) is compared with, and what runs without it."""
    if not isinstance(html, str):
        raise TypeError(f"html must be str, not {type(html).__name__}")
    if not html.strip():
        return ""
    tree = LexborHTMLParser(html.encode("utf-8", "surrogatepass"))
    root = tree.root
    if root is None:
        return ""
    pieces: list[str] = []
    # explicit stack (no recursion): (node, closing?) pairs; ``pre`` depth tracked
    stack: list[tuple[object, bool]] = [(root, False)]
    pre_depth = 0
    while stack:
        node, closing = stack.pop()
        tag = node.tag
        if closing:
            if tag == "pre":
                pre_depth -= 1
            if tag in _BLOCK_TAGS:
                pieces.append(_LINE_BREAK)
            continue
        if tag == "-text":
            text = node.text_content or ""
            if pre_depth:
                pieces.append(text.replace("\r\n", "\n").replace("\n", "\x00"))
            else:
                pieces.append(text)
            continue
        if tag[0] in "-#_!":
            continue
        tag = tag.lower()
        if tag in _SKIP_TAGS:
            continue
        if tag == "br":
            pieces.append("\x00" if pre_depth else _LINE_BREAK)
            continue
        if tag in _BLOCK_TAGS:
            pieces.append(_LINE_BREAK)
        elif tag in _CELL_TAGS:
            pieces.append("\x01")
        if tag == "pre":
            pre_depth += 1
        stack.append((node, True))
        children = []
        child = node.child
        while child is not None:
            children.append(child)
            child = child.next
        for child in reversed(children):
            stack.append((child, False))
    lines = []
    for line in "".join(pieces).split(_LINE_BREAK):
        # \x00: a line break inside <pre>; \x01: a table cell boundary
        for part in line.split("\x00"):
            cells = [_WS_RUN_RE.sub(" ", c).strip() for c in part.split("\x01")]
            text = " | ".join(c for c in cells if c)
            if text:
                lines.append(text)
    return "\n".join(lines)
