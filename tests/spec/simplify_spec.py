"""html -> (simplified_html, map_html): the segmentation the Pulpie models were trained on.

The Orange models were distilled on MinerU-HTML's ``simplify_html`` segmentation (as the
reference ``pulpie.simplify`` reproduces it). One block differing means the model reads a page
it was never trained on, so this module reproduces that segmentation's output exactly —
including its quirks, each noted where it is reproduced — on our own tree (``dom``) instead of
lxml: no per-node uuids, no deep copies of the whole page, no re-parsing of every block, and no
recursion (20,000-deep pages keep their text).

Outputs: ``simplified_html`` and ``map_html``, as ``pulpie_rt.runtime.stages.simplify``
documents them.

Specification: ``pulpie_rt.runtime.stages.simplify.simplify`` runs the compiled core (``core/``:
``page.rs``, ``simplify.rs``); this readable Python implementation is what it is checked against
(``tests/test_native.py``, ``parity/native_core.py``).
"""

from __future__ import annotations

import re

from pulpie_rt.runtime.constants import ITEM_ID_ATTR, RUN_WRAPPER_TAG
from pulpie_rt.runtime.stages.simplify import SimplifyError

from .dom_spec import (
    Node,
    deep_copy,
    lexbor_serialization,
    parse_serialized,
    serialize_html,
)

__all__ = ["simplify", "hidden_blocks"]

# Inline tags: they do not start a block.
INLINE_TAGS = frozenset(
    "map optgroup span input time u strong small sub samp blink b code nobr strike bdo "
    "basefont abbr var i cccode-inline s pic label mark object ccmath-inline svg button a font "
    "dfn sup kbd q script acronym option img big cite em marked-tail marked-text".split()
)
# Tags that may live within a data table.
TABLE_TAGS = frozenset("caption colgroup col thead tbody tfoot tr td th br".split())
# Removed with their subtree (and their tail text) before segmentation.
REMOVED_TAGS = frozenset("title head style script link meta iframe frame nav".split())
# Block-level, but never holding blocks.
NO_BLOCK_TAGS = frozenset(("math",))
# Text inside these does not count towards a block's length limit.
NO_LENGTH_TAGS = frozenset(("math", "table"))
# class/id values that remove a direct child of <body>.
REMOVED_BODY_CHILD_NAMES = frozenset(("nav",))
# style declarations that hide an element.
INVISIBLE_STYLES = {
    "display": "none",
    "font-size": "0px",
    "color": "transparent",
    "visibility": "hidden",
    "opacity": "0",
}
ELLIPSIS = "..."

# Node.flags bits
_NO_BLOCK = 1  # under a <math> (the reference's cc-no-block attribute)

# Raw-text elements that can reach a block (script, style and iframe are removed first).
_RAW_TEXT_IN_BLOCKS = frozenset(("xmp", "noembed", "noframes", "plaintext"))
_HAS_RAW_TEXT_RE = re.compile(r"<(?:xmp|noembed|noframes|plaintext)\b", re.IGNORECASE)
# The reference builds each block with lxml, which refuses element names with these
# characters and any text or attribute value with characters XML does not allow; the
# block is then dropped. Such characters deeper in a block come back as U+FFFD from the XML
# round trip (written as character references, re-parsed as invalid ones).
_BAD_NAME_RE = re.compile(r"[&<>/\"'\t\n\x0b\x0c\r ]")
_NOT_XML_CHAR_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_TEXT_RUN_RE = re.compile(r"(<[^>]+>)|([^<]+)")
_WS_RE = re.compile(r"\s+")


# ── cleaning the page ─────────────────────────────────────────────────────────────────────


def _is_hidden(node: Node, parent: Node | None = None) -> bool:
    """The reference's ``should_remove_element`` (``parent``: the node's own unless given;
    ``hidden_blocks`` gives the one past a run wrapper)."""
    attrs = node.attrs
    if parent is None:
        parent = node.parent
    if attrs:
        if (
            attrs.get("class", "") in REMOVED_BODY_CHILD_NAMES
            or attrs.get("id", "") in REMOVED_BODY_CHILD_NAMES
        ) and parent is not None and parent.tag == "body":
            return True
        style = attrs.get("style", "")
        if style:
            for declaration in style.split(";"):
                if ":" not in declaration:
                    continue
                key, _, value = declaration.partition(":")
                if INVISIBLE_STYLES.get(key.strip()) == value.strip():
                    return True
    if parent is not None and parent.tag == "details":
        if node.tag == "summary":
            return False
        return parent.attrs.get("open") is None
    return False


