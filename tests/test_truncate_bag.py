"""python -m train.truncate_bag: a fast rescorer cut to its first K bag members, and of each to
its first R trees, scores the mean of those members' first R rounds, every tree kept whole;
a K or an R the bag cannot give is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from train.fast import FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME

BAG, ROUNDS = 3, 12


@pytest.fixture(scope="module")
def bagged(tmp_path_factory):
    """A bundle folder whose two fast stages average BAG LightGBM members of ROUNDS trees
    (``train.fast.average_boosters``, as training writes them), the rows, and per stage its
    members."""
    lightgbm = pytest.importorskip("lightgbm")
    pytest.importorskip("onnxmltools")
    from train.fast import average_boosters
    from train.rescorer import save_rescorer

    folder = tmp_path_factory.mktemp("bagged")
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(1500, 5))
    rows[:, 4] = rng.integers(0, 5, size=1500)  # a categorical column: its splits survive
    members = {}
    for stage, name in enumerate((FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME)):
        labels = (rows[:, stage] + 0.5 * rows[:, 2] + (rows[:, 4] == 2)
                  + rng.normal(size=1500) > 0).astype(int)
        data = lightgbm.Dataset(rows, labels, categorical_feature=[4])
        members[name] = [lightgbm.train(
            {"objective": "binary", "num_leaves": 7, "bagging_fraction": 0.8, "bagging_freq": 1,
             "feature_fraction": 0.8, "seed": seed, "verbose": -1, "deterministic": True},
            data, num_boost_round=ROUNDS) for seed in range(BAG)]
        save_rescorer(average_boosters(members[name]), folder / name, rows)
    (folder / "results.json").write_text(json.dumps(
        {"recipe": {"fast_bag": BAG}, "fast": {"bag": BAG, "trees_per_stage": ROUNDS}}))
    (folder / "manifest.json").write_text("{}")
    return folder, rows, members


def _ensemble(path):
    import onnx

    (node,) = [n for n in onnx.load(path).graph.node if n.op_type == "TreeEnsembleClassifier"]
    return {a.name: list(a.ints or a.floats or a.strings) for a in node.attribute}


@pytest.mark.parametrize(("keep", "stage_rounds"), [
    (1, ROUNDS), (2, ROUNDS), (BAG, ROUNDS), (1, 5), (2, 5), (BAG, 1), (2, (ROUNDS, 5)),
    (2, (4, ROUNDS))])
def test_the_kept_members_score_the_mean_of_their_first_rounds(bagged, tmp_path, keep,
                                                               stage_rounds):
    import onnxruntime as ort

    from train.truncate_bag import truncate_bundle

    folder, rows, members = bagged
    out = tmp_path / "cut"
    truncate_bundle(folder, keep, out, "the command", rounds=stage_rounds)
    assert (out / "manifest.json").read_text() == "{}"  # the rest copied unchanged
    for index, (name, stage_members) in enumerate(members.items()):
        rounds = stage_rounds if isinstance(stage_rounds, int) else stage_rounds[index]
        before, after = _ensemble(folder / name), _ensemble(out / name)

        def kept(tree, rounds=rounds):  # member tree // ROUNDS, its round tree % ROUNDS
            return tree // ROUNDS < keep and tree % ROUNDS < rounds

        # exactly the first rounds trees of the first keep members, every node of them, in
        # order, numbered again from 0 (member after member)
        nodes = [i for i, t in enumerate(before["nodes_treeids"]) if kept(t)]
        assert after["nodes_treeids"] == [before["nodes_treeids"][i] // ROUNDS * rounds
                                          + before["nodes_treeids"][i] % ROUNDS for i in nodes]
        assert sorted(set(after["nodes_treeids"])) == list(range(keep * rounds))
        for field in ("nodes_nodeids", "nodes_featureids", "nodes_modes",
                      "nodes_truenodeids", "nodes_falsenodeids", "nodes_values"):
            assert after[field] == [before[field][i] for i in nodes], field
        leaves = [i for i, t in enumerate(before["class_treeids"]) if kept(t)]
        assert after["class_nodeids"] == [before["class_nodeids"][i] for i in leaves]
        assert sorted(set(after["class_treeids"])) == list(range(keep * rounds))
        np.testing.assert_allclose(after["class_weights"],
                                   [before["class_weights"][i] * BAG / keep for i in leaves],
                                   rtol=1e-6)
        session = ort.InferenceSession(str(out / name), providers=["CPUExecutionProvider"])
        (probabilities,) = session.run(["probabilities"], {"features": rows.astype(np.float32)})
        raw = np.mean([m.predict(rows, raw_score=True, num_iteration=rounds)
                       for m in stage_members[:keep]], 0)
        # float32 thresholds and weights in ONNX against LightGBM's float64
        np.testing.assert_allclose(probabilities[:, 1], 1 / (1 + np.exp(-raw)), atol=1e-4)
        if (keep, rounds) != (BAG, ROUNDS):
            everyone = np.mean([m.predict(rows, raw_score=True) for m in stage_members], 0)
            assert np.abs(raw - everyone).max() > 1e-2  # the cut changed the scores
    fast = json.loads((out / "results.json").read_text())["fast"]
    # one number when both stages keep the same rounds, else one per stage file
    recorded = (stage_rounds if isinstance(stage_rounds, int)
                else dict(zip(members, stage_rounds, strict=True)))
    assert fast["bag"] == keep and fast["trees_per_stage"] == recorded
    assert fast["truncated"]["from_bag"] == BAG and fast["truncated"]["kept"] == keep
    assert fast["truncated"]["from_rounds"] == ROUNDS
    assert fast["truncated"]["rounds"] == recorded
    assert fast["truncated"]["command"] == "the command"


def test_the_runtime_scores_a_cut_as_onnx_runtime(bagged, tmp_path):
    """The core's tree kernel reads a cut (its trees numbered again) and scores it as ONNX
    Runtime does."""
    from parity.trees import TOLERANCE, KernelTrees, OrtTrees
    from train.truncate_bag import truncate_bundle

    folder, rows, _ = bagged
    truncate_bundle(folder, 2, tmp_path / "cut", rounds=5)
    for name in (FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME):
        model = (tmp_path / "cut" / name).read_bytes()
        probabilities, labels = KernelTrees(model).predict(rows)
        expected, expected_labels = OrtTrees(model).predict(rows)
        assert (labels == expected_labels).all()
        assert np.abs(probabilities - expected).max() <= TOLERANCE


def test_a_bag_cut_again_keeps_its_history(bagged, tmp_path):
    from train.truncate_bag import truncate_bundle

    folder, rows, members = bagged
    truncate_bundle(folder, 2, tmp_path / "two", rounds=(8, 9))
    fast = truncate_bundle(tmp_path / "two", 1, tmp_path / "one", rounds=5)
    assert fast["truncated"]["from_bag"] == 2
    assert fast["truncated"]["from_rounds"] == dict(zip(members, (8, 9), strict=True))
    assert fast["truncated"]["from"]["from_bag"] == BAG
    assert fast["truncated"]["from"]["from_rounds"] == ROUNDS
    # the same trees as one cut of the bag to 1 member of 5 rounds, leaf values × BAG
    truncate_bundle(folder, 1, tmp_path / "once", rounds=5)
    for name in members:
        twice, once = _ensemble(tmp_path / "one" / name), _ensemble(tmp_path / "once" / name)
        assert twice["nodes_treeids"] == once["nodes_treeids"]
        np.testing.assert_allclose(twice["class_weights"], once["class_weights"], rtol=1e-6)


def test_more_members_than_the_bag_are_refused(bagged, tmp_path, capsys):
    from train.truncate_bag import main

    folder, _, _ = bagged
    out = tmp_path / "cut"
    with pytest.raises(SystemExit) as exit_info:
        main([str(folder), "--keep", str(BAG + 1), "--out", str(out)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (f"error: --keep {BAG + 1}: the bag of {folder} has "
                                       f"{BAG} members (keep 1 to {BAG})\n")
    assert not out.exists()
    with pytest.raises(SystemExit):
        main([str(folder), "--keep", "0", "--out", str(out)])
    assert capsys.readouterr().err.startswith("error: --keep 0: the bag of")


@pytest.mark.parametrize(("given", "refused", "stage"), [
    (["0"], 0, FAST_FIRST_STAGE_NAME), ([str(ROUNDS + 1)], ROUNDS + 1, FAST_FIRST_STAGE_NAME),
    (["5", str(ROUNDS + 1)], ROUNDS + 1, FAST_RESCORER_NAME)])
def test_more_rounds_than_the_members_have_are_refused(bagged, tmp_path, capsys, given,
                                                       refused, stage):
    from train.truncate_bag import main

    folder, _, _ = bagged
    out = tmp_path / "cut"
    with pytest.raises(SystemExit) as exit_info:
        main([str(folder), "--keep", "2", "--rounds", *given, "--out", str(out)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (f"error: --rounds {refused}: the bag members of {folder} "
                                       f"have {ROUNDS} trees in {stage} (keep 1 to {ROUNDS})\n")
    assert not out.exists()


def test_three_rounds_are_refused(bagged, tmp_path, capsys):
    from train.truncate_bag import main

    folder, _, _ = bagged
    with pytest.raises(SystemExit) as exit_info:
        main([str(folder), "--keep", "2", "--rounds", "5", "6", "7", "--out",
              str(tmp_path / "cut")])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == ("error: --rounds 5 6 7: give one value (both stages) or "
                                       "two (the first stage's, then the second's)\n")


BAG_THRESHOLD, CUT_THRESHOLD = 0.25, -0.5
BAG_F1 = {"-0.50": 0.71, "+0.25": 0.74}


@pytest.fixture
def trained_bag(bagged, tmp_path):
    """``bagged`` with what training records of its threshold: the manifest's fast profile
    and ``results.json``'s ``fast.decoding`` and ``fast.calibration_f1``."""
    import shutil

    folder, _, _ = bagged
    bag = tmp_path / "bag"
    shutil.copytree(folder, bag)
    decoding = {"keep_best_block": True, "main_margin": BAG_THRESHOLD}
    (bag / "manifest.json").write_text(json.dumps(
        {"max_tokens": 7, "profiles": {"fast": {"decoding": decoding, "keep_hidden": True}}},
        indent=2) + "\n")
    results = json.loads((bag / "results.json").read_text())
    results["fast"].update(decoding=dict(decoding), calibration_f1=BAG_F1)
    (bag / "results.json").write_text(json.dumps(results))
    return bag


