"""Main-content HTML from ``map_html`` and block labels, on selectolax's lexbor parser.

Contract (the reference's ``pulpie.reconstruct.extract_main_html``): keep every element
labelled ``"main"`` with its descendants and ancestors, recall ``<br>`` tags next to kept
content, drop everything else (an element's tail text goes with it), unwrap the
``<cc-alg-uc-text>`` run wrappers, and return the result as libxml2 writes HTML, with entities
decoded inside http(s)/ftp/``//`` ``href``/``src`` values.

The reference re-parses ``map_html`` with libxml2 (blank text removed, comments removed) and
serializes with libxml2; the models' users compare against that output byte for byte. Here
lexbor parses ``map_html`` (C speed) and Python only visits what is written out: the kept
subtrees and the chain of their ancestors. What differs between lexbor's tree and libxml2's
for a serializer's output is reproduced on the way (measured against lxml 6.1 / libxml2
2.14.6, see ``tests/test_reconstruct.py``):

- ``remove_blank_text``: libxml2 drops a whitespace-only text unless its element (first
  child) or its preceding sibling element is one that allows character data;
- elements lexbor knows as void but libxml2 does not (``source``, ``track``, ``wbr``,
  ``embed``, ``keygen``, ``bgsound``) hold, for libxml2, all their following siblings;
- ``<template>`` content is ordinary content for libxml2;
- foreign (SVG/MathML) names are lower-case for libxml2;
- libxml2's serializer: quoting, ``&``/``<``/``>`` escaping, boolean attributes written bare,
  URI attributes %-escaped, the end tag of an empty ``<li>`` omitted, and a
  ``<meta http-equiv="Content-Type">`` left out.

Nothing here recurses: 20,000-deep pages are fine.

Specification: ``pulpie_rt.runtime.reconstruct.extract_main_html`` runs the compiled core
(``core/``: ``reconstruct.rs``), which builds libxml2's tree of ``map_html`` itself, so the
lexbor differences above need no handling there. Where the two differ,
``bench/native_core.py`` asks the reference which one is right.
"""

from __future__ import annotations

import html as _html
import re

from selectolax.lexbor import LexborHTMLParser

from pulpie_rt.runtime.constants import ITEM_ID_ATTR, RUN_WRAPPER_TAG

from .dom_spec import (
    BOOLEAN_ATTRS,
    LIBXML_VOID,
    escape_attr_value,
    escape_text,
    escape_uri,
)

_WS = " \t\n\f\r"
# Elements whose whitespace-only text libxml2 keeps (its "allowPCData" list, HTML 4.01 loose).
_ALLOW_PCDATA = frozenset(
    "a abbr acronym address applet b bdo big blockquote body button caption center cite code "
    "dd del dfn div dt em font form h1 h2 h3 h4 h5 h6 i iframe ins kbd label legend li noframes "
    "noscript object p pre q s samp small span strike strong td th tt u var".split()
)
# Void for lexbor (HTML5), ordinary containers for libxml2 2.14.
_LEXBOR_ONLY_VOID = frozenset("bgsound embed keygen source track wbr".split())
# Raw-text / RCDATA content in libxml2: never dropped as blank.
_RAW_CONTENT = frozenset(
    "script style iframe noembed noframes xmp plaintext textarea title".split()
)
# ... of which libxml2 writes the text unescaped.
_UNESCAPED_CONTENT = frozenset(("script", "style"))
# lxml.html.defs.block_tags: decides the wrapper of a multi-element fragment.
_BLOCK_TAGS = frozenset(
    "address blockquote center dir div dl fieldset form h1 h2 h3 h4 h5 h6 hr isindex menu "
    "noframes noscript ol p pre table ul dd dt frameset li tbody td tfoot th thead tr".split()
)

