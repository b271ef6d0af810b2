"""The GPU graph of a bundle: its EuroBERT transformer rebuilt with ONNX Runtime's fused
operators and no shape arithmetic, from the weights of the bundle's own ``model.onnx``.

What the traced export (``to_onnx.py``) writes for each layer, and what this graph has instead:

- RMSNorm as Pow/ReduceMean/Add/Sqrt/Div/Mul, the residual Add beside it: one
  ``SkipSimplifiedLayerNormalization`` per residual add (``SimplifiedLayerNormalization`` for the
  first layer's input), which also returns the residual sum;
- q, k and v as three MatMuls: one MatMul with the three weights side by side (``[h, 3h]``) and a
  Split;
- rotary as Slice/Neg/Concat/Mul/Add over cos/sin computed per call from the positions:
  ``com.microsoft.RotaryEmbedding`` with cos/sin tables computed here once (positions up to the
  bundle's ``max_tokens``);
- attention as MatMul/Softmax/MatMul over ``[rows, heads, L, L]`` scores: one
  ``com.microsoft.MultiHeadAttention`` (``rows`` layout) or ``PackedMultiHeadAttention``
  (``packed`` layout);
- gate and up as two MatMuls: one MatMul with both weights (``[h, 2i]``), Split, SiLU, Mul;
- and no Shape node at all (the traced graph has one per reshape and per mask): every reshape
  is gone (the fused operators take ``[rows, length, hidden]`` directly), so nothing is computed
  on the CPU between the kernels and every tensor's shape follows from the inputs' alone, as
  CUDA graphs need.

Layouts (``LAYOUTS``), all with ``position_ids`` as an input (the engine feeds each row's
positions, restarting at 0 for every chunk):

- ``rows``: ``input_ids``, ``position_ids`` ``[rows, length]`` and, with ``mask``,
  ``attention_mask`` ``[rows, length]`` (1 on real tokens, right-padded rows): its sums are the
  rows' key lengths (``MultiHeadAttention``'s 1-D ``key_padding_mask``), so rows padded to a
  fixed bucket length attend to their own tokens only. Without ``mask`` the graph attends to
  every position and is given one unpadded row per call (flash attention);
- ``packed``: one row of several chunks side by side, ``input_ids`` and ``position_ids``
  ``[1, tokens]``, ``cumulative_sequence_length`` (int32 ``[chunks + 1]``) and ``token_offset``
  (int32 ``[chunks, longest]``, each token's place in the chunks padded to the longest, real
  tokens first: ONNX Runtime's ``PackedMultiHeadAttention`` layout): attention stays within each
  chunk with no padding computed. ONNX Runtime has no CPU kernel for it;
- ``packed-reference``: the ``packed`` graph with its attention computed as ONNX Runtime's
  unfused path computes ``PackedMultiHeadAttention`` (tokens scattered to their
  ``token_offset`` places, ``MultiHeadAttention`` over each chunk's length from
  ``cumulative_sequence_length``, gathered back), from the same inputs, on the CPU: so the
  engine's packing (offsets, cumulative lengths, positions) is tested against per-chunk runs
  of the bundle. It reads shapes (a test graph, never run on a GPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .attention import MS_DOMAIN

LAYOUTS = ("rows", "packed", "packed-reference")
# the inputs of each layout, in order, as the engine feeds them (core/src/ort/engine.rs FEED_NAMES)
PACKED_INPUTS = ["input_ids", "position_ids", "cumulative_sequence_length", "token_offset"]
OPSET = 18
# the positions a packed graph's rotary tables hold: ONNX Runtime's RotaryEmbedding wants a table
# row for every token of its input, and a packed call's row holds up to this many tokens (the
# manifest's onnx.max_call_tokens: the engine packs no more into a call)
PACKED_CALL_TOKENS = 32768


@dataclass
class Layer:
    input_norm: np.ndarray
    qkv: np.ndarray  # [h, 3h]: q | k | v
    out: np.ndarray  # [h, h]
    post_norm: np.ndarray
    gate_up: np.ndarray  # [h, 2i]: gate | up
    down: np.ndarray  # [i, h]


@dataclass
class Weights:
    """A EuroBERT token classifier's weights and shape, read from a traced export."""

    embed: np.ndarray
    layers: list[Layer]
    final_norm: np.ndarray
    classifier: np.ndarray  # [h, labels]
    classifier_bias: np.ndarray
    heads: int
    epsilon: float
    inv_freq: np.ndarray  # rotary inverse frequencies, [head_dim / 2]
    scale: float  # the attention's score scale


