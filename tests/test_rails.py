"""The rail columns (layout blocks-v5, context context-v6) and the story prior in training: a
fast profile trained with Recipe.fast_rail_columns reads them, names them, ships them in its
manifest with the given story prior (measured on the train pages), and the engine runs it."""

from __future__ import annotations

import json

import pytest


def test_a_fast_profile_trained_with_the_rail_columns_reads_and_ships_them(
        tmp_path, monkeypatch, dev_pages):
    from rt_helpers import bundle_with_fast_profile, train_small_fast_profile, write_corpus

    from pulpie_rt.runtime.flow.extractor import Extractor
    from pulpie_rt.runtime.model.bundle import load_bundle
    from pulpie_rt.runtime.stages.features import DIALOG_NAMES, FEATURES_V5, RAIL_NAMES
    from pulpie_rt.runtime.stages.rescore import CONTEXT_V6, N_CONTEXT_V6, N_STAGE
    from train.fast import (
        context_names,
        stage_names,
    )
    from train.fit import Recipe

    assert Recipe().fast_rail_columns is True  # as shipped
    assert Recipe().fast_extra_sets == ("modern-news-train",)
    assert Recipe().fast_story_prior == (0.5, 1.0)
    assert context_names(CONTEXT_V6)[-9:] == DIALOG_NAMES + RAIL_NAMES
    assert len(context_names(CONTEXT_V6)) == N_CONTEXT_V6
    assert len(stage_names(CONTEXT_V6)) == N_CONTEXT_V6 + N_STAGE
    pages = [p for p in dev_pages if p.get("reference_kind") == "groundtruth"][:10]
    write_corpus(tmp_path, "mini", pages)
    fast, logged = train_small_fast_profile(tmp_path, monkeypatch, tmp_path,
                                            fast_comment_threads=0.0, fast_rail_columns=True,
                                            fast_story_prior=(0.5, 3.0))
    assert fast["rescorer"]["features"] == FEATURES_V5
    assert fast["rescorer"]["context"] == CONTEXT_V6
    assert any(f"x {N_CONTEXT_V6} columns (context-v6)" in line for line in logged), logged
    # the story prior given: in the decoding, and measured on the train pages out of fold
    assert fast["decoding"]["story_prior"] == {"share": 0.5, "shift": 3.0}
    assert set(fast["story_prior_f1"]) == {"without", "with"}
    assert any("story prior 0.5/3 (share/shift) on the train pages out of fold" in line
               for line in logged), logged
    # python -m train.oof decodes the scores the training left as the training did: its
    # figures are the training's own, and another story prior is one more column
    from dataclasses import asdict, replace

    from train.oof import decoded_f1, parse_short_story, parse_story_prior
    recipe = replace(Recipe(), corpus="mini", fast_comment_threads=0.0, fast_extra_sets=())
    (tmp_path / "work" / "results.json").write_text(json.dumps({"recipe": asdict(recipe),
                                                               "fast": fast}))
    measured = decoded_f1(tmp_path / "work", [None, (0.5, 3.0), (0.5, 1.0)], workers=1)
    assert measured["pages"] == {"train": 10}
    assert [round(v, 4) for v in measured["train"][:2]] == [
        fast["story_prior_f1"]["without"], fast["story_prior_f1"]["with"]]
    assert parse_story_prior("none") is None and parse_story_prior("0.5/1") == (0.5, 1.0)
    # a short story of every page (under 1e9 words) whose shift is the story prior's own and
    # whose prose shift is 0 decodes as without one; each short story is one more column
    shorts = decoded_f1(tmp_path / "work", [(0.5, 3.0)], workers=1,
                        short_stories=[None, (1e9, 3.0, 0.0)])
    assert shorts["train"] == [measured["train"][1]] * 2
    assert parse_short_story("none") is None
    assert parse_short_story("150/3/0.5") == (150.0, 3.0, 0.5)
    with pytest.raises(ValueError, match="^short story '150/3': give none or WORDS/SHIFT/"):
        parse_short_story("150/3")
    # at the training's own threshold and another, split by page kind: the split's groups hold
    # every page, and their pages' mean at the own threshold is the unsplit figure
    own = fast["decoding"]["main_margin"]
    split = decoded_f1(tmp_path / "work", [(0.5, 3.0)], workers=1, thresholds=[own, own + 3],
                       page_kind=True)
    groups = [g for g in split if g != "pages"]
    assert set(groups) <= {"train, article pages", "train, other pages"}
    assert sum(split["pages"].values()) == 10
    assert sum(split[g][0] * split["pages"][g] for g in groups) / 10 == pytest.approx(
        measured["train"][1], abs=1e-9)
    assert [len(split[g]) for g in groups] == [2] * len(groups)
    bundle = bundle_with_fast_profile(tmp_path / "copy", fast, tmp_path / "work" / "bundle")
    assert load_bundle(bundle, "fast").feature_layout == FEATURES_V5
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["profiles"]["fast"]["rescorer"]["context"] == CONTEXT_V6
    manifest["profiles"]["fast"]["decoding"] = fast["decoding"]
    (bundle / "manifest.json").unlink()  # a link to the shipped one: written anew
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    result = Extractor(bundle, profile="fast").extract(pages[0]["html"])
    assert result.error is None and result.labels and result.text