_FULL_HTML_RE = re.compile(r"^\s*<(?:html|!doctype)", re.IGNORECASE)
# the reference's pattern is (href="|src=")(.*?)(") over the whole output; values without
# "&" decode to themselves, so only those with one are matched here
_HTTP_ATTR_RE = re.compile(r'((?:[hH][rR][eE][fF]|[sS][rR][cC])=")([^"&]*&[^"]*)(")')
_HTTP_PREFIXES = ("http://", "https://", "ftp://", "HTTP://", "HTTPS://", "FTP://", "//")
_URL_ATTR_SUFFIXES = ("href", "src")
_URL_ATTR_START_RE = re.compile(r'(?:href|src)="', re.IGNORECASE)

_TEXT_TAG = "-text"
_EMPTY_DOCUMENT = "<HtmlElement></HtmlElement>"


def extract_main_html(map_html: str, labels: dict[str, str]) -> str:
    """Keep the main-labelled content of ``map_html``; the reference's exact output.

    Args:
        map_html: the page with ``_item_id`` markers, as ``simplify`` returns it (lxml's
            serialization and lexbor's re-serialization of it both work).
        labels: ``{item_id: "main" | "other"}``; ids absent from the page are ignored.
    """
    if not map_html:
        return ""
    if not isinstance(map_html, str):
        raise TypeError(f"map_html must be str, not {type(map_html).__name__}")
    tree = LexborHTMLParser(map_html.encode("utf-8", "surrogatepass"))
    if _FULL_HTML_RE.match(map_html):
        top, top_tag = tree.root, "html"
    else:
        top, top_tag = _fragment_top(tree, map_html)
        if top is None:
            return _EMPTY_DOCUMENT
    writer = _Writer(tree, labels)
    html = writer.write(top, top_tag)
    if writer.rescan:
        # the pattern also occurs in text or inside a value: the output with the start tags
        # as written undecoded, decoded as a whole as the reference does
        html = _decode_http_urls(writer.undecoded_html())
    return html


def _fragment_top(tree: LexborHTMLParser, text: str):
    """What ``lxml.html.fromstring`` returns for a string that is not a whole document."""
    body = tree.body
    has_start_tag = re.search(r"<[A-Za-z]", text) is not None
    if not has_start_tag and (body is None or not (body.text(deep=True) or "").strip(_WS)):
        return None, ""  # libxml2: "Document is empty"
    if re.match(r"\s*<(?:head|title|meta|link|style|script|base)[\s/>]", text, re.I):
        return tree.root, "html"  # libxml2 made a <head>: lxml keeps the whole document
    if body is None:
        return tree.root, "html"
    elements = []
    texts = []
    child = body.child
    while child is not None:
        if child.tag == _TEXT_TAG:
            texts.append((len(elements), child.text_content or ""))
        elif child.is_element_node:
            elements.append(child)
        child = child.next
    if len(elements) == 1 and all(not t.strip() for _, t in texts):
        element = elements[0]
        return element, element.tag.lower()
    block = any(n.tag.lower() in _BLOCK_TAGS for n in body.traverse() if n.is_element_node)
    return body, ("div" if block else "span")


def _attr_html(tag: str, attributes: dict, decode: bool = True) -> tuple[str, bool, bool]:
    """The attributes as libxml2 writes them, with the reference's URL decoding applied
    (``decode``); whether a value holds ``="`` (where the reference's pattern may match
    too); and whether a value was decoded."""
    parts = []
    inner_match = False
    decoded = False
    for name, value in attributes.items():
        name = name.lower()
        if value is None or name in BOOLEAN_ATTRS or (not value and name[0] == "="):
            # (a name such as '=""' comes back from lexbor's serialization with an empty
            # value it did not have)
            parts.append(" " + name)
            continue
        if "&" in value or "<" in value or ">" in value:
            value = escape_attr_value(value)
        if name == "href" or name == "src" or name == "action" or (name == "name" and tag == "a"):
            value = escape_uri(value)
        if '"' in value:
            if "'" in value:
                value = value.replace('"', "&quot;")
            else:
                parts.append(" " + name + "='" + value + "'")
                if '="' in value:
                    inner_match = True
                continue
        if (decode and "&" in value and name.endswith(_URL_ATTR_SUFFIXES)
                and value.startswith(_HTTP_PREFIXES)):
            value = _html.unescape(value)  # the reference's decode_http_urls_only, in place
            decoded = True
        elif '="' in value:
            inner_match = True
        parts.append(" " + name + '="' + value + '"')
    return "".join(parts), inner_match, decoded


