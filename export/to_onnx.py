"""PyTorch EuroBERT token classifier -> ``model.onnx`` (fp32, optionally converted to fp16).

Exporter: ``torch.onnx.export(dynamo=False)`` at opset 18. optimum-onnx (0.1.0, the newest)
requires transformers < 4.58 while native EuroBERT needs transformers >= 5, and it has no
EuroBERT ONNX config; the TorchScript exporter matches PyTorch to ~1e-5 on this architecture.
(Opset 23 with the default ``position_ids`` broke batches > 1 when this was measured.)

Graph interface: inputs ``input_ids`` and ``attention_mask`` (int64 ``[batch, seq]``), output
``logits`` (``[batch, seq, 2]``, float32 even in an fp16 graph).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

OPSET = 18
INPUT_NAMES = ["input_ids", "attention_mask"]
OUTPUT_NAME = "logits"
EXPORT_METHOD = f"torch.onnx.export(dynamo=False, opset_version={OPSET})"
# protobuf refuses files over 2 GiB; stay well below it before moving weights out.
EXTERNAL_DATA_THRESHOLD = 1_500_000_000
EXTERNAL_DATA_SUFFIX = ".data"
# Node-name fragments (the exporter names nodes by PyTorch module path) of the parts kept in
# FP32 inside FP16 graphs and engines: RMSNorm squares activations (|x| > 256 overflows FP16),
# softmax sums exponentials, and rotary cos/sin need the precision at positions up to 8192.
FP32_SCOPES = ("layernorm/", "/norm/", "rotary_emb/", "Softmax")


def fp32_node_names(graph) -> list[str]:
    """Names of the nodes of an ONNX graph that must stay FP32 (see ``FP32_SCOPES``)."""
    return [node.name for node in graph.graph.node if any(s in node.name for s in FP32_SCOPES)]


def _logits_module(model):
    import torch

    class LogitsOnly(torch.nn.Module):
        """``(input_ids, attention_mask) -> logits``: the only outputs the runtime reads."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).logits

    return LogitsOnly(model).eval()


def trace_inputs(pad_id: int, vocab_size: int):
    """Two rows, the second padded: the mask must be traced as data, not folded away.

    transformers skips the attention mask when it is all ones; tracing with an unpadded batch
    would freeze that shortcut into the graph and padded batches would then attend to padding.
    """
    import torch

    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, vocab_size, (2, 16), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 9:] = 0
    input_ids[1, 9:] = pad_id
    return input_ids, attention_mask


ATTENTIONS = ("unfused", "fused")


def export_onnx(model, out_path: Path, pad_id: int, attention: str = "unfused") -> Path:
    """Export ``model`` (fp32, eval) to ``out_path`` with dynamic batch and sequence axes.

    ``attention``: ``unfused`` (MatMul/Softmax/MatMul, every provider) or ``fused`` (one
    ``com.microsoft.MultiHeadAttention`` per layer: ``export/attention.py``).
    Weights move to ``<name>.data`` beside the graph when they exceed protobuf's 2 GiB limit.
    """
    import onnx
    import torch

    from . import attention as fused

    if attention not in ATTENTIONS:
        raise ValueError(f"attention {attention!r}: one of {', '.join(ATTENTIONS)}")
    out_path = Path(out_path)
    is_fused = attention == "fused"
    exported_attention = model.config._attn_implementation
    if is_fused:
        model.set_attn_implementation(fused.register())
    wrapper = _logits_module(model)
    args = trace_inputs(pad_id, model.config.vocab_size)
    dynamic = {name: {0: "batch", 1: "seq"} for name in [*INPUT_NAMES, OUTPUT_NAME]}
    n_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    external = n_bytes > EXTERNAL_DATA_THRESHOLD
    with tempfile.TemporaryDirectory(dir=out_path.parent) as tmp:
        raw_path = Path(tmp) / "raw.onnx"
        # The tracer's warnings concern shapes and index signs that do not vary here (positions
        # and mask indices are never negative); verification measures the result instead.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                torch.onnx.export(
                    wrapper, args, str(raw_path), input_names=INPUT_NAMES,
                    output_names=[OUTPUT_NAME], dynamic_axes=dynamic, opset_version=OPSET,
                    do_constant_folding=True, dynamo=False,
                    custom_opsets={fused.MS_DOMAIN: 1} if is_fused else None,
                )
            finally:
                model.set_attn_implementation(exported_attention)
        if not is_fused and not external:
            (out_path.parent / (out_path.name + EXTERNAL_DATA_SUFFIX)).unlink(missing_ok=True)
            os.replace(raw_path, out_path)
        else:  # loaded once: the fused nodes counted, the weights moved out, or both
            graph = onnx.load(str(raw_path), load_external_data=True)
            if is_fused and fused.count_fused_nodes(graph) != model.config.num_hidden_layers:
                raise RuntimeError("fused attention: not one MultiHeadAttention node per layer")
            save_onnx(graph, out_path, external)
    return out_path