def _remove_hidden(root: Node) -> None:
    """Remove hidden elements bottom-up, keeping their tail text (the reference's
    ``remove_specific_elements``; its odd placement of that text is reproduced)."""
    # post-order over a snapshot of each element's children, as the reference iterates
    order: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    for node in reversed(order):
        parent = node.parent
        if parent is None or not _is_hidden(node):
            continue
        tail = node.tail or ""
        node.tail = None
        siblings = parent.children
        index = _index_of(siblings, node)
        if index > 0:
            prev = siblings[index - 1]
            if prev.tail is not None:
                prev.tail += tail
            elif prev.text is not None:
                prev.text += tail  # sic: into the previous sibling's leading text
            else:
                prev.text = tail
        elif parent.text is not None:
            parent.text += tail
        else:
            parent.text = tail
        del siblings[index]
        node.parent = None


def _holds_only_inline(node: Node) -> bool:
    """Whether ``node`` holds nothing but text and inline elements (no block of its own)."""
    return all(d.tag in INLINE_TAGS for d in node.iter() if d is not node)


def _remove_noscript(root: Node) -> None:
    """Remove each ``noscript`` element under ``root`` that holds nothing but text and inline
    elements, with all it holds (``drop_noscript``): a tracking pixel's ``<img>``, markup
    escaped as text, "please enable JavaScript". One that holds blocks stays (its inner
    ``noscript``s are judged alike): Discourse and Flarum forums serve the whole thread there,
    the main content of the page as scraped. Its tail text stays where it was: after the
    previous sibling, or first in the parent (not ``_remove_hidden``'s placement, a reference
    quirk kept for parity only)."""
    found: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node is not root and node.tag == "noscript" and _holds_only_inline(node):
            found.append(node)  # what it holds goes with it: not searched
            continue
        stack.extend(node.children)
    for node in found:
        parent = node.parent
        siblings = parent.children
        index = _index_of(siblings, node)
        tail = node.tail
        node.tail = None
        if tail:
            if index > 0:
                prev = siblings[index - 1]
                prev.tail = tail if prev.tail is None else prev.tail + tail
            else:
                parent.text = tail if parent.text is None else parent.text + tail
        del siblings[index]
        node.parent = None


def _index_of(siblings: list[Node], node: Node) -> int:
    for i, sibling in enumerate(siblings):
        if sibling is node:
            return i
    raise ValueError("node is not a child of its parent")


# ── block structure ───────────────────────────────────────────────────────────────────────


def _nearest(node: Node, tags: tuple[str, ...]) -> Node | None:
    current: Node | None = node
    while current is not None and current.tag not in tags:
        current = current.parent
    return current


def _owned_by(table: Node, node: Node) -> bool:
    """``node`` lies in ``table`` and not in a table nested inside it."""
    ancestor = node.parent
    while ancestor is not None:
        if ancestor is table:
            return True
        if ancestor.tag == "table":
            return False
        ancestor = ancestor.parent
    return False


def _is_data_table(table: Node) -> bool:
    descendants = list(table.iterdescendants())
    for node in descendants:
        tag = node.tag
        if tag in ("caption", "col", "colgroup") or (
            tag in ("td", "th") and "headers" in node.attrs
        ):
            if _owned_by(table, node):
                return True
    if table.attrs.get("role") == "table" or table.attrs.get("data-table"):
        return True
    for node in descendants:
        tag = node.tag
        if tag not in TABLE_TAGS and tag not in INLINE_TAGS:
            return False
    return True


def _lxml_accepts(node: Node) -> bool:
    """Whether lxml would create a copy of this element: it checks the tag name and the
    attribute values (not the attribute names)."""
    if _BAD_NAME_RE.search(node.tag):
        return False
    for value in node.attrs.values():
        if _NOT_XML_CHAR_RE.search(value):
            return False
    return True


