"""Block features (runtime.features, computed by the compiled core): values counted by hand on
a small page, and the core against the Python specification (tests/spec/features_spec.py) on
real and synthetic pages."""

from __future__ import annotations

import numpy as np
import pytest
from rt_helpers import hostile_pages
from spec.features_spec import block_containers as spec_containers
from spec.features_spec import block_dialogs as spec_dialogs
from spec.features_spec import block_extras as spec_extras
from spec.features_spec import block_features as spec_features
from spec.features_spec import block_rails as spec_rails
from spec.features_spec import block_teasers as spec_teasers

from parity.features_parity import IS_COUNT, RTOL
from pulpie_rt.runtime import native
from pulpie_rt.runtime.flow.pages import Preparer
from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.features import (
    ANCESTOR_TAGS,
    CONTAINER_NAMES,
    DIALOG_NAMES,
    EXTRA_NAMES,
    FEATURE_NAMES,
    FEATURE_NAMES_V3,
    FEATURES_V2,
    FEATURES_V3,
    FEATURES_V4,
    FEATURES_V5,
    FEATURES_V6,
    KEYWORDS,
    LAYOUTS,
    N_FEATURES,
    N_FEATURES_V2,
    N_FEATURES_V3,
    N_FEATURES_V4,
    N_FEATURES_V5,
    N_FEATURES_V6,
    NO_CONTAINER,
    NO_DISTANCE,
    RAIL_NAMES,
    TAGS,
    TEASER_NAMES,
    block_features,
)
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


def assert_same_features(core: np.ndarray, spec: np.ndarray, where: str = "") -> None:
    """Counts and flags equal, ratios within a few float32 ulps (bitwise equal on the machine
    the core was checked on; numpy's float32 sums may take another order elsewhere)."""
    assert core.shape == spec.shape and core.dtype == spec.dtype == np.float32, where
    for column_index in np.flatnonzero(~(core == spec).all(0)):
        name, a, b = FEATURE_NAMES[column_index], core[:, column_index], spec[:, column_index]
        rows = np.flatnonzero(a != b)[:5].tolist()
        if IS_COUNT[column_index]:
            raise AssertionError(f"{where} {name}: rows {rows}: core {a[rows]}, spec {b[rows]}")
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=0, err_msg=f"{where} {name}")


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
    with_unknown = block_features(map_html, [item_ids[0], "no-such-id", None])
    assert with_unknown[1, :12].tolist() == with_unknown[2, :12].tolist() == [0.0] * 12
    assert with_unknown[0, :12].tolist() == x[0, :12].tolist()
    assert block_features(map_html, []).shape == (0, N_FEATURES)
    assert block_features("", ["1"]).shape == (1, N_FEATURES)


def test_lone_surrogates_and_ids_that_match_nothing_read_as_in_the_specification():
    # selectolax drops lone surrogates from the page; an id holding one, or an id that is
    # not a string, matches no element
    map_html = _page('<p _item_id="1">a\ud800b c</p><p _item_id="2">x</p>')
    ids = ["1", "2\ud800", 2, None]
    core = block_features(map_html, ids)
    assert_same_features(core, spec_features(map_html, ids))
    assert column(core, "words") == [2, 0, 0, 0]


def test_block_features_walk_deep_pages_without_recursion():
    # 5,000 levels: far past Python's recursion limit (and the core's stack, were it to recurse)
    html = "<div>" * 5000 + "deep text" + "</div>" * 5000
    simplified, map_html = simplify(html)
    _, item_ids = extract_blocks(simplified)
    x = block_features(map_html, item_ids)
    assert x.shape == (len(item_ids), N_FEATURES)
    assert column(x, "depth") == [5000.0]  # the divs and body
    assert_same_features(x, spec_features(map_html, item_ids))


def test_core_equals_the_specification_on_dev_pages(dev_pages):
    # every third page (the full corpus: python -m parity.features_parity)
    for page in dev_pages[::3]:
        simplified, map_html = simplify(page["html"])
        _, item_ids = extract_blocks(simplified)
        assert_same_features(block_features(map_html, item_ids),
                             spec_features(map_html, item_ids), page["id"])