class GraphError(ValueError):
    """A graph this module cannot read; the message says what is missing."""


def read_weights(model, heads: int) -> Weights:
    """The weights of a traced export (``to_onnx.export_onnx``: node names follow the PyTorch
    module paths), ``heads`` from the bundle's manifest."""
    from onnx import numpy_helper

    inits = {t.name: t for t in model.graph.initializer}
    constants = {n.output[0]: n for n in model.graph.node if n.op_type == "Constant"}
    nodes = list(model.graph.node)
    # the exporter shares equal weights (a tiny model's norms, all ones) through Identity nodes
    for n in nodes:
        if n.op_type == "Identity" and n.input[0] in inits:
            inits[n.output[0]] = inits[n.input[0]]

    def value(name: str) -> np.ndarray:
        if name in inits:
            return numpy_helper.to_array(inits[name])
        if name in constants:
            return numpy_helper.to_array(constants[name].attribute[0].t)
        raise GraphError(f"{name} is neither a weight nor a constant")

    def node(pattern: str, op: str):
        found = [n for n in nodes if n.op_type == op and re.search(pattern, n.name)]
        if len(found) != 1:
            raise GraphError(f"expected one {op} node matching {pattern!r}, found {len(found)}")
        return found[0]

    def weight(pattern: str, op: str = "MatMul") -> np.ndarray:
        n = node(pattern, op)
        held = [value(i) for i in n.input if i in inits or i in constants]
        if len(held) != 1:
            raise GraphError(f"{n.name}: expected one weight input")
        return held[0].astype(np.float32)

    count = len({m.group(1) for n in nodes if (m := re.search(r"/layers\.(\d+)/", n.name))})
    if any(re.search(r"_proj/Add$", n.name) for n in nodes):
        raise GraphError("projections with biases are not supported (EuroBERT has none)")
    layers = []
    for i in range(count):
        p = f"/layers\\.{i}/"
        layers.append(Layer(
            input_norm=weight(p + "input_layernorm/Mul_1$", "Mul"),
            qkv=np.concatenate([weight(p + f"self_attn/{x}_proj/MatMul$") for x in "qkv"], 1),
            out=weight(p + "self_attn/o_proj/MatMul$"),
            post_norm=weight(p + "post_attention_layernorm/Mul_1$", "Mul"),
            gate_up=np.concatenate([weight(p + "mlp/gate_proj/MatMul$"),
                                    weight(p + "mlp/up_proj/MatMul$")], 1),
            down=weight(p + "mlp/down_proj/MatMul$"),
        ))
    eps_add = node("/layers\\.0/input_layernorm/Add$", "Add")
    epsilon = float(next(value(i) for i in eps_add.input if i in constants or i in inits))
    rotary = node("/rotary_emb/Mul$", "Mul")
    inv_freq = next(value(i) for i in rotary.input if i in constants or i in inits)
    score_scale = node("/layers\\.0/self_attn/Mul_4$", "Mul")  # QK^T times the scale
    scale = float(next(value(i) for i in score_scale.input if i in constants or i in inits))
    embed = node("/embed_tokens/Gather$", "Gather")
    return Weights(
        embed=value(embed.input[0]).astype(np.float32), layers=layers,
        final_norm=weight("/model/norm/Mul_1$", "Mul"),
        classifier=weight("/classifier/MatMul$"),
        classifier_bias=weight("/classifier/Add$", "Add"), heads=heads, epsilon=epsilon,
        inv_freq=np.asarray(inv_freq, np.float32).reshape(-1), scale=scale)


