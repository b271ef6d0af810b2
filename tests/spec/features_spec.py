"""The specification of the default model's block features (layout ``blocks-v1``, the
extras that ``blocks-v2`` appends: ``block_extras``, the containers that ``blocks-v3``
appends to those: ``block_containers``, the dialog columns that ``blocks-v4`` appends
after them: ``block_dialogs``, the rail columns that ``blocks-v5`` appends after those:
``block_rails``, and the teaser columns that ``blocks-v6`` appends after the rails:
``block_teasers``), in Python:
the compiled core (``core/src/features``), which ``pulpie_rt.runtime.stages.features``
calls, computes the same values; ``tests/test_features.py`` and ``python -m
parity.features_parity`` compare the two.

The embedded default model is small and reads each 1,024-token chunk alone, so it cannot see
what a boilerplate classifier learns from the page around a block: its link density, the
class/id words of its ancestors (``nav``, ``comment``, ``related`` …), its position, which
container holds most of the page's prose. ``block_features`` measures those for every block
(one row per ``item_id``, in block order) from the original DOM marked with the same ids; the
bundle's rescorer (``runtime.stages.rescore``) turns them into a score per block.

The column layout (names, categorical codes) is ``runtime.stages.features``'; this module is
how each value is computed. Everything is iterative (deep pages are fine) and runs on
selectolax's lexbor tree (the core reads libxml2's tree of the same text, as the HTML DOM
sees it: see core/src/features/mod.rs for where the two trees differ).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter

import numpy as np
from selectolax.lexbor import LexborHTMLParser

from pulpie_rt.runtime.constants import ITEM_ID_ATTR, RUN_WRAPPER_TAG
from pulpie_rt.runtime.stages.features import (
    ANCESTOR_TAGS,
    BLOCK_COLUMNS,
    COMMENT_WORDS,
    CONTAINER_LEVELS,
    DIALOG_NAMES,
    DISTANCE_KEYWORDS,
    DISTANCE_TAGS,
    KEYWORDS,
    N_FEATURES,
    NO_CONTAINER,
    NO_DISTANCE,
    RAIL_LEVELS,
    RAIL_MIN_ITEMS,
    RAIL_NAMES,
    RAIL_WORDS,
    TAGS,
    TEASER_NAMES,
)

_WORD = re.compile(r"\w+")
_PUNCT = re.compile(r"[.,;:!?]")
_TAG_ID = {tag: i + 1 for i, tag in enumerate(TAGS)}
_ANCESTOR_INDEX = {tag: i for i, tag in enumerate(ANCESTOR_TAGS)}
# Words looked for in class / id / role / itemprop values (substring match).
_KEYWORD_RE = re.compile("|".join(sorted(KEYWORDS, key=len, reverse=True)))
_KEYWORD_INDEX = {word: i for i, word in enumerate(KEYWORDS)}
STOPWORDS = frozenset(
    "the a an and or of to in is are was were be been it that this with for on as by at from "
    "but not have has had which you we they he she his her their its our your will would can "
    "could there than then so if into about also more some what when who how all one".split()
)
WINDOW = 3  # blocks either side for the window columns
CANDIDATE_LEVELS = 6  # ancestors a block's prose scores


def _keyword_flags(node) -> np.ndarray:
    flags = np.zeros(len(KEYWORDS), np.float32)
    attrs = node.attributes
    names = " ".join(
        value for key in ("class", "id", "role", "itemprop") if (value := attrs.get(key))
    ).lower()
    for word in _KEYWORD_RE.findall(names):
        flags[_KEYWORD_INDEX[word]] = 1.0
    return flags


def _shift(values: np.ndarray, by: int) -> np.ndarray:
    """``values`` moved ``by`` places later (earlier when negative), zeros coming in."""
    out = np.zeros_like(values)
    if by > 0:
        out[by:] = values[:-by]
    elif by < 0:
        out[:by] = values[-by:]
    return out


def _elements_by_id(map_html: str) -> tuple[LexborHTMLParser, dict[str, object]]:
    """lexbor's tree of ``map_html`` and its elements by ``_item_id`` (the first in document
    order, as the core keeps it)."""
    tree = LexborHTMLParser(map_html)
    by_id: dict[str, object] = {}
    for node in tree.css(f"[{ITEM_ID_ATTR}]"):
        by_id.setdefault(node.attributes.get(ITEM_ID_ATTR), node)
    return tree, by_id


def block_features(map_html: str, item_ids: list[str | None]) -> np.ndarray:
    """One float32 row of ``FEATURE_NAMES`` per block of ``item_ids`` (rows of zeros for ids
    that ``map_html`` does not hold)."""
    return _block_features(map_html, item_ids)[0]


def _block_features(map_html: str, item_ids: list[str | None]
                    ) -> tuple[np.ndarray, object, dict[str, object]]:
    """``block_features``, readability's candidate (the element ``in_candidate`` names, None
    where none) and the elements by id, both of the tree the rows were read from."""
    n = len(item_ids)
    if n == 0:
        return np.zeros((0, N_FEATURES), np.float32), None, {}
    _, by_id = _elements_by_id(map_html)
    elements: dict[int, object] = {}  # the chains' elements by mem_id

    n_kw, n_anc = len(KEYWORDS), len(ANCESTOR_TAGS)
    block = np.zeros((n, len(BLOCK_COLUMNS)), np.float32)
    own_kw = np.zeros((n, n_kw), np.float32)
    ancestor_kw = np.zeros((n, n_kw), np.float32)
    ancestor_tag = np.zeros((n, n_anc), np.float32)
    text_stats = np.zeros((n, 3), np.float32)  # stopword ratio, digit ratio, mean word length
    chains: list[list[int]] = []  # ancestors' mem_ids, nearest first
    prose = np.zeros(n, np.float32)  # words outside links
    texts: list[str] = []
    keyword_cache: dict[int, np.ndarray] = {}  # per ancestor node, this page only

    for row, item_id in enumerate(item_ids):
        node = by_id.get(item_id)
        if node is None:
            chains.append([])
            texts.append("")
            continue
        # A run wrapper stands for text inside its parent: the parent's tag and names matter.
        own = node.parent if node.tag == RUN_WRAPPER_TAG and node.parent is not None else node
        text = node.text(deep=True, separator=" ")
        words = _WORD.findall(text.lower())
        n_words = len(words)
        link_words, n_links = 0, 0
        for link in node.css("a"):
            n_links += 1
            link_words += len(_WORD.findall(link.text(deep=True, separator=" ")))
        n_punct = len(_PUNCT.findall(text))
        chain: list[int] = []
        depth, in_link = 0, 0.0
        parent = own.parent
        while parent is not None and parent.tag not in ("html", "-undef"):
            depth += 1
            key = parent.mem_id
            chain.append(key)
            elements[key] = parent
            flags = keyword_cache.get(key)
            if flags is None:
                flags = keyword_cache[key] = _keyword_flags(parent)
            np.maximum(ancestor_kw[row], flags, out=ancestor_kw[row])
            index = _ANCESTOR_INDEX.get(parent.tag)
            if index is not None:
                ancestor_tag[row, index] = 1.0
            if parent.tag == "a":
                in_link = 1.0
            parent = parent.parent
        if in_link:
            link_words = n_words
        block[row] = (
            _TAG_ID.get(node.tag, 0), _TAG_ID.get(own.tag, 0), n_words, len(text),
            link_words / max(n_words, 1), n_links, len(node.css("img")),
            n_punct / max(n_words, 1), n_punct, depth, in_link, text.count(". "),
        )
        own_kw[row] = _keyword_flags(own)
        text_stats[row] = (
            sum(1 for w in words if w in STOPWORDS) / max(n_words, 1),
            sum(ch.isdigit() for ch in text) / max(len(text), 1),
            sum(len(w) for w in words) / max(n_words, 1),
        )
        chains.append(chain)
        prose[row] = n_words - link_words
        texts.append(" ".join(words))

    words = block[:, 2]
    link_ratio = block[:, 4]
    total = max(float(words.sum()), 1.0)
    window = np.ones(2 * WINDOW + 1, np.float32)
    window_words = np.convolve(np.pad(words, WINDOW), window, "valid")
    window_link = np.convolve(np.pad(words * link_ratio, WINDOW), window, "valid")
    # Readability's candidate: each block's prose scores its parent in full, its grandparent
    # half, and further ancestors 1/(3 * level); the best-scoring node holds the main text.
    score: dict[int, float] = {}
    for chain, value in zip(chains, prose, strict=True):
        for level, key in enumerate(chain[:CANDIDATE_LEVELS]):
            weight = 1.0 if level == 0 else 0.5 if level == 1 else 1.0 / (3 * level)
            score[key] = score.get(key, 0.0) + float(value) * weight
    best = max(score, key=score.__getitem__) if score else None
    in_candidate = np.array([best in chain for chain in chains], np.float32)
    best_ancestor = np.array(
        [max((score.get(k, 0.0) for k in chain), default=0.0) for chain in chains], np.float32
    ) / total
    counts = Counter(texts)
    repeats = np.array([counts[t] if t else 0 for t in texts], np.float32)
    h1 = np.flatnonzero(block[:, 0] == _TAG_ID["h1"])
    from_h1 = (np.arange(n) - h1[0]) / n if len(h1) else np.full(n, -2.0)
    page = np.stack([
        np.arange(n) / max(n - 1, 1),
        (np.cumsum(words) - words) / total,
        words / total,
        np.full(n, n),
        np.full(n, total),
        _shift(words, 1),
        _shift(words, -1),
        _shift(link_ratio, 1),
        _shift(link_ratio, -1),
        window_words,
        window_link / np.maximum(window_words, 1),
        in_candidate,
        best_ancestor,
        np.full(n, float((words * in_candidate).sum()) / total),
        repeats,
        from_h1,
        words / max(float(np.median(words)), 1.0),
    ], 1).astype(np.float32)
    return (np.concatenate([block, own_kw, ancestor_kw, ancestor_tag, page, text_stats], 1),
            None if best is None else elements[best], by_id)


# ── blocks-v2's extras ───────────────────────────────────────────────────────────────────

_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
                  "\U00020000-\U0002fa1f]")


def block_extras(map_html: str, item_ids: list[str | None]) -> np.ndarray:
    """One float32 row of ``EXTRA_NAMES`` per block of ``item_ids``: the CJK characters of its
    text, then for each of ``DISTANCE_KEYWORDS`` and ``DISTANCE_TAGS`` how many levels up from
    the block's own element (0; a run wrapper's parent) the nearest element holding the
    keyword in its class/id/role/itemprop (as ``_keyword_flags`` reads them) or having the tag
    is (``NO_DISTANCE`` where none, and for ids that ``map_html`` does not hold)."""
    n = len(item_ids)
    n_kw, n_tag = len(DISTANCE_KEYWORDS), len(DISTANCE_TAGS)
    out = np.full((n, 1 + n_kw + n_tag), NO_DISTANCE, np.float32)
    out[:, 0] = 0.0
    if n == 0:
        return out
    _, by_id = _elements_by_id(map_html)
    keyword_columns = [_KEYWORD_INDEX[w] for w in DISTANCE_KEYWORDS]
    for row, item_id in enumerate(item_ids):
        node = by_id.get(item_id)
        if node is None:
            continue
        out[row, 0] = len(_CJK.findall(node.text(deep=True, separator=" ")))
        element = node.parent if node.tag == RUN_WRAPPER_TAG and node.parent is not None \
            else node
        depth = 0
        while element is not None and element.tag not in ("html", "-undef"):
            flags = _keyword_flags(element)
            for j, k in enumerate(keyword_columns):
                if flags[k] and out[row, 1 + j] == NO_DISTANCE:
                    out[row, 1 + j] = min(depth, NO_DISTANCE)
            if element.tag in DISTANCE_TAGS:
                j = 1 + n_kw + DISTANCE_TAGS.index(element.tag)
                if out[row, j] == NO_DISTANCE:
                    out[row, j] = min(depth, NO_DISTANCE)
            element = element.parent
            depth += 1
    return out


# ── blocks-v3's containers ───────────────────────────────────────────────────────────────


def block_containers(map_html: str, item_ids: list[str | None]) -> np.ndarray:
    """One float32 row of ``CONTAINER_NAMES`` per block of ``item_ids``: for level k = 1..
    ``CONTAINER_LEVELS``, the block's k-th ancestor (from its element's parent up to but not
    including ``<html>``: a run wrapper's chain starts at the element whose text it holds),
    as the element's place in this tree's document order
    (``NO_CONTAINER`` past the chain, and in every column for ids ``map_html`` does not hold).
    The numbers name elements within this page only; the core numbers its own tree's nodes,
    so the two agree on which blocks share a container, not on the numbers."""
    n = len(item_ids)
    out = np.full((n, CONTAINER_LEVELS), NO_CONTAINER, np.float32)
    if n == 0:
        return out
    tree, by_id = _elements_by_id(map_html)
    number: dict[int, int] = {}
    if tree.root is not None:
        for element in tree.root.traverse():
            number.setdefault(element.mem_id, len(number))
    for row, item_id in enumerate(item_ids):
        node = by_id.get(item_id)
        if node is None:
            continue
        parent = node.parent
        level = 0
        while (parent is not None and parent.tag not in ("html", "-undef")
               and level < CONTAINER_LEVELS):
            out[row, level] = number.setdefault(parent.mem_id, len(number))
            parent = parent.parent
            level += 1
    return out


# ── blocks-v4's dialogs ──────────────────────────────────────────────────────────────────

_ASCII_WHITESPACE = " \t\n\f\r"


def _dialog_kind(element) -> tuple[bool, bool]:
    """Whether ``element`` is a dialog (``<dialog>``, or a ``role`` token, split at ASCII
    whitespace, that is ``dialog`` or ``alertdialog`` ASCII case aside) and whether it is a
    modal (``aria-modal`` is ``true``, ASCII case and surrounding ASCII whitespace aside)."""
    attrs = element.attributes
    roles = re.split(f"[{_ASCII_WHITESPACE}]+", attrs.get("role") or "")
    dialog = element.tag == "dialog" or any(
        role.isascii() and role.lower() in ("dialog", "alertdialog") for role in roles)
    modal = (attrs.get("aria-modal") or "").strip(_ASCII_WHITESPACE)
    return dialog, modal.isascii() and modal.lower() == "true"


def block_dialogs(map_html: str, item_ids: list[str | None]) -> np.ndarray:
    """One float32 row of ``DIALOG_NAMES`` per block of ``item_ids``: how many levels up from
    the block's own element (0; a run wrapper's parent), as ``block_extras`` counts them, the
    nearest dialog and the nearest modal are (``_dialog_kind``; ``NO_DISTANCE`` where none,
    and for ids that ``map_html`` does not hold)."""
    n = len(item_ids)
    out = np.full((n, len(DIALOG_NAMES)), NO_DISTANCE, np.float32)
    if n == 0:
        return out
    _, by_id = _elements_by_id(map_html)
    for row, item_id in enumerate(item_ids):
        node = by_id.get(item_id)
        if node is None:
            continue
        element = node.parent if node.tag == RUN_WRAPPER_TAG and node.parent is not None \
            else node
        depth = 0
        while element is not None and element.tag not in ("html", "-undef"):
            for column, is_kind in enumerate(_dialog_kind(element)):
                if is_kind and out[row, column] == NO_DISTANCE:
                    out[row, column] = min(depth, NO_DISTANCE)
            element = element.parent
            depth += 1
    return out


# ── blocks-v5's rails ────────────────────────────────────────────────────────────────────

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _names_hold(element, words: tuple[str, ...]) -> bool:
    """Whether one of ``words`` is in ``element``'s class, id or aria-label value (ASCII case
    aside)."""
    attrs = element.attributes
    return any(word in value.translate(_ASCII_LOWER) for key in ("class", "id", "aria-label")
               if (value := attrs.get(key)) for word in words)


def _signature(element) -> tuple[str, str]:
    return element.tag, element.attributes.get("class") or ""


def block_rails(map_html: str, item_ids: list[str | None]) -> np.ndarray:
    """One float32 row of ``RAIL_NAMES`` per block of ``item_ids`` (``_rail_rows``)."""
    return _rail_rows(map_html, item_ids)[0]


def _holds(element, tags: tuple[str, ...] = (), names: tuple[str, ...] = ()) -> bool:
    """Whether ``element`` or an element below it is one of ``tags``, or has one of ``names``
    in its class, id, rel or itemprop (ASCII case aside)."""
    for node in [element, *element.css("*")]:
        if node.tag in tags:
            return True
        attrs = node.attributes
        if names and any(word in value.translate(_ASCII_LOWER)
                         for key in ("class", "id", "rel", "itemprop")
                         if (value := attrs.get(key)) for word in names):
            return True
    return False


def _rail_rows(map_html: str, item_ids: list[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """One float32 row of ``RAIL_NAMES`` per block of ``item_ids``. A block's item: the
    nearest element of its chain (its own element, level 0 (a run wrapper's parent), then its
    ancestors, up to level ``RAIL_LEVELS`` - 1, up to but not including ``<html>``) whose
    parent holds at least ``RAIL_MIN_ITEMS`` element children of its signature (tag and
    ``class`` value, an absent class read as ""): a run of alike items, a data region. Its
    columns: the run's items; the item's level; the item's words (the sum of ``words`` over
    the blocks whose own element or ancestors hold it, in block order, in float64) and their
    linked share (the sum of ``words`` x ``link_ratio`` over them, divided by that, 0 without
    words); the share of the run's items that are or hold a ``<time>``. Without an item: 0,
    ``NO_DISTANCE``, 0, 0, 0. Then how many levels up (the same walk, on to ``<html>``) the
    nearest element is whose class, id or aria-label holds one of ``RAIL_WORDS`` and one of
    ``COMMENT_WORDS`` (``_names_hold``; ``NO_DISTANCE`` where none). Ids that ``map_html``
    does not hold: the row without an item or distance.

    And per row the teaser columns of its run (``TEASER_NAMES``' 6th to 9th; 0 without an
    item): the share of the run's items holding a byline (an element, itself or below it, whose
    class, id, rel or itemprop holds ``BYLINE_WORDS``), a heading (``h1``-``h6``), and
    ``LINKED_ITEM_SHARE`` or more of their words linked (the item words and linked words
    above; 0 words is not linked), and the run's words (the sum of its items') over the
    page's (the sum of ``words``, at least 1)."""
    n = len(item_ids)
    out = np.zeros((n, len(RAIL_NAMES)), np.float32)
    out[:, [1, 5, 6]] = NO_DISTANCE
    runs = np.zeros((n, 4), np.float32)
    if n == 0:
        return out, runs
    rows = block_features(map_html, item_ids)
    words = rows[:, BLOCK_COLUMNS.index("words")]
    link_ratio = rows[:, BLOCK_COLUMNS.index("link_ratio")]
    _, by_id = _elements_by_id(map_html)
    chains: list[list] = []
    node_words: dict[int, float] = {}
    node_linked: dict[int, float] = {}
    for row, item_id in enumerate(item_ids):
        node = by_id.get(item_id)
        chain = []
        element = node
        if node is not None and node.tag == RUN_WRAPPER_TAG and node.parent is not None:
            element = node.parent
        while element is not None and element.tag not in ("html", "-undef"):
            chain.append(element)
            element = element.parent
        chains.append(chain)
        w = float(words[row])
        linked = float(words[row]) * float(link_ratio[row])
        for element in chain:
            node_words[element.mem_id] = node_words.get(element.mem_id, 0.0) + w
            node_linked[element.mem_id] = node_linked.get(element.mem_id, 0.0) + linked
    for row, chain in enumerate(chains):
        found = False
        for level, element in enumerate(chain):
            if not found and level < RAIL_LEVELS and element.parent is not None:
                alike = [child for child in element.parent.iter()
                         if _signature(child) == _signature(element)]
                if len(alike) >= RAIL_MIN_ITEMS:
                    found = True
                    item_words = node_words[element.mem_id]
                    with_time = sum(child.tag == "time" or child.css_first("time") is not None
                                    for child in alike)
                    out[row, :5] = (len(alike), level, item_words,
                                    node_linked[element.mem_id] / item_words if item_words
                                    else 0.0, with_time / len(alike))
                    alike_words = [node_words.get(child.mem_id, 0.0) for child in alike]
                    linked = sum(w > 0 and node_linked[child.mem_id] / w >= LINKED_ITEM_SHARE
                                 for child, w in zip(alike, alike_words, strict=True))
                    runs[row] = (
                        sum(_holds(child, names=BYLINE_WORDS) for child in alike) / len(alike),
                        sum(_holds(child, tags=_HEADINGS) for child in alike) / len(alike),
                        linked / len(alike),
                        sum(alike_words) / max(float(words.astype(np.float64).sum()), 1.0),
                    )
            for column, words_of in ((5, RAIL_WORDS), (6, COMMENT_WORDS)):
                if out[row, column] == NO_DISTANCE and _names_hold(element, words_of):
                    out[row, column] = min(level, NO_DISTANCE)
    return out, runs


