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


def export_onnx(model, out_path: Path, pad_id: int) -> Path:
    """Export ``model`` (fp32, eval) to ``out_path`` with dynamic batch and sequence axes.

    Weights move to ``<name>.data`` beside the graph when they exceed protobuf's 2 GiB limit.
    """
    import onnx
    import torch

    out_path = Path(out_path)
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
            torch.onnx.export(
                wrapper, args, str(raw_path), input_names=INPUT_NAMES,
                output_names=[OUTPUT_NAME], dynamic_axes=dynamic, opset_version=OPSET,
                do_constant_folding=True, dynamo=False,
            )
        if external:
            save_onnx(onnx.load(str(raw_path), load_external_data=True), out_path, True)
        else:
            (out_path.parent / (out_path.name + EXTERNAL_DATA_SUFFIX)).unlink(missing_ok=True)
            os.replace(raw_path, out_path)
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


def convert_to_fp16(fp32_path: Path, out_path: Path) -> Path:
    """fp16 weights and compute with fp32 graph inputs/outputs (ORT's converter).

    ``onnxruntime.transformers.float16`` gives a graph ORT loads; onnxconverter-common's output
    failed to load when measured. Norm statistics stay fp32 through the converter's default
    op block list only where ORT needs it; parity (>= 99.9% SEP agreement) is the proof.
    """
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    graph = onnx.load(str(fp32_path), load_external_data=True)
    n_bytes = sum(len(t.raw_data) for t in graph.graph.initializer) // 2
    half = convert_float_to_float16(graph, keep_io_types=True, disable_shape_infer=True)
    save_onnx(half, Path(out_path), n_bytes > EXTERNAL_DATA_THRESHOLD)
    return Path(out_path)