def _replace_non_xml_chars(root: Node) -> None:
    not_xml = _NOT_XML_CHAR_RE
    for node in root.iterdescendants():
        if node.text and not_xml.search(node.text):
            node.text = not_xml.sub("\ufffd", node.text)
        if node.tail and not_xml.search(node.tail):
            node.tail = not_xml.sub("\ufffd", node.tail)
        if node.attrs and any(not_xml.search(v) for v in node.attrs.values()):
            node.attrs = {k: not_xml.sub("\ufffd", v) for k, v in node.attrs.items()}


class _Segmenter:
    """The reference's ``extract_paragraphs``, without recursion."""

    def __init__(self, root: Node) -> None:
        self.root = root
        self.table_types: dict[int, bool] = {}
        self.list_types: dict[int, bool] = {}
        self.paragraphs: list[tuple[Node, str, Node | None]] = []
        self._seen: set = set()
        self._memo: dict[int, bool] | None = None

    # is_block_element
    def is_block(self, node: Node):
        tag = node.tag
        if tag == "td" or tag == "th":
            owner = _nearest(node, ("table",))
            return None if owner is None else not self.table_types.get(id(owner), False)
        if tag == "li":
            owner = _nearest(node, ("ul", "ol"))
            return None if owner is None else not self.list_types.get(id(owner), False)
        if tag == "dt" or tag == "dd":
            owner = _nearest(node, ("dl",))
            return None if owner is None else not self.list_types.get(id(owner), False)
        if tag in NO_BLOCK_TAGS or tag in INLINE_TAGS:
            return False
        return True

    def has_block_descendants(self, node: Node) -> bool:
        memo = self._memo
        if memo is not None:
            cached = memo.get(id(node))
            if cached is not None:
                return cached
        result = self._has_block_descendants(node)
        if memo is not None:
            memo[id(node)] = result
        return result

    def _has_block_descendants(self, node: Node) -> bool:
        if node.tag in NO_BLOCK_TAGS:
            return False
        is_block = self.is_block
        for child in node.iterdescendants():
            parent = child.parent
            if parent is not None and (parent.tag in NO_BLOCK_TAGS or parent.flags & _NO_BLOCK):
                child.flags |= _NO_BLOCK
            if not child.flags & _NO_BLOCK and is_block(child):
                if node.tag in INLINE_TAGS:
                    # the reference sets this attribute on the original element: it shows in
                    # map_html, and decides how the block is marked there
                    node.orig.attrs["cc-block-type"] = "true"
                return True
        return False

    def is_content_list(self, lst: Node) -> bool:
        allowed: tuple[str, ...] = ("li",) if lst.tag in ("ul", "ol") else ("dt", "dd")
        items = [c for c in lst.children if c.tag in ("li", "dt", "dd")]
        if not items:
            return False
        if any(c.tag not in allowed for c in lst.children):
            return False
        if lst.text and lst.text.strip():
            return False
        if any(c.tail and c.tail.strip() for c in lst.children):
            return False
        return all(not self.has_block_descendants(item) for item in items)

    def run(self) -> list[tuple[Node, str, Node | None]]:
        root = self.root
        tables: list[Node] = []
        lists: list[Node] = []
        for node in root.iterdescendants():
            if node.tag == "table":
                tables.append(node)
            elif node.tag in ("ul", "ol", "dl"):
                lists.append(node)
        # tables first: whether a list item holds blocks depends on its cells' table types;
        # lists in document order, as the reference (an outer list sees inner ones untyped)
        for table in tables:
            self.table_types[id(table)] = _is_data_table(table)
        for lst in lists:
            self.list_types[id(lst)] = self.is_content_list(lst)
        # from here on block-ness cannot change: memoise has_block_descendants
        self._memo = {}
        self._process(root)
        return self.paragraphs

    def _emit(self, root: Node, content_type: str, original: Node | None, key) -> None:
        if key in self._seen:
            return
        self._seen.add(key)
        self.paragraphs.append((root, content_type, original))

    def _flush(self, node: Node, content: list, final: bool) -> None:
        """One paragraph of inline content of ``node`` (clone of node + merged content)."""
        kinds = [kind for kind, _ in content]
        if all(k == "direct_text" for k in kinds):
            content_type = "unwrapped_text"
        elif all(k == "element" for k in kinds):
            content_type = "inline_elements"
        elif final and all(k != "element" for k in kinds):
            content_type = "unwrapped_text"
        else:
            content_type = "mixed"
        if not _lxml_accepts(node):
            return
        clone = Node(node.tag, node.attrs)
        clone.orig = node.orig
        key_items: list = [id(node.orig)]
        last_inserted: Node | None = None
        last_index = len(content) - 1
        for index, (kind, item) in enumerate(content):
            if kind != "element":
                if _NOT_XML_CHAR_RE.search(item):
                    return  # lxml refuses the text: the reference drops this block
                if last_inserted is None:
                    clone.text = item if not clone.text else clone.text + " " + item
                    key_items.append(item)
                else:
                    # sic: the reference appends this text to the tail of the ORIGINAL element
                    # (the processing tree's), not to the copy it just inserted
                    if last_inserted.tail is None:
                        last_inserted.tail = item
                    else:
                        last_inserted.tail += " " + item
                continue
            copy = deep_copy(item)
            if index == last_index and copy.tag == "br":
                copy.tail = None
            copy.parent = clone
            clone.children.append(copy)
            key_items.append(id(item.orig))
            last_inserted = item
        self._emit(clone, content_type, node.orig, tuple(key_items))

    def _process(self, top: Node) -> None:
        # frame: [node, index of the next child, inline content gathered so far]
        stack: list[list] = [[top, 0, self._start_content(top)]]
        is_block = self.is_block
        has_blocks = self.has_block_descendants
        while stack:
            frame = stack[-1]
            node = frame[0]
            index = frame[1]
            children = node.children
            if index >= len(children):
                stack.pop()
                if frame[2]:
                    self._flush(node, frame[2], final=True)
                if stack and node.tail and node.tail.strip():
                    # back in the parent, after the child we descended into: its tail follows
                    stack[-1][2].append(("tail_text", node.tail.strip()))
                continue
            child = children[index]
            frame[1] = index + 1
            content = frame[2]
            if is_block(child) or has_blocks(child):
                if child.tag == "br":
                    content.append(("element", child))
                if content:
                    self._flush(node, content, final=False)
                    content = frame[2] = []
                if child.tag != "br":
                    if self.table_types.get(id(child)) or not has_blocks(child):
                        self._emit_block(child)
                    else:
                        stack.append([child, 0, self._start_content(child)])
                        continue
                if child.tail and child.tail.strip():
                    content.append(("tail_text", child.tail.strip()))
            else:
                content.append(("element", child))
                if child.tail and child.tail.strip():
                    content.append(("tail_text", child.tail.strip()))

    @staticmethod
    def _start_content(node: Node) -> list:
        if node.text and node.text.strip():
            return [("direct_text", node.text.strip())]
        return []

    def _emit_block(self, child: Node) -> None:
        if not _lxml_accepts(child) or (child.text and _NOT_XML_CHAR_RE.search(child.text)):
            return  # lxml refuses to build this block: the reference drops it
        clone = Node(child.tag, child.attrs)
        clone.orig = child.orig
        clone.text = child.text if child.text else None
        for grandchild in child.children:
            copy = deep_copy(grandchild)
            copy.parent = clone
            clone.children.append(copy)
        self._emit(clone, "block_element", child.orig, ("block", id(child.orig)))


