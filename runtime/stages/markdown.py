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
import html2text.config
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


# html2text escapes every text run with four regex substitutions, and three of them are
# anchored with "^\s*" in MULTILINE mode: each line start rescans the whitespace that follows
# it, which is quadratic on whitespace-heavy runs (0.9 s for one dev page whose text has long
# blank runs). A run can only change when it holds what one of their matches must contain: a
# backslash, a digit "." whitespace, "+" whitespace, or a "-" at a line start or after
# whitespace that is followed by whitespace or "-". While a conversion runs here, other runs
# are returned as they are and the rest go to html2text's own function, so the output is
# unchanged for every input (html2text looks the function up in its module globals at each
# call; other html2text users in the process get the same results either way). Likewise
# escape_md (link URLs, titles, alt texts) skips its substitution when its pattern finds
# nothing to escape.
_md_section_escape = html2text.utils.escape_md_section
_md_escape = html2text.utils.escape_md
# (every branch starts with a literal, so the regex engine skips ahead to those characters)
_MD_SECTION_CANDIDATE_RE = re.compile(r"\\|\+\s|-(?<!\S-)[\s-]|\.(?<=\d\.)\s")
_MD_CHARS_RE = html2text.config.RE_MD_CHARS_MATCHER


def _escape_md_section(text: str, snob: bool = False) -> str:
    if not snob and _MD_SECTION_CANDIDATE_RE.search(text) is None:
        return text
    return _md_section_escape(text, snob=snob)


def _escape_md(text: str) -> str:
    if _MD_CHARS_RE.search(text) is None:
        return text
    return _md_escape(text)


# html2text's HTML2Text.o collapses the whitespace of every text run with
# re.sub(r"\s+", r" ", data), through re's pattern cache. While our converter runs, html2text's
# module sees this object as ``re``: that one call uses a compiled pattern, and returns the run
# as it is when it holds no whitespace but single spaces (str.isprintable is false for every
# whitespace character except " "); every other name is the ``re`` module's.
_WHITESPACE_RUN_RE = re.compile(r"\s+")


class _Html2TextRe:
    def __getattr__(self, name: str):
        return getattr(re, name)

    @staticmethod
    def sub(pattern, repl, string, count=0, flags=0):
        if pattern == r"\s+" and repl == " " and not count and not flags:
            if string.isprintable() and "  " not in string:
                return string
            return _WHITESPACE_RUN_RE.sub(" ", string)
        return re.sub(pattern, repl, string, count=count, flags=flags)


_html2text_re = _Html2TextRe()


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
    (The shortcut calls ``handle_tag`` with the attribute dict, as html2text's
    ``handle_starttag``/``handle_endtag`` do, and skips those two wrappers.)
    """
    if not isinstance(html, str):
        raise TypeError(f"html must be str, not {type(html).__name__}")
    cleaned = strip_spacer_images(html)
    # what HTML2Text.feed does to its input before tokenizing
    data = cleaned.replace("</' + 'script>", "</ignore>")
    converter = _converter()
    html2text.escape_md_section = _escape_md_section
    html2text.escape_md = _escape_md
    html2text.re = _html2text_re
    try:
        if not _feed_html(data, converter):
            # (the converter took part of the page: start again with html.parser)
            return _converter().handle(cleaned).strip()
    finally:
        html2text.escape_md_section = _md_section_escape
        html2text.escape_md = _md_escape
        html2text.re = re
    markdown = converter.optwrap(converter.finish())
    if converter.pad_tables:
        markdown = html2text.pad_tables_in_text(markdown)
    return markdown.strip()


# html.parser's own patterns (CPython 3.10-3.13), for the tokens handled here
_CHARREF_RE = re.compile("&#(?:[0-9]+|[xX][0-9a-fA-F]+)[^0-9a-fA-F]")
_ENTITYREF_RE = re.compile("&([a-zA-Z][-.a-zA-Z0-9]*)[^a-zA-Z0-9]")
_INCOMPLETE_RE = re.compile("&[a-zA-Z#]")
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


def _feed_html(data: str, converter: html2text.HTML2Text) -> bool:
    """Make on ``converter`` the handler calls ``html.parser`` (``convert_charrefs=False``)
    makes for ``data``, a start or end tag as html2text's ``handle_tag(tag, attrs, start)``;
    ``False`` as soon as ``data`` leaves the subset handled here (part of it is fed by then)."""
    handle_data = converter.handle_data
    handle_tag = converter.handle_tag
    pos = 0
    end = len(data)
    # next "<" and "&" at or after pos (end when none): a text run stops at the nearer one
    next_lt = data.find("<")
    if next_lt < 0:
        next_lt = end
    next_amp = data.find("&")
    if next_amp < 0:
        next_amp = end
    start_tag = _START_TAG_RE.match
    end_tag = _END_TAG_RE.match
    attr_findall = _ATTR_RE.findall
    while pos < end:
        char = data[pos]
        if char == "<":
            if data.startswith("</", pos):
                m = end_tag(data, pos)
                if m is None:
                    return False
                handle_tag(m.group(1).lower(), {}, False)
                pos = m.end()
                continue
            m = start_tag(data, pos)
            if m is None:
                return False
            tag = m.group(1).lower()
            attrs = {}
            raw = m.group(2)
            if raw:
                for name, value in attr_findall(raw):
                    if value:
                        value = value[2:-1]
                        if value and "&" in value:
                            value = _unescape(value)
                    else:
                        value = None
                    attrs[name.lower()] = value  # a repeated name: the last value, as dict()
            handle_tag(tag, attrs, True)
            pos = m.end()
            if tag == "script" or tag == "style":
                close = _CDATA_END_RE[tag].search(data, pos)
                if close is None:
                    return False
                if close.start() > pos:
                    handle_data(data[pos : close.start()])
                handle_tag(tag, {}, False)
                pos = close.end()
        elif char == "&":
            if data.startswith("&#", pos):
                m = _CHARREF_RE.match(data, pos)
                if m is None:
                    return False
                converter.handle_charref(m.group()[2:-1])
            else:
                m = _ENTITYREF_RE.match(data, pos)
                if m is None:
                    if _INCOMPLETE_RE.match(data, pos) or pos + 1 >= end:
                        return False
                    handle_data("&")
                    pos += 1
                    continue
                converter.handle_entityref(m.group(1))
            pos = m.end()
            if data[pos - 1] != ";":
                pos -= 1
        else:
            if next_lt < pos:
                next_lt = data.find("<", pos)
                if next_lt < 0:
                    next_lt = end
            if next_amp < pos:
                next_amp = data.find("&", pos)
                if next_amp < 0:
                    next_amp = end
            stop = next_lt if next_lt < next_amp else next_amp
            handle_data(data[pos:stop])
            pos = stop
    return True


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
