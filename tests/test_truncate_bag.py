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