@pytest.mark.parametrize("name", sorted(hostile_pages()))
def test_core_equals_the_specification_on_hostile_pages(name):
    simplified, map_html = simplify(hostile_pages()[name])
    _, item_ids = extract_blocks(simplified)
    assert_same_features(block_features(map_html, item_ids),
                         spec_features(map_html, item_ids), name)


def _page(body: str) -> str:
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


def test_every_tag_keyword_and_ancestor_of_the_layout_reads_the_same():
    # the core's lists of tags, ancestor tags and keywords are the layout's, in its order
    # (each where an HTML parser keeps it: table parts in a table, text in cells, the
    # <tbody> that HTML adds written out, as lexbor's serialization always writes it)
    in_table = {"td": "<table><tbody><tr>{}</tr></tbody></table>",
                "th": "<table><tbody><tr>{}</tr></tbody></table>",
                "tr": "<table><tbody>{}</tbody></table>", "table": "{}"}
    text = {"tr": "<td>text of a row</td>",
            "table": "<tbody><tr><td>text of a table</td></tr></tbody>"}
    blocks = [in_table.get(tag, "{}").format(
        f'<{tag} _item_id="t{i}">{text.get(tag, f"text of {tag}")}</{tag}>')
        for i, tag in enumerate(TAGS)]
    blocks += [f'<{tag} class="wrap"><span _item_id="a{i}">inside {tag}</span></{tag}>'
               if tag != "table" else
               f'<table class="wrap"><tbody><tr><td><span _item_id="a{i}">in a table</span>'
               '</td></tr></tbody></table>' for i, tag in enumerate(ANCESTOR_TAGS)]
    for i, word in enumerate(KEYWORDS):
        attribute = ("class", "id", "role", "itemprop")[i % 4]
        blocks.append(f'<div {attribute}="x-{word.upper()}-y"><p _item_id="k{i}" '
                      f'{attribute}="{word}">{word} words</p></div>')
    map_html = _page("".join(blocks))
    ids = [f"t{i}" for i in range(len(TAGS))] + [f"a{i}" for i in range(len(ANCESTOR_TAGS))]
    ids += [f"k{i}" for i in range(len(KEYWORDS))]
    core = block_features(map_html, ids)
    assert_same_features(core, spec_features(map_html, ids))
    assert column(core, "tag")[:len(TAGS)] == list(range(1, len(TAGS) + 1))
    for word in KEYWORDS:
        assert max(column(core, f"own_kw_{word}")) == 1.0, word
        assert max(column(core, f"ancestor_kw_{word}")) == 1.0, word


UNICODE_TEXTS = [
    "ΟΔΟΣ ΣΟΦΙΑΣ. Ο ΔΡΟΜΟΣ, ΣΑΣ!",  # final sigma, chosen by its neighbours
    "İstanbul İSTANBUL ıi",  # İ lowers to "i" + a combining dot: two words
    "东京都 2024年 ١٢٣ ۴۵ x² Ⅻ ½ ①",  # CJK, Arabic-Indic digits, numerals
    "e\u0301te\u0301 café naïve – “quoted”… ‘s’",  # combining marks split words
    "Straße STRASSE ǅemal ǈ ﬁne \u212a\u017f",  # titlecase digraphs, ligature, Kelvin, long s
    "snake_case CamelCase kebab-case 3.14 1,000 a.b. e.g. i.e. end. Next",
]


def test_words_digits_and_case_follow_python_on_unicode_text():
    blocks = "".join(f'<p _item_id="{i}" class="Ü-{i} NAVİ">{text} <a href="/x">{text}</a>'
                     f'</p>' for i, text in enumerate(UNICODE_TEXTS))
    map_html = _page(blocks + '<div class="\u212aOMMENT side\u017f"><p _item_id="k">x</p></div>')
    ids = [str(i) for i in range(len(UNICODE_TEXTS))] + ["k"]
    assert_same_features(block_features(map_html, ids), spec_features(map_html, ids))