def cut_oof_record(cut: str, threshold: float = CUT_THRESHOLD, bag_f1: dict = BAG_F1) -> dict:
    """What ``python -m train.cut_oof BAG --cuts CUT --out FILE`` writes for a bag that chose
    BAG_THRESHOLD by ``bag_f1``."""
    return {"bag": "B", "trained_threshold": BAG_THRESHOLD, "trained_calibration_f1": bag_f1,
            "command": f"python -m train.cut_oof B --cuts {cut}",
            "cuts": {cut: {"threshold": threshold,
                           "calibration_f1": {"-0.50": 0.75, "+0.25": 0.73},
                           "f1_at_trained_threshold": 0.73}}}


@pytest.mark.parametrize(("cut", "recorded_as", "keep", "rounds"), [
    ("2x12/2x5", "2x12/2x5", 2, (ROUNDS, 5)), ("1x4/1x4", "1x4", 1, 4), ("2x7", "2x7", 2, 7)])
def test_a_cut_takes_the_threshold_its_own_out_of_fold_scores_chose(trained_bag, tmp_path, cut,
                                                                    recorded_as, keep, rounds):
    from train.truncate_bag import main, truncate_bundle

    oof = tmp_path / "oof.json"
    oof.write_text(json.dumps(cut_oof_record(recorded_as)))
    out = tmp_path / "cut"
    main([str(trained_bag), "--cut", cut, "--threshold-from", str(oof), "--out", str(out)])
    # the same trees as --keep and --rounds give
    truncate_bundle(trained_bag, keep, tmp_path / "kept", rounds=rounds)
    for name in (FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME):
        assert (out / name).read_bytes() == (tmp_path / "kept" / name).read_bytes()
    # the manifest decodes at the cut's threshold, everything else in it as it was
    manifest = json.loads((out / "manifest.json").read_text())
    before = json.loads((trained_bag / "manifest.json").read_text())
    before["profiles"]["fast"]["decoding"]["main_margin"] = CUT_THRESHOLD
    assert manifest == before
    assert (tmp_path / "kept" / "manifest.json").read_text() == (
        trained_bag / "manifest.json").read_text()  # without it, the bag's threshold
    fast = json.loads((out / "results.json").read_text())["fast"]
    assert fast["decoding"]["main_margin"] == CUT_THRESHOLD
    assert fast["calibration_f1"] == {"-0.50": 0.75, "+0.25": 0.73}  # the cut's figures
    threshold = fast["truncated"]["threshold"]
    assert threshold["main_margin"] == CUT_THRESHOLD
    assert threshold["bag_main_margin"] == BAG_THRESHOLD
    assert threshold["bag_calibration_f1"] == BAG_F1
    assert threshold["command"] == f"python -m train.cut_oof B --cuts {recorded_as}"
    assert fast["truncated"]["command"] == (f"python -m train.truncate_bag {trained_bag} --cut "
                                            f"{cut} --threshold-from {oof} --out {out}")


