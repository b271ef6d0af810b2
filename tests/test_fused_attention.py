"""export --attention fused: one com.microsoft.MultiHeadAttention per layer (export/attention.py).

What must hold on a CPU (the GPU figures are bench/gpu_check.sh's): the graph has the fused node
in every layer and no unfused attention left, the padding bias sits in the node's
attention_bias slot, the export verifies against PyTorch, padding keys change nothing, the
manifest asks for padded batches, and the engine gives the unfused bundle's labels on real
pages.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from pulpie_rt.cli import main as cli_main
from pulpie_rt.corpus import load_pages
from pulpie_rt.export.attention import MASK_VALUE, PAD_MULTIPLE
from pulpie_rt.export.build import export_bundle
from pulpie_rt.export.verify import VerifySettings
from pulpie_rt.runtime.flow.extractor import Extractor

TINY = Path(__file__).parent / "fixtures" / "tiny-eurobert"
SMALL = VerifySettings(pages=6, max_tokens=1024, max_chunks=8, token_budget=4000)
LAYERS = json.loads((TINY / "config.json").read_text())["num_hidden_layers"]


def _quiet(*_args, **_kwargs) -> None:
    pass


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("attention")
    return {attention: export_bundle(TINY, root / attention, settings=SMALL, log=_quiet,
                                     attention=attention, max_tokens=1024)
            for attention in ("unfused", "fused")}


def test_every_layer_has_one_fused_node_with_the_bias_in_its_slot(bundles):
    graph = onnx.load(str(bundles["fused"] / "model.onnx"))
    fused = [n for n in graph.graph.node if n.op_type == "MultiHeadAttention"]
    assert len(fused) == LAYERS
    assert all(n.domain == "com.microsoft" for n in fused)
    assert not [n for n in graph.graph.node if n.op_type == "Softmax"]
    for node in fused:
        assert len(node.input) == 6 and node.input[3] == node.input[4] == ""
        assert node.input[5] == fused[0].input[5]  # one bias for every layer
        attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        assert attributes["num_heads"] == 4
        assert attributes["scale"] == pytest.approx(16 ** -0.5)
    unfused = onnx.load(str(bundles["unfused"] / "model.onnx"))
    assert not [n for n in unfused.graph.node if n.op_type == "MultiHeadAttention"]


def test_the_fused_export_is_verified_and_its_manifest_asks_for_padding(bundles):
    manifests = {k: json.loads((b / "manifest.json").read_text()) for k, b in bundles.items()}
    fused = manifests["fused"]
    assert fused["onnx"]["attention"] == "fused"
    assert fused["onnx"]["pad_multiple"] == PAD_MULTIPLE == 16
    assert "attention" not in manifests["unfused"]["onnx"]
    assert "pad_multiple" not in manifests["unfused"]["onnx"]
    check = fused["verification"]
    assert check["sep_agreement"] == 1.0 and check["max_abs_logit_diff"] <= 1e-3


def test_padding_keys_change_nothing_and_real_tokens_match_the_unfused_graph(bundles):
    sessions = {k: ort.InferenceSession(str(b / "model.onnx"), providers=["CPUExecutionProvider"])
                for k, b in bundles.items()}
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 1000, (3, 48))
    mask = np.ones_like(ids)
    mask[1, 30:] = 0
    mask[2, 7:] = 0
    real = mask.astype(bool)
    feeds = {"input_ids": ids, "attention_mask": mask}
    run = {k: s.run(None, feeds)[0] for k, s in sessions.items()}
    assert np.abs(run["fused"] - run["unfused"])[real].max() < 1e-4
    other_pads = ids.copy()
    other_pads[1, 30:] = 7
    other_pads[2, 7:] = 9
    moved = sessions["fused"].run(None, {"input_ids": other_pads, "attention_mask": mask})[0]
    assert np.array_equal(moved[real], run["fused"][real])
    # and a real token does reach the others (the bias does not mask everything)
    other_real = ids.copy()
    other_real[0, 10] += 1
    changed = sessions["fused"].run(None, {"input_ids": other_real, "attention_mask": mask})[0]
    assert np.abs(changed[0, 0] - run["fused"][0, 0]).max() > 1e-4
    assert MASK_VALUE > np.finfo(np.float16).min


def test_the_engine_gives_the_unfused_labels_on_real_pages(bundles):
    pages = [p for p in load_pages("dev") if 3_000 <= len(p["html"]) <= 60_000][:12]
    labels = {}
    for attention, bundle in bundles.items():
        extractor = Extractor(model=str(bundle), backend="onnxruntime", device="cpu")
        results = extractor.extract_batch([p["html"] for p in pages])
        assert all(r.error is None for r in results), [r.error for r in results]
        labels[attention] = [r.labels for r in results]
    assert labels["fused"] == labels["unfused"]
    kept = [label for page in labels["fused"] for label in page.values()]
    assert "main" in kept and "other" in kept


def test_the_cli_exports_fused_and_refuses_an_unknown_attention(tmp_path, capsys):
    assert cli_main(["export", str(TINY), "--out", str(tmp_path / "b"), "--attention", "fused",
                     "--no-verify"]) == 0
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["onnx"]["attention"] == "fused"
    with pytest.raises(SystemExit):
        cli_main(["export", str(TINY), "--out", str(tmp_path / "c"), "--attention", "flash"])
    assert "invalid choice: 'flash'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="attention must be one of"):
        export_bundle(TINY, tmp_path / "d", verify=False, attention="flash", log=_quiet)


def test_the_side_by_side_bench_runs_both_and_finds_the_same_labels(tmp_path):
    from pulpie_rt.bench.attention import run

    record = run(TINY, pages=3, repeats=1, max_tokens=512, threads=1, out=tmp_path / "a.json")
    assert record["pages_with_other_labels"] == 0
    assert set(record["results"]) == {"unfused", "fused"}
    assert all(r["best_cpu_s"] > 0 for r in record["results"].values())
    assert json.loads((tmp_path / "a.json").read_text())["fused_over_unfused"] > 0


def test_the_engine_command_refuses_a_fused_bundle_by_name(bundles, capsys):
    """TensorRT cannot build the com.microsoft node: said before any GPU is looked for."""
    assert cli_main(["engine", str(bundles["fused"]), "--gpu", "h200"]) == 2
    assert capsys.readouterr().err == (
        f"pulpie-rt engine: {bundles['fused']} has fused attention (ONNX Runtime's "
        "com.microsoft.MultiHeadAttention), which TensorRT does not build: export the checkpoint "
        "again without --attention fused for TensorRT (it fuses attention itself), and run this "
        "bundle with backend cuda\n")
