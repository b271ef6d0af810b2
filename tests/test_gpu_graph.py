"""The GPU graph (``export/gpu_graph.py``) on the CPU: ONNX Runtime's fused operators and no
shape arithmetic, today's labels on real pages in FP32 through the engine (the tiny
checkpoint's bundle and the embedded default model's transformer), and the packed layout's
packing (offsets, cumulative lengths, positions restarting per chunk) against per-chunk runs
of the traced graph: ``PackedMultiHeadAttention`` has no CPU kernel, so ``packed-reference``
computes it as ONNX Runtime's unfused path does, from the same inputs. What only a GPU can say
(the speed, FP16) is ``bench/gpu_check.sh``'s."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest
from rt_helpers import short_context_bundle, small_dev_pages, tiny_bundle

from pulpie_rt import Extractor
from pulpie_rt.export import gpu_graph
from pulpie_rt.runtime.model.resolve import ModelError

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "pulpie_rt" / "default_model"
# (layout, padded rows, switches): every way the engine feeds a GPU graph: one unpadded row a
# call, padded rows (to the longest, to the bucket), chunks packed side by side (as they come,
# to the bucket's fixed shape, through IO binding's buffers)
SWITCHES = ("PULPIE_RT_FIXED_SHAPES", "PULPIE_RT_IO_BINDING")
FIXED, BOUND = {"PULPIE_RT_FIXED_SHAPES": "1"}, {"PULPIE_RT_IO_BINDING": "1"}
VARIANTS = [("rows", False, {}), ("rows", True, {}), ("rows", True, FIXED),
            ("packed-reference", False, {}), ("packed-reference", False, FIXED),
            ("packed-reference", False, BOUND)]


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return [p["html"] for p in small_dev_pages()[:30]]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict[str, Path]:
    # the tiny checkpoint packing 256-token chunks: many chunks a page, several a call
    tiny = short_context_bundle(tmp_path_factory.mktemp("tiny"), 256)
    return {"tiny": tiny, "default": DEFAULT_MODEL}


def labels(model: Path, pages: list[str], profile: str | None) -> list[dict]:
    extractor = Extractor(model=str(model), profile=profile, backend="cpu", device="cpu")
    results = extractor.extract_batch(pages)
    assert not [r.error for r in results if r.error]
    return [r.labels for r in results]


@pytest.mark.parametrize("name", ["tiny", "default"])
def test_every_gpu_graph_gives_todays_labels_on_dev_pages(name, bundles, pages, tmp_path,
                                                          monkeypatch):
    source = bundles[name]
    profile = "accurate" if name == "default" else None  # the embedded model's transformer
    expected = labels(source, pages, profile)
    assert sum(len(x) for x in expected) > 300
    for layout, mask, switches in VARIANTS:
        out = tmp_path / f"{layout}-{mask}"
        if not out.is_dir():
            gpu_graph.write_bundle(source, out, layout, mask)
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["onnx"]["attention"] == "gpu" and manifest["onnx"]["layout"] == layout
        for switch in SWITCHES:
            monkeypatch.setenv(switch, switches.get(switch, "0"))
        got = labels(out, pages, profile)
        differ = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
        assert not differ, f"{name} {layout} mask={mask} {switches}: pages {differ} differ"


@pytest.mark.parametrize("layout,mask", [("rows", False), ("rows", True), ("packed", False)])
def test_the_gpu_graph_is_fused_and_reads_no_shape(layout, mask):
    model = gpu_graph.from_bundle(DEFAULT_MODEL, layout, mask)
    ops = collections.Counter(n.op_type for n in model.graph.node)
    layers = 4
    # the offline check: no node reads a shape, so nothing is derived from one either
    assert gpu_graph.count_shape_nodes(model) == 0
    assert not {"Shape", "Size", "Range", "ConstantOfShape", "Reshape", "Expand"} & set(ops)
    assert ops["SimplifiedLayerNormalization"] == 1
    assert ops["SkipSimplifiedLayerNormalization"] == 2 * layers  # the last is the final norm
    assert ops["RotaryEmbedding"] == 2 * layers
    # one QKV GEMM, the output GEMM, one gate+up GEMM, the down GEMM per layer; the head
    assert ops["MatMul"] == 4 * layers + 1
    attention = "PackedMultiHeadAttention" if layout == "packed" else "MultiHeadAttention"
    assert ops[attention] == layers and ops["Softmax"] == 0
    names = [i.name for i in model.graph.input]
    expected = {"rows": ["input_ids", "position_ids"] + (["attention_mask"] if mask else []),
                "packed": gpu_graph.PACKED_INPUTS}[layout]
    assert names == expected


def test_packed_reference_reads_the_packing_the_engine_gives_it():
    """Three chunks side by side through ``packed-reference`` = each chunk alone through the
    traced graph; chunks given in the wrong rows of ``token_offset`` do not."""
    import onnxruntime as ort

    traced = ort.InferenceSession(str(DEFAULT_MODEL / "model.onnx"),
                                  providers=["CPUExecutionProvider"])
    packed = ort.InferenceSession(
        gpu_graph.from_bundle(DEFAULT_MODEL, "packed-reference").SerializeToString(),
        providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    chunks = [rng.integers(5, 16000, n).astype(np.int64) for n in (300, 17, 120)]
    longest = 300
    places = [row * longest + i for row, c in enumerate(chunks) for i in range(len(c))]
    pads = [row * longest + i for row, c in enumerate(chunks) for i in range(len(c), longest)]
    feeds = {"input_ids": np.concatenate(chunks)[None],
             "position_ids": np.concatenate([np.arange(len(c)) for c in chunks])[None],
             "cumulative_sequence_length": np.array([0, 300, 317, 437], np.int32),
             "token_offset": np.array(places + pads, np.int32).reshape(3, longest)}
    out = packed.run(None, feeds)[0][0]
    starts = feeds["cumulative_sequence_length"]
    for i, chunk in enumerate(chunks):
        alone = traced.run(None, {"input_ids": chunk[None],
                                  "attention_mask": np.ones((1, len(chunk)), np.int64)})[0][0]
        np.testing.assert_allclose(out[starts[i]:starts[i + 1]], alone, atol=1e-4)
    # the second chunk's tokens placed in the third chunk's row, past its 120 tokens: they
    # attend to the third chunk's keys instead of their own
    moved = places[:300] + [2 * longest + 120 + i for i in range(17)] + places[317:]
    rest = [p for p in range(3 * longest) if p not in set(moved)]
    wrong = feeds | {"token_offset": np.array(moved + rest, np.int32).reshape(3, longest)}
    out_wrong = packed.run(None, wrong)[0][0]
    assert np.abs(out_wrong[300:317] - out[300:317]).max() > 1e-3
    np.testing.assert_allclose(out_wrong[:300], out[:300], atol=1e-5)


def test_the_core_refuses_a_gpu_or_fused_graph_for_tensorrt(tmp_path):
    out = gpu_graph.write_bundle(tiny_bundle(), tmp_path / "gpu", "rows")
    with pytest.raises(ModelError) as refused:
        Extractor(model=str(out), backend="tensorrt", device="cuda:0")
    assert str(refused.value) == (
        f"{out}: its graph has gpu attention (onnx.attention 'gpu': ONNX Runtime's com.microsoft "
        "operators), which TensorRT cannot build; run it with backend 'cuda', or give TensorRT "
        "a bundle exported without --attention (TensorRT fuses attention itself)")
