"""Speed/quality profiles: how a bundle names them, what each runs, and the fast profile's
two-stage rescorer over blocks in context."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
from rt_helpers import default_model_copy, tiny_bundle
from spec import context_spec

from pulpie_rt.runtime.flow.engine import Engine
from pulpie_rt.runtime.flow.pages import Preparer
from pulpie_rt.runtime.model.bundle import BundleError, load_bundle
from pulpie_rt.runtime.model.resolve import ModelError, resolve_model
from pulpie_rt.runtime.stages.features import (
    CONTAINER_LEVELS,
    FEATURE_NAMES_V2,
    FEATURES_V3,
    FEATURES_V4,
    FEATURES_V5,
    FEATURES_VERSION,
    LAYOUTS,
    N_FEATURES,
    N_FEATURES_V2,
    N_FEATURES_V3,
    NO_DISTANCE,
)
from pulpie_rt.runtime.stages.rescore import (
    CONTEXT_COLUMNS,
    CONTEXT_V5,
    CONTEXT_V6,
    CONTEXT_VERSION,
    CONTEXTS,
    GROUP_LEVELS,
    N_CONTEXT,
    N_CONTEXT_V5,
    N_COPY,
    N_GROUP,
    N_STAGE,
    N_STAGE_COPY,
    N_STAGE_GROUP,
    BlockRescorer,
    RescorerError,
    context_features,
    stage_features,
)

WORDS = FEATURE_NAMES_V2.index("words")
DEPTH = FEATURE_NAMES_V2.index("depth")
CJK = FEATURE_NAMES_V2.index("cjk_chars")


def _profiled_bundle(tmp_path, fast_rescorer: dict | None = None):
    """The tiny bundle with a fake rescorer file and two profiles (default: fast)."""
    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_bundle(), bundle)
    (bundle / "rescorer.onnx").write_bytes(b"not read by load_bundle")
    manifest = json.loads((bundle / "manifest.json").read_text())
    accurate = {"file": "rescorer.onnx", "features": FEATURES_VERSION, "margin_weight": 0.25}
    manifest["decoding"] = {"keep_best_block": True, "main_margin": -1.0}
    manifest["rescorer"] = accurate
    manifest["profiles"] = {
        "fast": {"transformer": False, "decoding": {"keep_best_block": True, "main_margin": 0.5},
                 "rescorer": fast_rescorer or dict(accurate, margin_weight=0.0)},
        "accurate": {"transformer": True, "decoding": manifest["decoding"], "rescorer": accurate},
    }
    manifest["default_profile"] = "fast"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return bundle


def test_a_bundle_is_read_with_its_default_or_the_asked_profile(tmp_path):
    path = _profiled_bundle(tmp_path)
    fast = load_bundle(path)
    assert (fast.profile, fast.uses_transformer, fast.main_margin) == ("fast", False, 0.5)
    assert fast.rescorer_spec["margin_weight"] == 0.0
    assert fast.profiles == ("fast", "accurate")
    accurate = load_bundle(path, "accurate")
    assert (accurate.profile, accurate.uses_transformer, accurate.main_margin) == (
        "accurate", True, -1.0)
    assert accurate.rescorer_spec["margin_weight"] == 0.25
    assert resolve_model(path, profile="accurate").bundle.profile == "accurate"


def test_unknown_profiles_are_refused_with_what_there_is(tmp_path):
    path = _profiled_bundle(tmp_path)
    with pytest.raises(BundleError) as error:
        load_bundle(path, "fastest")
    assert str(error.value) == (f"{path / 'manifest.json'}: no profile 'fastest' (this bundle "
                                "has accurate, fast)")
    with pytest.raises(ModelError, match="no profile 'fastest'"):
        resolve_model(path, profile="fastest")
    plain = tiny_bundle()
    assert load_bundle(plain).profile is None and load_bundle(plain).uses_transformer
    with pytest.raises(BundleError) as error:
        load_bundle(plain, "fast")
    assert str(error.value) == (
        f"{plain / 'manifest.json'}: this bundle has no profiles (profile 'fast' asked); only "
        "the embedded default model has fast/accurate profiles")


def test_a_profile_without_the_transformer_prepares_no_tokens_and_runs_no_model(tmp_path):
    engine = Engine(profile="fast")  # the embedded model's: its rescorer alone, on the CPU
    assert (engine.provider, engine.device, engine.uses_transformer) == ("none", "cpu", False)
    bundle = load_bundle(_profiled_bundle(tmp_path))
    preparer = Preparer.from_bundle(bundle)
    assert (preparer.with_tokens, preparer.with_features) == (False, True)
    page = preparer.prepare("<html><body><nav><a href='/'>Home</a></nav><p>One sentence here."
                            "</p><p>Another one.</p></body></html>")
    assert page.chunks == [] and page.n_classified == page.n_blocks == 2  # the <p>s
    assert page.features.shape == (2, N_FEATURES)


def _v3_rows(words, containers) -> np.ndarray:
    """blocks-v3 rows with these words and container columns (the rest zeros)."""
    rows = np.zeros((len(words), N_FEATURES_V3), np.float32)
    rows[:, WORDS] = words
    rows[:, N_FEATURES_V2:] = containers
    return rows


# blocks 0 and 1 share a parent (7), blocks 2 and 3 another (9); all four a grandparent (3);
# block 3 has no ancestor above it
CONTAINERS = [[7, 3, -1, -1, -1, -1, -1, -1], [7, 3, -1, -1, -1, -1, -1, -1],
              [9, 3, -1, -1, -1, -1, -1, -1], [9, 3, -1, -1, -1, -1, -1, -1]]


def test_context_features_read_neighbours_windows_the_page_and_the_containers():
    rows = _v3_rows([10, 0, 30, 40], CONTAINERS)
    rows[:, DEPTH] = [2, 3, 3, 1]
    rows[:, CJK] = [0, 40, 0, 0]
    out = context_features(rows)
    assert out.shape == (4, N_CONTEXT) and out.dtype == np.float32
    # its own blocks-v2 columns; the container columns are identifiers, not read as values
    np.testing.assert_array_equal(out[:, :N_FEATURES_V2], rows[:, :N_FEATURES_V2])
    k = len(CONTEXT_COLUMNS)
    w = CONTEXT_COLUMNS.index(WORDS)
    block = N_FEATURES_V2
    assert out[:, block + 0 * k + w].tolist() == [-1, 10, 0, 30]  # previous block
    assert out[:, block + 1 * k + w].tolist() == [-1, -1, 10, 0]  # two before
    assert out[:, block + 2 * k + w].tolist() == [0, 30, 40, -1]  # next block
    assert out[:, block + 3 * k + w].tolist() == [30, 40, -1, -1]  # two after
    assert out[:, block + 4 * k + w].tolist() == [20, 20, 20, 20]  # mean over +-3: the page
    assert out[:, block + 6 * k + w].tolist() == [-10, -20, 10, 20]  # minus the page's mean
    steps = out[:, block + 7 * k: block + 7 * k + 2]
    assert steps.tolist() == [[2, -1], [1, 0], [0, 2], [-2, 1]]  # depth - neighbour's (0 past)
    end = N_CONTEXT - N_COPY - N_GROUP * len(GROUP_LEVELS)  # where the container columns start
    before, after = out[:, end - 10 + 2], out[:, end - 10 + 3]  # unlinked words up to, after
    assert before == pytest.approx([0.125, 0.125, 0.5, 1.0], abs=1e-6)
    assert after == pytest.approx([0.875, 0.875, 0.5, 0.0], abs=1e-6)
    # words counting CJK characters (2 a word), their share, mean over +-3, the page's CJK
    assert out[:, end - 4].tolist() == [10, 20, 30, 40]
    assert out[:, end - 3] == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert out[:, end - 2].tolist() == [25, 25, 25, 25]
    assert out[:, end - 1] == pytest.approx([40 / 120] * 4)
    # per level: the container's mean words, its share of the page's, its blocks (log), its
    # word-weighted link ratio (0 here)
    up1, up2, up3 = (out[:, end + N_GROUP * i: end + N_GROUP * (i + 1)] for i in range(3))
    assert up1[:, 0].tolist() == [5, 5, 35, 35]
    assert up1[:, 1] == pytest.approx([0.125, 0.125, 0.875, 0.875])
    assert up1[:, 2] == pytest.approx([np.log(3)] * 4)
    assert up2[:, 0].tolist() == [20] * 4 and up2[:, 1] == pytest.approx([1.0] * 4)
    # no ancestor at level 3: each block is a container of its own
    assert up3[:, 0].tolist() == [10, 0, 30, 40] and up3[:, 2] == pytest.approx([np.log(2)] * 4)
    assert (up3[:, 3] == 0).all()
    assert (out[:, N_CONTEXT - N_COPY:] == 0).all()  # no text repeated: no copies
    assert context_features(rows[:0]).shape == (0, N_CONTEXT)
    with pytest.raises(ValueError, match="context features read blocks-v3 rows"):
        context_features(rows[:, :N_FEATURES_V2])


def test_stage_features_read_the_first_stages_probabilities_around_a_block_and_its_container():
    rows = _v3_rows([10, 0, 30, 40], CONTAINERS)
    p = np.array([0.9, 0.1, 0.6, 0.2])
    out = stage_features(p, rows)
    assert out.shape == (4, N_STAGE)
    assert out[:, 0] == pytest.approx(p)
    assert out[:, 1] == pytest.approx([-1, 0.9, 0.1, 0.6])  # the block before
    assert out[:, 4] == pytest.approx([0.1, 0.6, 0.2, -1])  # the block after
    assert out[:, 12] == pytest.approx([0.9] * 4)  # the page's maximum
    assert out[:, 14] == pytest.approx([0, 3 / 4, 1 / 4, 2 / 4])  # rank on the page
    assert out[:, 15] == pytest.approx([0.9, 0.6, 0.6, 0.2])  # inside the main region
    # per level: the container's word-weighted and plain mean probability, its expected main
    # words as a share of the page's, the block's own less the weighted mean
    up1 = out[:, 16: 16 + N_STAGE_GROUP]
    first = (0.9 * 11 + 0.1 * 1) / 12
    second = (0.6 * 31 + 0.2 * 41) / 72
    assert up1[:, 0] == pytest.approx([first, first, second, second])
    assert up1[:, 1] == pytest.approx([0.5, 0.5, 0.4, 0.4])
    assert up1[:, 2] == pytest.approx([9 / 80, 9 / 80, 26 / 80, 26 / 80])
    assert up1[:, 3] == pytest.approx(p - up1[:, 0])
    assert (out[:, N_STAGE - N_STAGE_COPY:] == -1).all()  # no copies
    assert stage_features(p[:0], rows[:0]).shape == (0, N_STAGE)


def _train_two_stage(folder, context: str):
    """Two small stages trained on random pages in ``context`` (``CONTEXTS[context]``' rows;
    for ``context-v5`` the label reads the dialog columns): the folder of their files, the
    pages' rows, and the two LightGBM models."""
    pytest.importorskip("lightgbm")
    pytest.importorskip("onnxmltools")
    from train.fast import context_names, fit_stage, stage_names
    from train.fit import Recipe
    from train.rescorer import save_rescorer

    width = LAYOUTS[CONTEXTS[context]]
    rng = np.random.default_rng(0)
    pages = []
    for _ in range(60):
        rows = rng.normal(size=(30, width)).astype(np.float32)
        rows[:, N_FEATURES_V2:N_FEATURES_V3] = rng.integers(-1, 4, size=(30, CONTAINER_LEVELS))
        if width > N_FEATURES_V3:
            rows[:, N_FEATURES_V3:] = rng.choice([0.0, 2.0, NO_DISTANCE],
                                                 size=(30, width - N_FEATURES_V3))
        rows[:, 0] = rng.integers(0, 10, size=30)
        rows[:, 1] = rng.integers(0, 10, size=30)
        rows[:, WORDS] = rng.integers(0, 50, size=30)
        pages.append(rows)
    labels = [((r[:, WORDS] > 20) & ((width == N_FEATURES_V3) | (r[:, -1] == NO_DISTANCE)))
              .astype(int) for r in pages]
    recipe = replace(Recipe(), rescorer_rounds=10, rescorer_min_leaf=20, threads=1)
    first_rows = [context_features(r) for r in pages]
    first = fit_stage(np.concatenate(first_rows), np.concatenate(labels), context_names(context),
                      recipe)
    second_rows = [np.concatenate([c, stage_features(first.predict(c), r)], 1)
                   for c, r in zip(first_rows, pages, strict=True)]
    second = fit_stage(np.concatenate(second_rows), np.concatenate(labels),
                       stage_names(context), recipe)
    save_rescorer(first, folder / "first.onnx", np.concatenate(first_rows))
    save_rescorer(second, folder / "second.onnx", np.concatenate(second_rows))
    return folder, pages, first, second


