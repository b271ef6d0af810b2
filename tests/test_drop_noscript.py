"""``drop_noscript``: the segmentation without the ``noscript`` elements that hold no block (an
option of
``stages.simplify``, a bundle profile's ``drop_noscript``). The core against the
specification (``tests/spec/simplify_spec.py``) on every dev page; a hand-made page; a real
page whose noscript blocks are tracking pixels' markup, one whose main content is in a
noscript; bundles that ask for it; the training caches."""

from __future__ import annotations

import json

import pytest
from rt_helpers import default_model_copy, write_corpus
from spec import simplify_spec

from pulpie_rt.runtime import native
from pulpie_rt.runtime.flow.extractor import Extractor
from pulpie_rt.runtime.flow.pages import Preparer
from pulpie_rt.runtime.model.bundle import load_bundle
from pulpie_rt.runtime.model.resolve import embedded_model_dir
from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.reconstruct import extract_main_html
from pulpie_rt.runtime.stages.simplify import simplify

DEFAULT_MODEL_DIR = str(embedded_model_dir())

# a tracking pixel's markup (as a page escapes it, and as elements) beside a paragraph, with
# text after each noscript; a forum thread served to crawlers in a noscript, a pixel in it
PIXEL = ('<html><body><div><p>The story itself, a paragraph of prose.</p>'
         '<noscript>&lt;div style="position:absolute;"&gt;&lt;img width=1 height=1 '
         'src="http://b5.example.jp/b?P=1"&gt;&lt;/div&gt;</noscript>after the pixel</div>'
         '<p>first <noscript><img src="http://pixel.example/p.gif"></noscript>second</p>'
         '<noscript data-path="/t/1"><div><p>The thread, served to crawlers.</p>'
         '<noscript><a href="/x"><img src="http://pixel.example/q.gif"></a></noscript></div>'
         '</noscript></body></html>')
HEAD = '<html><head><meta charset="utf-8"></head><body>'


def test_drop_noscript_makes_no_block_of_a_noscript_holding_no_block():
    simplified, map_html = simplify(PIXEL)
    assert simplified == (
        HEAD + '<p _item_id="1">The story itself, a paragraph of prose.</p>'
        '<noscript _item_id="2">&lt;div style="position:absolute;"&gt;&lt;img width=1 height=1 '
        'src="http://b5.example.jp/b?P=1"&gt;&lt;/div&gt;</noscript>'
        '<div _item_id="3">after the pixel</div><p _item_id="4">first</p>'
        '<noscript _item_id="5"><img src="http://pixel.example/p.gif"></noscript>'
        '<p _item_id="6">second</p><p _item_id="7">The thread, served to crawlers.</p>'
        '<noscript _item_id="8"><a><img src="http://pixel.example/q.gif"></a></noscript>'
        "</body></html>")
    for keep_hidden in (False, True):
        simplified, map_html = simplify(PIXEL, keep_hidden=keep_hidden, drop_noscript=True)
        # the pixels go (the runs beside the inline one join); the thread stays
        assert simplified == (
            HEAD + '<p _item_id="1">The story itself, a paragraph of prose.</p>'
            '<div _item_id="2">after the pixel</div><p _item_id="3">first second</p>'
            '<p _item_id="4">The thread, served to crawlers.</p></body></html>')
        # map_html keeps the page, the removed noscript elements without ids
        assert map_html == (
            '<html><head></head><body><div><p _item_id="1">The story itself, a paragraph of '
            'prose.</p><noscript>&lt;div style="position:absolute;"&gt;&lt;img width=1 '
            'height=1 src="http://b5.example.jp/b?P=1"&gt;&lt;/div&gt;</noscript>'
            '<cc-alg-uc-text _item_id="2">after the pixel</cc-alg-uc-text></div>'
            '<p _item_id="3">first <noscript><img src="http://pixel.example/p.gif">'
            '</noscript>second</p><noscript data-path="/t/1"><div><p _item_id="4">The thread, '
            'served to crawlers.</p><noscript><a href="/x"><img '
            'src="http://pixel.example/q.gif"></a></noscript></div></noscript></body></html>')
        assert (simplified, map_html) == simplify_spec.simplify(
            PIXEL, keep_hidden=keep_hidden, drop_noscript=True)
        assert native.simplify_page(PIXEL, 500, keep_hidden, True) == (simplified, map_html)
        # reconstruct maps labels back onto it (a noscript inside a kept block stays, as any
        # descendant of one does)
        _, item_ids = extract_blocks(simplified)
        assert extract_main_html(map_html, dict.fromkeys(item_ids, "main")) == (
            '<html><body><div><p _item_id="1">The story itself, a paragraph of prose.</p>'
            'after the pixel</div><p _item_id="3">first <noscript>'
            '<img src="http://pixel.example/p.gif"></noscript>second</p>'
            '<noscript data-path="/t/1"><div><p _item_id="4">The thread, served to crawlers.</p>'
            "</div></noscript></body></html>")


def test_core_equals_spec_with_drop_noscript_on_every_dev_page(dev_pages):
    assert len(dev_pages) == 254
    differ, fewer = [], 0
    for page in dev_pages:
        for keep_hidden in (False, True):
            core = simplify(page["html"], keep_hidden=keep_hidden, drop_noscript=True)
            if core != simplify_spec.simplify(page["html"], keep_hidden=keep_hidden,
                                              drop_noscript=True):
                differ.append(f"{page['id']} (keep_hidden={keep_hidden})")
            elif keep_hidden:
                fewer += core[0].count("_item_id=") < simplify(
                    page["html"], keep_hidden=True)[0].count("_item_id=")
    assert differ == []
    assert fewer > 10  # the dev pages do lose noscript blocks: the comparison is not vacuous