def _decode_http_urls(html: str) -> str:
    """Entities decoded inside ``href="…"``/``src="…"`` values that are http(s)/ftp/``//``
    URLs (the reference's last step; its pattern also matches ``data-src="`` and text).

    The writer applies it to attribute values as it writes them; this pass over the whole
    output runs only when a text or a value holds such a pattern itself."""
    if "&" not in html:
        return html

    def decode(m: re.Match) -> str:
        url = m.group(2)
        if "&" in url and url.startswith(_HTTP_PREFIXES):
            return m.group(1) + _html.unescape(url) + m.group(3)
        return m.group(0)

    return _HTTP_ATTR_RE.sub(decode, html)


def _is_drop_meta(tag: str, attributes: dict) -> bool:
    """libxml2 2.14 leaves out a ``<meta>`` whose first attribute is
    ``http-equiv="Content-Type"`` when it writes with an encoding."""
    if tag != "meta" or not attributes:
        return False
    name, value = next(iter(attributes.items()))
    return name.lower() == "http-equiv" and value == "Content-Type"


def _template_content(node) -> LexborHTMLParser:
    """A ``<template>``'s content, which lexbor keeps out of the tree and libxml2 treats as
    ordinary children: its serialization parsed again, in body context."""
    outer = node.html or ""
    inner = outer[_start_tag_end(outer):]
    if inner[-11:].lower() == "</template>":
        inner = inner[:-11]
    return LexborHTMLParser(("<html><head></head><body>" + inner).encode("utf-8",
                                                                        "surrogatepass"))


_ATTR_NAME_RE = re.compile(r'\s([^\s"\'>/=]+)(?:="[^"]*")?')
# Attribute local names lexbor may have taken a namespace prefix from (HTML5 "adjust foreign
# attributes"); libxml2 keeps the qualified name.
_FOREIGN_ADJUSTED = frozenset("actuate arcrole href role show title type lang space xlink".split())


def _foreign_attributes(node, attributes: dict) -> dict:
    """``attributes`` under their qualified names (``xlink:href``), read back from lexbor's
    serialization of the start tag."""
    if not _FOREIGN_ADJUSTED.intersection(attributes):
        return attributes
    outer = node.html or ""
    names = _ATTR_NAME_RE.findall(outer[: _start_tag_end(outer)])
    if len(names) != len(attributes):
        return attributes
    return dict(zip(names, attributes.values(), strict=True))


def _start_tag_end(outer: str) -> int:
    quote = ""
    for i, ch in enumerate(outer):
        if quote:
            if ch == quote:
                quote = ""
        elif ch == '"' or ch == "'":
            quote = ch
        elif ch == ">":
            return i + 1
    return len(outer)


# An element being written (a list, for speed): its next lexbor child; its tag; inside a
# main-labelled subtree (everything kept); the tag of the previous sibling in libxml2's tree
# (None: none yet, _TEXT_TAG: text); text here is kept (the element's text, or a kept
# tail); its end tag; anything written in it; raw-text content; inside <svg>/<math>.
_CURSOR, _TAG, _FULL, _PREV, _TAIL_KEPT, _END, _WRITTEN, _RAW, _FOREIGN = range(9)


def _frame(cursor, tag: str, full: bool, end: str, foreign: bool) -> list:
    return [cursor, tag, full, None, True, end, False, tag in _RAW_CONTENT, foreign]