@pytest.fixture(scope="module")
def two_stage(tmp_path_factory):
    return _train_two_stage(tmp_path_factory.mktemp("two-stage"), CONTEXT_VERSION)


@pytest.fixture(scope="module")
def two_stage_v5(tmp_path_factory):
    return _train_two_stage(tmp_path_factory.mktemp("two-stage-v5"), CONTEXT_V5)


@pytest.fixture(scope="module")
def two_stage_v6(tmp_path_factory):
    return _train_two_stage(tmp_path_factory.mktemp("two-stage-v6"), CONTEXT_V6)


def test_averaged_boosters_score_the_mean_of_their_members_raw_scores():
    lightgbm = pytest.importorskip("lightgbm")
    from train.fast import average_boosters

    rng = np.random.default_rng(1)
    rows = rng.normal(size=(2000, 4))
    rows[:, 3] = rng.integers(0, 5, size=2000)  # a categorical column: its splits survive
    labels = (rows[:, 0] + 0.5 * rows[:, 1] + (rows[:, 3] == 2) + rng.normal(size=2000) > 0)
    members = []
    for seed in range(3):
        params = {"objective": "binary", "num_leaves": 7, "bagging_fraction": 0.8,
                  "bagging_freq": 1, "feature_fraction": 0.8, "seed": seed, "verbose": -1,
                  "deterministic": True}
        data = lightgbm.Dataset(rows, labels.astype(int), categorical_feature=[3])
        members.append(lightgbm.train(params, data, num_boost_round=12))
    averaged = average_boosters(members)
    assert averaged.num_trees() == 36
    want = np.mean([m.predict(rows, raw_score=True) for m in members], 0)
    np.testing.assert_allclose(averaged.predict(rows, raw_score=True), want, atol=1e-12)
    assert not np.allclose(members[0].predict(rows, raw_score=True), want)  # they differ