HTML_DOM_PAGE = _page(
    '<div class="top"><template id="t"><div class="main-content"><p _item_id="1">hidden '
    'words</p></div></template><p _item_id="2">shown <template>not <b>this</b></template>'
    'words</p>'
    '<picture><source srcset="a.jpg" _item_id="3"><img src="a.jpg" _item_id="4"></source>'
    '</picture><p _item_id="5">long<wbr>word<wbr><a href="/x">link</a> tail</p>'
    '<video><source src="v.mp4"><track src="t.vtt"><p _item_id="6">fallback text</p></track>'
    '</source></video></div>'
)


def test_template_content_and_html_void_elements_read_as_the_html_dom_has_them():
    ids = [str(i) for i in range(1, 7)]
    core = block_features(HTML_DOM_PAGE, ids)
    assert_same_features(core, spec_features(HTML_DOM_PAGE, ids))
    assert column(core, "words")[:2] == [0, 2]  # a template's content is not in the document
    assert column(core, "images")[2] == 0  # <source> is void: the <img> is its sibling
    # libxml2's tree as it is: the template's block is found, <source> holds the <img>
    libxml2 = native.block_features(HTML_DOM_PAGE, ids, libxml2_tree=True)
    assert column(libxml2, "words")[:2] == [2, 4]
    assert column(libxml2, "images")[2] == 1
    assert column(libxml2, "depth")[5] == column(core, "depth")[5] + 2  # in source and track


def test_where_the_two_parsers_build_different_trees_the_core_reads_libxml2s():
    # what lexbor and libxml2 (the reference's lxml) make of the same serializer output
    lxml_html = pytest.importorskip("lxml.html")
    map_html = _page(
        '<pre _item_id="1">\n\nboot log</pre>'  # HTML drops the first newline, libxml2 not
        '<ul><li>one<div><li _item_id="2">two</li></div></li></ul>'  # HTML closes the outer li
    )
    core, spec = block_features(map_html, ["1", "2"]), spec_features(map_html, ["1", "2"])
    document = lxml_html.document_fromstring(map_html)
    pre, li = (document.xpath(f'//*[@_item_id="{i}"]')[0] for i in ("1", "2"))
    assert column(core, "chars")[0] == len(pre.text) == 10
    assert column(spec, "chars")[0] == 9
    assert column(core, "depth")[1] == len(list(li.iterancestors())) - 1 == 4  # html not
    assert column(spec, "depth")[1] == 2  # ul, body


def test_markup_the_old_strict_reading_refused_is_read():
    # non-ASCII names, "&" starting no reference, Kelvin sign and long s: page content that
    # map_html can hold (the core's reader of core-features' time refused it)
    map_html = _page(
        '<p _item_id="1" — ="x" data-ü="y" class="nav&amp;{x} &{menu}">one / two</p>'
        '<café-box class="related"><p _item_id="2" class="promo">three</p></café-box>'
        '<p _item_id="3" class="\u212aOMMENT \u017fide">\u212aelvin \u017ftyle</p>'
    )
    core = block_features(map_html, ["1", "2", "3"])
    assert_same_features(core, spec_features(map_html, ["1", "2", "3"]))
    assert column(core, "own_kw_menu")[0] == column(core, "ancestor_kw_related")[1] == 1.0


# ── blocks-v2: the extras ────────────────────────────────────────────────────────────────

EXTRAS_PAGE = """<html><body><div class="site-header"><div class="menu"><p>Home and news</p></div>
</div>
<article><div class="entry-content"><p>東京は日本の首都です。人口は多い。</p>
<p>Plain English words here.</p></div>
<section id="comments"><ul><li><div class="comment-body"><p>A reader's comment.</p></div>
</li></ul></section></article></body></html>"""


def extras_column(x, name):
    return x[:, N_FEATURES + EXTRA_NAMES.index(name)].tolist()