def rotary_tables(inv_freq: np.ndarray, positions: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of position x frequency, ``[positions, head_dim / 2]``, in FP32 as the
    traced graph computes them per call."""
    angles = np.arange(positions, dtype=np.float32)[:, None] * inv_freq[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def build(weights: Weights, layout: str = "rows", mask: bool = False,
          max_positions: int = 8192):
    """The fused graph of ``weights`` in ``layout`` (see the module's docstring), FP32."""
    from onnx import TensorProto, helper, numpy_helper

    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {', '.join(LAYOUTS)}")
    if mask and layout != "rows":
        raise ValueError("a padding mask is for the rows layout (packed rows are not padded)")
    hidden = weights.embed.shape[1]
    inter = weights.layers[0].down.shape[0]
    labels = weights.classifier.shape[1]
    nodes, inits = [], []

    def init(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(array, name))
        return name

    def op(kind: str, inputs: list[str], name: str, outputs: int = 1, domain: str = "",
           **attrs) -> list[str]:
        outs = [f"{name}/out{k}" if outputs > 1 else f"{name}/out" for k in range(outputs)]
        nodes.append(helper.make_node(kind, inputs, outs, name=name, domain=domain, **attrs))
        return outs

    cos, sin = rotary_tables(weights.inv_freq, max_positions)
    init("rotary/cos", cos)
    init("rotary/sin", sin)
    init("split/qkv", np.array([hidden] * 3, np.int64))
    init("split/gate_up", np.array([inter] * 2, np.int64))
    init("axes/0", np.array([0], np.int64))
    init("axes/1", np.array([1], np.int64))
    batch = "rows" if layout == "rows" else 1
    length = "length" if layout == "rows" else "tokens"
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, length]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, [batch, length])]
    if mask:
        inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                                    [batch, length]))
        total = op("ReduceSum", ["attention_mask", "axes/1"], "mask/lengths", keepdims=0)[0]
        key_lengths = op("Cast", [total], "mask/int32", to=TensorProto.INT32)[0]
    if layout != "rows":
        inputs += [
            helper.make_tensor_value_info("cumulative_sequence_length", TensorProto.INT32,
                                          ["chunks_plus_1"]),
            helper.make_tensor_value_info("token_offset", TensorProto.INT32,
                                          ["chunks", "longest"])]
    if layout == "packed-reference":
        ref = _reference_places(op, init)

    x = op("Gather", [init("embed", weights.embed), "input_ids"], "embed")[0]
    residual = None
    for i, layer in enumerate(weights.layers):
        p = f"layers.{i}"
        if residual is None:
            normed = op("SimplifiedLayerNormalization", [x, init(f"{p}/input_norm",
                                                             layer.input_norm)],
                        f"{p}/input_norm", axis=-1, epsilon=weights.epsilon, stash_type=1)[0]
            residual = x
        else:
            normed, _, _, residual = op(
                "SkipSimplifiedLayerNormalization",
                [x, residual, init(f"{p}/input_norm", layer.input_norm)], f"{p}/input_norm",
                outputs=4, domain=MS_DOMAIN, epsilon=weights.epsilon)
        qkv = op("MatMul", [normed, init(f"{p}/qkv", layer.qkv)], f"{p}/qkv")[0]
        q, k, v = op("Split", [qkv, "split/qkv"], f"{p}/split_qkv", outputs=3, axis=-1)
        # rotate-half (not interleaved) as EuroBERT; head size from the tables' width
        q = op("RotaryEmbedding", [q, "position_ids", "rotary/cos", "rotary/sin"],
               f"{p}/rotary_q", domain=MS_DOMAIN, interleaved=0)[0]
        k = op("RotaryEmbedding", [k, "position_ids", "rotary/cos", "rotary/sin"],
               f"{p}/rotary_k", domain=MS_DOMAIN, interleaved=0)[0]
        attrs = {"num_heads": weights.heads, "scale": weights.scale}
        if layout == "rows":
            mha_inputs = [q, k, v] + (["", key_lengths] if mask else [])
            attended = op("MultiHeadAttention", mha_inputs, f"{p}/attention", domain=MS_DOMAIN,
                          **attrs)[0]
        elif layout == "packed":
            q2, k2, v2 = (op("Squeeze", [t, "axes/0"], f"{p}/squeeze_{n}")[0]
                          for t, n in ((q, "q"), (k, "k"), (v, "v")))
            packed = op("PackedMultiHeadAttention",
                        [q2, k2, v2, "", "token_offset", "cumulative_sequence_length"],
                        f"{p}/attention", domain=MS_DOMAIN, **attrs)[0]
            attended = op("Unsqueeze", [packed, "axes/0"], f"{p}/unsqueeze")[0]
        else:  # packed-reference: the same attention as ONNX Runtime's unfused path does it
            attended = _padded_reference(op, init, ref, q, k, v, f"{p}/attention",
                                         {**attrs, "hidden": hidden})
        x = op("MatMul", [attended, init(f"{p}/out", layer.out)], f"{p}/out")[0]
        normed, _, _, residual = op(
            "SkipSimplifiedLayerNormalization",
            [x, residual, init(f"{p}/post_norm", layer.post_norm)], f"{p}/post_norm",
            outputs=4, domain=MS_DOMAIN, epsilon=weights.epsilon)
        gate_up = op("MatMul", [normed, init(f"{p}/gate_up", layer.gate_up)], f"{p}/gate_up")[0]
        gate, up = op("Split", [gate_up, "split/gate_up"], f"{p}/split_gate_up", outputs=2,
                      axis=-1)
        silu = op("Mul", [gate, op("Sigmoid", [gate], f"{p}/sigmoid")[0]], f"{p}/silu")[0]
        x = op("MatMul", [op("Mul", [silu, up], f"{p}/gated")[0],
                          init(f"{p}/down", layer.down)], f"{p}/down")[0]
    final, _, _, _ = op("SkipSimplifiedLayerNormalization",
                        [x, residual, init("final_norm", weights.final_norm)], "final_norm",
                        outputs=4, domain=MS_DOMAIN, epsilon=weights.epsilon)
    scores = op("MatMul", [final, init("classifier", weights.classifier)], "classifier")[0]
    nodes.append(helper.make_node("Add", [scores, init("classifier/bias",
                                                       weights.classifier_bias)],
                                  ["logits"], name="classifier/bias"))
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, length, labels])
    graph = helper.make_graph(nodes, f"pulpie_rt_gpu_{layout}", inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid(MS_DOMAIN, 1)])
    model.ir_version = 9
    return model


