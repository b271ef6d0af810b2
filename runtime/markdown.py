"""Main-content HTML -> Markdown (the reference's exact output) or plain text.

``to_markdown`` is the reference ``pulpie.markdown.to_markdown``: spacer/tracking ``<img>``
tags removed with the same pattern, then html2text (the reference's library) with no line
wrapping, links and images kept, and the result stripped.

``to_text`` is for users who do not need Markdown: the visible text, one line per block.
"""

from __future__ import annotations

import html as _html
import re

import html2text
import html2text.utils
from selectolax.lexbor import LexborHTMLParser

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


_IMG_RE = re.compile("<img", re.IGNORECASE)


def strip_spacer_images(html: str) -> str:
    """``html`` without zero-content / tracking-pixel ``<img>`` tags."""
    if _IMG_RE.search(html) is None:
        return html
    return _SPACER_IMG_RE.sub("", html)


# html2text escapes every text run with four regex substitutions (a quarter of its time);
# they can only change a run that holds a backslash, "+", "-" or a digit before ".".
# While our converter runs, runs without any of these are returned as they are and all others
# go to html2text's own function, so the output is unchanged for every input (html2text looks
# the function up in its module globals at each call; other html2text users in the process
# get the same results either way).
_md_section_escape = html2text.utils.escape_md_section
_MD_SECTION_CANDIDATE_RE = re.compile(r"[\\+-]|\d\.")


def _escape_md_section(text: str, snob: bool = False) -> str:
    if not snob and _MD_SECTION_CANDIDATE_RE.search(text) is None:
        return text
    return _md_section_escape(text, snob=snob)


def _converter() -> html2text.HTML2Text:
    converter = html2text.HTML2Text(bodywidth=0)
    converter.ignore_links = False
    converter.ignore_images = False
    return converter


def to_markdown(html: str) -> str:
    """Markdown of main-content HTML, exactly as the reference renders it.

    html2text is an ``html.parser.HTMLParser``; about half its time goes to that tokenizer.
    HTML as libxml2 writes it (what ``extract_main_html`` returns) is tokenized here instead,
    with one regex per token, into exactly the calls ``html.parser`` would make; anything
    outside that regular subset goes through ``html.parser`` as in the reference.
    """
    if not isinstance(html, str):
        raise TypeError(f"html must be str, not {type(html).__name__}")
    cleaned = strip_spacer_images(html)
    # what HTML2Text.feed does to its input before tokenizing
    data = cleaned.replace("</' + 'script>", "</ignore>")
    events = _html_parser_events(data)
    if events is None:
        return _converter().handle(cleaned).strip()
    converter = _converter()
    handlers = (converter.handle_data, converter.handle_starttag, converter.handle_endtag,
                converter.handle_entityref, converter.handle_charref)
    html2text.escape_md_section = _escape_md_section
    try:
        for kind, arg, attrs in events:
            if kind == 1:
                handlers[1](arg, attrs)
            else:
                handlers[kind](arg)
    finally:
        html2text.escape_md_section = _md_section_escape
    markdown = converter.optwrap(converter.finish())
    if converter.pad_tables:
        markdown = html2text.pad_tables_in_text(markdown)
    return markdown.strip()


# html.parser's own patterns (CPython 3.10-3.13), for the tokens handled here
_CHARREF_RE = re.compile("&#(?:[0-9]+|[xX][0-9a-fA-F]+)[^0-9a-fA-F]")
_ENTITYREF_RE = re.compile("&([a-zA-Z][-.a-zA-Z0-9]*)[^a-zA-Z0-9]")
_INCOMPLETE_RE = re.compile("&[a-zA-Z#]")
_TEXT_RE = re.compile("[^<&]+")
# A start tag as libxml2 writes it: quoted or bare attributes, nothing html.parser's tolerant
# rules would read differently.
_START_TAG_RE = re.compile(
    r"<([a-zA-Z][^\t\n\r\f />\x00]*)"
    r"((?:\s+[^\s/>\"'=<][^\s/>\"'=]*(?:=\"[^\"]*\"|='[^']*')?)*)\s*>"
)
_ATTR_RE = re.compile(r"([^\s/>\"'=<][^\s/>\"'=]*)(=(?:\"[^\"]*\"|'[^']*'))?")
_END_TAG_RE = re.compile(r"</([a-zA-Z][-.a-zA-Z0-9:_]*)>")
_CDATA_END_RE = {
    tag: re.compile(rf"</\s*{tag}\s*>", re.IGNORECASE) for tag in ("script", "style")
}
_unescape = _html.unescape


def _html_parser_events(data: str) -> list[tuple[int, str, list]] | None:
    """The handler calls ``html.parser`` (``convert_charrefs=False``) makes for ``data``:
    ``(kind, arg, attrs)`` with kind 0 data, 1 start tag, 2 end tag, 3 entity, 4 char ref;
    ``None`` when ``data`` leaves the subset handled here."""
    events: list[tuple[int, str, list]] = []
    add = events.append
    pos = 0
    end = len(data)
    text_match = _TEXT_RE.match
    while pos < end:
        char = data[pos]
        if char == "<":
            m = _START_TAG_RE.match(data, pos)
            if m is not None:
                tag = m.group(1).lower()
                attrs = []
                raw = m.group(2)
                if raw:
                    for name, value in _ATTR_RE.findall(raw):
                        if value:
                            value = value[2:-1]
                            if value and "&" in value:
                                value = _unescape(value)
                        else:
                            value = None
                        attrs.append((name.lower(), value))
                add((1, tag, attrs))
                pos = m.end()
                if tag == "script" or tag == "style":
                    close = _CDATA_END_RE[tag].search(data, pos)
                    if close is None:
                        return None
                    if close.start() > pos:
                        add((0, data[pos : close.start()], None))
                    add((2, tag, None))
                    pos = close.end()
                continue
            m = _END_TAG_RE.match(data, pos)
            if m is None:
                return None
            add((2, m.group(1).lower(), None))
            pos = m.end()
        elif char == "&":
            if data.startswith("&#", pos):
                m = _CHARREF_RE.match(data, pos)
                if m is None:
                    return None
                add((4, m.group()[2:-1], None))
            else:
                m = _ENTITYREF_RE.match(data, pos)
                if m is None:
                    if _INCOMPLETE_RE.match(data, pos) or pos + 1 >= end:
                        return None
                    add((0, "&", None))
                    pos += 1
                    continue
                add((3, m.group(1), None))
            pos = m.end()
            if data[pos - 1] != ";":
                pos -= 1
        else:
            m = text_match(data, pos)
            add((0, m.group(), None))
            pos = m.end()
    return events


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
    """Plain text of main-content HTML.

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