def test_the_fast_seed_seeds_the_fast_stages_alone():
    pytest.importorskip("lightgbm")
    from train.fast import context_names, fit_stage
    from train.fit import Recipe

    rng = np.random.default_rng(2)
    rows = context_features(rng.normal(size=(400, N_FEATURES_V3)).astype(np.float32))
    labels = (rows[:, WORDS] > 0).astype(int)
    recipe = replace(Recipe(), rescorer_rounds=5, rescorer_min_leaf=20, threads=1, fast_bag=2)

    def raw(**change):
        return fit_stage(rows, labels, context_names(), replace(recipe, **change)).predict(
            rows, raw_score=True)

    shipped = raw()
    # None: the recipe's seed, as shipped; another fast seed, other bag members
    np.testing.assert_array_equal(raw(fast_seed=recipe.seed), shipped)
    assert not np.array_equal(raw(fast_seed=1), shipped)


def test_the_two_stage_rescorer_gives_lightgbms_log_odds_per_page(two_stage):
    folder, pages, first, second = two_stage
    rescorer = BlockRescorer(folder / "second.onnx", 0.0, FEATURES_V3, CONTEXT_VERSION,
                             folder / "first.onnx")
    assert rescorer.width == N_CONTEXT + N_STAGE
    for rows in pages[:5]:
        context = context_features(rows)
        want_rows = np.concatenate([context, stage_features(first.predict(context), rows)], 1)
        want = second.predict(want_rows, raw_score=True)
        assert rescorer.log_odds(rows) == pytest.approx(want, abs=2e-3)
        margins = np.full(len(rows), 3.0, np.float32)
        assert rescorer.scores(rows, margins) == pytest.approx(rescorer.log_odds(rows))
    assert rescorer.log_odds(np.zeros((0, N_FEATURES_V3), np.float32)).shape == (0,)


