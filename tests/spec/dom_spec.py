"""Specification: the element tree the Pulpie segmentation walks, built and written without
lxml. The compiled core (``core/``: ``raw.rs``, ``lexbor.rs``, ``tree.rs``, ``token.rs``)
implements it; tests compare the two (``tests/test_native.py``, ``parity/native_core.py``).

The Orange models were trained on MinerU-HTML's segmentation, which walks the tree that
libxml2 (through lxml) builds from an HTML5 parser's serialization, and writes blocks with
libxml2's HTML serializer. This module reproduces both on top of selectolax's lexbor parser:

- ``build_tree(html)``: lexbor parses and serializes (C speed); ``parse_serialized`` replays
  that serialization through libxml2's tree-construction rules (which void elements it
  knows, which start tags close the open element, which end tags it ignores), measured by
  probing lxml 6.1 / libxml2 2.14.6 — see ``tests/test_dom.py``.
- ``serialize_html(node)``: libxml2's HTML serializer (quoting, escaping, URI attributes).

Nodes follow lxml's text/tail model. Nothing here recurses, so 20,000-deep pages are fine.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Iterator

from selectolax.lexbor import LexborHTMLParser


class Node:
    """An element: ``text`` comes before its first child, ``tail`` after its end tag."""

    __slots__ = ("tag", "attrs", "text", "tail", "children", "parent", "orig", "flags")

    def __init__(self, tag: str, attrs: dict[str, str] | None = None) -> None:
        self.tag = tag
        self.attrs: dict[str, str] = attrs if attrs is not None else {}
        self.text: str | None = None
        self.tail: str | None = None
        self.children: list[Node] = []
        self.parent: Node | None = None
        # the element of the original tree this one was copied from (itself for originals)
        self.orig: Node = self
        self.flags = 0

    def __repr__(self) -> str:
        return f"<Node {self.tag} ({len(self.children)} children)>"

    def iter(self) -> Iterator[Node]:
        """This element and all its descendants, in document order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            if node.children:
                stack.extend(reversed(node.children))

    def iterdescendants(self) -> Iterator[Node]:
        it = self.iter()
        next(it)
        return it


def deep_copy(node: Node, skip: frozenset[str] = frozenset()) -> Node:
    """Copy a subtree; copies keep ``orig`` and share attribute dicts until changed.

    Descendants whose tag is in ``skip`` are left out, with their tail text (as lxml's
    ``remove`` takes an element's tail along)."""
    top = Node(node.tag, node.attrs)
    top.orig = node.orig
    top.text = node.text
    top.tail = node.tail
    stack = [(node, top)]
    while stack:
        src, dst = stack.pop()
        for child in src.children:
            if skip and child.tag in skip:
                continue
            copy = Node(child.tag, child.attrs)
            copy.orig = child.orig
            copy.text = child.text
            copy.tail = child.tail
            copy.parent = dst
            dst.children.append(copy)
            if child.children:
                stack.append((child, copy))
    return top


# ── libxml2's tree construction ──────────────────────────────────────────────────────────

