"""Checkpoint -> verified bundle directory (``model.onnx``, ``tokenizer.json``, manifest)."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from pulpie_rt.runtime.model.bundle import MANIFEST_NAME, TOKENIZER_NAME, write_manifest

from .attention import ROWS_PER_CALL
from .checkpoint import Checkpoint, load_checkpoint
from .to_onnx import ATTENTIONS, EXPORT_METHOD, OPSET, OUTPUT_NAME, convert_to_fp16, export_onnx
from .verify import VerificationError, VerifySettings, settings_for, verify_bundle

ONNX_NAME = "model.onnx"
FAILED_NAME = "verification-failed.json"
MAX_TOKENS = 8192
PRECISIONS = ("fp32", "fp16")


def _versions() -> dict:
    import onnx
    import onnxruntime
    import torch
    import transformers

    from pulpie_rt.version import __version__ as pulpie_rt_version

    return {"pulpie_rt": pulpie_rt_version, "torch": torch.__version__,
            "transformers": transformers.__version__, "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__, "method": EXPORT_METHOD}


def manifest_for(checkpoint: Checkpoint, precision: str, external_data: bool,
                 verification: dict | None, max_tokens: int = MAX_TOKENS,
                 attention: str = "unfused") -> dict:
    """The bundle manifest (schema: ``pulpie_rt.runtime.model.bundle``)."""
    config = checkpoint.config
    ids = checkpoint.token_ids
    # a fused graph has no padding mask, so no attention_mask input (export/attention.py):
    # the engine gives a graph without one a single unpadded chunk per model call
    inputs = ["input_ids"] if attention == "fused" else ["input_ids", "attention_mask"]
    onnx_entry = {"file": ONNX_NAME, "opset": OPSET, "precision": precision,
                  "inputs": inputs, "output": OUTPUT_NAME, "external_data": external_data}
    if attention == "fused":
        onnx_entry["attention"] = "fused"
    return {
        "source": {"id": checkpoint.source_id, "revision": checkpoint.revision,
                   "weights_sha256": checkpoint.weights_sha256},
        "model": {"architecture": "EuroBertForTokenClassification", "num_labels": 2,
                  "hidden_size": config.hidden_size,
                  "num_hidden_layers": config.num_hidden_layers,
                  "num_attention_heads": config.num_attention_heads,
                  "intermediate_size": config.intermediate_size,
                  "vocab_size": config.vocab_size, "rope_theta": checkpoint.rope_theta},
        "tokens": {"bos_id": ids["bos_id"], "eos_id": ids["eos_id"], "sep_id": ids["sep_id"],
                   "pad_id": ids["pad_id"], "sep_token": "<|sep|>"},
        "max_tokens": max_tokens,
        "labels": {"0": "other", "1": "main"},
        "onnx": onnx_entry,
        "exporter": _versions(),
        "verification": verification,
    }


def export_bundle(model: str | Path, out_dir: str | Path, precision: str = "fp32",
                  verify: bool = True, settings: VerifySettings | None = None,
                  log=print, max_tokens: int = MAX_TOKENS, attention: str = "unfused") -> Path:
    """Export ``model`` (hub name/id or checkpoint directory) to a bundle in ``out_dir``.

    ``max_tokens`` is the chunk size the runtime packs for this model: the Orange checkpoints
    were trained on 8,192-token chunks; a model trained on shorter chunks (the embedded
    default) says so here, and verification uses chunks of that size. ``attention``:
    ``unfused`` or ``fused`` (ONNX Runtime's MultiHeadAttention, for GPUs: export/attention.py).

    With ``verify`` the graph is checked against PyTorch on real chunks; a failing graph leaves
    no ``manifest.json`` (so the runtime refuses the folder) and ``verification-failed.json``
    with the measurements, and raises ``VerificationError``.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, not {attention!r}")
    if not 16 <= max_tokens <= MAX_TOKENS:
        raise ValueError(f"max_tokens must be within 16..{MAX_TOKENS}, not {max_tokens}")
    start = time.perf_counter()
    checkpoint = load_checkpoint(model)
    log(f"loaded {checkpoint.source_id} ({checkpoint.config.num_hidden_layers} layers, "
        f"hidden {checkpoint.config.hidden_size}) strictly in {time.perf_counter() - start:.1f}s")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for stale in (MANIFEST_NAME, FAILED_NAME):
        (out / stale).unlink(missing_ok=True)

    onnx_path = out / ONNX_NAME
    start = time.perf_counter()
    if precision == "fp32":
        export_onnx(checkpoint.model, onnx_path, checkpoint.token_ids["pad_id"], attention)
    else:
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            fp32_path = export_onnx(checkpoint.model, Path(tmp) / ONNX_NAME,
                                    checkpoint.token_ids["pad_id"], attention)
            convert_to_fp16(fp32_path, onnx_path)
    external = (out / (ONNX_NAME + ".data")).is_file()
    log(f"exported {onnx_path} ({precision}) in {time.perf_counter() - start:.1f}s")
    shutil.copyfile(checkpoint.path / TOKENIZER_NAME, out / TOKENIZER_NAME)

    verification = None
    if verify:
        try:
            if settings is None:
                settings = settings_for(checkpoint.config)
                settings = replace(settings, max_tokens=min(settings.max_tokens, max_tokens))
            if attention == "fused":  # checked on what the engine feeds it: one row per call
                settings = replace(settings, max_rows=ROWS_PER_CALL)
            verification = verify_bundle(checkpoint.model, onnx_path, out / TOKENIZER_NAME,
                                         checkpoint.token_ids, precision, settings)
        except VerificationError as exc:
            (out / FAILED_NAME).write_text(json.dumps({"error": str(exc)}, indent=2) + "\n",
                                           encoding="utf-8")
            raise
        log(f"verified on {verification['chunks']} real chunks "
            f"({verification['chunk_tokens_min']}-{verification['chunk_tokens_max']} tokens): "
            f"max |dlogit| {verification['max_abs_logit_diff']:.2e}, SEP-label agreement "
            f"{verification['sep_agreement']:.4%} ({verification['sep_positions']} SEPs)")
    write_manifest(out, manifest_for(checkpoint, precision, external, verification, max_tokens,
                                     attention))
    return out