# ── blocks: clean, mark the map, write ──────────────────────────────────────────────────


def _fragment_root(root: Node) -> Node | None:
    """What ``lxml.html.fragment_fromstring(block_html)`` gives back for a block's root.

    Blocks re-parse to themselves, except a ``<body>`` root (its tag is ignored inside the
    fragment's own body: one element is returned, leading text or several elements are
    errors) and an ``<html>`` root (an error). Errors drop the block, as in the reference.
    """
    if root.tag == "body":
        if root.text and root.text.strip():
            return None
        if len(root.children) != 1:
            return None
        element = root.children[0]
        if element.tail and element.tail.strip():
            return None
        element.tail = None
        element.parent = None
        return element
    if root.tag == "html":
        return None
    return root


def _escape_raw_text(root: Node) -> None:
    """The reference writes each block as XML and re-parses it as HTML: text in raw-text
    elements comes back still escaped (``>`` becomes ``&gt;``, then ``&amp;gt;``)."""
    for node in root.iter():
        if node.tag in _RAW_TEXT_IN_BLOCKS and node.text:
            node.text = node.text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _prepare_block(root: Node) -> tuple[bool, bool, int]:
    """One pass over a block: keep only class and id (and src, alt on images), values
    stripped and empty ones dropped, and measure the block.

    Returns (holds a list that ``_simplify_lists`` would shorten; has any text, an image with
    a source, or tail text — an image's tail does not count, as in the reference; an upper
    bound of the length ``_truncate`` counts). The last two describe the tree as it is now.
    """
    long_list = meaningful = False
    length = 0
    stack = [root]
    while stack:
        node = stack.pop()
        attrs = node.attrs
        tag = node.tag
        kept: dict[str, str] = {}
        if attrs:
            if tag == "img":
                src = attrs.get("src", "").strip()
                if src and not src.startswith("data:image/"):
                    kept["src"] = src
                alt = attrs.get("alt", "").strip()
                if alt:
                    kept["alt"] = alt
            value = attrs.get("class", "").strip()
            if value:
                kept["class"] = value
            value = attrs.get("id", "").strip()
            if value:
                kept["id"] = value
        node.attrs = kept
        text = node.text
        if text == "":
            node.text = text = None  # the XML round trip loses empty text (<li></li> -> <li>)
        if node.tail == "":
            node.tail = None
        if text:
            length += len(text)
            if not meaningful and text.strip():
                meaningful = True
        tail = node.tail
        if tail:
            length += len(tail)
        if not meaningful:
            if tag == "img":
                meaningful = "src" in kept
            elif tail and tail.strip():
                meaningful = True
        children = node.children
        if children:
            if len(children) > 2 and tag in ("ul", "ol", "dl"):
                long_list = True
            stack.extend(children)
    return long_list, meaningful, length