# ── blocks-v6's teasers ──────────────────────────────────────────────────────────────────

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
BYLINE_WORDS = ("author", "byline")
LINKED_ITEM_SHARE = 0.5
_LISTING_TYPES = {"CollectionPage", "ItemList", "SearchResultsPage", "OfferCatalog", "Blog"}
_PRODUCT_TYPES = {"Product", "ProductGroup", "ProductModel", "IndividualProduct", "Offer",
                  "AggregateOffer"}
_JSONLD_NESTING = 4


def _json_ld(script: str) -> object:
    """A JSON-LD script's value (its ``<!-- -->`` or CDATA wrapper off; read once more with
    its control characters, Unicode's Cc, as spaces), None where it is no JSON."""
    text = script.strip()
    for open_, close in (("<!--", "-->"), ("//<![CDATA[", "//]]>"), ("<![CDATA[", "]]>")):
        text = text.removeprefix(open_).strip()
        text = text.removesuffix(close).strip()
    spaced = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text)
    for attempt in (text, spaced):
        try:
            return json.loads(attempt)
        except ValueError:
            continue
    return None


def _objects(value: object, out: list[dict], depth: int = 0) -> None:
    if depth > _JSONLD_NESTING:
        return
    if isinstance(value, list):
        for item in value:
            _objects(item, out, depth + 1)
    elif isinstance(value, dict):
        out.append(value)
        if "@graph" in value:
            _objects(value["@graph"], out, depth + 1)


