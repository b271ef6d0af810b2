"""``keep_hidden``: the segmentation without the reference's removal of hidden elements (an
option of ``stages.simplify``, a bundle profile's ``keep_hidden``), and ``hidden_blocks``,
which flags the blocks that exist only with it. The core against the specification
(``tests/spec/simplify_spec.py``) on every dev page; hand-made pages; bundles that ask for it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rt_helpers import default_model_copy, train_small_fast_profile, write_corpus
from spec import simplify_spec

from pulpie_rt.runtime import native
from pulpie_rt.runtime.flow.extractor import Extractor
from pulpie_rt.runtime.flow.pages import Preparer
from pulpie_rt.runtime.model.bundle import load_bundle
from pulpie_rt.runtime.model.resolve import embedded_model_dir
from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.features import hidden_blocks
from pulpie_rt.runtime.stages.simplify import simplify

DEFAULT_MODEL_DIR = str(embedded_model_dir())

FADED = ("<html><body><div style=\"opacity:0\"><p>This article text fades in once a script "
         "runs, so the reference segmentation never sees it.</p></div>"
         "<p>Visible footer line.</p></body></html>")


def test_keep_hidden_keeps_a_faded_in_block_and_flags_it():
    simplified, map_html = simplify(FADED)
    assert simplified == ('<html><head><meta charset="utf-8"></head><body>'
                          '<p _item_id="1">Visible footer line.</p></body></html>')
    simplified, map_html = simplify(FADED, keep_hidden=True)
    assert simplified == (
        '<html><head><meta charset="utf-8"></head><body><p _item_id="1">This article text '
        "fades in once a script runs, so the reference segmentation never sees it.</p>"
        '<p _item_id="2">Visible footer line.</p></body></html>')
    assert map_html == (
        '<html><head></head><body><div style="opacity:0"><p _item_id="1">This article text '
        "fades in once a script runs, so the reference segmentation never sees it.</p></div>"
        '<p _item_id="2">Visible footer line.</p></body></html>')
    _, item_ids = extract_blocks(simplified)
    flags = hidden_blocks(map_html, [*item_ids, None, "9"])
    assert flags.dtype == np.uint8 and flags.tolist() == [1, 0, 0, 0]
    assert hidden_blocks(map_html, []).tolist() == []


def test_every_hiding_rule_is_flagged_and_nothing_else():
    page = ("<html><body><div class=\"nav\"><p>menu</p></div>"
            "<main><div class=\"nav\"><p>not a body child</p></div>"
            "<section style=\"display: none ;\"><p>collapsed panel</p></section>"
            "<p style=\"visibility:hidden\">invisible</p><p style=\"font-size:0px\">tiny</p>"
            "<p style=\"color:transparent\">clear</p><p style=\"opacity:0.5\">half</p>"
            "<details><summary>specifications</summary><p>folded</p></details>"
            "<details open><summary>open</summary><p>unfolded</p></details></main></body></html>")
    simplified, map_html = simplify(page, keep_hidden=True)
    blocks, item_ids = extract_blocks(simplified)
    texts = [b.split(">", 1)[1].split("<", 1)[0] for b in blocks]
    assert texts == ["menu", "not a body child", "collapsed panel", "invisible", "tiny",
                     "clear", "half", "specifications", "folded", "open", "unfolded"]
    assert hidden_blocks(map_html, item_ids).tolist() == [1, 0, 1, 1, 1, 1, 0, 0, 1, 0, 0]
    assert hidden_blocks(map_html, item_ids).tolist() == simplify_spec.hidden_blocks(
        map_html, item_ids)
    # the reference's segmentation holds exactly the blocks not flagged
    default, _ = simplify(page)
    kept = [t for t, flag in zip(texts, hidden_blocks(map_html, item_ids), strict=True)
            if not flag]
    assert [b.split(">", 1)[1].split("<", 1)[0] for b in extract_blocks(default)[0]] == kept


def test_core_equals_spec_with_keep_hidden_on_every_dev_page(dev_pages):
    assert len(dev_pages) == 254
    differ, flagged = [], 0
    for page in dev_pages:
        core = simplify(page["html"], keep_hidden=True)
        if core != simplify_spec.simplify(page["html"], keep_hidden=True):
            differ.append(page["id"])
            continue
        _, item_ids = extract_blocks(core[0])
        flags = hidden_blocks(core[1], item_ids).tolist()
        if flags != simplify_spec.hidden_blocks(core[1], item_ids):
            differ.append(page["id"] + " (hidden_blocks)")
        flagged += sum(flags)
    assert differ == []
    assert flagged > 100  # the dev pages do hide blocks: the comparison is not vacuous


def test_prepare_page_segments_as_asked():
    page = native.prepare_page(None, FADED, None, None, 500, 1024, 4, 0, 1, True,
                               keep_hidden=True)
    assert page.item_ids == ["1", "2"] and page.features.shape[0] == 2
    assert "opacity:0" in page.map_html and '_item_id="2"' in page.map_html
    plain = native.prepare_page(None, FADED, None, None, 500, 1024, 4, 0, 1, True)
    assert plain.item_ids == ["1"]
    assert native.simplify_page(FADED, 500, keep_hidden=True) == simplify(FADED, keep_hidden=True)


def test_a_profile_that_keeps_hidden_elements_extracts_their_text(tmp_path):
    path = default_model_copy(tmp_path, keep_hidden=True)
    assert load_bundle(path, "fast").keep_hidden is True
    assert load_bundle(path, "accurate").keep_hidden is False
    assert Preparer.from_bundle(load_bundle(path, "fast")).keep_hidden is True
    assert Preparer.from_bundle(load_bundle(path, "accurate")).keep_hidden is False
    page = FADED.replace("</p></div>", " " + "It goes on with more sentences of prose. " * 8
                         + "</p></div>")
    kept = Extractor(path, profile="fast").extract(page)
    assert kept.error is None and "This article text fades in" in kept.markdown
    assert list(kept.labels) == ["1", "2"]
    plain_bundle = default_model_copy(tmp_path / "plain", keep_hidden=False)
    plain = Extractor(plain_bundle, profile="fast").extract(page)
    assert plain.error is None and "fades in" not in plain.markdown
    assert list(plain.labels) == ["1"]


# ── the fast profile is trained on the segmentation it runs with ──────────────────────────

# train pages whose main content the reference's segmentation removes as hidden (40 of
# wcxb/dev/0407's 40 main-labelled blocks with keep_hidden are hidden), and small plain ones
HIDING_TRAIN_PAGES = ("wcxb/dev/0210", "wcxb/dev/0407")


@pytest.fixture(scope="module")
def mini_corpus(tmp_path_factory, train_corpus):
    """A corpus ``mini`` of six real train pages: the two above and the first four small ones
    with ground truth."""
    from pulpie_rt.corpus import iter_pages

    chosen = []
    for page in iter_pages("train"):
        if page["id"] in HIDING_TRAIN_PAGES or (
                len(chosen) < 6 and page.get("reference") and len(page["html"]) < 30_000
                and sum(p["id"] not in HIDING_TRAIN_PAGES for p in chosen) < 4):
            chosen.append(page)
    assert {p["id"] for p in chosen} >= set(HIDING_TRAIN_PAGES) and len(chosen) == 6
    folder = tmp_path_factory.mktemp("corpus")
    write_corpus(folder, "mini", chosen)
    return folder


def test_training_data_and_features_are_cached_per_segmentation(mini_corpus, tmp_path,
                                                                monkeypatch):
    from train.data import prepare_pages
    from train.rescorer import training_pages

    monkeypatch.setenv("PULPIE_RT_CORPUS", str(mini_corpus))
    cache = tmp_path / "cache"
    shown = {r["id"]: r for r in prepare_pages("mini", 1, cache)}
    kept = {r["id"]: r for r in prepare_pages("mini", 1, cache, keep_hidden=True)}
    names = sorted(p.name for p in cache.iterdir())
    assert len(names) == 2 and names[0].endswith("-keep-hidden.jsonl.gz")
    assert names[1] == names[0].replace("-keep-hidden", "")
    page = "wcxb/dev/0407"
    assert sum(kept[page]["labels"]) >= sum(shown[page]["labels"]) + 40
    assert len(kept[page]["blocks"]) > len(shown[page]["blocks"])
    ids, features, labels = training_pages("mini", 1, cache, keep_hidden=True)
    at = ids.index(page)
    assert len(features[at]) == len(labels[at]) == len(kept[page]["blocks"])
    ids, features, _ = training_pages("mini", 1, cache)
    assert len(features[ids.index(page)]) == len(shown[page]["blocks"])
    assert len([p for p in cache.iterdir() if p.name.startswith("features-")]) == 2


def test_the_fast_profile_is_trained_and_written_with_keep_hidden(mini_corpus, tmp_path,
                                                                  monkeypatch):
    from train.__main__ import set_profiles
    from train.fit import Recipe

    # the shipped bag of five, as this test has always trained it
    settings = {"fast_bag": Recipe().fast_bag, "fast_fold_readability": False,
                "fast_comment_threads": 0.0}
    assert Recipe().fast_keep_hidden is True
    fast, logged = train_small_fast_profile(tmp_path, monkeypatch, mini_corpus, **settings)
    bundle = tmp_path / "work" / "bundle"
    assert fast["keep_hidden"] is True and fast["drop_noscript"] is True
    assert "readability_folds" not in fast  # fast_fold_readability off: the corpus alone
    assert any(line.endswith("hidden elements kept, noscript elements dropped")
               for line in logged)
    assert [p.name for p in (tmp_path / "build" / "train-data").iterdir()
            if p.name.endswith("-keep-hidden-drop-noscript.jsonl.gz")] != []
    (bundle / "manifest.json").write_text(json.dumps({"decoding": {"keep_best_block": True}}))
    set_profiles(bundle, fast, "accurate")
    profiles = json.loads((bundle / "manifest.json").read_text())["profiles"]
    assert profiles["fast"]["keep_hidden"] is True and "keep_hidden" not in profiles["accurate"]
    assert profiles["fast"]["drop_noscript"] is True and "drop_noscript" not in profiles["accurate"]
    unkept, unkept_logged = train_small_fast_profile(tmp_path, monkeypatch, mini_corpus,
                                                     **settings, fast_keep_hidden=False,
                                                     fast_drop_noscript=False)
    logged += unkept_logged
    assert any(line.endswith("hidden elements removed, noscript elements kept")
               for line in logged)
    set_profiles(bundle, unkept, "accurate")
    profiles = json.loads((bundle / "manifest.json").read_text())["profiles"]
    assert "keep_hidden" not in profiles["fast"] and "drop_noscript" not in profiles["fast"]


def test_the_model_card_says_when_the_fast_profile_keeps_hidden_elements():
    from train.card import model_card

    folder = embedded_model_dir()
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    results["fast"].pop("keep_hidden", None)
    assert "keeps hidden elements" not in model_card(results, manifest, 1)
    results["fast"]["keep_hidden"] = True
    card = model_card(results, manifest, 1)
    assert "- The `fast` profile keeps hidden elements (manifest `profiles.fast.keep_hidden`)" \
        in card
    assert "; it keeps hidden elements (above)" in card