def test_extras_count_cjk_characters_and_the_distance_to_keyword_containers():
    simplified, map_html = simplify(EXTRAS_PAGE)
    blocks, item_ids = extract_blocks(simplified)
    x = block_features(map_html, item_ids, FEATURES_V2)
    assert x.shape == (len(item_ids), N_FEATURES_V2)
    # blocks-v1 comes first, unchanged
    assert x[:, :N_FEATURES].tolist() == block_features(map_html, item_ids).tolist()
    texts = [b.split(">", 1)[1][:12] for b in blocks]
    assert len(blocks) == 4, texts
    # 東京は日本の首都です。人口は多い。: 15 characters are CJK (the two 。 are not)
    assert extras_column(x, "cjk_chars") == [0.0, 15.0, 0.0, 0.0]
    # <p> in div.menu in div.site-header
    assert extras_column(x, "distance_kw_menu")[0] == 1.0
    assert extras_column(x, "distance_kw_header")[0] == 2.0
    assert extras_column(x, "distance_kw_entry")[1:3] == [1.0, 1.0]
    assert extras_column(x, "distance_article")[1:] == [2.0, 2.0, 5.0]
    assert extras_column(x, "distance_kw_comment")[3] == 1.0  # div.comment-body, its parent
    assert extras_column(x, "distance_li")[3] == 2.0
    assert extras_column(x, "distance_kw_comment")[1] == NO_DISTANCE
    assert extras_column(x, "distance_aside") == [NO_DISTANCE] * 4


def test_extras_equal_the_specification_on_dev_pages(dev_pages):
    for page in dev_pages[::3]:
        simplified, map_html = simplify(page["html"])
        _, item_ids = extract_blocks(simplified)
        core = block_features(map_html, item_ids + [None, "no-such-id"], FEATURES_V2)
        spec = spec_extras(map_html, item_ids + [None, "no-such-id"])
        np.testing.assert_array_equal(core[:, N_FEATURES:], spec, err_msg=page["id"])


def test_an_unknown_feature_layout_is_named():
    with pytest.raises(ValueError, match=r"unknown block feature layout 'blocks-v9' \(this "
                                         r"runtime computes blocks-v1, blocks-v2, blocks-v3, "
                                         r"blocks-v4, blocks-v5, blocks-v6\)"):
        block_features("<html></html>", ["1"], "blocks-v9")


# ── blocks-v3: the containers ────────────────────────────────────────────────────────────


def canonical_containers(containers: np.ndarray) -> list[list[int]]:
    """Container columns renumbered by first occurrence (rows, then levels; NO_CONTAINER stays
    -1): what two trees numbering their nodes differently agree on is which blocks share a
    container at each level."""
    numbers: dict[float, int] = {}
    return [[-1 if v == NO_CONTAINER else numbers.setdefault(v, len(numbers)) for v in row]
            for row in containers.tolist()]


DEEP = "<div>" * 9 + '<p _item_id="7">deep</p>' + "</div>" * 9
CONTAINERS_PAGE = (
    '<html><body><div id="main"><cc-alg-uc-text _item_id="3">loose text</cc-alg-uc-text>'
    '<p _item_id="1">First.</p><p _item_id="2">Second.</p></div>'
    '<section><ul><li _item_id="4">one</li><li _item_id="5">two</li></ul></section>'
    f'<p _item_id="6">top</p>{DEEP}</body></html>'
)


def extended_rows(map_html: str, ids: list[str | None], layout: str, previous: str,
                  page: str = "") -> np.ndarray:
    """``layout``'s rows of ``ids``, checked to be one a block, ``previous``'s rows as they are
    (every value equal) followed by the columns ``layout`` adds."""
    rows = block_features(map_html, ids, layout)
    width = LAYOUTS[previous]
    assert rows.shape == (len(ids), LAYOUTS[layout]), page
    assert rows[:, :width].tolist() == block_features(map_html, ids, previous).tolist(), page
    return rows