def _ellipsis_span() -> Node:
    span = Node("span")
    span.text = ELLIPSIS
    return span


def _simplify_lists(root: Node) -> None:
    """Long lists keep their first and last item (dl: first and last dt group) around an
    ellipsis; dropped items take their tail text with them."""
    stack = [root]
    while stack:
        node = stack.pop()
        children = node.children
        if node.tag in ("ul", "ol"):
            if len(children) > 2:
                span = _ellipsis_span()
                span.parent = node
                node.children = children = [children[0], span, children[-1]]
        elif node.tag == "dl":
            if len(children) > 2:
                dt_positions = [i for i, c in enumerate(children) if c.tag == "dt"]
                if len(dt_positions) > 1:
                    first = children[dt_positions[0] : dt_positions[1]]
                    last = children[dt_positions[-1] :]
                    span = _ellipsis_span()
                    span.parent = node
                    node.children = children = [*first, span, *last]
        stack.extend(reversed(children))


def _truncate(root: Node, max_length: int) -> None:
    """Cut a block's text at ``max_length`` characters (text inside tables and math not
    counted), append an ellipsis and drop everything after the cut — the reference's
    ``truncate_html_element_selective``, quirks included (tails always count; a tail inside a
    table is never cut, and the cut after it can slice from the end)."""
    # excluded: the node or an ancestor (up to the block root) is a table or math
    excluded: dict[int, bool] = {id(root): root.tag in NO_LENGTH_TAGS}
    total = 0
    entries: list[tuple[Node, bool, bool]] = []  # (node, is_tail, can_modify)
    stack: list = [root]
    while stack:
        item = stack.pop()
        if item.__class__ is tuple:
            node = item[1]
            if node.tail:
                total += len(node.tail)
                parent = node.parent
                can_modify = not (parent is not None and excluded.get(id(parent), False))
                entries.append((node, True, can_modify))
            continue
        node = item
        node_excluded = excluded[id(node)]
        if node.text and not node_excluded:
            total += len(node.text)
            entries.append((node, False, True))
        if node is not root:
            stack.append(("tail", node))
        elif node.tail:
            stack.append(("tail", node))
        for child in reversed(node.children):
            excluded[id(child)] = node_excluded or child.tag in NO_LENGTH_TAGS
            stack.append(child)
        # children must come before this node's tail: they were pushed after it
    if total <= max_length:
        return
    current = 0
    done = False
    for node, is_tail, can_modify in entries:
        if done:
            if is_tail:
                node.tail = None
            else:
                node.text = None
            continue
        text = node.tail if is_tail else node.text
        if text is None:
            text = ""
        if current + len(text) <= max_length:
            current += len(text)
        elif can_modify:
            cut = text[: max_length - current] + ELLIPSIS
            if is_tail:
                node.tail = cut
            else:
                node.text = cut
            current = max_length
            done = True
            _drop_following(node, root)
        else:
            current += len(text)


