"""The specification of ``pulpie_rt.runtime.stages.markdown.to_markdown``, and the test oracle
of the compiled core that implements it (``core/src/markdown``): the reference ``pulpie``
0.0.2's rule, written out.

1. ``<img>`` tags that carry no content (width or height 1, spacer/transparent/blank/pixel/
   1x1/clear images, data-URI placeholders) are removed with the reference's pattern;
2. html2text renders the rest with no line wrapping (``bodywidth=0``), links and images kept
   as inline ``[text](url "title")`` and ``![alt](src)``, every other option at its default;
3. the result is stripped.

html2text is pinned to **2025.4.15** here (``HTML2TEXT_VERSION``): the core is a port of that
release and of the ``html.parser`` of the Python it runs on (3.11), quirks included, so a
different html2text is a different specification (``check_versions`` says so).

``to_text`` is the runtime's own plain-text format (``core/src/markdown/text.rs``); its
specification is ``to_text`` below, a walk of lexbor's HTML5 tree (selectolax).
"""

from __future__ import annotations

import random
import re
import sys

import html2text
from selectolax.lexbor import LexborHTMLParser

__all__ = ["HTML2TEXT_VERSION", "check_versions", "random_markdown_page", "random_tokens",
           "strip_spacer_images", "to_markdown", "to_text"]

HTML2TEXT_VERSION = (2025, 4, 15)

_SPACER_IMG = re.compile(
    r"<img\b[^>]*?"
    r"(?:(?:width|height)\s*=\s*[\"']?\s*1\b"
    r"|src\s*=\s*[\"'][^\"']*(?:trans(?:parent)?|spacer|blank|pixel|1x1|clear)[^\"']*[\"']"
    r"|src\s*=\s*[\"']data:image[^\"']*[\"'])"
    r"[^>]*>",
    re.IGNORECASE,
)


def check_versions() -> None:
    """Refuse to be the oracle with another html2text or Python than the core ports."""
    version = tuple(html2text.__version__[:3])
    if version != HTML2TEXT_VERSION:
        raise RuntimeError(f"html2text {version} installed; the specification is "
                           f"{HTML2TEXT_VERSION} (pip install 'html2text==2025.4.15')")
    if sys.version_info[:2] != (3, 11):
        raise RuntimeError(f"Python {sys.version_info[:2]}: the core ports Python 3.11's "
                           "html.parser")


def strip_spacer_images(html: str) -> str:
    return _SPACER_IMG.sub("", html)


def to_markdown(html: str) -> str:
    converter = html2text.HTML2Text(bodywidth=0)
    converter.ignore_links = False
    converter.ignore_images = False
    return converter.handle(strip_spacer_images(html)).strip()


# ── random markup aimed at html2text's and html.parser's rules ────────────────────────────

_TAGS = ("p div span a b i em strong u s del strike ul ol li dl dt dd table tr td th thead "
         "tbody pre code kbd tt blockquote h1 h2 h3 h6 h7 br hr img abbr q script style head "
         "body title sup sub font center noscript").split()
_ATTRS = [
    'href="http://x.org/a(b)"', 'href="#top"', "href=''", "href", 'href="http://x.org"',
    'title="t \'q\' (p)"', "title", 'src="http://x/i.png"', 'src="a/spacer.gif"', "src",
    'alt="an [alt]"', "alt", 'start="3"', "start=x", 'start="-2"', 'start=" \u0663 "',
    'width="1"', "width=1 height=2", 'src="data:image/gif;base64,x"', "class=a b",
    "a='unclosed", 'b="x&amp;y&#65;&copy"', "c==d", "e= 'f", "/", 'HREF="http://u"',
    "data-x=\"'\"", 'href="http://x.org" title="x"',
]
_TEXTS = [
    "hello", " ", "\n", "  \t ", "a &amp; b", "&lt;x&gt;", "&nbsp;", "&#x1F600;", "&#0;",
    "&#xD800;", "&notanentity", "&notanentity;", "&copy", "&#12a;", "&#;", "&#x;", "& x",
    "1. not a list", "+ plus", "- dash", "-- dd", "\\back\\slash*", "[link](x)", "`tick`",
    "_under_", "**", "~", "x\u00a0y", "\u3000", "\r\n", "&#128;", "&#8217;", "&rsquo;",
    "&lrm;", "&amp", "&#65", "&AMP;", "&nbsp_place_holder;", "<", ">", "a < b", "&",
    "http://x.org", "http://x.org/a(b)", "3.", "\u0663. x", "</' + 'script>", "<!-- c -->",
    "<!doctype html>", "<?pi?>", "<![CDATA[x]]>", "<![if !IE]>", "</>", "</ x>", "< p>",
    "<p/>", "<br/>", "<img src=x />", "<a href=x/>", "<p", "</p", "<!", "<!-", "&#x",
    "\u212a", "<scr\u0130pt>", "</SCRIPT >", "</\u017fcript>", "</script", "<style>a{}</style>",
    "long " * 20, "\x00", "\x0b", "\x1c", "\u2028", "\u0085",
]
_STRAY_END_TAGS = ["</p>", "</div>", "</blockquote>", "</ol>", "</li>", "</a>", "</script>",
                   "</head>", "</pre>", "</b>", "</abbr>"]


def random_markdown_page(rng: random.Random, depth: int = 0) -> str:
    """Nested markup over what html2text acts on: links with and without href, titles with
    quotes and parentheses, images, lists with odd starts, quotes, pre, tables, abbr, script
    and style, unbalanced end tags, entities and character references of every kind."""
    out = []
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if r < 0.45 and depth < 6:
            tag = rng.choice(_TAGS)
            if rng.random() < 0.1:
                tag = tag.upper()
            attrs = " ".join(rng.sample(_ATTRS, rng.randint(0, 2)))
            slash = " /" if rng.random() < 0.05 else ""
            out.append(f"<{tag}{' ' + attrs if attrs else ''}{slash}>")
            out.append(random_markdown_page(rng, depth + 1))
            if rng.random() < 0.8:
                out.append(f"</{tag}>")
        elif r < 0.9:
            out.append(rng.choice(_TEXTS))
        else:
            out.append(rng.choice(_STRAY_END_TAGS))
    return "".join(out)


_PIECES = [
    "<", ">", "/", "=", "'", '"', " ", "&", "#", ";", "a", "b", "x", "1", "0", "!", "-", "[",
    "]", "?", "\n", "\t", "\xe9", "\u017f", "\u212a", "\u3000", "\xa0", "\u0130", "script",
    "style", "img", "src", "href", "pre", "li", "ol", "ul", "h2", "amp", "copy", "nbsp",
    "CDATA", "if", "endif", "doctype", "--", "<!--", "-->", "<a ", "<p>", "</p>", "<script>",
    "</script>", "<pre>", "</pre>", "<ol start=", "<li>", "<img src=", "<b>", "</b>", "<i>",
    "<blockquote>", "</blockquote>", "<br>", "<abbr title=", "</abbr>", "<table><tr><td>",
    "</td><td>", "</tr>", "width=1", "spacer", "data:image", "<code>", "http://", "\\", ".",
    "+", "*", "_", "`", "\r", "\x0c", "\x0b", "\ud800", "&#x", "&#", "<![",
]


def random_tokens(rng: random.Random) -> str:
    """Up to 40 pieces of markup syntax in any order: half-written tags and attributes,
    unterminated quotes, comments, declarations and references, lone surrogates."""
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 40)))


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
    """Plain text of main-content HTML on lexbor's HTML5 tree of ``html``: what the compiled
    core's ``to_text`` must return."""
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