def _reference_places(op, init) -> dict[str, str]:
    """What every layer of ``packed-reference`` reads: each packed token's place in the padded
    ``[chunks, longest]`` layout (``token_offset``'s first ``tokens`` entries), the chunks'
    lengths (differences of ``cumulative_sequence_length``) and the padded layout's shape."""
    from onnx import TensorProto

    init("ref/zero", np.array([0], np.int64))
    init("ref/one", np.array([1], np.int64))
    init("ref/two", np.array([2], np.int64))
    init("ref/huge", np.array([2**31 - 1], np.int64))
    init("ref/last", np.array([-1], np.int64))
    init("ref/column", np.array([-1, 1], np.int64))
    tokens = op("Slice", [op("Shape", ["input_ids"], "ref/ids_shape")[0], "ref/one", "ref/two"],
                "ref/tokens")[0]
    offsets = op("Reshape", ["token_offset", "ref/last"], "ref/offsets")[0]
    places = op("Cast", [op("Slice", [offsets, "ref/zero", tokens], "ref/places32")[0]],
                "ref/places", to=TensorProto.INT64)[0]
    cu = "cumulative_sequence_length"
    lengths = op("Sub", [op("Slice", [cu, "ref/one", "ref/huge"], "ref/ends")[0],
                         op("Slice", [cu, "ref/zero", "ref/last"], "ref/starts")[0]],
                 "ref/lengths")[0]
    padded = op("Shape", ["token_offset"], "ref/padded")[0]
    return {"places": places, "at": op("Reshape", [places, "ref/column"], "ref/at")[0],
            "lengths": lengths, "padded": padded,
            "cells": op("ReduceProd", [padded], "ref/cells", keepdims=1)[0]}


def _padded_reference(op, init, ref: dict[str, str], q: str, k: str, v: str, name: str,
                      attrs: dict) -> str:
    """``PackedMultiHeadAttention`` as ONNX Runtime's unfused path computes it, on the CPU: the
    packed tokens scattered to their ``token_offset`` places in ``[chunks, longest]``, attention
    over each row's first ``length`` keys (``MultiHeadAttention``'s 1-D key lengths), the tokens
    gathered back from the same places. A wrong offset, length or position changes the result."""
    from onnx import helper

    width = init(f"{name}/width", np.array([int(attrs.pop("hidden"))], np.int64))
    flat_shape = op("Concat", [ref["cells"], width], f"{name}/flat_shape", axis=0)[0]
    padded_shape = op("Concat", [ref["padded"], width], f"{name}/padded_shape", axis=0)[0]

    def scatter(x: str, tag: str) -> str:
        rows = op("Squeeze", [x, "axes/0"], f"{name}/{tag}_rows")[0]
        zeros = op("ConstantOfShape", [flat_shape], f"{name}/{tag}_zeros",
                   value=helper.make_tensor("zero", 1, [1], [0.0]))[0]
        flat = op("ScatterND", [zeros, ref["at"], rows], f"{name}/{tag}_scatter")[0]
        return op("Reshape", [flat, padded_shape], f"{name}/{tag}_padded")[0]

    padded = op("MultiHeadAttention", [scatter(q, "q"), scatter(k, "k"), scatter(v, "v"), "",
                                       ref["lengths"]], name, domain=MS_DOMAIN, **attrs)[0]
    flat = op("Reshape", [padded, flat_shape], f"{name}/flat")[0]
    gathered = op("Gather", [flat, ref["places"]], f"{name}/gather", axis=0)[0]
    return op("Unsqueeze", [gathered, "axes/0"], f"{name}/unsqueeze")[0]


