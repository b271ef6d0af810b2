"""The tree kernel (``kernels/``) against ONNX Runtime's ``TreeEnsembleClassifier``: every
block of the dev pages through every rescorer of the embedded default model (the train pages
too when ``../shared/corpus/train.jsonl.gz`` is there), identical labels and probabilities
within 1e-6; ensembles built here for the edge cases (NaN with and without missing-value
tracking, every comparison mode, categorical chains, thresholds at the row's own value, signed
zeros and infinities, a one-leaf tree); an ensemble the kernel does not run falling back to
ONNX Runtime and saying so (a tree of more than 64 leaves among them); ``PULPIE_RT_TREES``."""

from __future__ import annotations

import re

import numpy as np
import pytest

from parity.trees import TOLERANCE, KernelTrees, OrtTrees, compare
from pulpie_rt.corpus import corpus_path
from pulpie_rt.runtime import native
from pulpie_rt.runtime.model.resolve import embedded_model_dir
from pulpie_rt.runtime.stages.features import N_FEATURES_V5

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def _assert_passed(results) -> None:
    for r in results:
        assert r.blocks > 0, r.stage
        assert r.label_differences == 0, (r.stage, r.first_difference)
        assert r.max_abs_difference <= TOLERANCE, (r.stage, r.first_difference)


def test_kernel_equals_onnxruntime_on_every_dev_block(dev_pages):
    results = compare(dev_pages, log=lambda line: None)
    _assert_passed(results)
    assert {r.stage for r in results} == {"fast-first", "fast", "accurate"}
    assert all(r.pages >= 240 and r.blocks > 25_000 for r in results)


def _train_pages() -> list[dict] | None:
    try:
        corpus_path("train")
    except FileNotFoundError:
        return None
    from pulpie_rt.corpus import load_pages

    return load_pages("train")


def test_kernel_equals_onnxruntime_on_every_train_block():
    pages = _train_pages()
    if pages is None:
        pytest.skip("no train pages here (../shared/corpus/train.jsonl.gz)")
    _assert_passed(compare(pages, log=lambda line: None))


# ---------------------------------------------------------------- ensembles built here