def _drop_following(node: Node, root: Node) -> None:
    """Remove what follows ``node`` and each of its ancestors up to ``root``."""
    while node is not root and node.parent is not None:
        parent = node.parent
        siblings = parent.children
        del siblings[_index_of(siblings, node) + 1 :]
        node = parent


def _copy_cc_select(target: Node, source: Node) -> None:
    value = source.attrs.get("cc-select")
    if value is not None:
        target.attrs["cc-select"] = value


def _mark_map(
    item_id: str,
    content_type: str,
    original_parent: Node | None,
    root_orig: Node,
    root_tag: str,
    root_children: list[Node],
    root_text: str | None,
) -> bool:
    """Mark the block on the original tree (the reference's map bookkeeping in
    ``process_paragraphs``). False where the reference fails on this block and drops it."""
    if original_parent is None:
        return True
    if content_type == "block_element":
        original_parent.attrs[ITEM_ID_ATTR] = item_id
        for node in original_parent.iterdescendants():
            if node.attrs.get("cc-select") is not None:
                original_parent.attrs["cc-select"] = node.attrs["cc-select"]
                break
        return True
    if root_children:
        if (
            root_tag in INLINE_TAGS
            and root_orig.tag != "body"
            and root_orig.attrs.get("cc-block-type") != "true"
        ):
            root_orig.attrs[ITEM_ID_ATTR] = item_id
            return True
        siblings = original_parent.children
        first, last = root_children[0], root_children[-1]
        try:
            start = _index_of(siblings, first)
            stop = _index_of(siblings, last)
        except ValueError:
            return False
        to_wrap = siblings[start : stop + 1]
        wrapper = Node(RUN_WRAPPER_TAG, {ITEM_ID_ATTR: item_id})
        _copy_cc_select(wrapper, original_parent)
        leading = original_parent.text if start == 0 else siblings[start - 1].tail
        trailing = last.tail
        if leading:
            wrapper.text = leading
            if start == 0:
                original_parent.text = None
            else:
                siblings[start - 1].tail = None
        for node in to_wrap:
            node.parent = wrapper
        wrapper.children = list(to_wrap)
        wrapper.parent = original_parent
        siblings[start : stop + 1] = [wrapper]
        if last.tag == "br" and trailing:
            wrapper.tail = trailing
            last.tail = None
        return True
    if content_type == "inline_elements":
        root_orig.attrs[ITEM_ID_ATTR] = item_id
        return True
    if not (root_text and root_text.strip()):
        return True
    wanted = root_text.strip()
    if original_parent.text and original_parent.text.strip() == wanted:
        _wrap_text(item_id, original_parent, 0, original_parent.text)
        original_parent.text = None
        return True
    for index, child in enumerate(original_parent.children):
        if child.tail and child.tail.strip() == wanted:
            _wrap_text(item_id, original_parent, index + 1, child.tail)
            child.tail = None
            break
    return True


def _wrap_text(item_id: str, parent: Node, index: int, text: str) -> None:
    """Insert a ``<cc-alg-uc-text>`` run wrapper holding ``text`` at ``index``."""
    wrapper = Node(RUN_WRAPPER_TAG, {ITEM_ID_ATTR: item_id})
    _copy_cc_select(wrapper, parent)
    wrapper.text = text
    wrapper.parent = parent
    parent.children.insert(index, wrapper)


def _collapse_whitespace(html: str) -> str:
    """Runs of whitespace outside tags become one space (the reference's post-processing,
    with Python's Unicode ``\\s``)."""
    return _TEXT_RUN_RE.sub(
        lambda m: m.group(1) or _WS_RE.sub(" ", m.group(2)), html
    ).strip()


