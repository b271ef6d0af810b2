"""The teaser columns (layout blocks-v6, context context-v7) in training: a fast profile
trained with Recipe.fast_teaser_columns reads them, names them, ships them in its manifest,
the card says so, and the engine runs it."""

from __future__ import annotations

import json


def test_a_fast_profile_trained_with_the_teaser_columns_reads_and_ships_them(
        tmp_path, monkeypatch, dev_pages):
    from rt_helpers import bundle_with_fast_profile, train_small_fast_profile, write_corpus

    from pulpie_rt.runtime.flow.extractor import Extractor
    from pulpie_rt.runtime.model.bundle import load_bundle
    from pulpie_rt.runtime.stages.features import (
        DIALOG_NAMES,
        FEATURES_V6,
        RAIL_NAMES,
        TEASER_NAMES,
    )
    from pulpie_rt.runtime.stages.rescore import CONTEXT_V7, N_CONTEXT_V7, N_STAGE
    from train.fast import context_names, stage_names
    from train.fit import Recipe

    assert Recipe().fast_teaser_columns is False  # not shipped
    assert context_names(CONTEXT_V7)[-20:] == DIALOG_NAMES + RAIL_NAMES + TEASER_NAMES
    assert len(context_names(CONTEXT_V7)) == N_CONTEXT_V7
    assert len(stage_names(CONTEXT_V7)) == N_CONTEXT_V7 + N_STAGE
    pages = [p for p in dev_pages if p.get("reference_kind") == "groundtruth"][:10]
    write_corpus(tmp_path, "mini", pages)
    fast, logged = train_small_fast_profile(tmp_path, monkeypatch, tmp_path,
                                            fast_comment_threads=0.0, fast_teaser_columns=True,
                                            fast_held_columns=["rail_run_word_share"])
    assert fast["rescorer"]["features"] == FEATURES_V6
    assert any("fast rescorer: rail_run_word_share held at 0 (no tree reads them)" in line
               for line in logged), logged
    assert fast["rescorer"]["context"] == CONTEXT_V7
    assert any(f"x {N_CONTEXT_V7} columns (context-v7)" in line for line in logged), logged
    bundle = bundle_with_fast_profile(tmp_path / "copy", fast, tmp_path / "work" / "bundle")
    assert load_bundle(bundle, "fast").feature_layout == FEATURES_V6
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["profiles"]["fast"]["rescorer"]["context"] == CONTEXT_V7
    result = Extractor(bundle, profile="fast").extract(pages[0]["html"])
    assert result.error is None and result.labels and result.text


def test_held_columns_are_zero_in_every_row_and_a_name_outside_the_layout_is_refused():
    import numpy as np
    import pytest

    from pulpie_rt.runtime.stages.features import FEATURE_NAMES_V6, N_FEATURES_V6
    from train.fast import hold_columns
    from train.fit import Recipe

    assert Recipe().fast_held_columns == ()
    pages = [np.full((3, N_FEATURES_V6), 2.0, np.float32),
             np.full((1, N_FEATURES_V6), 5.0, np.float32)]
    names = ["after_story", "page_og_article"]
    columns = hold_columns(pages, names, "blocks-v6")
    assert columns == [FEATURE_NAMES_V6.index(name) for name in names] == [225, 216]
    for rows, value in zip(pages, (2.0, 5.0), strict=True):
        assert (rows[:, columns] == 0).all()
        assert (np.delete(rows, columns, axis=1) == value).all()
    with pytest.raises(ValueError, match=r"^fast_held_columns: after_story not a column of "
                                         r"layout blocks-v5 \(features.FEATURE_NAMES_V6, the "
                                         r"first 216\)$"):
        hold_columns(pages, ["words", "after_story"], "blocks-v5")


def test_the_card_names_the_teaser_columns_of_a_blocks_v6_rescorer():
    from pulpie_rt.runtime.model.resolve import embedded_model_dir
    from train.card import model_card

    folder = embedded_model_dir()
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert "blocks-v6" not in model_card(results, manifest, 1)
    manifest["profiles"]["fast"]["rescorer"]["features"] = "blocks-v6"
    card = model_card(results, manifest, 1)
    assert "With layout `blocks-v5` each block also reads" in card
    assert "With layout `blocks-v6` each block also reads what tells a\n  teaser card" in card
