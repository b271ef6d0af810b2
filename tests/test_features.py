"""Block features (runtime.features) on a small page whose values can be counted by hand."""

from __future__ import annotations

import numpy as np
import pytest

from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.features import FEATURE_NAMES, N_FEATURES, block_features
from pulpie_rt.runtime.stages.simplify import simplify

PAGE = """<html><body><main><article class="post-content"><h1>The title of the story</h1>
<p>First paragraph of the story, with a comma. It has two sentences.</p>
<p>Second paragraph: read <a href=/x>this link</a> and more words here.</p></article>
<div id="comments"><p>Great post!</p></div></main>
<footer><p>Copyright 2026</p><p>Great post!</p></footer></body></html>"""


@pytest.fixture(scope="module")
def features():
    simplified, map_html = simplify(PAGE)
    blocks, item_ids = extract_blocks(simplified)
    assert len(blocks) == 6
    return block_features(map_html, item_ids), map_html, item_ids


def column(features, name):
    return features[:, FEATURE_NAMES.index(name)].tolist()


def test_feature_layout():
    assert N_FEATURES == len(FEATURE_NAMES) == len(set(FEATURE_NAMES)) == 166


def test_block_features_count_words_links_ancestors_and_the_prose_container(features):
    x, _, _ = features
    assert x.shape == (6, N_FEATURES) and x.dtype == np.float32
    assert column(x, "words") == [5, 12, 9, 2, 2, 2]
    assert column(x, "links") == [0, 0, 1, 0, 0, 0]
    assert column(x, "link_ratio") == pytest.approx([0, 0, 2 / 9, 0, 0, 0])
    # the article's class says "content"/"post"; the comments div's id says "comment"
    assert column(x, "ancestor_article") == [1, 1, 1, 0, 0, 0]
    assert column(x, "ancestor_kw_content") == [1, 1, 1, 0, 0, 0]
    assert column(x, "ancestor_kw_comment") == [0, 0, 0, 1, 0, 0]
    assert column(x, "ancestor_footer") == [0, 0, 0, 0, 1, 1]
    # the article holds the page's prose: Readability's candidate
    assert column(x, "in_candidate") == [1, 1, 1, 0, 0, 0]
    # "Great post!" appears twice
    assert column(x, "repeats") == [1, 1, 1, 2, 1, 2]
    assert column(x, "word_share") == pytest.approx([5 / 32, 12 / 32, 9 / 32, 2 / 32, 2 / 32,
                                                     2 / 32])
    assert column(x, "from_h1") == pytest.approx([0, 1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6])
    assert column(x, "digit_ratio")[4] == pytest.approx(4 / 14)


def test_block_features_give_zero_rows_for_unknown_ids_and_handle_empty_pages(features):
    x, map_html, item_ids = features
    with_unknown = block_features(map_html, [item_ids[0], "no-such-id"])
    assert with_unknown[1, :12].tolist() == [0.0] * 12
    assert with_unknown[0, :12].tolist() == x[0, :12].tolist()
    assert block_features(map_html, []).shape == (0, N_FEATURES)
    assert block_features("", ["1"]).shape == (1, N_FEATURES)


def test_block_features_walk_deep_pages_without_recursion():
    # 5,000 levels: far past Python's recursion limit; 20,000 costs lexbor's parse ~10 s here
    html = "<div>" * 5000 + "deep text" + "</div>" * 5000
    simplified, map_html = simplify(html)
    _, item_ids = extract_blocks(simplified)
    x = block_features(map_html, item_ids)
    assert x.shape == (len(item_ids), N_FEATURES)
    assert column(x, "depth") == [5000.0]  # the divs and body