def count_shape_nodes(model) -> int:
    """Nodes that read a tensor's shape (``Shape``, ``Size``): none in a GPU graph."""
    return sum(1 for n in model.graph.node if n.op_type in ("Shape", "Size"))


def from_bundle(bundle: Path, layout: str = "rows", mask: bool = False):
    """The fused graph of ``bundle``'s FP32 ``model.onnx`` (positions up to its ``max_tokens``)."""
    import json

    import onnx

    bundle = Path(bundle)
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    if manifest["onnx"].get("precision", "fp32") != "fp32":
        raise GraphError(f"{bundle}: the GPU graph is built from an FP32 bundle")
    if manifest["onnx"].get("attention", "unfused") != "unfused":
        raise GraphError(f"{bundle}: the GPU graph is built from the unfused export")
    model = onnx.load(str(bundle / manifest["onnx"]["file"]), load_external_data=True)
    weights = read_weights(model, int(manifest["model"]["num_attention_heads"]))
    positions = int(manifest.get("max_tokens", 8192))
    return build(weights, layout, mask, PACKED_CALL_TOKENS if layout != "rows" else positions)


def write_bundle(source: Path, out: Path, layout: str = "rows", mask: bool = False,
                 precision: str = "fp32") -> Path:
    """A copy of bundle ``source`` (its tokenizer, rescorers, profiles) in ``out`` whose model
    is the GPU graph of ``layout`` (FP16 weights and compute with ``precision`` fp16, FP32
    inputs and outputs); the manifest says so (``onnx.attention`` "gpu", ``onnx.layout``,
    ``onnx.inputs``)."""
    import shutil
    import tempfile

    from pulpie_rt.runtime.model.bundle import edit_manifest

    from .build import ONNX_NAME
    from .to_onnx import convert_to_fp16, save_onnx

    source, out = Path(source), Path(out)
    graph = from_bundle(source, layout, mask)
    out.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.name in (ONNX_NAME, ONNX_NAME + ".data", "manifest.json", "tensorrt"):
            continue
        if item.is_file():
            shutil.copyfile(item, out / item.name)
    (out / (ONNX_NAME + ".data")).unlink(missing_ok=True)
    external = graph.ByteSize() > 1_500_000_000
    if precision == "fp16":
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            fp32 = Path(tmp) / ONNX_NAME
            save_onnx(graph, fp32, external)
            convert_to_fp16(fp32, out / ONNX_NAME)
    elif precision == "fp32":
        save_onnx(graph, out / ONNX_NAME, external)
    else:
        raise ValueError(f"precision {precision!r}: fp32 or fp16")

    def with_gpu_graph(manifest: dict) -> None:
        manifest["onnx"] = {
            **manifest["onnx"], "file": ONNX_NAME, "opset": OPSET, "precision": precision,
            "attention": "gpu", "layout": layout, "inputs": [i.name for i in graph.graph.input],
            **({"max_call_tokens": PACKED_CALL_TOKENS} if layout != "rows" else {}),
            "external_data": (out / (ONNX_NAME + ".data")).is_file()}

    edit_manifest(source, with_gpu_graph, out=out)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m pulpie_rt.export.gpu_graph SOURCE OUT --layout rows|packed|packed-reference
    [--mask] [--precision fp16]``: a bundle's GPU graph as a bundle of its own."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pulpie_rt.export.gpu_graph",
                                     description=main.__doc__)
    parser.add_argument("source", type=Path, help="an FP32 bundle of the traced export")
    parser.add_argument("out", type=Path)
    parser.add_argument("--layout", choices=LAYOUTS, default="rows")
    parser.add_argument("--mask", action="store_true",
                        help="rows layout: an attention_mask input, rows padded to a bucket")
    parser.add_argument("--precision", choices=("fp32", "fp16"), default="fp32")
    args = parser.parse_args(argv)
    write_bundle(args.source, args.out, args.layout, args.mask, args.precision)
    print(f"{args.out}: the GPU graph of {args.source} ({args.layout}"
          f"{', padded rows' if args.mask else ''}, {args.precision})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