def simplify(html: str, cutoff_length: int = 500, *, keep_hidden: bool = False,
             drop_noscript: bool = False) -> tuple[str, str]:
    """Segment a page into blocks: ``(simplified_html, map_html)``, as
    ``pulpie.simplify.simplify`` does; see the module docstring. ``keep_hidden``: without
    removing hidden elements (``_remove_hidden`` skipped); ``drop_noscript``: without
    ``noscript`` elements (``_remove_noscript`` first). Neither is the reference's
    segmentation: options of the runtime's ``stages.simplify``."""
    if not isinstance(html, str):
        raise SimplifyError(f"page HTML must be str, not {type(html).__name__}")
    return _simplify_serialized(lexbor_serialization(html), cutoff_length, html, keep_hidden,
                                drop_noscript)


def _simplify_serialized(serialized: str, cutoff_length: int, html: str,
                         keep_hidden: bool = False, drop_noscript: bool = False
                         ) -> tuple[str, str]:
    """The segmentation of lexbor's serialization of the page ``html`` (whether the raw page
    has raw-text elements or characters XML does not allow decides two passes over blocks)."""
    has_raw_text = _HAS_RAW_TEXT_RE.search(html) is not None
    has_non_xml_chars = _NOT_XML_CHAR_RE.search(html) is not None
    original = parse_serialized(serialized)
    # the page without REMOVED_TAGS subtrees (and their tail text)
    processing = deep_copy(original, skip=REMOVED_TAGS)
    if drop_noscript:
        _remove_noscript(processing)
    if not keep_hidden:
        _remove_hidden(processing)
    paragraphs = _Segmenter(processing).run()

    blocks: list[str] = []
    item_id = 1
    for para_root, content_type, original_parent in paragraphs:
        root = _fragment_root(para_root)
        if root is None:
            continue
        root_orig = root.orig
        root_tag = root.tag
        root_children = [child.orig for child in root.children]
        root_text = root.text
        if has_raw_text:
            _escape_raw_text(root)
        if has_non_xml_chars:
            _replace_non_xml_chars(root)
        long_list, meaningful, length = _prepare_block(root)
        if long_list:
            _simplify_lists(root)
            # measure the shortened block (cleaning again leaves its attributes as they are)
            _, meaningful, length = _prepare_block(root)
        if not meaningful:
            continue
        if length > cutoff_length:
            _truncate(root, cutoff_length)
        current = str(item_id)
        root.attrs[ITEM_ID_ATTR] = current
        if not _mark_map(
            current, content_type, original_parent, root_orig, root_tag, root_children,
            root_text,
        ):
            continue
        item_id += 1
        blocks.append(serialize_html(root).strip())

    simplified = _collapse_whitespace(
        '<html><head><meta charset="utf-8"></head><body>' + "".join(blocks) + "</body></html>"
    )
    map_html = serialize_html(original)
    return simplified, map_html


# ── which blocks of a keep_hidden segmentation the reference removes ──────────────────────


def _is_run_wrapper(node: Node) -> bool:
    return node.tag == RUN_WRAPPER_TAG and ITEM_ID_ATTR in node.attrs


def _segmentation_parent(node: Node) -> Node | None:
    """A node of ``map_html``'s tree's parent as the segmentation saw it: past run wrappers
    (``_mark_map`` added them)."""
    parent = node.parent
    while parent is not None and _is_run_wrapper(parent):
        parent = parent.parent
    return parent


def hidden_blocks(map_html: str, item_ids: list[str | None]) -> list[int]:
    """Per id, 1 when the element carrying it in ``map_html`` (for a run wrapper: the
    wrapper's parent) or one of its ancestors is one ``_remove_hidden`` removes, else 0 (and 0
    for ids ``map_html`` does not hold)."""
    root = parse_serialized(map_html.replace("\r\n", "\n").replace("\r", "\n"))
    by_id: dict[str, Node] = {}
    for node in root.iter():
        item_id = node.attrs.get(ITEM_ID_ATTR)
        if item_id is not None:
            by_id.setdefault(item_id, node)
    flags = []
    for item_id in item_ids:
        node = by_id.get(item_id) if isinstance(item_id, str) else None
        if node is not None and _is_run_wrapper(node):
            node = _segmentation_parent(node)
        hidden = 0
        while node is not None:
            parent = _segmentation_parent(node)
            if parent is not None and _is_hidden(node, parent):
                hidden = 1
                break
            node = parent
        flags.append(hidden)
    return flags