def test_yahoo_4_has_no_noscript_text_with_the_flag(dev_pages):
    page = next(p for p in dev_pages if p["id"] == "readability/yahoo-4")
    pixel = "b5.yahoo.co.jp/b?"
    kept, _ = simplify(page["html"], keep_hidden=True)
    assert kept.count("<noscript _item_id=") == 21 and pixel in kept
    simplified, map_html = simplify(page["html"], keep_hidden=True, drop_noscript=True)
    assert "noscript" not in simplified and pixel not in simplified
    assert map_html.count("<noscript>") == 21  # the page itself keeps them, without ids
    blocks, _ = extract_blocks(simplified)
    assert len(blocks) == len(extract_blocks(kept)[0]) - 21


def test_a_forum_thread_in_a_noscript_stays(dev_pages):
    # a Discourse forum page: the thread is in <noscript data-path=...>, the page's whole
    # main content as it was scraped
    page = next(p for p in dev_pages if p["id"] == "wcxb/dev/1764")
    dropped = simplify(page["html"], keep_hidden=True, drop_noscript=True)
    assert dropped == simplify(page["html"], keep_hidden=True)
    assert "As software development continues to evolve rapidly" in dropped[0]


def test_prepare_page_takes_the_segmentation_bits():
    page = native.prepare_page(None, PIXEL, None, None, 500, 1024, 4, 0, 1, True,
                               keep_hidden=True, drop_noscript=True)
    assert page.item_ids == ["1", "2", "3", "4"] and page.features.shape[0] == 4
    plain = native.prepare_page(None, PIXEL, None, None, 500, 1024, 4, 0, 1, True)
    assert plain.item_ids == [str(i) for i in range(1, 9)]


def test_a_profile_that_drops_noscript_extracts_no_noscript_text(tmp_path):
    path = default_model_copy(tmp_path, drop_noscript=True)
    assert load_bundle(path, "fast").drop_noscript is True
    assert load_bundle(path, "accurate").drop_noscript is False
    assert Preparer.from_bundle(load_bundle(path, "fast")).drop_noscript is True
    assert Preparer.from_bundle(load_bundle(path, "accurate")).drop_noscript is False
    assert load_bundle(DEFAULT_MODEL_DIR, "fast").drop_noscript is True  # trained so
    dropped = Extractor(path, profile="fast").extract(PIXEL)
    assert dropped.error is None and "b5.example.jp" not in dropped.markdown
    assert set(dropped.labels) <= {"1", "2", "3", "4"}


# ── the fast profile is trained on the segmentation it runs with ──────────────────────────


@pytest.fixture(scope="module")
def yahoo_corpus(tmp_path_factory, dev_pages):
    """A corpus ``mini`` of one real page: ``readability/yahoo-4`` (21 noscript blocks)."""
    folder = tmp_path_factory.mktemp("corpus")
    write_corpus(folder, "mini", [next(p for p in dev_pages if p["id"] == "readability/yahoo-4")])
    return folder


def test_segmentation_key_names_each_setting():
    from train.data import segmentation_key

    assert segmentation_key(False) == segmentation_key(False, False) == ""
    assert segmentation_key(True) == "-keep-hidden"
    assert segmentation_key(False, True) == "-drop-noscript"
    assert segmentation_key(True, True) == "-keep-hidden-drop-noscript"


def test_training_data_and_features_are_cached_per_noscript_setting(yahoo_corpus, tmp_path,
                                                                    monkeypatch):
    from train.data import prepare_pages
    from train.rescorer import training_pages

    monkeypatch.setenv("PULPIE_RT_CORPUS", str(yahoo_corpus))
    cache = tmp_path / "cache"
    [kept] = prepare_pages("mini", 1, cache, keep_hidden=True)
    [dropped] = prepare_pages("mini", 1, cache, keep_hidden=True, drop_noscript=True)
    names = sorted(p.name for p in cache.iterdir())
    assert len(names) == 2 and names[0].endswith("-keep-hidden-drop-noscript.jsonl.gz")
    assert names[1] == names[0].replace("-drop-noscript", "")
    assert len(dropped["blocks"]) == len(kept["blocks"]) - 21
    assert not any("b5.yahoo.co.jp" in block for block in dropped["blocks"])
    _, [features], [labels] = training_pages("mini", 1, cache, keep_hidden=True,
                                             drop_noscript=True)
    assert len(features) == len(labels) == len(dropped["blocks"])
    assert len([p for p in cache.iterdir() if p.name.endswith("-drop-noscript.npz")]) == 1


def test_the_model_card_says_when_the_fast_profile_drops_noscript():
    from train.card import model_card
    from train.fit import Recipe

    assert Recipe().fast_drop_noscript is True
    folder = embedded_model_dir()
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    results["fast"].pop("drop_noscript", None)
    assert "noscript" not in model_card(results, manifest, 1)
    results["fast"]["drop_noscript"] = True
    card = model_card(results, manifest, 1)
    assert "- The `fast` profile drops `<noscript>` elements (manifest " \
           "`profiles.fast.drop_noscript`)" in card
    assert "; it keeps hidden elements (above); it drops noscript elements (above)." in card
