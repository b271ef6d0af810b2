"""The block rescorer: LightGBM -> ONNX parity, the runtime's checks, and how a bundle's
rescorer decides blocks in the core's decoding."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
from rt_helpers import tiny_bundle
from spec.rescore_spec import SpecRescorer

from pulpie_rt.runtime import native
from pulpie_rt.runtime.flow.pages import PreparedPage, decide_blocks
from pulpie_rt.runtime.model.bundle import BundleError, load_bundle
from pulpie_rt.runtime.stages.chunks import Chunk
from pulpie_rt.runtime.stages.features import FEATURE_NAMES, FEATURES_VERSION, N_FEATURES
from pulpie_rt.runtime.stages.rescore import BlockRescorer, RescorerError
from train.fit import Recipe

pytest.importorskip("lightgbm")
pytest.importorskip("onnxmltools")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from train.rescorer import fit_rescorer, save_rescorer

    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, N_FEATURES)).astype(np.float32)
    x[:, 0] = rng.integers(0, 10, size=len(x))  # categorical tag columns
    x[:, 1] = rng.integers(0, 10, size=len(x))
    words = FEATURE_NAMES.index("words")
    y = ((x[:, words] + (x[:, 0] == 3) + 0.3 * rng.normal(size=len(x))) > 0.5).astype(int)
    recipe = replace(Recipe(), rescorer_rounds=30, rescorer_min_leaf=20, threads=1)
    booster = fit_rescorer(x, y, recipe)
    path = tmp_path_factory.mktemp("rescorer") / "rescorer.onnx"
    check = save_rescorer(booster, path, x[:500])
    return booster, path, x, check, y


def test_onnx_rescorer_gives_lightgbms_log_odds(trained):
    """Two implementations (LightGBM in double, the ONNX tree ensemble in float32), compared
    on this machine: the tolerances are the float32 conversion's, on any CPU."""
    booster, path, x, check, _ = trained
    assert check["rows"] == 500 and check["rows_off_by_over_1e-4"] == 0
    assert check["max_abs_probability_difference"] < 1e-5
    rescorer = BlockRescorer(path, margin_weight=0.0, features=FEATURES_VERSION)
    assert rescorer.log_odds(x[:1000]) == pytest.approx(
        booster.predict(x[:1000], raw_score=True), abs=2e-3)
    assert rescorer.log_odds(np.zeros((0, N_FEATURES), np.float32)).shape == (0,)


def test_a_value_at_a_thresholds_float32_rounding_takes_lightgbms_branch_in_onnx(tmp_path):
    """LightGBM splits two adjacent float32 values at their midpoint (float64), whose nearest
    float32 is the upper value: written as it is, the ONNX ensemble (float32 thresholds) sent
    the upper value's rows left and LightGBM right. Written at the float32 at or below it,
    both send them right; a categorical split keeps its categories."""
    import lightgbm

    from train.rescorer import ONNX_ML_OPSET, float32_splits, save_rescorer

    low = np.nextafter(np.float32(1.0), np.float32(2.0))  # an odd last bit: the midpoint
    high = np.nextafter(low, np.float32(2.0))  # rounds to even, up to `high`
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 3)).astype(np.float32)
    x[:, 0] = np.repeat([low, high], 200)
    x[:, 1] = rng.integers(0, 4, size=400)
    y = ((x[:, 0] == high) ^ (x[:, 1] == 2)).astype(int)
    params = {"objective": "binary", "verbose": -1, "min_data_in_leaf": 5, "num_leaves": 4,
              "min_data_in_bin": 1, "min_data_per_group": 5, "cat_smooth": 1, "seed": 0,
              "deterministic": True, "num_threads": 1}
    booster = lightgbm.train(params, lightgbm.Dataset(x, y, categorical_feature=[1]),
                             num_boost_round=3)
    def thresholds(model) -> list[float]:
        return [float(v) for line in model.model_to_string().split("\n")
                if line.startswith("threshold=") for v in line.split("=", 1)[1].split()]

    between = [t for t in thresholds(booster) if float(low) < t < float(high)]
    assert between and all(float(np.float32(t)) == float(high) for t in between)

    def categorical(model) -> list[str]:
        lines = model.model_to_string().split("\n")
        return [line for line in lines if line.startswith(("decision_type=", "cat_"))]

    splits = float32_splits(booster)
    assert float(low) in thresholds(splits)
    assert not [t for t in thresholds(splits) if float(np.float32(t)) != t]
    # the categorical splits (decision_type 1: their threshold indexes cat_boundaries) stay
    assert any(" 1" in line for line in categorical(booster) if "decision_type" in line)
    assert categorical(splits) == categorical(booster)
    category_indexes = [line.split("=", 1)[1].split()[1:] for line in
                        booster.model_to_string().split("\n") if line.startswith("threshold=")]
    assert category_indexes == [line.split("=", 1)[1].split()[1:] for line in
                                splits.model_to_string().split("\n")
                                if line.startswith("threshold=")]
    assert splits.predict(x).tolist() == booster.predict(x).tolist()
    check = save_rescorer(booster, tmp_path / "adjacent.onnx", x)
    assert check["rows_off_by_over_1e-4"] == 0
    assert check["max_abs_probability_difference"] < 1e-6

    # the booster converted as it is: the upper value's rows take the other branch in ONNX
    import onnxmltools
    import onnxruntime as ort
    from onnxmltools.convert.common.data_types import FloatTensorType

    model = onnxmltools.convert_lightgbm(booster, initial_types=[
        ("features", FloatTensorType([None, 3]))], target_opset=ONNX_ML_OPSET, zipmap=False)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    (raw,) = session.run(["probabilities"], {"features": x})
    off = np.abs(raw[:, 1] - booster.predict(x)) > 1e-4
    assert off.any() and (x[off, 0] == high).all()