def ensemble(trees: list[list[tuple]], n_features: int, post_transform: str = "LOGISTIC",
             extra: dict | None = None, mul: float | None = 1.0) -> bytes:
    """A TreeEnsembleClassifier as onnxmltools writes LightGBM binary models (class id 0
    weights, labels [0, 1], then Identity and Mul by a constant). Each tree: nodes as
    ``(node_id, mode, feature, threshold, true_id, false_id, missing_tracks_true)`` for
    branches and ``(node_id, "LEAF", weight)`` for leaves, in the order given."""
    attrs: dict[str, list] = {k: [] for k in (
        "nodes_treeids", "nodes_nodeids", "nodes_modes", "nodes_featureids", "nodes_values",
        "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true",
        "nodes_hitrates", "class_treeids", "class_nodeids", "class_ids", "class_weights")}
    for tree_id, nodes in enumerate(trees):
        for node in nodes:
            attrs["nodes_treeids"].append(tree_id)
            attrs["nodes_nodeids"].append(node[0])
            attrs["nodes_modes"].append(node[1])
            attrs["nodes_hitrates"].append(1.0)
            if node[1] == "LEAF":
                attrs["nodes_featureids"].append(0)
                attrs["nodes_values"].append(0.0)
                attrs["nodes_truenodeids"].append(0)
                attrs["nodes_falsenodeids"].append(0)
                attrs["nodes_missing_value_tracks_true"].append(0)
                attrs["class_treeids"].append(tree_id)
                attrs["class_nodeids"].append(node[0])
                attrs["class_ids"].append(0)
                attrs["class_weights"].append(node[2])
            else:
                _, _, feature, threshold, true_id, false_id, missing = node
                attrs["nodes_featureids"].append(feature)
                attrs["nodes_values"].append(threshold)
                attrs["nodes_truenodeids"].append(true_id)
                attrs["nodes_falsenodeids"].append(false_id)
                attrs["nodes_missing_value_tracks_true"].append(missing)
    attrs.update(extra or {})
    classifier = helper.make_node(
        "TreeEnsembleClassifier", ["features"], ["label_tensor", "probability_tensor"],
        domain="ai.onnx.ml", classlabels_int64s=[0, 1], post_transform=post_transform,
        **attrs)
    nodes = [classifier, helper.make_node("Identity", ["label_tensor"], ["label"])]
    initializers = []
    if mul is None:
        nodes.append(helper.make_node("Identity", ["probability_tensor"], ["probabilities"]))
    else:
        nodes.append(helper.make_node("Mul", ["probability_tensor", "one"], ["probabilities"]))
        initializers.append(helper.make_tensor("one", TensorProto.FLOAT, [1], [mul]))
    graph = helper.make_graph(
        nodes, "trees",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [None, n_features])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
         helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9),
                                                    helper.make_opsetid("ai.onnx.ml", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def assert_same(model: bytes, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kernel and ONNX Runtime on ``rows``: identical labels, probabilities within 1e-6
    (here, bitwise: same float operations in the same order)."""
    rows = np.ascontiguousarray(rows, np.float32)
    kp, kl = KernelTrees(model).predict(rows)
    op, ol = OrtTrees(model).predict(rows)
    np.testing.assert_array_equal(kl, ol)
    np.testing.assert_array_equal(kp.view(np.uint32), op.view(np.uint32))
    return kp, kl


NAN, INF = float("nan"), float("inf")
# the values every edge-case row draws from: the thresholds themselves, the floats beside
# them, signed zeros, infinities, NaN
EDGE_VALUES = np.array([NAN, -INF, INF, 0.0, -0.0, 1.0, np.nextafter(np.float32(1), 2),
                        np.nextafter(np.float32(1), 0), -1.0, 2.0, 3.0, 7.0, 0.5, 1e-45,
                        -1e-45, 50.0, 1e30], np.float32)


def edge_rows(n_features: int, n: int = 4000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.choice(EDGE_VALUES, size=(n, n_features))


@pytest.mark.parametrize("mode", ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT",
                                  "BRANCH_EQ", "BRANCH_NEQ"])
@pytest.mark.parametrize("missing", [0, 1])
def test_every_mode_and_missing_value_tracking(mode, missing):
    trees = [
        [(0, mode, 0, 1.0, 1, 2, missing), (1, mode, 1, -0.0, 3, 4, 1 - missing),
         (2, "LEAF", 0.75), (3, "LEAF", -1.5), (4, "LEAF", 0.25)],
        [(0, mode, 2, INF, 1, 2, missing), (1, "LEAF", 0.5), (2, mode, 1, 0.5, 3, 4, missing),
         (3, "LEAF", -0.125), (4, "LEAF", 2.0)],
        [(0, mode, 0, -INF, 1, 2, missing), (1, "LEAF", 1.0), (2, "LEAF", -1.0)],
    ]
    model = ensemble(trees, 3)
    probabilities, labels = assert_same(model, edge_rows(3))
    assert len(set(labels.tolist())) == 2  # both classes reached


def test_nan_rows_follow_missing_value_tracking_in_a_deep_tree():
    # a chain of splits, NaN sent true at some and false at others
    nodes = []
    for depth in range(12):
        nodes.append((2 * depth, "BRANCH_LEQ", depth % 4, float(depth % 3), 2 * depth + 1,
                      2 * depth + 2, depth % 2))
        nodes.append((2 * depth + 1, "LEAF", (-1.0) ** depth * (depth + 1) / 8))
    nodes.append((24, "LEAF", 0.3))
    rows = edge_rows(4, seed=1)
    rows[::3, 1] = np.nan
    assert_same(ensemble([nodes, nodes[::-1]], 4), rows)


def test_categorical_chains_as_onnxmltools_writes_them():
    # LightGBM's "category in {3, 7, 50}" as a chain of BRANCH_EQ sharing the true child, then
    # a numeric split under it. ONNX Runtime folds runs of whole categories 1..32 into one set
    # node whose NaN goes where its first node says: NaN tracked true at a middle link (read
    # only where 50, which does not fold, starts a run of its own), at the first, at none
    def chain(flags: tuple[int, int, int], values=(3.0, 7.0, 50.0)) -> list[tuple]:
        return [(0, "BRANCH_EQ", 0, values[0], 4, 1, flags[0]),
                (1, "BRANCH_EQ", 0, values[1], 4, 2, flags[1]),
                (2, "BRANCH_EQ", 0, values[2], 4, 3, flags[2]), (3, "LEAF", -0.5),
                (4, "BRANCH_LEQ", 1, 0.5, 5, 6, 0), (5, "LEAF", 0.25), (6, "LEAF", 1.5)]
    # links whose true children differ (no set), and a NaN category
    mixed = [(0, "BRANCH_EQ", 1, 1.0, 1, 2, 0), (1, "LEAF", 0.5),
             (2, "BRANCH_EQ", 1, 2.0, 3, 4, 0), (3, "LEAF", -0.75),
             (4, "BRANCH_EQ", 1, NAN, 5, 6, 1), (5, "LEAF", 0.125), (6, "LEAF", -0.25)]
    rows = edge_rows(2, seed=2)
    rows[::2, 0] = np.random.default_rng(3).integers(-2, 60, size=len(rows[::2]))
    trees = [chain(f) for f in ((0, 1, 0), (0, 0, 1), (1, 0, 0), (0, 1, 1))]
    trees += [chain((0, 1, 0), (3.0, 32.0, 33.0)), chain((0, 1, 1), (0.0, 2.5, 1.0)), mixed]
    for tree in trees:
        assert_same(ensemble([tree], 2), rows)
    assert_same(ensemble(trees, 2), rows)


def test_a_one_leaf_tree_and_a_stump():
    trees = [[(0, "LEAF", -0.75)], [(0, "BRANCH_LEQ", 0, 0.0, 1, 2, 0), (1, "LEAF", 1.0),
                                   (2, "LEAF", -1.0)], [(0, "LEAF", 0.5)]]
    probabilities, labels = assert_same(ensemble(trees, 1), edge_rows(1))
    only = ensemble([[(0, "LEAF", -2.0)], [(0, "LEAF", 3.0)]], 1)
    p, labels = assert_same(only, np.zeros((3, 1), np.float32))
    assert labels.tolist() == [1, 1, 1]  # -2 + 3 > 0


def test_node_ids_in_any_order_and_trees_with_any_ids():
    """Node ids 0, 1, 2 … in order are placed without a map; ids in another order, or trees
    whose ids do not count from 0, through the map: both as ONNX Runtime; a tree seen again and
    an id twice are refused."""
    stump = [(0, "BRANCH_LEQ", 0, 0.5, 1, 2, 0), (1, "LEAF", 0.25), (2, "LEAF", -1.0)]
    shuffled = [(0, "BRANCH_LEQ", 0, 1.0, 2, 1, 1), (2, "LEAF", 0.5), (1, "LEAF", -0.125)]
    rows = edge_rows(1)
    dense, _ = assert_same(ensemble([stump, shuffled[:1] + shuffled[:0:-1]], 1), rows)
    # the second tree's nodes listed as 0, 2, 1: the same tree, through the map
    np.testing.assert_array_equal(assert_same(ensemble([stump, shuffled], 1), rows)[0], dense)
    # tree ids 7 and 3 (roots where the id changes): the same sums as ids 0 and 1
    renamed = ensemble([stump, shuffled], 1, extra={
        "nodes_treeids": [7, 7, 7, 3, 3, 3], "class_treeids": [7, 7, 3, 3]})
    np.testing.assert_array_equal(assert_same(renamed, rows)[0], dense)
    leaves = [[(0, "LEAF", -0.5)], [(0, "LEAF", 0.5)], [(0, "LEAF", 0.25)]]
    with pytest.raises(native.CoreError, match="the nodes of tree 0 are not contiguous"):
        KernelTrees(ensemble(leaves, 1, extra={"nodes_treeids": [0, 1, 0],
                                               "class_treeids": [0, 1, 0]}))
    with pytest.raises(native.CoreError, match="node 1 of tree 0 is there twice"):
        KernelTrees(ensemble([stump[:2] + [(1, "LEAF", -1.0)]], 1))


def test_many_rows_many_trees_in_blocks_and_groups():
    # more rows than a block, a number that is no multiple of the groups; random trees
    rng = np.random.default_rng(4)
    trees = []
    for _ in range(40):
        nodes, next_id = [], 1
        frontier = [0]
        while frontier:
            node = frontier.pop(0)
            if next_id < 40 and rng.random() < 0.8:
                nodes.append((node, "BRANCH_LEQ", int(rng.integers(0, 6)),
                              float(rng.normal()), next_id, next_id + 1, int(rng.integers(0, 2))))
                frontier += [next_id, next_id + 1]
                next_id += 2
            else:
                nodes.append((node, "LEAF", float(rng.normal())))
        trees.append(nodes)
    rows = rng.normal(size=(1003, 6)).astype(np.float32)
    rows[rng.random(rows.shape) < 0.05] = np.nan
    assert_same(ensemble(trees, 6), rows)
    assert_same(ensemble(trees, 6), rows[:5])  # fewer rows than one group


def chain_of_splits(splits: int) -> list[tuple]:
    """One tree of ``splits`` splits on feature 0, each with a leaf on its true side: as many
    leaves as splits + 1."""
    nodes = []
    for i in range(splits):
        nodes.append((2 * i, "BRANCH_LEQ", 0, float(i), 2 * i + 1, 2 * i + 2, i % 2))
        nodes.append((2 * i + 1, "LEAF", (-1.0) ** i * (i + 1) / 64))
    nodes.append((2 * splits, "LEAF", 0.5))
    return nodes


def test_a_tree_of_64_leaves_runs_on_the_kernel():
    # the kernel keeps a tree's leaves as the bits of a 64-bit word: 64 is the most it runs
    rows = np.concatenate([edge_rows(1, seed=6), np.arange(-1, 66, 0.5, np.float32)[:, None]])
    assert_same(ensemble([chain_of_splits(63), chain_of_splits(5)], 1), rows)


# ---------------------------------------------------------------- what the kernel refuses


@pytest.mark.parametrize("change, reason", [
    ({"post_transform": "NONE"}, "post_transform NONE"),
    ({"post_transform": "SOFTMAX"}, "post_transform SOFTMAX"),
    ({"extra": {"base_values": [0.5, 0.5]}}, "attribute base_values"),
    ({"extra": {"class_ids": [1, 1, 1]}},
     "weights for class ids other than 0"),
])
def test_an_ensemble_the_kernel_does_not_run_falls_back_and_says_so(tmp_path, capfd, change,
                                                                     reason):
    trees = [[(0, "BRANCH_LEQ", 0, 0.5, 1, 2, 0), (1, "LEAF", 0.25), (2, "LEAF", -1.0)],
             [(0, "LEAF", 0.5)]]
    kwargs = dict(post_transform=change.get("post_transform", "LOGISTIC"),
                  extra=change.get("extra"), mul=change.get("mul", 1.0))
    model = ensemble(trees, 1, **kwargs)
    with pytest.raises(native.CoreError, match=reason):
        KernelTrees(model)
    path = tmp_path / "rescorer.onnx"
    path.write_bytes(model)
    capfd.readouterr()
    rescorer = native.CoreRescorer(path, 0.0)
    err = capfd.readouterr().err
    assert f"pulpie-rt: warning: the tree kernel cannot run {path}: {reason}" in err
    assert err.rstrip().endswith("its trees run on ONNX Runtime")
    assert rescorer.trees.startswith(f"onnxruntime (the tree kernel cannot run {path}: {reason}")
    rows = np.array([[0.0], [1.0], [np.nan]], np.float32)
    probabilities, _, _ = rescorer.run(rows, np.zeros(3, np.float32))
    np.testing.assert_array_equal(probabilities, OrtTrees(model).predict(rows)[0])


def test_a_tree_of_65_leaves_falls_back_and_says_so(tmp_path, capfd):
    model = ensemble([chain_of_splits(5), chain_of_splits(64)], 1)
    reason = "tree 1 has more than 64 leaves (or its nodes make a cycle)"
    with pytest.raises(native.CoreError, match=re.escape(reason)):
        KernelTrees(model)
    path = tmp_path / "rescorer.onnx"
    path.write_bytes(model)
    capfd.readouterr()
    rescorer = native.CoreRescorer(path, 0.0)
    assert (f"pulpie-rt: warning: the tree kernel cannot run {path}: {reason}; its trees run on "
            "ONNX Runtime") in capfd.readouterr().err
    assert rescorer.trees == f"onnxruntime (the tree kernel cannot run {path}: {reason})"
    rows = np.arange(-1, 66, 0.5, np.float32)[:, None]
    probabilities, _, _ = rescorer.run(rows, np.zeros(len(rows), np.float32))
    np.testing.assert_array_equal(probabilities, OrtTrees(model).predict(rows)[0])


def test_the_default_model_runs_every_rescorer_on_the_kernel(monkeypatch):
    monkeypatch.delenv("PULPIE_RT_TREES", raising=False)
    model = embedded_model_dir()
    fast = native.CoreContextRescorer(model / "rescorer-fast.onnx",
                                      model / "rescorer-fast-first.onnx")
    assert fast.trees == ["kernel", "kernel"]
    assert native.CoreRescorer(model / "rescorer.onnx", 0.25).trees == "kernel"


def test_pulpie_rt_trees_onnxruntime_runs_onnx_runtime(monkeypatch):
    model = embedded_model_dir()
    monkeypatch.setenv("PULPIE_RT_TREES", "onnxruntime")
    fast = native.CoreContextRescorer(model / "rescorer-fast.onnx",
                                      model / "rescorer-fast-first.onnx")
    accurate = native.CoreRescorer(model / "rescorer.onnx", 0.25)
    forced = "onnxruntime (PULPIE_RT_TREES=onnxruntime)"
    assert fast.trees == [forced, forced] and accurate.trees == forced
    monkeypatch.setenv("PULPIE_RT_TREES", "kernel")
    on_kernel = native.CoreContextRescorer(model / "rescorer-fast.onnx",
                                           model / "rescorer-fast-first.onnx")
    assert on_kernel.trees == ["kernel", "kernel"]
    # rows of the shipped fast profile's layout
    rows = np.random.default_rng(5).random((7, N_FEATURES_V5), np.float32)
    np.testing.assert_array_equal(fast.log_odds(rows), on_kernel.log_odds(rows))
    monkeypatch.setenv("PULPIE_RT_TREES", "fast")
    with pytest.raises(native.CoreError, match="PULPIE_RT_TREES=\"fast\": expected 'kernel' "
                                               r"\(the default\) or 'onnxruntime'"):
        native.CoreRescorer(model / "rescorer.onnx", 0.25)


def test_the_kernel_reads_the_rescorer_files_widths():
    model = embedded_model_dir()
    trees = KernelTrees((model / "rescorer.onnx").read_bytes())
    with pytest.raises(native.CoreError, match="features have 3 columns, the trees read 166"):
        trees.predict(np.zeros((2, 3), np.float32))
    with pytest.raises(native.CoreError, match="not a readable ONNX model"):
        KernelTrees(b"\x0a\xff")


def test_the_c_library_runs_the_kernel_and_onnx_runtime_alike(dev_pages, tmp_path):
    """The C library's engine (embedded default model, its default profile ``fast``) opens
    its rescorers through the same core: the same records with ``PULPIE_RT_TREES`` unset and
    ``onnxruntime``, and a wrong value named."""
    import os
    import shutil

    from bench.capi import build_capi, run_extract, write_pages

    missing = [tool for tool in ("cargo", "cc", "make") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the C library needs {', '.join(missing)} on the PATH")
    build_capi()
    path = write_pages(dev_pages[::16], tmp_path / "pages.jsonl")
    env = {k: v for k, v in os.environ.items() if k != "PULPIE_RT_TREES"}
    on_kernel = run_extract(path, env=env)
    on_onnxruntime = run_extract(path, env=env | {"PULPIE_RT_TREES": "onnxruntime"})
    assert len(on_kernel) == len(dev_pages[::16])
    assert on_kernel == on_onnxruntime
    with pytest.raises(RuntimeError, match="PULPIE_RT_TREES=\"gpu\": expected 'kernel'"):
        run_extract(path, env=env | {"PULPIE_RT_TREES": "gpu"})
