"""export --attention fused: one com.microsoft.MultiHeadAttention per layer (export/attention.py).

What must hold on a CPU (the GPU figures are bench/gpu_check.sh's): the graph has the fused node
in every layer, no unfused attention left and no padding mask (so no attention_mask input: flash
attention on CUDA takes none), the export verifies against PyTorch one row at a time, each row
alone gives the unfused graph's logits, and the engine runs one unpadded chunk per model call and
gives the unfused bundle's labels on real pages.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from parity.batches import make_batches
from parity.ort_core_parity import CoreError, CoreOrt, ort_library_path
from pulpie_rt.cli import main as cli_main
from pulpie_rt.corpus import load_pages
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


def test_every_layer_has_one_fused_node_and_the_graph_no_mask(bundles):
    graph = onnx.load(str(bundles["fused"] / "model.onnx"))
    fused = [n for n in graph.graph.node if n.op_type == "MultiHeadAttention"]
    assert len(fused) == LAYERS
    assert all(n.domain == "com.microsoft" for n in fused)
    assert not [n for n in graph.graph.node if n.op_type == "Softmax"]
    for node in fused:
        assert len(node.input) == 3  # query, key, value: no bias, no key padding mask
        attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        assert attributes["num_heads"] == 4
        assert attributes["scale"] == pytest.approx(16 ** -0.5)
    assert [i.name for i in graph.graph.input] == ["input_ids"]
    unfused = onnx.load(str(bundles["unfused"] / "model.onnx"))
    assert not [n for n in unfused.graph.node if n.op_type == "MultiHeadAttention"]
    assert [i.name for i in unfused.graph.input] == ["input_ids", "attention_mask"]


def test_the_fused_export_is_verified_one_row_per_call(bundles):
    manifests = {k: json.loads((b / "manifest.json").read_text()) for k, b in bundles.items()}
    fused = manifests["fused"]
    assert fused["onnx"]["attention"] == "fused"
    assert fused["onnx"]["inputs"] == ["input_ids"]
    assert "attention" not in manifests["unfused"]["onnx"]
    assert manifests["unfused"]["onnx"]["inputs"] == ["input_ids", "attention_mask"]
    check = fused["verification"]
    assert check["batches"] == check["chunks"]  # one row per batch, as the engine feeds it
    assert manifests["unfused"]["verification"]["batches"] < check["chunks"]
    assert check["sep_agreement"] == 1.0 and check["max_abs_logit_diff"] <= 1e-3


def test_each_row_alone_gives_the_unfused_graphs_logits(bundles):
    sessions = {k: ort.InferenceSession(str(b / "model.onnx"), providers=["CPUExecutionProvider"])
                for k, b in bundles.items()}
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 1000, (3, 48))
    mask = np.ones_like(ids)
    mask[1, 30:] = 0
    mask[2, 7:] = 0
    padded = sessions["unfused"].run(None, {"input_ids": ids, "attention_mask": mask})[0]
    for row in range(3):
        real = int(mask[row].sum())
        alone = sessions["fused"].run(None, {"input_ids": ids[row:row + 1, :real]})[0]
        assert np.abs(alone[0] - padded[row, :real]).max() < 1e-4
    # every position attends to every other: a changed token moves the first one's logits
    other = ids[:1].copy()
    other[0, 10] += 1
    first = sessions["fused"].run(None, {"input_ids": ids[:1]})[0]
    changed = sessions["fused"].run(None, {"input_ids": other})[0]
    assert np.abs(changed[0, 0] - first[0, 0]).max() > 1e-4


def test_the_engine_runs_one_unpadded_chunk_per_call_with_the_unfused_labels(bundles):
    pages = [p for p in load_pages("dev") if 3_000 <= len(p["html"]) <= 60_000][:12]
    labels, counters = {}, {}
    for attention, bundle in bundles.items():
        extractor = Extractor(model=str(bundle), backend="cpu", device="cpu")
        results = extractor.extract_batch([p["html"] for p in pages])
        assert all(r.error is None for r in results), [r.error for r in results]
        labels[attention] = [r.labels for r in results]
        counters[attention] = extractor.engine.counters()
    assert labels["fused"] == labels["unfused"]
    kept = [label for page in labels["fused"] for label in page.values()]
    assert "main" in kept and "other" in kept
    fused, unfused = counters["fused"], counters["unfused"]
    assert fused["computed_tokens"] == fused["real_tokens"] == unfused["real_tokens"]
    assert unfused["computed_tokens"] > unfused["real_tokens"]  # its batches were padded
    assert fused["model_calls"] > unfused["model_calls"]
    assert fused["row_by_row_fallbacks"] == 0


def test_the_core_never_pads_rows_for_a_graph_without_a_mask(bundles):
    """The core's classifier on the fused graph: rows of one length run as a batch (nothing to
    pad, each row's SEP logits as when alone); rows of two lengths are refused by name."""
    library = ort_library_path()
    if library is None or not library.is_file():
        pytest.skip("no ONNX Runtime C library (the onnxruntime wheel)")
    classifier = CoreOrt(library).classifier(bundles["fused"] / "model.onnx")
    sep = 4
    rows = {"a": [0, 812, 93, sep, 1500, 77, sep, 1], "b": [0, 31, sep, 1600, 5, 9, sep, 1],
            "c": [0, 31, sep, 1600, 5, sep, 1]}
    (same_length,) = make_batches([(k, rows[k]) for k in "ab"], 16384, None, None)
    together = classifier.predict(same_length, 2, sep)
    for key, got in zip(same_length.keys, together, strict=True):
        (alone,) = make_batches([(key, rows[key])], 16384, None, None)
        assert np.abs(classifier.predict(alone, 2, sep)[0] - got).max() < 1e-5
    (mixed,) = make_batches([(k, rows[k]) for k in "ac"], 16384, None, None)
    with pytest.raises(CoreError) as refused:
        classifier.predict(mixed, 2, sep)
    assert str(refused.value) == ("the model takes no attention_mask, so rows of 7 tokens "
                                  "cannot be padded to 8: give it one row per batch (the "
                                  "classifier's buckets)")


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
    from bench.attention import run

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