# Elements libxml2 treats as void (never holding content).
LIBXML_VOID = frozenset(
    "area base basefont br col frame hr img input isindex link meta param".split()
)
# A start tag closes the open element on top of the stack when it is listed under that
# element's name (repeatedly, while the new top is closed too). HTML5 trees break these
# rules often (``<b><p>``, ``<p><table>`` in quirks mode, ``<a><table>``, ``<ul><form>``).
_P_CLOSERS = (
    "address blockquote caption center colgroup dd dir div dl dt fieldset form h1 h2 h3 h4 h5 "
    "h6 li listing menu ol p pre table tbody td tfoot th tr ul"
)
_HEADING_CLOSERS = "fieldset form li p table"
_CLOSED_BY: dict[str, frozenset[str]] = {
    tag: frozenset(closers.split())
    for tag, closers in {
        "a": "a fieldset table td th",
        "address": "dd dl dt form li ul",
        "b": "center p td th",
        "big": "p",
        "caption": "colgroup tbody tfoot thead tr",
        "colgroup": "colgroup tbody tfoot thead tr",
        "dd": "dt",
        "dir": "dd dl dt form ul",
        "dl": "form li",
        "dt": "dd dl",
        "font": "center td th",
        "form": "form",
        "h1": _HEADING_CLOSERS,
        "h2": _HEADING_CLOSERS,
        "h3": _HEADING_CLOSERS,
        "h4": _HEADING_CLOSERS,
        "h5": _HEADING_CLOSERS,
        "h6": _HEADING_CLOSERS,
        "head": "body",
        "i": "center p td th",
        "legend": "fieldset",
        "li": "li",
        "listing": "dd dl dt fieldset form li table ul",
        "menu": "dd dl dt form ul",
        "ol": "form",
        "option": "optgroup option",
        "p": _P_CLOSERS,
        "pre": "dd dl dt fieldset form li table ul",
        "s": "p",
        "small": "p",
        "span": "td th",
        "strike": "p",
        "tbody": "tbody tfoot",
        "td": "tbody td tfoot th tr",
        "tfoot": "tbody",
        "th": "tbody td tfoot th tr",
        "thead": "tbody tfoot",
        "tr": "tbody tfoot tr",
        "tt": "p",
        "u": "p td th",
        "ul": "address form menu pre",
    }.items()
}
# A misplaced end tag only closes open elements of lower or equal priority.
_END_PRIORITY = {
    "div": 150, "td": 160, "th": 160, "tr": 170, "thead": 180, "tbody": 180, "tfoot": 180,
    "table": 190, "head": 200, "body": 200, "html": 220,
}


# What a <select> may hold in the classic HTML5 "in select" insertion mode, which the
# reference's parser (Modest) follows; lexbor 2.x parses the newer customizable <select>,
# which keeps other elements (``<select><label>…``). Their tags are dropped, their text kept.
_SELECT_CONTENT = frozenset(("option", "optgroup", "hr", "script", "template"))
# HTML5 void elements: lexbor writes no end tag for them.
HTML5_VOID = frozenset(
    "area base basefont bgsound br col embed frame hr img input keygen link meta param source "
    "track wbr".split()
)

# One token of a serializer's output (lexbor's or lxml's): a comment, a doctype or other
# markup declaration, a processing instruction, an end tag, a start tag with its attributes,
# or text.
_TOKEN_RE = re.compile(
    r"<!--.*?-->|<![^>]*>|<\?[^>]*>|</([^\s/>]+)[^>]*>"
    r"|<([^\s/>!?]+)((?:\s*(?:=[^\s=/>]*|[^\s=/>]+)(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]*))?)*)"
    r"\s*(/?)>"
    r"|([^<]+|<)",
    re.DOTALL,
)
# (an attribute name may start with "=": HTML5 starts a name with it in that place)
_ATTR_RE = re.compile(
    r"(=[^\s=/>]*|[^\s=/>]+)(?:\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]*)))?"
)
# Raw-text elements: their content runs to their end tag, unescaped, in both parsers.
RAW_TEXT = frozenset(("script", "style", "xmp", "iframe", "noembed", "noframes", "plaintext"))
_RAW_END_RE = {tag: re.compile(rf"</{tag}[\s/>]", re.IGNORECASE) for tag in RAW_TEXT}
# Script data escape states (HTML5 13.2.5.4ff, which libxml2 2.14 follows): inside
# ``<!--`` a ``<script`` starts a double-escaped run that ``</script`` only leaves.
_SCRIPT_MARK_RE = re.compile(r"<!--|-->|</?script[\s/>]", re.IGNORECASE)
_XML_DECL_RE = re.compile(r"<\?xml\s+.*?\??>", re.DOTALL)