def test_containers_name_each_blocks_ancestors_nearest_first():
    ids = ["1", "2", "3", "4", "5", "6", "7", None, "no-such-id"]
    x = extended_rows(CONTAINERS_PAGE, ids, FEATURES_V3, FEATURES_V2)
    assert FEATURE_NAMES_V3[-8:] == CONTAINER_NAMES
    containers = x[:, N_FEATURES_V2:]
    assert (containers == np.round(containers)).all() and containers.min() == NO_CONTAINER
    pad = [-1] * 8
    want = [
        [0, 1] + pad[2:],  # 1: <p> in div#main (0) in <body> (1); <html> is no container
        [0, 1] + pad[2:],  # 2: its sibling shares both
        [0, 1] + pad[2:],  # 3: a run wrapper's text sits in div#main beside the <p>s
        [2, 3, 1] + pad[3:],  # 4: <li> in <ul> in <section> in <body>
        [2, 3, 1] + pad[3:],
        [1] + pad[1:],  # 6: straight in <body>
        list(range(4, 12)),  # 7: nine <div>s and <body> deep: the nearest eight <div>s
        pad,  # None
        pad,  # an id the page does not hold
    ]
    assert canonical_containers(containers) == want
    assert canonical_containers(spec_containers(CONTAINERS_PAGE, ids)) == want
    # the numbers are the core tree's document order: <body> before div#main
    assert containers[0, 1] < containers[0, 0]


def added_columns(page: dict, layout: str, previous: str, keep_hidden: bool = False
                  ) -> tuple[str, list[str | None], np.ndarray]:
    """A dev page's ``map_html``, its block ids with None and an id it does not hold, and the
    columns ``layout`` appends to ``previous`` (``extended_rows``)."""
    simplified, map_html = simplify(page["html"], keep_hidden=keep_hidden)
    _, item_ids = extract_blocks(simplified)
    ids = item_ids + [None, "no-such-id"]
    rows = extended_rows(map_html, ids, layout, previous, page["id"])
    return map_html, ids, rows[:, LAYOUTS[previous]:]


def test_containers_equal_the_specification_on_dev_pages(dev_pages):
    for page in dev_pages[::3]:
        map_html, ids, containers = added_columns(page, FEATURES_V3, FEATURES_V2)
        assert canonical_containers(containers) == \
            canonical_containers(spec_containers(map_html, ids)), page["id"]
        assert (containers[-2:] == NO_CONTAINER).all(), page["id"]


def test_prepared_pages_carry_the_layouts_features(dev_pages):
    preparers = {layout: Preparer("no tokenizer", 4, 0, 1, with_features=True,
                                  with_tokens=False, feature_layout=layout)
                 for layout in (FEATURES_V2, FEATURES_V3, FEATURES_V4)}
    for page in dev_pages[:8]:
        v2, v3, v4 = (preparers[layout].prepare(page["html"])
                      for layout in (FEATURES_V2, FEATURES_V3, FEATURES_V4))
        assert v4.features.shape == (v4.n_blocks, N_FEATURES_V4)
        np.testing.assert_array_equal(v4.features[:, :N_FEATURES_V3], v3.features,
                                      err_msg=page["id"])
        np.testing.assert_array_equal(v4.features, block_features(v4.map_html, v4.item_ids,
                                                                  FEATURES_V4), err_msg=page["id"])
        assert v3.item_ids == v2.item_ids and v3.features.shape == (v3.n_blocks, N_FEATURES_V3)
        np.testing.assert_array_equal(v3.features, block_features(v3.map_html, v3.item_ids,
                                                                  FEATURES_V3), err_msg=page["id"])
        np.testing.assert_array_equal(v3.features[:, :N_FEATURES_V2], v2.features,
                                      err_msg=page["id"])


# ── blocks-v4: the dialogs ───────────────────────────────────────────────────────────────

DIALOGS_PAGE = (
    '<html><body><div role="Dialog alert" aria-modal=" TRUE "><div>'
    '<p _item_id="1">Privacy policy.</p></div></div>'
    '<dialog><p _item_id="2">Sign up.</p></dialog>'
    '<div role="alertdialog" aria-modal="false"><p _item_id="3">Sure?</p></div>'
    '<section aria-modal="true"><cc-alg-uc-text _item_id="4">loose</cc-alg-uc-text></section>'
    '<div role="dialogue" aria-modal="truest"><p _item_id="5">The story.</p></div>'
    '<div role="dial\u0130og"><p _item_id="6">Not a dialog.</p></div></body></html>'
)