def _types(obj: dict) -> list[str]:
    value = obj.get("@type")
    items = [value] if isinstance(value, str) else [
        v for v in value if isinstance(v, str)] if isinstance(value, list) else []
    return [t.rsplit("/", 1)[-1] for t in items]


def page_kind(map_html: str) -> list[bool]:
    """The teaser columns' page kind (``TEASER_NAMES``' first 5): the first ``<meta>`` whose
    ``property`` (else ``name``) is ``og:type`` with a ``content``, as ``article`` (or
    ``article:…``, ``article.…``) and as ``website`` (trimmed, ASCII case aside); whether
    the JSON-LD scripts' objects (arrays and ``@graph``s followed ``_JSONLD_NESTING`` deep)
    hold a story (an ``@type`` ending in ``Article`` or ``Posting``, or ``Report``,
    ``Review``, ``Recipe``: the metadata's article), a listing, a product. Nothing inside
    ``<svg>`` or ``<math>`` is read."""
    tree = LexborHTMLParser(map_html)

    def outside_images(node) -> bool:
        parent = node.parent
        while parent is not None:
            if parent.tag in ("svg", "math"):
                return False
            parent = parent.parent
        return True

    og_type = None
    for meta in tree.css("meta"):
        key = meta.attributes.get("property")
        if key is None:
            key = meta.attributes.get("name")
        if (key is not None and key.strip().lower() == "og:type"
                and meta.attributes.get("content") is not None and outside_images(meta)):
            og_type = meta.attributes["content"].strip().lower()
            break
    objects: list[dict] = []
    for script in tree.css("script"):
        kind = script.attributes.get("type")
        if kind is not None and kind.strip().lower() == "application/ld+json" \
                and outside_images(script):
            _objects(_json_ld(script.text(deep=False)), objects)
    types = [_types(o) for o in objects]
    return [
        og_type is not None and (og_type == "article" or og_type.startswith(("article:",
                                                                             "article."))),
        og_type == "website",
        any(t.endswith(("Article", "Posting")) or t in ("Report", "Review", "Recipe")
            for ts in types for t in ts),
        any(t in _LISTING_TYPES for ts in types for t in ts),
        any(t in _PRODUCT_TYPES for ts in types for t in ts),
    ]