def _parse_attrs(raw: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for name, dq, sq, bare in _ATTR_RE.findall(raw):
        name = name.lower()
        if name == NAMELESS_ATTR_MARK:
            name = ""
        if name not in attrs:
            value = dq or sq or bare
            attrs[name] = html_lib.unescape(value) if "&" in value else value
    return attrs


def _script_end(text: str, pos: int) -> int:
    """Offset of the ``</script`` that ends a script's content starting at ``pos``."""
    escaped = double = False
    for m in _SCRIPT_MARK_RE.finditer(text, pos):
        mark = m.group(0)
        if mark == "<!--":
            if not escaped:
                escaped = True
        elif mark == "-->":
            escaped = double = False
        elif mark[1] == "/":
            if double:
                double = False
            else:
                return m.start()
        elif escaped:
            double = True
    return len(text)


# Elements whose content is text, not markup, for both parsers: the raw-HTML rewrites below
# leave them alone.
_TEXT_ELEMENTS = "script|style|textarea|title|xmp|iframe|noembed|noframes"
# ``</>`` is dropped by HTML5 tokenizers (lexbor) but kept as text by the reference's Modest
# parser; outside raw-text elements we escape it first so lexbor keeps it too.
_EMPTY_END_TAG_RE = re.compile(
    rf"(<({_TEXT_ELEMENTS})\b.*?</\2\s*>)|</>", re.IGNORECASE | re.DOTALL
)


def _keep_empty_end_tags(html: str) -> str:
    return _EMPTY_END_TAG_RE.sub(lambda m: m.group(1) or "&lt;/&gt;", html)


# The reference's Modest parser gives a nameless attribute (written ``=""``) to a start tag
# where an attribute without value is followed by white space and ``/`` (``<input required
# />``); lexbor does not. We mark those places so that lexbor keeps an attribute there.
# A tag start followed by " /" before the next "<": the only places the quirk can apply.
_SLASH_TAG_RE = re.compile(r"<[a-zA-Z][^<]*?\s/")
# From a start tag's "<" to the attribute without value that precedes " /".
_NAMELESS_ATTR_RE = re.compile(
    r"<[a-zA-Z][^\s/>]*(?:\s+[^\s/>=]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s\"'>]+))?)*?"
    r"\s+[^\s/>=]+(?=\s+/)"
)
_TEXT_ELEMENT_RE = re.compile(rf"<({_TEXT_ELEMENTS})\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
NAMELESS_ATTR_MARK = "pulpie-rt-nameless"


def _mark_nameless_attrs(html: str) -> str:
    """Insert NAMELESS_ATTR_MARK where Modest would add a nameless attribute (not inside
    text elements). Only start tags with " /" in them are examined: most pages have none
    that qualify, and scanning every tag costs more than the rest of the parse."""
    inserts: list[int] = []
    text_spans: list[tuple[int, int]] | None = None
    for slash_tag in _SLASH_TAG_RE.finditer(html):
        start = slash_tag.start()
        m = _NAMELESS_ATTR_RE.match(html, start)
        if m is None:
            continue
        if text_spans is None:
            text_spans = [(t.start(), t.end()) for t in _TEXT_ELEMENT_RE.finditer(html)]
        if any(start < m.start() < stop for start, stop in text_spans):
            continue
        inserts.append(m.end())
    if not inserts:
        return html
    parts = []
    pos = 0
    for at in inserts:
        parts.append(html[pos:at])
        parts.append(" " + NAMELESS_ATTR_MARK)
        pos = at
    parts.append(html[pos:])
    return "".join(parts)


def lexbor_serialization(html: str) -> str:
    """Parse ``html`` with lexbor and serialize it again, less any ``<?xml …?>`` declaration:
    the text whose libxml2-shaped tree (``parse_serialized``) the reference walks."""
    if "</>" in html:
        html = _keep_empty_end_tags(html)
    if " /" in html or "\n/" in html or "\t/" in html or "\r/" in html:
        html = _mark_nameless_attrs(html)
    # selectolax encodes the str to UTF-8, dropping lone surrogates (the bytes cannot hold them)
    serialized = LexborHTMLParser(html).html or ""
    if "<?xml" in serialized:
        serialized = _XML_DECL_RE.sub("", serialized)
    return serialized


def build_tree(html: str) -> Node:
    """Parse ``html`` with lexbor; return the ``<html>`` element as libxml2 builds it from
    lexbor's serialization (the tree the reference walks)."""
    return parse_serialized(lexbor_serialization(html))


def parse_serialized(serialized: str) -> Node:
    """The libxml2-shaped tree of a serializer's output, without recursion.

    Comments, doctypes and processing instructions are dropped and the text around them
    merged. Meant for serializer output (lexbor's, lxml's, ``serialize_html``'s), where every
    ``<`` in text is escaped; use ``build_tree`` for arbitrary HTML.
    """
    root = Node("html")
    stack = [root]
    unescape = html_lib.unescape
    parse_attrs = _parse_attrs
    attrs_cache: dict[str, dict[str, str]] = {}
    closed_by = _CLOSED_BY
    void = LIBXML_VOID
    raw_text = RAW_TEXT
    end_priority = _END_PRIORITY
    seen_head = seen_body = seen_html = False
    open_selects = 0  # <select> elements on the stack
    dropped_in_select: dict[str, int] = {}  # start tags dropped there, by name
    pos = 0
    end = len(serialized)
    while pos < end:
        # re-entered only after a raw-text element, whose content the tokenizer must skip
        for m in _TOKEN_RE.finditer(serialized, pos):
            kind = m.lastindex
            if kind == 5:  # text
                text = m.group(5)
                if "&" in text:
                    text = unescape(text)
                parent = stack[-1]
                children = parent.children
                if children:
                    last = children[-1]
                    last.tail = text if last.tail is None else last.tail + text
                else:
                    parent.text = text if parent.text is None else parent.text + text
            elif kind == 4:  # start tag
                tag, raw_attrs, self_closing = m.group(2, 3, 4)
                tag = tag.lower()
                if raw_attrs:
                    # pages repeat attribute strings a lot; each node still gets its own dict
                    cached = attrs_cache.get(raw_attrs)
                    if cached is None:
                        cached = attrs_cache[raw_attrs] = parse_attrs(raw_attrs)
                    attrs = cached.copy()
                else:
                    attrs = {}
                if tag == "html":
                    if not seen_html:
                        root.attrs = attrs
                        seen_html = True
                    continue
                if tag == "head":
                    if seen_head or seen_body:
                        continue
                    seen_head = True
                elif tag == "body":
                    if seen_body:
                        continue
                    seen_body = True
                if open_selects and tag not in _SELECT_CONTENT:
                    if tag not in HTML5_VOID:
                        dropped_in_select[tag] = dropped_in_select.get(tag, 0) + 1
                    continue
                # libxml2 closes the open element while the new tag is one of its closers
                while len(stack) > 1:
                    closers = closed_by.get(stack[-1].tag)
                    if closers is None or tag not in closers:
                        break
                    stack.pop()
                node = Node(tag, attrs)
                parent = stack[-1]
                node.parent = parent
                parent.children.append(node)
                if tag in void or self_closing:
                    continue  # <tag/>: libxml2 honours the XML empty-element form
                stack.append(node)
                if tag == "select":
                    open_selects += 1
                if tag in raw_text:
                    start = m.end()
                    if tag == "script":
                        stop = _script_end(serialized, start)
                    else:
                        close = _RAW_END_RE[tag].search(serialized, start)
                        stop = close.start() if close else end
                    if stop > start:
                        node.text = serialized[start:stop]
                    pos = stop
                    break
            elif kind == 1:  # end tag
                tag = m.group(1).lower()
                if tag == "html" or tag == "body":
                    continue
                if dropped_in_select.get(tag):
                    dropped_in_select[tag] -= 1
                    continue
                # close up to the matching open element, unless one of higher priority
                # stands in between (then libxml2 ignores the end tag)
                priority = end_priority.get(tag, 100)
                for i in range(len(stack) - 1, 0, -1):
                    open_tag = stack[i].tag
                    if open_tag == tag:
                        if open_selects:
                            for closed in stack[i:]:
                                if closed.tag == "select":
                                    open_selects -= 1
                        del stack[i:]
                        break
                    if end_priority.get(open_tag, 100) > priority:
                        break
        else:
            break
    return root


# ── libxml2's HTML serializer ────────────────────────────────────────────────────────────

# Attributes libxml2 writes as a bare name.
BOOLEAN_ATTRS = frozenset(
    "checked compact declare defer disabled ismap multiple nohref noresize noshade nowrap "
    "readonly selected".split()
)
# Attributes libxml2 writes URI-escaped (``name`` only on ``<a>``).
_URI_ATTRS = frozenset(("href", "action", "src"))
_URI_SAFE = frozenset(
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'()"
    b"\"#$%&+,/:;<=>?@[\\]^`{|}"
)
_URI_NEEDS_ESCAPE_RE = re.compile(r"[^A-Za-z0-9\-_.!~*'()\"#$%&+,/:;<=>?@\[\\\]^`{|}]")
_RAW_SERIALIZED = frozenset(("script", "style"))


def escape_text(text: str) -> str:
    """Text as libxml2's HTML serializer writes it."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def escape_uri(value: str) -> str:
    """A URI attribute value as libxml2 writes it: leading blanks dropped, bytes outside
    printable ASCII %-escaped."""
    value = value.lstrip(" \t\n\r")
    if not _URI_NEEDS_ESCAPE_RE.search(value):
        return value
    out = []
    for byte in value.encode("utf-8", "surrogatepass"):
        out.append(chr(byte) if byte in _URI_SAFE else f"%{byte:02X}")
    return "".join(out)


_ATTR_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)
_ATTR_SPECIAL_RE = re.compile(r"[&<>\"]")
_ATTR_ESCAPE_RE = re.compile(r"&(?!\{)|[<>]")
_ATTR_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _attr_escape(m: re.Match) -> str:
    return _ATTR_ESCAPES[m.group(0)]


def escape_attr_value(value: str) -> str:
    """``&`` (unless before ``{``), ``<`` and ``>`` escaped, as libxml2 writes attribute
    values; it leaves whole ``<!-- … -->`` runs in them as they are."""
    if "<!--" not in value:
        return _ATTR_ESCAPE_RE.sub(_attr_escape, value)
    out = []
    pos = 0
    for m in _ATTR_COMMENT_RE.finditer(value):
        out.append(_ATTR_ESCAPE_RE.sub(_attr_escape, value[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_ATTR_ESCAPE_RE.sub(_attr_escape, value[pos:]))
    return "".join(out)


def _serialize_attr(tag: str, name: str, value: str) -> str:
    if name in BOOLEAN_ATTRS:
        return " " + name
    if name in _URI_ATTRS or (name == "name" and tag == "a"):
        value = escape_uri(value)
    value = escape_attr_value(value)
    if '"' in value:
        if "'" in value:
            quoted = value.replace('"', "&quot;")
            return f' {name}="{quoted}"'
        return f" {name}='{value}'"
    return f' {name}="{value}"'


def serialize_html(node: Node) -> str:
    """``lxml.etree.tostring(node, method="html", encoding="unicode", with_tail=False)``."""
    out: list[str] = []
    write = out.append
    special = _ATTR_SPECIAL_RE.search
    # entries: a Node to open, or a str already rendered (an end tag plus tail)
    stack: list = [node]
    while stack:
        item = stack.pop()
        if item.__class__ is str:
            write(item)
            continue
        tag = item.tag
        if item.attrs:
            parts = ["<", tag]
            for name, value in item.attrs.items():
                if (
                    name in BOOLEAN_ATTRS
                    or name in _URI_ATTRS
                    or name == "name"
                    or special(value) is not None
                ):
                    parts.append(_serialize_attr(tag, name, value))
                else:
                    parts.append(f' {name}="{value}"')
            parts.append(">")
            write("".join(parts))
        else:
            write("<" + tag + ">")
        tail = item.tail if item is not node else None
        if tag in LIBXML_VOID:
            if tail:
                write(escape_text(tail))
            continue
        if item.text:
            write(item.text if tag in _RAW_SERIALIZED else escape_text(item.text))
        elif tag == "li" and item.text is None and not item.children:
            # libxml2 omits the end tag of an empty <li>
            if tail:
                write(escape_text(tail))
            continue
        stack.append(f"</{tag}>" + (escape_text(tail) if tail else ""))
        if item.children:
            stack.extend(reversed(item.children))
    return "".join(out)