def test_dialogs_give_the_distance_to_the_nearest_dialog_and_modal():
    ids = ["1", "2", "3", "4", "5", "6", None, "no-such-id"]
    x = extended_rows(DIALOGS_PAGE, ids, FEATURES_V4, FEATURES_V3)
    assert N_FEATURES_V4 == N_FEATURES_V3 + 2
    none = [NO_DISTANCE, NO_DISTANCE]
    want = [
        [2.0, 2.0],  # <p> in a <div> in div[role=dialog][aria-modal=true]
        [1.0, NO_DISTANCE],  # <dialog>
        [1.0, NO_DISTANCE],  # alertdialog, aria-modal="false"
        [NO_DISTANCE, 0.0],  # a run wrapper counts from the element whose text it holds
        none,  # "dialogue", "truest": other words
        none,  # a non-ASCII letter is no case of an ASCII one
        none,
        none,
    ]
    assert x[:, N_FEATURES_V3:].tolist() == want
    assert spec_dialogs(DIALOGS_PAGE, ids).tolist() == want
    assert DIALOG_NAMES == ["distance_dialog", "distance_modal"]


def test_dialogs_equal_the_specification_on_dev_pages(dev_pages):
    seen = 0
    for page in dev_pages[::3]:
        map_html, ids, dialogs = added_columns(page, FEATURES_V4, FEATURES_V3, keep_hidden=True)
        np.testing.assert_array_equal(dialogs, spec_dialogs(map_html, ids), err_msg=page["id"])
        seen += int((dialogs < NO_DISTANCE).any())
    assert seen >= 5  # pages with blocks under a dialog or a modal were compared


# ── blocks-v5: the rails ─────────────────────────────────────────────────────────────────

RAILS_PAGE = (
    '<html><body><article><h1 _item_id="h">A short story</h1>'
    '<p _item_id="s1">One two three four five six.</p><p _item_id="s2">Seven eight.</p></article>'
    '<aside aria-label="Most-Read stories"><ol>'
    + "".join(f'<li class="item"><a href="/{i}"><span _item_id="r{i}">Headline {i} of the '
              f'day</span></a>{"<time>today</time>" if i < 3 else ""}</li>' for i in range(5))
    + '</ol></aside><div id="x"><section class="Comments"><p _item_id="c1">Nice.</p>'
    '<p _item_id="c2">Agreed, <a href="/u">Bo</a></p></section></div>'
    '<div class="promo-box"><cc-alg-uc-text _item_id="w">teaser text</cc-alg-uc-text></div>'
    '</body></html>'
)


def test_rails_give_each_block_its_run_of_alike_items_and_rail_words():
    ids = ["h", "s1", "s2", "r0", "r4", "c1", "c2", "w", None, "no-such-id"]
    x = extended_rows(RAILS_PAGE, ids, FEATURES_V5, FEATURES_V4)
    assert N_FEATURES_V5 == N_FEATURES_V4 + 7
    none = [0.0, NO_DISTANCE, 0.0, 0.0, 0.0, NO_DISTANCE, NO_DISTANCE]
    # span < a < li.item, five alike <li>s (level 2), three holding a <time>, 5 words each,
    # all linked; the aside's aria-label "Most-Read" 4 levels up
    headline = [5.0, 2.0, 5.0, 1.0, float(np.float32(0.6)), 4.0, NO_DISTANCE]
    want = [
        none,  # <h1> and two <p>s: no run of three alike children
        none,
        none,
        headline,
        headline,
        none[:6] + [1.0],  # <p> in section.Comments (ASCII case aside)
        none[:6] + [1.0],
        none[:5] + [0.0, NO_DISTANCE],  # a run wrapper counts from its parent, div.promo-box
        none,
        none,
    ]
    assert x[:, N_FEATURES_V4:].tolist() == want
    assert spec_rails(RAILS_PAGE, ids).tolist() == want
    assert RAIL_NAMES[0] == "rail_items" and len(RAIL_NAMES) == 7


def test_rails_equal_the_specification_on_dev_pages(dev_pages):
    runs = 0
    for page in dev_pages[::3]:
        map_html, ids, rails = added_columns(page, FEATURES_V5, FEATURES_V4, keep_hidden=True)
        np.testing.assert_allclose(rails, spec_rails(map_html, ids), rtol=1e-6, atol=0,
                                   err_msg=page["id"])
        runs += int((rails[:, 0] > 0).any())
    assert runs >= 20  # pages with runs of alike items were compared


