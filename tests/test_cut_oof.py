"""python -m train.cut_oof: cuts of a trained fast bag scored on its train pages out of fold
as the training scores the whole bag. The whole bag's cut is the training's own out-of-fold
scores and threshold; a shorter first stage changes what the second stage reads; a cut the
bag cannot give, and a bag already cut, are refused with the reason."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest
from rt_helpers import small_fast_recipe, train_small_fast_profile, write_corpus

from pulpie_rt.corpus import corpus_available, iter_pages

pytestmark = pytest.mark.skipif(not corpus_available("train"),
                                reason="the training pages are not here (corpus/README.md)")

BAG, ROUNDS = 2, 5
SETTINGS = {"fast_bag": BAG, "rescorer_rounds": ROUNDS, "fast_comment_threads": 0.0}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A corpus ``mini`` of six small train pages with ground truth."""
    train = [p for p in iter_pages("train") if p.get("reference") and len(p["html"]) < 30_000][:6]
    path = tmp_path_factory.mktemp("corpus")
    write_corpus(path, "mini", train)
    return path


@pytest.fixture
def trained(folder, tmp_path, monkeypatch):
    """A bag of BAG members of ROUNDS trees trained on ``mini``: its folder with the
    ``results.json`` training writes (recipe and fast record), and its out-of-fold scores."""
    fast, _ = train_small_fast_profile(tmp_path, monkeypatch, folder, **SETTINGS)
    bag = tmp_path / "work" / "bundle"
    (bag / "results.json").write_text(json.dumps(
        {"recipe": asdict(small_fast_recipe(**SETTINGS)), "fast": fast}))
    oof = np.load(tmp_path / "work" / "fast-oof.npz")
    return bag, fast, {str(pid): oof[f"p{i}"] for i, pid in enumerate(oof["ids"])}


def test_the_whole_bag_is_the_trainings_own_out_of_fold_scores(trained):
    from train.cut_oof import cut_out_of_fold

    _, _, training = trained
    whole, second_cut, first_cut = ((BAG, ROUNDS), (BAG, ROUNDS)), ((BAG, ROUNDS), (1, 3)), (
        (1, 2), (BAG, ROUNDS))
    _, scores = cut_out_of_fold(small_fast_recipe(**SETTINGS), [whole, second_cut, first_cut],
                                log=lambda *_: None)
    assert set(scores[whole]) == set(training)
    for pid, expected in training.items():
        # the mean of the members' raw scores against the averaged booster's probability
        np.testing.assert_allclose(scores[whole][pid], expected, atol=1e-6)
    for cut in (second_cut, first_cut):  # each cut changes the scores
        assert max(np.abs(scores[cut][pid] - training[pid]).max(initial=0.0)
                   for pid in training) > 1e-3


def test_the_whole_bag_chooses_the_trainings_threshold(trained, tmp_path, capsys):
    from train.cut_oof import main

    bag, fast, _ = trained
    out = tmp_path / "cuts.json"
    assert main([str(bag), "--cuts", f"{BAG}x{ROUNDS}", "1x3", "--out", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["cuts"][f"{BAG}x{ROUNDS}"]["calibration_f1"] == fast["calibration_f1"]
    threshold = fast["decoding"]["main_margin"]
    assert figures["cuts"][f"{BAG}x{ROUNDS}"]["threshold"] == threshold
    assert set(figures["cuts"]) == {f"{BAG}x{ROUNDS}", "1x3"}
    assert f"{bag} {BAG}x{ROUNDS}: threshold {threshold:+.2f}" in capsys.readouterr().out


def test_a_cut_ships_at_the_threshold_its_own_out_of_fold_scores_chose(trained, tmp_path):
    """make default-model's two steps: train.cut_oof's JSON read by train.truncate_bag
    --threshold-from, the cut's threshold and figures in the manifest and results.json."""
    from train.cut_oof import main as cut_oof
    from train.truncate_bag import main as truncate_bag

    bag, fast, _ = trained
    (bag / "manifest.json").write_text(json.dumps(
        {"profiles": {"fast": {"decoding": fast["decoding"]}}}))
    oof, out = tmp_path / "oof.json", tmp_path / "cut"
    assert cut_oof([str(bag), "--cuts", "1x3", "--out", str(oof)]) == 0
    chosen = json.loads(oof.read_text())["cuts"]["1x3"]
    truncate_bag([str(bag), "--cut", "1x3", "--threshold-from", str(oof), "--out", str(out)])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["profiles"]["fast"]["decoding"]["main_margin"] == chosen["threshold"]
    cut = json.loads((out / "results.json").read_text())["fast"]
    assert cut["decoding"]["main_margin"] == chosen["threshold"]
    assert cut["calibration_f1"] == chosen["calibration_f1"]
    assert cut["truncated"]["threshold"]["bag_main_margin"] == fast["decoding"]["main_margin"]
    assert cut["truncated"]["threshold"]["bag_calibration_f1"] == fast["calibration_f1"]
    assert (cut["bag"], cut["trees_per_stage"]) == (1, 3)


@pytest.mark.parametrize(("cut", "reason"), [
    ("3x5", f"the bag has {BAG} members of {ROUNDS} rounds (K 1 to {BAG}, R 1 to {ROUNDS})"),
    ("2x6", f"the bag has {BAG} members of {ROUNDS} rounds (K 1 to {BAG}, R 1 to {ROUNDS})"),
    ("2x5/0x5", f"the bag has {BAG} members of {ROUNDS} rounds (K 1 to {BAG}, R 1 to "
                f"{ROUNDS})"),
    ("2", "give KxR (members x rounds, both stages) or K1xR1/K2xR2 (the first stage's, then "
          "the second's)"),
])
def test_a_cut_the_bag_cannot_give_is_refused(cut, reason, tmp_path, capsys):
    from train.cut_oof import main

    (tmp_path / "results.json").write_text(json.dumps(
        {"recipe": asdict(small_fast_recipe(**SETTINGS)), "fast": {"bag": BAG}}))
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path), "--cuts", cut])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"error: cut {cut!r}: {reason}\n"


def test_a_bag_already_cut_is_refused(tmp_path, capsys):
    from train.cut_oof import main

    (tmp_path / "results.json").write_text(json.dumps(
        {"recipe": asdict(small_fast_recipe(**SETTINGS)),
         "fast": {"bag": 1, "truncated": {"kept": 1, "from_bag": BAG}}}))
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path), "--cuts", "1x5"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (f"error: {tmp_path} is already cut (1 of {BAG} members):"
                                       " give the trained bag\n")