def test_a_two_stage_rescorer_in_context_v5_reads_the_dialog_columns(two_stage_v5):
    folder, pages, first, second = two_stage_v5
    rescorer = BlockRescorer(folder / "second.onnx", 0.0, FEATURES_V4, CONTEXT_V5,
                             folder / "first.onnx")
    assert rescorer.width == N_CONTEXT_V5 + N_STAGE
    spec = context_spec.SpecContextRescorer(folder / "second.onnx", folder / "first.onnx")
    for rows in pages[:5]:
        context = context_features(rows)
        want_rows = np.concatenate([context, stage_features(first.predict(context), rows)], 1)
        want = second.predict(want_rows, raw_score=True)
        assert rescorer.log_odds(rows) == pytest.approx(want, abs=2e-3)
        assert rescorer.log_odds(rows) == pytest.approx(spec.log_odds(rows), abs=1e-5)
        # the label reads the nearest modal: so do the trees
        modal = rows.copy()
        modal[:, -1] = 0.0
        assert (rescorer.log_odds(modal) < rescorer.log_odds(rows) - 1).any()
    with pytest.raises(RescorerError, match="features have 207 columns, the rescorer reads 209"):
        rescorer.log_odds(pages[0][:, :N_FEATURES_V3])


@pytest.mark.parametrize("context, trained, marked", [
    (CONTEXT_V5, "two_stage_v5", "aria-modal"), (CONTEXT_V6, "two_stage_v6", "comment")])