def save_onnx(graph, out_path: Path, external: bool) -> None:
    """Write ``graph``; with ``external`` all weights go to one ``<name>.data`` file."""
    import onnx

    data_name = out_path.name + EXTERNAL_DATA_SUFFIX
    if os.path.exists(out_path.parent / data_name):
        os.remove(out_path.parent / data_name)
    if external:
        onnx.save_model(graph, str(out_path), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=data_name, size_threshold=1024)
    else:
        onnx.save_model(graph, str(out_path))


def drop_fp16_round_trips(model) -> int:
    """Remove the FP32 -> FP16 -> FP32 cast pairs the converter puts between two kept-FP32 nodes.

    ``convert_float_to_float16`` casts every output of a blocked node to FP16 and back for the
    next blocked node, so positions, rotary angles and norm statistics would still be rounded
    to FP16 (positions above 2048 lose integers). Consumers of the round trip read the FP32
    value directly instead; casts left without consumers go. Returns the pairs removed.
    """
    nodes = list(model.graph.node)
    by_output = {out: node for node in nodes for out in node.output}
    rewired: dict[str, str] = {}
    for node in nodes:
        if node.op_type != "Cast" or not node.name.endswith("_cast_to_fp32_node"):
            continue
        half = by_output.get(node.input[0])
        if half is None or half.op_type != "Cast" or not half.name.endswith("_cast_to_fp16_node"):
            continue
        rewired[node.output[0]] = half.input[0]
    if not rewired:
        return 0
    for node in nodes:
        for i, name in enumerate(node.input):
            if name in rewired:
                node.input[i] = rewired[name]
    graph_outputs = {o.name for o in model.graph.output}
    while True:  # drop casts nobody reads any more (fp32 casts first, then orphaned fp16 ones)
        read = {name for node in model.graph.node for name in node.input} | graph_outputs
        dead = [node for node in model.graph.node
                if node.op_type == "Cast" and node.name.endswith(("_cast_to_fp32_node",
                                                                  "_cast_to_fp16_node"))
                and not any(out in read for out in node.output)]
        if not dead:
            break
        for node in dead:
            model.graph.node.remove(node)
    return len(rewired)


def convert_to_fp16(fp32_path: Path, out_path: Path) -> Path:
    """fp16 weights and compute with fp32 graph inputs/outputs (ORT's converter).

    ``onnxruntime.transformers.float16`` gives a graph ORT loads; onnxconverter-common's output
    failed to load when measured. RMSNorm, softmax and rotary nodes stay FP32 (the converter
    inserts the casts); parity (>= 99.9% SEP agreement) is the proof.
    """
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    fp32_path = Path(fp32_path)
    # The converter needs every tensor's type to put casts at the FP32 islands' borders.
    # Shape inference by path also works past protobuf's 2 GiB (external data).
    inferred = fp32_path.with_name(fp32_path.stem + ".inferred.onnx")
    onnx.shape_inference.infer_shapes_path(str(fp32_path), str(inferred))
    graph = onnx.load(str(inferred), load_external_data=True)
    inferred.unlink()
    n_bytes = sum(len(t.raw_data) for t in graph.graph.initializer) // 2
    half = convert_float_to_float16(graph, keep_io_types=True, disable_shape_infer=True,
                                    node_block_list=fp32_node_names(graph))
    drop_fp16_round_trips(half)
    save_onnx(half, Path(out_path), n_bytes > EXTERNAL_DATA_THRESHOLD)
    return Path(out_path)