@pytest.mark.parametrize(("record", "cut", "error"), [
    (cut_oof_record("2x5", bag_f1={"+0.25": 0.70}), "2x5",
     "{oof} was measured on another bag (its trained threshold and out-of-fold figures are not "
     "this bag's)"),
    (cut_oof_record("2x6"), "2x5", "{oof} has no cut '2x5' (it measured 2x6)"),
    (cut_oof_record("2x5"), "2x5/1x5",
     "cut '2x5/1x5': both stages must keep the same members (a bundle records one bag), not 2 "
     "and 1"),
    (cut_oof_record("2x5"), "4x5",
     f"cut '4x5': the bag has {BAG} members of {ROUNDS} rounds (K 1 to {BAG}, R 1 to "
     f"{ROUNDS})"),
])
def test_a_threshold_not_measured_on_this_cut_of_this_bag_is_refused(trained_bag, tmp_path,
                                                                      capsys, record, cut,
                                                                      error):
    from train.truncate_bag import main

    oof, out = tmp_path / "oof.json", tmp_path / "cut"
    oof.write_text(json.dumps(record))
    with pytest.raises(SystemExit) as exit_info:
        main([str(trained_bag), "--cut", cut, "--threshold-from", str(oof), "--out", str(out)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"error: {error.format(oof=oof)}\n"
    assert not out.exists()


def test_a_threshold_needs_its_cut(trained_bag, tmp_path, capsys):
    from train.truncate_bag import main

    oof, out = tmp_path / "oof.json", tmp_path / "cut"
    oof.write_text(json.dumps(cut_oof_record("2x5")))
    with pytest.raises(SystemExit) as exit_info:
        main([str(trained_bag), "--keep", "2", "--rounds", "5", "--threshold-from", str(oof),
              "--out", str(out)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == ("error: --threshold-from reads the threshold of one cut: "
                                       "give --cut\n")
    with pytest.raises(SystemExit):
        main([str(trained_bag), "--cut", "2x5", "--rounds", "5", "--out", str(out)])
    assert capsys.readouterr().err == "error: --cut gives the rounds: drop --rounds\n"
    with pytest.raises(SystemExit):  # one of --keep and --cut
        main([str(trained_bag), "--cut", "2x5", "--keep", "2", "--out", str(out)])
    assert "not allowed with argument" in capsys.readouterr().err
    assert not out.exists()


def test_the_card_says_whose_out_of_fold_scores_chose_the_threshold():
    """A cut at its own threshold: the card says the cut's out-of-fold scores chose it and
    what the whole bag's chose; a cut at the bag's threshold says neither."""
    from pulpie_rt.runtime.model.resolve import embedded_model_dir
    from train.card import model_card

    folder = embedded_model_dir()
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    truncated = results["fast"]["truncated"]
    truncated.pop("threshold", None)
    card = " ".join(model_card(results, manifest, 1).split())
    assert "the best mean word F1 on the **train** pages from out-of-fold scores (" in card
    assert "cut_oof" not in card
    truncated["threshold"] = {"main_margin": 0.25, "bag_main_margin": -0.5}
    card = " ".join(model_card(results, manifest, 1).split())
    assert ("the best mean word F1 on the **train** pages from the cut's own out-of-fold scores "
            "(its kept members and rounds trained on the other folds: `python -m "
            "train.cut_oof`; the whole bag's chose -0.50) (") in card