def test_the_engine_runs_a_context_v5_or_v6_fast_profile_as_the_specification_decides(
        context, trained, marked, tmp_path, dev_pages, request):
    """A bundle whose fast profile reads blocks-v4 in context-v5 (blocks-v5 in context-v6):
    the engine (what the Extractor, the C library and the service run) labels each dev page's
    blocks as the specification's two stages (onnxruntime's Python API) and the core's
    decision do, on pages whose blocks the trees' last column (the nearest modal; the nearest
    comment word) reaches and others."""
    layout = CONTEXTS[context]
    from pulpie_rt.runtime import native
    from pulpie_rt.runtime.flow.extractor import Extractor

    folder = request.getfixturevalue(trained)[0]
    bundle = default_model_copy(tmp_path, rescorer={
        "file": "rescorer-fast.onnx", "features": layout, "context": context,
        "first_stage": "rescorer-fast-first.onnx", "margin_weight": 0.0})
    for name, trained in (("rescorer-fast.onnx", "second.onnx"),
                          ("rescorer-fast-first.onnx", "first.onnx")):
        (bundle / name).unlink()
        shutil.copy(folder / trained, bundle / name)
    fast = load_bundle(bundle, "fast")
    assert fast.feature_layout == layout
    preparer = Preparer.from_bundle(fast)
    spec = context_spec.SpecContextRescorer(bundle / "rescorer-fast.onnx",
                                            bundle / "rescorer-fast-first.onnx")
    extractor = Extractor(bundle, profile="fast")
    decoding = json.loads((bundle / "manifest.json").read_text())["profiles"]["fast"]["decoding"]
    assert fast.decoding["story_prior"] == [decoding["story_prior"]["share"],
                                            decoding["story_prior"]["shift"]]
    reached = 0
    pages = [p for p in dev_pages if marked in p["html"]][:6] + dev_pages[::25]
    for page in pages:
        prepared = preparer.prepare(page["html"])
        assert prepared.features.shape[1] == LAYOUTS[layout]
        reached += int((prepared.features[:, -1] < NO_DISTANCE).any())
        scores = spec.log_odds(prepared.features)
        # the bundle's decoding as the core reads it (its story prior too)
        want = native.decide_blocks(prepared.n_blocks, [list(range(prepared.n_blocks))],
                                    [scores], features=prepared.features, **fast.decoding)
        got = extractor.extract(page["html"]).labels
        assert [got[str(i)] == "main" for i in prepared.item_ids] == [w == 1 for w in want], \
            page["id"]
    assert reached >= 5


