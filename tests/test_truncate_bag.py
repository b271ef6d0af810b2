"""python -m train.truncate_bag: a fast rescorer cut to its first K bag members scores their
mean, every tree of theirs kept whole, and a K the bag cannot give is refused."""

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


@pytest.mark.parametrize("keep", [1, 2, BAG])
def test_the_kept_members_score_their_mean(bagged, tmp_path, keep):
    import onnxruntime as ort

    from train.truncate_bag import truncate_bundle

    folder, rows, members = bagged
    out = tmp_path / "cut"
    truncate_bundle(folder, keep, out, "the command")
    assert (out / "manifest.json").read_text() == "{}"  # the rest copied unchanged
    for name, stage_members in members.items():
        before, after = _ensemble(folder / name), _ensemble(out / name)
        # exactly the first keep × ROUNDS trees, every node of them, in order
        kept = [i for i, t in enumerate(before["nodes_treeids"]) if t < keep * ROUNDS]
        assert sorted(set(after["nodes_treeids"])) == list(range(keep * ROUNDS))
        for field in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes",
                      "nodes_truenodeids", "nodes_falsenodeids", "nodes_values"):
            assert after[field] == [before[field][i] for i in kept], field
        leaves = [i for i, t in enumerate(before["class_treeids"]) if t < keep * ROUNDS]
        assert after["class_nodeids"] == [before["class_nodeids"][i] for i in leaves]
        np.testing.assert_allclose(after["class_weights"],
                                   [before["class_weights"][i] * BAG / keep for i in leaves],
                                   rtol=1e-6)
        session = ort.InferenceSession(str(out / name), providers=["CPUExecutionProvider"])
        (probabilities,) = session.run(["probabilities"], {"features": rows.astype(np.float32)})
        raw = np.mean([m.predict(rows, raw_score=True) for m in stage_members[:keep]], 0)
        # float32 thresholds and weights in ONNX against LightGBM's float64
        np.testing.assert_allclose(probabilities[:, 1], 1 / (1 + np.exp(-raw)), atol=1e-4)
        if keep < BAG:
            everyone = np.mean([m.predict(rows, raw_score=True) for m in stage_members], 0)
            assert np.abs(raw - everyone).max() > 1e-2  # the cut changed the scores
    fast = json.loads((out / "results.json").read_text())["fast"]
    assert fast["bag"] == keep and fast["trees_per_stage"] == ROUNDS
    assert fast["truncated"]["from_bag"] == BAG and fast["truncated"]["kept"] == keep
    assert fast["truncated"]["command"] == "the command"


def test_a_bag_cut_again_keeps_its_history(bagged, tmp_path):
    from train.truncate_bag import truncate_bundle

    folder, _, _ = bagged
    truncate_bundle(folder, 2, tmp_path / "two")
    fast = truncate_bundle(tmp_path / "two", 1, tmp_path / "one")
    assert fast["truncated"]["from_bag"] == 2
    assert fast["truncated"]["from"]["from_bag"] == BAG


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