def test_train_oof_compares_runs_that_trained_on_different_sets():
    """A set one run added (postlight-train) and another did not: the other run's column is
    ``-`` and the mean is the holding runs'; a set both hold is compared as before."""
    from train.oof import oof_table

    with_set = {"train": [0.8806], "postlight-train": [0.9012],
                "pages": {"train": 1157, "postlight-train": 85}}
    without = {"train": [0.8796], "pages": {"train": 1157}}
    assert oof_table([with_set, without], [("own", (0.5, 1.0))], False) == [
        "postlight-train (85 pages), word F1 out of fold (in 1 of 2 runs):",
        "  story prior    0.5/1: 0.9012      -  mean 0.9012 ± 0.0000",
        "train (1157 pages), word F1 out of fold:",
        "  story prior    0.5/1: 0.8806 0.8796  mean 0.8801 ± 0.0005"]


def test_train_oof_calls_a_page_an_article_by_its_og_type_or_json_ld_story():
    from train.oof import is_article_page

    story = "<p>" + "The council voted on the new budget late on Tuesday night. " * 8 + "</p>"

    def page(head: str) -> tuple[str, str, bool, bool]:
        return ("p", f"<html><head>{head}</head><body><article>{story}</article></body></html>",
                True, True)

    assert is_article_page(page('<meta property="og:type" content="article">')) == ("p", True)
    assert is_article_page(page('<script type="application/ld+json">{"@type": '
                                '"NewsArticle", "headline": "Budget"}</script>')) == ("p", True)
    assert is_article_page(page('<meta property="og:type" content="website">')) == ("p", False)
    assert is_article_page(page("")) == ("p", False)


def test_the_card_names_the_modern_news_its_licences_the_dropped_sites_rails_and_story():
    """The model card says, only where results.json has them: the added modern news pages
    with their sources' licences and the sites left out for independence, the rail columns of
    a blocks-v5 rescorer, and the story prior with its train figures."""
    from pulpie_rt.runtime.model.resolve import embedded_model_dir
    from train.card import model_card

    folder = embedded_model_dir()
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    # the shipped model has them all: taken away first
    for key in ("extra_sets", "story_prior_f1"):
        results["fast"].pop(key, None)
    results["fast"]["decoding"].pop("story_prior", None)
    manifest["profiles"]["fast"]["rescorer"]["features"] = "blocks-v3"
    plain = model_card(results, manifest, 1)
    for text in ("modern-news-train", "blocks-v5", "decoding.story_prior"):
        assert text not in plain
    results["fast"]["extra_sets"] = {
        "modern-news-train": {"pages": 171, "sites": 119, "sources": {"flairNLP/fundus": 171}},
        "dropped_sites": ["bbc.com", "theguardian.com"]}
    results["fast"]["decoding"]["story_prior"] = {"share": 0.5, "shift": 3.0}
    results["fast"]["story_prior_f1"] = {"without": 0.8701, "with": 0.8712}
    manifest["profiles"]["fast"]["rescorer"]["features"] = "blocks-v5"
    card = model_card(results, manifest, 1)
    assert "learns from 171 of today's news pages\n  of 119 sites" in card
    assert "(github.com/flairNLP/fundus, **MIT**" in card
    assert "github.com/dobbersc/fundus-evaluation, MIT" in card
    assert "2 sites, bbc.com, theguardian.com." in card
    assert "With layout `blocks-v5` each block also reads" in card
    assert "holding 0.5 of\n  the page's expected main **prose** words" in card
    assert "lowered by 3. A rail" in card
    assert "0.8712 with it against 0.8701 without" in card