def test_a_rescorer_naming_another_context_or_a_stage_without_context_is_refused(two_stage):
    folder = two_stage[0]
    with pytest.raises(RescorerError, match="rescorer reads context 'context-v0', this "
                                            "runtime computes 'context-v4', 'context-v5', "
                                            "'context-v6'"):
        BlockRescorer(folder / "second.onnx", 0.0, FEATURES_V3, "context-v0")
    with pytest.raises(RescorerError, match="context 'context-v4' reads features 'blocks-v3', "
                                            "not 'blocks-v1'"):
        BlockRescorer(folder / "second.onnx", 0.0, FEATURES_VERSION, CONTEXT_VERSION)
    with pytest.raises(RescorerError, match="context 'context-v5' reads features 'blocks-v4', "
                                            "not 'blocks-v3'"):
        BlockRescorer(folder / "second.onnx", 0.0, FEATURES_V3, CONTEXT_V5)
    with pytest.raises(RescorerError, match="a first stage needs the context features"):
        BlockRescorer(folder / "second.onnx", 0.0, FEATURES_VERSION, None, folder / "first.onnx")


def test_a_bundle_missing_its_first_stage_file_is_refused(tmp_path):
    path = _profiled_bundle(tmp_path, {"file": "rescorer.onnx", "features": FEATURES_V3,
                                       "context": CONTEXT_VERSION, "margin_weight": 0.0,
                                       "first_stage": "rescorer-fast-first.onnx"})
    with pytest.raises(BundleError, match="bundle is missing rescorer-fast-first.onnx"):
        load_bundle(path)
    assert load_bundle(path, "accurate").profile == "accurate"


def test_the_cli_runs_the_asked_profile_and_names_a_wrong_one(tmp_path):
    import subprocess
    import sys

    from rt_helpers import small_dev_pages

    from pulpie_rt import Extractor

    page = small_dev_pages()[0]
    path = tmp_path / "page.html"
    path.write_text(page["html"], encoding="utf-8")
    cli = [sys.executable, "-m", "pulpie_rt.cli", "extract", str(path)]
    done = subprocess.run([*cli, "--profile", "fast"], capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr
    expected = Extractor(profile="fast").extract(page["html"]).markdown
    assert done.stdout.decode() == expected + "\n"
    wrong = subprocess.run([*cli, "--profile", "fastest"], capture_output=True, timeout=600)
    assert wrong.returncode == 2
    assert wrong.stderr.decode().strip().endswith(
        "manifest.json: no profile 'fastest' (this bundle has accurate, fast)")
    plain = subprocess.run([*cli, "--model", str(tiny_bundle()), "--profile", "fast"],
                           capture_output=True, timeout=600)
    assert plain.returncode == 2
    assert b"this bundle has no profiles (profile 'fast' asked)" in plain.stderr


def test_a_decoding_selection_other_than_threshold_or_expected_f1_is_refused(tmp_path):
    path = _profiled_bundle(tmp_path)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["profiles"]["fast"]["decoding"]["selection"] = "best"
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match=r"manifest.json: decoding.selection must be "
                                          r"\"threshold\" or \"expected_f1\", not 'best'"):
        load_bundle(path, "fast")
    assert load_bundle(path, "accurate").expected_f1 is False
    manifest["profiles"]["fast"]["decoding"]["selection"] = "expected_f1"
    (path / "manifest.json").write_text(json.dumps(manifest))
    assert load_bundle(path, "fast").expected_f1 is True