# ── blocks-v6: the teasers ───────────────────────────────────────────────────────────────

TEASERS_PAGE = (
    '<html><head><meta property="OG:Type" content=" Article "><script type="application/ld+json">'
    '[{"@type": "https://schema.org/NewsArticle"}, {"@graph": [{"@type": ["ItemList"]}]}]'
    '</script></head><body><article><h1 _item_id="h">A short story</h1>'
    '<p _item_id="s1">One two three four five six.</p><p _item_id="s2">Seven eight.</p></article>'
    '<ul>' + "".join(f'<li class="card"><h3><a href="/{i}"><span _item_id="t{i}">Teaser {i} '
                     f'headline</span></a></h3>'
                     + (f'<p class="Byline" _item_id="b{i}">By Ann</p>' if i < 2 else "")
                     + '</li>' for i in range(4))
    + '</ul></body></html>'
)


def test_teasers_give_the_pages_kind_each_runs_cards_and_the_place_against_the_story():
    ids = ["h", "s1", "s2", "t0", "b0", "t3", None, "no-such-id"]
    x = extended_rows(TEASERS_PAGE, ids, FEATURES_V6, FEATURES_V5)
    assert N_FEATURES_V6 == N_FEATURES_V5 + 11
    # og:type " Article " (key and value trimmed, ASCII case aside), a NewsArticle named with
    # schema.org's prefix, an ItemList in a @graph; no website, no product
    page = [1.0, 0.0, 1.0, 1.0, 0.0]
    # four li.card (level 3 of the headline's span, 1 of the byline's <p>), two with a byline,
    # all with a heading; words are the asked blocks' (19): li 0 holds t0 and b0 (5 words, 3
    # linked), li 3 t3 (3 of 3), lis 1 and 2 none (no words: not linked), 8 of 19 words
    card = [0.5, 1.0, 0.5, float(np.float32(8 / 19)), 1.0]
    want = [
        page + [0.0] * 4 + [0.0, 1.0],  # the story: inside the candidate, <article> 1 up
        page + [0.0] * 4 + [0.0, 1.0],
        page + [0.0] * 4 + [0.0, 1.0],
        page + card + [5.0],  # span < a < h3 < li < ul < body, which holds the <article>
        page + card + [3.0],  # p < li < ul < body
        page + card + [5.0],
        page + [0.0] * 4 + [1.0, NO_DISTANCE],  # after the story's last block, no element
        page + [0.0] * 4 + [1.0, NO_DISTANCE],
    ]
    assert x[:, N_FEATURES_V5:].tolist() == want
    assert spec_teasers(TEASERS_PAGE, ids).tolist() == want
    assert TEASER_NAMES[0] == "page_og_article" and len(TEASER_NAMES) == 11
    # a page that says nothing of itself, and a listing of products (og:type website)
    bare = TEASERS_PAGE.replace("OG:Type", "og:title").replace("ItemList", "Thing")
    shop = (TEASERS_PAGE.replace(" Article ", "website")
            .replace("https://schema.org/NewsArticle", "Product"))
    for other, kind in ((bare, [0.0, 0.0, 1.0, 0.0, 0.0]), (shop, [0.0, 1.0, 0.0, 1.0, 1.0])):
        rows = block_features(other, ids, FEATURES_V6)
        assert rows[:, N_FEATURES_V5:N_FEATURES_V5 + 5].tolist() == [kind] * len(ids)
        assert spec_teasers(other, ids).tolist() == rows[:, N_FEATURES_V5:].tolist()


def test_teasers_equal_the_specification_on_dev_pages(dev_pages):
    kinds = runs = 0
    for page in dev_pages[::3]:
        map_html, ids, teasers = added_columns(page, FEATURES_V6, FEATURES_V5, keep_hidden=True)
        np.testing.assert_allclose(teasers, spec_teasers(map_html, ids), rtol=1e-6, atol=0,
                                   err_msg=page["id"])
        kinds += int(teasers[:, :5].any())
        runs += int((teasers[:, 5:9] > 0).any())
    assert kinds >= 20 and runs >= 20  # pages saying their kind, and with runs, were compared