def test_rescorer_scores_add_the_weighted_margin_and_ignore_missing_ones(trained):
    _, path, x, _, _ = trained
    rescorer = BlockRescorer(path, margin_weight=0.5, features=FEATURES_VERSION)
    base = rescorer.log_odds(x[:3])
    scores = rescorer.scores(x[:3], np.array([2.0, np.nan, -4.0], np.float32))
    assert scores == pytest.approx(base + np.array([1.0, 0.0, -2.0]), abs=1e-6)


def test_rescorer_refuses_other_feature_layouts(trained):
    _, path, x, _, _ = trained
    with pytest.raises(RescorerError, match="rescorer reads features 'blocks-v0', this "
                                            "runtime computes 'blocks-v1'"):
        BlockRescorer(path, margin_weight=0.0, features="blocks-v0")
    rescorer = BlockRescorer(path, margin_weight=0.0, features=FEATURES_VERSION)
    with pytest.raises(RescorerError, match=f"features have 3 columns, the rescorer reads "
                                            f"{N_FEATURES}"):
        rescorer.log_odds(x[:2, :3])


def test_a_bundle_naming_a_missing_rescorer_is_refused(tmp_path):
    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_bundle(), bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["rescorer"] = {"file": "rescorer.onnx", "features": FEATURES_VERSION,
                            "margin_weight": 0.25}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="bundle is missing rescorer.onnx"):
        load_bundle(bundle)


def test_the_decoding_decides_by_the_rescorers_scores(trained):
    """The core's decoding with the core's rescorer: score = log-odds + 1.0 x margin, on
    margins -1, 0, +1 along the chunk's SEPs."""
    _, path, x, _, _ = trained
    rescorer = BlockRescorer(path, margin_weight=1.0, features=FEATURES_VERSION)
    odds = rescorer.log_odds(x[:400])
    best, low = int(np.argmax(odds)), np.argsort(odds)[:2].tolist()
    features = x[[best, *low]]
    scores = rescorer.log_odds(features) + np.array([-1.0, 0.0, 1.0], np.float32)
    assert scores[0] > max(scores[1:]) and np.argmax([-1.0, 0.0, 1.0]) == 2
    chunk = Chunk([0, 5, 9, 6, 9, 7, 9, 1], [0, 1, 2])
    margins = [np.array([-1.0, 0.0, 1.0], np.float32)]
    page = PreparedPage(["1", "2", "3"], [chunk], "", features)
    for threshold in (*(float(s) - 1e-3 for s in scores), float(scores.max()) + 1.0):
        expected = [int(s > threshold) for s in scores] if (scores > threshold).any() else [1, 0, 0]
        assert decide_blocks(page, margins, threshold, True, rescorer) == expected
    # blocks past n_classified are "other", whatever their features score
    cut = PreparedPage(["1", "2", "3"], [chunk], "", features, n_classified=1)
    assert decide_blocks(cut, margins, float(scores.min()) - 1.0, True, rescorer) == [1, 0, 0]
    # a page prepared without features fails, naming the stage and the reason
    bare = PreparedPage(["1", "2", "3"], [chunk], "")
    with pytest.raises(native.DecodeError) as failed:
        decide_blocks(bare, margins, 0.0, True, rescorer)
    assert str(failed.value) == ("rescore: ValueError: the bundle has a rescorer but the page "
                                 "has no block features (prepared without "
                                 "Preparer.from_bundle?)")


def test_core_rescorer_gives_the_specifications_scores(trained):
    """The runtime's rescorer (the core's ONNX Runtime session) against its specification on
    onnxruntime's Python API: same ONNX Runtime release, same machine."""
    _, path, x, _, _ = trained
    margins = np.linspace(-3.0, 3.0, 1000).astype(np.float32)
    margins[::7] = np.nan
    core = BlockRescorer(path, margin_weight=0.25, features=FEATURES_VERSION)
    spec = SpecRescorer(path, margin_weight=0.25)
    np.testing.assert_allclose(core.log_odds(x[:1000]), spec.log_odds(x[:1000]), atol=1e-6)
    np.testing.assert_allclose(core.scores(x[:1000], margins), spec.scores(x[:1000], margins),
                               atol=1e-6)


def test_the_same_recipe_gives_a_byte_identical_rescorer(trained, tmp_path):
    """Byte-identical ONNX file from the same data and recipe, both fits on this machine in
    this process (one thread). Across CPUs the histogram sums LightGBM splits on may differ in
    the last bits, so no cross-machine claim is made."""
    from train.rescorer import fit_rescorer, save_rescorer

    _, path, x, _, y = trained
    recipe = replace(Recipe(), rescorer_rounds=30, rescorer_min_leaf=20, threads=1)
    again = tmp_path / "again.onnx"
    save_rescorer(fit_rescorer(x, y, recipe), again, x[:10])
    assert again.read_bytes() == path.read_bytes()