class _Writer:
    def __init__(self, tree: LexborHTMLParser, labels: dict[str, str]) -> None:
        self.names: dict[int, str] = {}
        # template content: parsed separately, kept alive here, keyed by the template
        self.templates: dict[int, LexborHTMLParser] = {}
        body_to_template: dict[int, object] = {}
        first: dict[str, object] = {}
        trees = [tree]
        while trees:
            current = trees.pop()
            for node in current.css("[" + ITEM_ID_ATTR + "]"):
                iid = node.attributes.get(ITEM_ID_ATTR)
                if iid is not None and iid not in first:
                    first[iid] = node
            for template in current.css("template"):
                content = _template_content(template)
                self.templates[template.mem_id] = content
                if content.body is not None:
                    body_to_template[content.body.mem_id] = template
                trees.append(content)
        main: set[int] = set()
        ancestors: set[int] = set()
        for iid, label in labels.items():
            if label != "main":
                continue
            node = first.get(iid)
            if node is None:
                continue
            main.add(node.mem_id)
            parent = node.parent
            while parent is not None:
                pid = parent.mem_id
                if pid in ancestors:
                    break
                ancestors.add(pid)
                parent = body_to_template.get(pid) or parent.parent
        self.main = main
        self.ancestors = ancestors
        self.rescan = False
        # the last output's pieces, and (index, piece) for each start tag that holds a URL
        # decoded in place, as written without that decoding
        self.out: list[str] = []
        self.undecoded: list[tuple[int, str]] = []
        self.recalled = self._recall_brs(tree) if main else set()

    # ── which elements stay ──────────────────────────────────────────────────────────

    def _name(self, node) -> str:
        tid = node.tag_id
        name = self.names.get(tid)
        if name is None:
            name = node.tag.lower()
            self.names[tid] = name
        return name

    def _in_main(self, node) -> bool:
        """``node`` stays: a main element, an ancestor of one, or inside one."""
        main = self.main
        mid = node.mem_id
        if mid in main or mid in self.ancestors:
            return True
        parent = node.parent
        while parent is not None:
            pid = parent.mem_id
            if pid in main:
                return True
            if pid in self.ancestors:
                return False
            parent = parent.parent
        return False

    def _recall_brs(self, tree: LexborHTMLParser) -> set[int]:
        """``<br>``s whose neighbour in document order (elements only) stays and is no
        ``<br>``; only those under a kept ancestor matter (the others go with it)."""
        recalled: set[int] = set()
        ancestors = self.ancestors
        for br in tree.css("br"):
            parent = br.parent
            if parent is None or parent.mem_id not in ancestors:
                continue
            prev = br.prev
            while prev is not None and not prev.is_element_node:
                prev = prev.prev
            if prev is None:
                prev = parent
            else:
                while True:  # the deepest last element of the previous sibling
                    last = prev.last_child
                    while last is not None and not last.is_element_node:
                        last = last.prev
                    if last is None:
                        break
                    prev = last
            if self._name(prev) != "br" and self._in_main(prev):
                recalled.add(br.mem_id)
                continue
            # the next element in document order outside the <br> (up to the root: the
            # reference parity was measured with this loop, whose old stop at the grandparent
            # compared fresh selectolax wrappers by identity and so never held)
            nxt = None
            node = br
            while node is not None:
                nxt = node.next
                while nxt is not None and not nxt.is_element_node:
                    nxt = nxt.next
                if nxt is not None:
                    break
                node = node.parent
            if nxt is not None and self._name(nxt) != "br" and self._in_main(nxt):
                recalled.add(br.mem_id)
        return recalled

    def _holds_main(self, node) -> bool:
        """A lexbor-void element libxml2 made the parent of its following siblings: does it
        hold a main element?"""
        main, ancestors = self.main, self.ancestors
        sib = node.next
        while sib is not None:
            mid = sib.mem_id
            if mid in main or mid in ancestors:
                return True
            sib = sib.next
        return False

    # ── writing ──────────────────────────────────────────────────────────────────────

    def undecoded_html(self) -> str:
        """The last output as written without decoding URLs in attribute values."""
        out = list(self.out)
        for index, piece in self.undecoded:
            out[index] = piece
        return "".join(out)

    def write(self, top, top_tag: str) -> str:
        out: list[str] = []
        w = out.append
        undecoded: list[tuple[int, str]] = []
        names = self.names
        main, ancestors, recalled = self.main, self.ancestors, self.recalled
        attrs = top.attributes
        attr_html, rescan, decoded = _attr_html(top_tag, attrs) if attrs else ("", False, False)
        w("<" + top_tag + attr_html + ">")
        if decoded:
            undecoded.append((0, "<" + top_tag + _attr_html(top_tag, attrs, False)[0] + ">"))
        stack = [_frame(top.child, top_tag, top.mem_id in main, "</" + top_tag + ">", False)]
        while stack:
            frame = stack[-1]
            node = frame[0]
            if node is None:
                stack.pop()
                if frame[5] and (frame[6] or frame[1] != "li"):
                    w(frame[5])
                continue
            frame[0] = node.next
            tid = node.tag_id
            name = names.get(tid)
            if name is None:
                name = node.tag
                name = name if name[0] in "-#_!" else name.lower()
                names[tid] = name
            if name == _TEXT_TAG:
                if not frame[4]:
                    continue
                text = node.text_content
                if not text:
                    continue
                if frame[7]:
                    text = text if frame[1] in _UNESCAPED_CONTENT else escape_text(text)
                elif text.isspace() and not text.strip(_WS):
                    # libxml2's remove_blank_text, decided when the parser met the text
                    prev = frame[3]
                    parent_tag = frame[1]
                    if parent_tag == "html" or parent_tag == "head":
                        continue
                    if prev is None:
                        if parent_tag not in _ALLOW_PCDATA:
                            continue
                    elif prev is not _TEXT_TAG and prev not in _ALLOW_PCDATA:
                        continue
                else:
                    text = escape_text(text)
                if '="' in text and _URL_ATTR_START_RE.search(text):
                    rescan = True
                w(text)
                frame[3] = _TEXT_TAG
                frame[6] = True
                continue
            if name[0] in "-#_!":
                continue  # comment, doctype
            frame[3] = name
            if frame[2]:
                full = True
            else:
                mid = node.mem_id
                if mid in main:
                    full = True
                elif mid in ancestors:
                    full = False
                elif name == "br" and mid in recalled:
                    full = False
                elif name in _LEXBOR_ONLY_VOID and self._holds_main(node):
                    full = False
                else:
                    frame[4] = False  # its tail goes with it
                    if name in _LEXBOR_ONLY_VOID:
                        frame[0] = None  # its following siblings were its content
                    continue
            frame[4] = True
            frame[6] = True
            attributes = node.attributes
            foreign = frame[8] or name == "svg" or name == "math"
            if attributes:
                if foreign:
                    attributes = _foreign_attributes(node, attributes)
                if name == "meta" and _is_drop_meta(name, attributes):
                    continue
                attr_html, inner_match, decoded = _attr_html(name, attributes)
                if inner_match:
                    rescan = True
            else:
                attr_html = ""
                decoded = False
            if name == RUN_WRAPPER_TAG:
                end = ""
            else:
                if decoded:
                    undecoded.append((len(out), "<" + name
                                      + _attr_html(name, attributes, False)[0] + ">"))
                w("<" + name + attr_html + ">")
                if name in LIBXML_VOID:
                    continue
                end = "</" + name + ">"
            if name in _LEXBOR_ONLY_VOID:
                stack.append(_frame(frame[0], name, full or node.mem_id in main, end, foreign))
                frame[0] = None
            elif name == "template":
                content = self.templates.get(node.mem_id)
                body = content.body if content is not None else None
                stack.append(_frame(body.child if body is not None else None, name, full, end,
                                    foreign))
            else:
                # (inline of _frame: the hottest path)
                stack.append([node.child, name, full, None, True, end, False,
                              name in _RAW_CONTENT, foreign])
        self.rescan = rescan
        self.out = out
        self.undecoded = undecoded
        return "".join(out)