def test_the_embedded_fast_profile_selects_blocks_by_expected_f1_on_the_segmentation_it_keeps():
    from pulpie_rt.runtime.model.resolve import embedded_model_dir

    bundle = load_bundle(embedded_model_dir(), "fast")
    assert bundle.expected_f1 and bundle.keep_hidden
    assert bundle.feature_layout == FEATURES_V5


@pytest.mark.parametrize(("key", "bad", "shown"), [("keep_hidden", "yes", '"yes"'),
                                                   ("drop_noscript", 1, "1")])
def test_a_segmentation_setting_must_be_a_boolean_of_a_profile(tmp_path, key, bad, shown):
    path = default_model_copy(tmp_path, **{key: bad})
    with pytest.raises(BundleError) as error:
        load_bundle(path, "accurate")  # every profile is checked, not only the one asked for
    assert str(error.value) == (f"{path / 'manifest.json'}: profiles.fast.{key} must be "
                                f"true or false, not {shown}")
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    manifest["profiles"]["fast"][key] = True
    manifest[key] = True
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(BundleError) as error:
        load_bundle(path)
    assert str(error.value) == (
        f"{path / 'manifest.json'}: {key} is a profile's setting "
        f"(profiles.<name>.{key}), not the manifest's: the top level is what readers "
        "without profiles run, and they segment as the reference does")
    manifest[key] = False  # what readers without profiles do anyway
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert getattr(load_bundle(path, "accurate"), key) is False and getattr(load_bundle(path), key)


def test_the_engine_continues_stories_as_the_specification(tmp_path, dev_pages):
    """The shipped fast profile's ``continue_story``: the engine labels each page as the
    specification's two stages, its container prior, expected-F1 selection,
    ``keep_best_block`` and then ``labels_spec.continue_story`` do, and a copy without it
    labels some pages otherwise (the long readability stories among them)."""
    from spec import labels_spec

    from pulpie_rt.runtime.flow.extractor import Extractor

    shipped_bundle = default_model_copy(tmp_path / "shipped")
    shipped = json.loads((shipped_bundle / "manifest.json")
                         .read_text())["profiles"]["fast"]["decoding"]
    assert shipped["continue_story"] is True
    without_story = {k: v for k, v in shipped.items() if k != "continue_story"}
    bundle = default_model_copy(tmp_path / "without", decoding=without_story)
    assert not load_bundle(bundle, "fast").continue_story
    fast = load_bundle(shipped_bundle, "fast")
    preparer = Preparer.from_bundle(fast)
    spec = context_spec.SpecContextRescorer(bundle / "rescorer-fast.onnx",
                                            bundle / "rescorer-fast-first.onnx")
    story, plain = Extractor(profile="fast"), Extractor(bundle, profile="fast")
    changed = []
    pages = dev_pages[::12] + [p for p in dev_pages if p["id"] == "readability/lazy-image-2"]
    prior, story_prior = shipped.get("container_prior"), shipped.get("story_prior")
    for page in pages:
        prepared = preparer.prepare(page["html"])
        scores = spec.log_odds(prepared.features)
        if story_prior:  # the story's container first, then the page's
            scores = labels_spec.story_prior(scores, prepared.features, story_prior["share"],
                                             story_prior["shift"])
        if prior:
            scores = labels_spec.container_prior(scores, prepared.features, prior["share"],
                                                 prior["shift"])
        selected = labels_spec.keep_best_block(labels_spec.expected_f1_labels(
            scores, prepared.features[:, 2], shipped["main_margin"]), scores)
        want = labels_spec.continue_story(selected, scores, prepared.features)
        got = story.extract(page["html"]).labels
        assert [got[str(i)] == "main" for i in prepared.item_ids] == [w == 1 for w in want], \
            page["id"]
        without = plain.extract(page["html"]).labels
        assert [without[str(i)] == "main" for i in prepared.item_ids] == \
            [w == 1 for w in selected], page["id"]
        if got != without:
            changed.append(page["id"])
    assert "readability/lazy-image-2" in changed and len(changed) >= 3, changed


