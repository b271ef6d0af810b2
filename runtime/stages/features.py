"""Block features read from ``map_html``: what the default model's rescorer sees beside the
transformer's margins.

The embedded default model is small and reads each 1,024-token chunk alone, so it cannot see
what a boilerplate classifier learns from the page around a block: its link density, the
class/id words of its ancestors (``nav``, ``comment``, ``related`` …), its position, which
container holds most of the page's prose. ``block_features`` measures those for every block
(one row per ``item_id``, in block order) from the page's DOM marked with the same ids; the
bundle's rescorer (``runtime.stages.rescore``) turns them into a score per block.

The compiled core computes them (``core/src/features``, through ``runtime.native``), from the
same tree of ``map_html`` that ``reconstruct`` reads. ``tests/spec/features_spec.py`` is the
readable specification, in Python, of every column; ``python -m
parity.features_parity`` compares the two on real pages.

This module holds the layouts: a rescorer is trained on one layout, and a bundle names the
layout it needs. ``blocks-v1`` (``FEATURES_VERSION``, the ``accurate`` rescorer's and the C
library's) is ``FEATURE_NAMES``; ``blocks-v2`` (``FEATURES_V2``) is
``blocks-v1`` followed by the core's extras (``EXTRA_NAMES``: the block's CJK characters, and
how many levels up the nearest element carrying each of ``DISTANCE_KEYWORDS`` or being each
of ``DISTANCE_TAGS`` is; ``NO_DISTANCE`` where none); ``blocks-v3`` (``FEATURES_V3``, the
``fast`` profile's) is
``blocks-v2`` followed by ``CONTAINER_NAMES``: for level k = 1..``CONTAINER_LEVELS``, which
element the block's k-th ancestor is (nearest first, up to but not including ``<html>``; a
run wrapper's chain starts at the element whose text it holds), as a whole number naming it
within the page, ``NO_CONTAINER`` where the chain is shorter; ``blocks-v4``
(``FEATURES_V4``) is ``blocks-v3`` followed by ``DIALOG_NAMES``: how many levels up the
nearest dialog (``<dialog>``, a ``role`` of ``dialog`` or ``alertdialog``) and the nearest
modal (``aria-modal="true"``) are, ``NO_DISTANCE`` where none is (pages hold privacy
policies, terms and consent notices in closed dialogs); ``blocks-v5`` (``FEATURES_V5``) is
``blocks-v4`` followed by ``RAIL_NAMES``: what tells a rail of headlines, teasers or comments
beside a story from the story (the block's item: the nearest element of its chain, up to
``RAIL_LEVELS`` - 1 levels up, whose parent holds ``RAIL_MIN_ITEMS`` or more children of its
tag and class; the run's item count, the item's level, its words and their linked share, the
share of the run's items holding a ``<time>``; how many levels up a class, id or aria-label
holds one of ``RAIL_WORDS`` and of ``COMMENT_WORDS``); ``blocks-v6`` (``FEATURES_V6``) is
``blocks-v5`` followed by ``TEASER_NAMES``: what tells a teaser card of another story from the
page's own story (the page's kind, the same in every row: ``og:type`` article or website, a
JSON-LD story, listing or product; of the block's run of alike items: the share holding a
byline, a heading, most of their words in links, the run's share of the page's words; the
block's place after (1), before (-1) or inside (0) readability's candidate, and how many
levels up its nearest element holding the candidate is, ``NO_DISTANCE`` where none).
The container columns are identifiers, not measurements: only equality between rows of one
page means anything (blocks sharing a level-k value sit in the same element), so a rescorer groups
blocks by them and never reads them as values. The column order and the categorical codes
below are part of the layouts; the core writes its columns in the same order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from pulpie_rt.runtime import native

FEATURES_VERSION = "blocks-v1"

# Tags numbered for the two categorical columns (0: any other tag).
TAGS = (
    "p div li ul ol h1 h2 h3 h4 h5 h6 a span td th tr table pre code img figure figcaption "
    "blockquote form button section article header footer nav aside main dl dt dd label select "
    "input time strong em b i small cc-alg-uc-text source picture video iframe address"
).split()
# Ancestor tags flagged one column each.
ANCESTOR_TAGS = (
    "nav header footer aside article main form li table section ul ol a button h1 h2 h3 figure "
    "blockquote dl"
).split()
# Words looked for in class / id / role / itemprop values (substring match).
KEYWORDS = (
    "nav menu footer header sidebar side comment related share social breadcrumb banner cookie "
    "widget promo newsletter subscribe login search tag author meta date card product price "
    "review rating article content main post entry body text story prose blog title hero modal "
    "popup ad sponsor recommend more footnote toc pagination cart filter faq answer question "
    "thread message reply"
).split()

BLOCK_COLUMNS = (
    "tag own_tag words chars link_ratio links images punct_ratio punct depth in_link sentences"
).split()
PAGE_COLUMNS = (
    "position words_before word_share page_blocks page_words prev_words next_words "
    "prev_link_ratio next_link_ratio window_words window_link_ratio in_candidate "
    "best_ancestor_score candidate_word_share repeats from_h1 words_vs_median stopword_ratio "
    "digit_ratio mean_word_length"
).split()
FEATURE_NAMES = (
    BLOCK_COLUMNS
    + [f"own_kw_{w}" for w in KEYWORDS]
    + [f"ancestor_kw_{w}" for w in KEYWORDS]
    + [f"ancestor_{t}" for t in ANCESTOR_TAGS]
    + PAGE_COLUMNS
)
N_FEATURES = len(FEATURE_NAMES)
CATEGORICAL_COLUMNS = (0, 1)  # tag, own_tag

FEATURES_V2 = "blocks-v2"
# (core/src/features: DISTANCE_KEYWORDS, DISTANCE_TAGS; each keyword is one of KEYWORDS)
DISTANCE_KEYWORDS = (
    "comment related share social sidebar footer nav menu header widget promo recommend "
    "newsletter reply author article content main post entry body text story"
).split()
DISTANCE_TAGS = "article aside nav footer header main form section li".split()
NO_DISTANCE = 40.0
EXTRA_NAMES = (["cjk_chars"] + [f"distance_kw_{w}" for w in DISTANCE_KEYWORDS]
               + [f"distance_{t}" for t in DISTANCE_TAGS])
FEATURE_NAMES_V2 = FEATURE_NAMES + EXTRA_NAMES
N_FEATURES_V2 = len(FEATURE_NAMES_V2)

FEATURES_V3 = "blocks-v3"
# (core/src/features: N_CONTAINERS, NO_CONTAINER)
CONTAINER_LEVELS = 8
NO_CONTAINER = -1.0
CONTAINER_NAMES = [f"container_{k}" for k in range(1, CONTAINER_LEVELS + 1)]
FEATURE_NAMES_V3 = FEATURE_NAMES_V2 + CONTAINER_NAMES
N_FEATURES_V3 = len(FEATURE_NAMES_V3)
FEATURES_V4 = "blocks-v4"
# (core/src/features: DIALOG_NAMES)
DIALOG_NAMES = ["distance_dialog", "distance_modal"]
FEATURE_NAMES_V4 = FEATURE_NAMES_V3 + DIALOG_NAMES
N_FEATURES_V4 = len(FEATURE_NAMES_V4)
FEATURES_V5 = "blocks-v5"
# (core/src/features: RAIL_NAMES, RAIL_LEVELS, RAIL_MIN_ITEMS, RAIL_WORDS, COMMENT_WORDS)
RAIL_NAMES = ["rail_items", "rail_level", "rail_item_words", "rail_item_link_share",
              "rail_items_time_share", "distance_rail_word", "distance_comment_word"]
RAIL_LEVELS = 6
RAIL_MIN_ITEMS = 3
RAIL_WORDS = ("trending", "popular", "most-read", "mostread", "most_read", "latest", "teaser",
              "outbrain", "taboola", "recirc", "headlines", "top-stories", "topstories",
              "more-from", "morefrom", "read-more", "readmore", "related", "recommend", "promo",
              "sponsor", "partner", "ranking")
COMMENT_WORDS = ("comment", "poll", "survey", "disqus", "discussion", "vote")
FEATURE_NAMES_V5 = FEATURE_NAMES_V4 + RAIL_NAMES
N_FEATURES_V5 = len(FEATURE_NAMES_V5)
FEATURES_V6 = "blocks-v6"
# (core/src/features: TEASER_NAMES, LINKED_ITEM_SHARE, BYLINE_WORDS)
TEASER_NAMES = ["page_og_article", "page_og_website", "page_ld_article", "page_ld_listing",
                "page_ld_product", "rail_items_byline_share", "rail_items_heading_share",
                "rail_items_linked_share", "rail_run_word_share", "after_story", "story_level"]
FEATURE_NAMES_V6 = FEATURE_NAMES_V5 + TEASER_NAMES
N_FEATURES_V6 = len(FEATURE_NAMES_V6)
# each layout's columns
LAYOUTS = {FEATURES_VERSION: N_FEATURES, FEATURES_V2: N_FEATURES_V2,
           FEATURES_V3: N_FEATURES_V3, FEATURES_V4: N_FEATURES_V4, FEATURES_V5: N_FEATURES_V5,
           FEATURES_V6: N_FEATURES_V6}


def block_features(map_html: str, item_ids: list[str | None],
                   layout: str = FEATURES_VERSION) -> np.ndarray:
    """One float32 row of the ``layout``'s columns (``FEATURE_NAMES``, or
    ``FEATURE_NAMES_V2`` for ``blocks-v2``, ``FEATURE_NAMES_V3`` for ``blocks-v3``,
    ``FEATURE_NAMES_V4`` for ``blocks-v4``, ``FEATURE_NAMES_V5`` for ``blocks-v5``,
    ``FEATURE_NAMES_V6`` for ``blocks-v6``) per block
    of ``item_ids`` (zeros for ids that ``map_html`` does not hold, ``NO_DISTANCE`` in their
    distance, dialog and rail-level columns and ``NO_CONTAINER`` in their container columns). Raises
    ``native.CoreMissing`` where the compiled core is not built (``make core``),
    ``native.CoreError`` where it fails on the page (a caught panic: no page is refused),
    ``ValueError`` for a layout this runtime does not compute."""
    import numpy as np
    if layout not in LAYOUTS:
        raise ValueError(f"unknown block feature layout {layout!r} (this runtime computes "
                         f"{', '.join(LAYOUTS)})")
    if not item_ids:
        return np.zeros((0, LAYOUTS[layout]), np.float32)
    return native.block_features(map_html, item_ids, extras=layout == FEATURES_V2,
                                 containers=layout == FEATURES_V3,
                                 dialogs=layout == FEATURES_V4, rails=layout == FEATURES_V5,
                                 teasers=layout == FEATURES_V6)


def hidden_blocks(map_html: str, item_ids: list[str | None]) -> np.ndarray:
    """One uint8 per block of ``item_ids``: 1 when the block exists only because the page was
    segmented with ``keep_hidden`` (``stages.simplify``): its element in ``map_html`` (for a
    ``cc-alg-uc-text`` run wrapper, the wrapper's parent) or an ancestor is one the
    reference's segmentation removes as hidden; 0 for ids ``map_html`` does not hold. Not a
    column of ``block_features`` (that would change ``FEATURES_VERSION``): a flag for
    training and measurement. Computed by the compiled core with the segmentation's own
    rule (``native.hidden_blocks``)."""
    import numpy as np
    if not item_ids:
        return np.zeros(0, np.uint8)
    return native.hidden_blocks(map_html, item_ids)