def block_teasers(map_html: str, item_ids: list[str | None]) -> np.ndarray:
    """One float32 row of ``TEASER_NAMES`` per block of ``item_ids``: the page's kind
    (``page_kind``, 1 or 0, in every row), its run's teaser columns (``_rail_rows``), then its
    place against readability's candidate (``in_candidate``): 1 after the last block inside
    it, -1 before the first, else 0 (and 0 on a page without one); and the level of the
    nearest element of the block's chain (its own element, 0, a run wrapper's parent, then its
    ancestors up to but not including ``<html>``) that is the candidate or holds it
    (``NO_DISTANCE`` where none, and for ids ``map_html`` does not hold)."""
    n = len(item_ids)
    out = np.zeros((n, len(TEASER_NAMES)), np.float32)
    if n == 0:
        return out
    out[:, :5] = page_kind(map_html)
    out[:, 5:9] = _rail_rows(map_html, item_ids)[1]
    rows, best, by_id = _block_features(map_html, item_ids)
    inside = np.flatnonzero(rows[:, len(BLOCK_COLUMNS) + 2 * len(KEYWORDS)
                                 + len(ANCESTOR_TAGS) + 11] == 1.0)
    if len(inside):
        out[: inside[0], 9] = -1.0
        out[inside[-1] + 1:, 9] = 1.0
    out[:, 10] = NO_DISTANCE
    if best is None:
        return out
    holds_best = set()
    element = best
    while element is not None:
        holds_best.add(element.mem_id)
        element = element.parent
    for row, item_id in enumerate(item_ids):
        node = by_id.get(item_id)
        if node is None:
            continue
        element = node.parent if node.tag == RUN_WRAPPER_TAG and node.parent is not None else node
        level = 0
        while element is not None and element.tag not in ("html", "-undef"):
            if element.mem_id in holds_best:
                out[row, 10] = level
                break
            element = element.parent
            level += 1
    return out