def test_the_engine_decodes_a_container_prior_as_the_specification(tmp_path, dev_pages):
    """The default model's fast profile with a container prior in its decoding: the engine
    lowers the log-odds outside each page's dominant container (``labels_spec
    .container_prior``) before the expected-F1 selection, and the prior changes pages (against
    a copy without one)."""
    from spec import labels_spec

    from pulpie_rt.runtime.flow.extractor import Extractor

    shipped = json.loads((default_model_copy(tmp_path / "shipped") / "manifest.json")
                         .read_text())["profiles"]["fast"]["decoding"]
    decoding = {**shipped, "container_prior": {"share": 0.6, "shift": 1.0}}
    bundle = default_model_copy(tmp_path / "prior", decoding=decoding)
    fast = load_bundle(bundle, "fast")
    assert fast.container_prior == (0.6, 1.0)
    preparer = Preparer.from_bundle(fast)
    spec = context_spec.SpecContextRescorer(bundle / "rescorer-fast.onnx",
                                            bundle / "rescorer-fast-first.onnx")
    plain = default_model_copy(tmp_path / "plain", decoding={
        k: v for k, v in shipped.items() if k != "container_prior"})
    with_prior, without = Extractor(bundle, profile="fast"), Extractor(plain, profile="fast")
    changed = 0
    story_prior = decoding.get("story_prior")
    for page in dev_pages[::12]:
        prepared = preparer.prepare(page["html"])
        scores = spec.log_odds(prepared.features)
        if story_prior:  # before the container prior, as the engine decodes
            scores = labels_spec.story_prior(scores, prepared.features, story_prior["share"],
                                             story_prior["shift"])
        scores = labels_spec.container_prior(scores, prepared.features, 0.6, 1.0)
        want = labels_spec.keep_best_block(labels_spec.expected_f1_labels(
            scores, prepared.features[:, 2], decoding["main_margin"]), scores)
        if decoding.get("continue_story"):
            want = labels_spec.continue_story(want, scores, prepared.features)
        got = with_prior.extract(page["html"]).labels
        assert [got[str(i)] == "main" for i in prepared.item_ids] == [w == 1 for w in want], \
            page["id"]
        changed += got != without.extract(page["html"]).labels
    assert changed >= 3


def test_edit_manifest_writes_the_edit_where_asked_and_leaves_the_source_alone(tmp_path):
    from pulpie_rt.runtime.model.bundle import MANIFEST_NAME, edit_manifest, read_manifest

    bundle = default_model_copy(tmp_path / "m")
    before = (bundle / MANIFEST_NAME).read_text(encoding="utf-8")

    def lower_fast_margin(manifest: dict) -> None:
        manifest["profiles"]["fast"]["decoding"]["main_margin"] = -1.5

    (tmp_path / "out").mkdir()
    written = edit_manifest(bundle, lower_fast_margin, out=tmp_path / "out")
    assert (bundle / MANIFEST_NAME).read_text(encoding="utf-8") == before
    text = (tmp_path / "out" / MANIFEST_NAME).read_text(encoding="utf-8")
    assert json.loads(text) == written == read_manifest(tmp_path / "out")
    assert written["profiles"]["fast"]["decoding"]["main_margin"] == -1.5
    # the layout every manifest writer shares: format fields first, two-space indent, newline
    assert text.startswith('{\n  "format": "pulpie-rt-bundle",\n  "format_version": 1,')
    assert text.endswith("}\n")
    # in place without out; the same edit twice writes the same bytes
    edit_manifest(bundle, lower_fast_margin)
    assert (bundle / MANIFEST_NAME).read_text(encoding="utf-8") == text
    assert load_bundle(bundle, "fast").main_margin == -1.5
