"""Find a Pulpie checkpoint (hub name or local directory) and load it strictly into PyTorch.

Strict means: the native transformers-5 ``EuroBertForTokenClassification`` is built from the
checkpoint's ``config.json`` (any ``auto_map`` to hub remote code is ignored: the native class
has the same tensor names), every tensor of the checkpoint is used, none is missing, every shape
matches, and the rotary ``inv_freq`` table (a non-persistent buffer, never in the checkpoint) is
recomputed from the checkpoint's RoPE theta exactly as the reference does after loading.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulpie_rt.runtime.constants import SEP_TOKEN
from pulpie_rt.runtime.digest import files_sha256
from pulpie_rt.runtime.model.hub import fetch_checkpoint, hub_id_for, model_names

# The reference (pulpie 0.0.2) recomputes inv_freq with ``getattr(config, "rope_theta",
# 250000.0)``; a config without any theta therefore means 250000 there, not transformers'
# EuroBertConfig default of 10000.
REFERENCE_ROPE_THETA = 250000.0
NUM_LABELS = 2


class CheckpointError(ValueError):
    """A checkpoint that cannot be exported faithfully; the message says why and what to do."""


@dataclass
class Checkpoint:
    """A strictly loaded checkpoint: the fp32 eval-mode model and what the bundle records."""

    model: Any  # transformers EuroBertForTokenClassification
    path: Path
    source_id: str
    revision: str | None
    weights_sha256: str
    rope_theta: float
    token_ids: dict[str, int | None] = field(default_factory=dict)  # bos, eos, sep, pad

    @property
    def config(self):
        return self.model.config


def resolve_model(model: str) -> tuple[Path, str, str | None]:
    """``(local directory, source id, revision)`` for a local path or a hub name/id.

    A hub name needs the hub or the local Hugging Face cache; when neither has it this fails at
    once (no retries) with ``HubError``, naming the hub id and how to pass a local directory.
    """
    local = Path(model).expanduser()
    if local.is_dir():
        return local.resolve(), str(local.resolve()), None
    hub_id = hub_id_for(model)
    if hub_id is None or local.exists():
        raise CheckpointError(
            f"{model!r} is neither a checkpoint directory nor a model name "
            f"({model_names()} or a hub id like owner/name)"
        )
    path, revision = fetch_checkpoint(model, hub_id)
    return path, hub_id, revision


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent}: no {path.name}") from None
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from None


def rope_theta_of(raw_config: dict) -> float:
    """The RoPE theta the reference uses for this config (see ``REFERENCE_ROPE_THETA``)."""
    if raw_config.get("rope_theta") is not None:
        return float(raw_config["rope_theta"])
    params = raw_config.get("rope_parameters") or {}
    if params.get("rope_theta") is not None:
        return float(params["rope_theta"])
    return REFERENCE_ROPE_THETA


def eurobert_config(raw_config: dict, rope_theta: float):
    """A native ``EuroBertConfig`` from a checkpoint's ``config.json`` (remote code ignored)."""
    from transformers import EuroBertConfig

    if raw_config.get("model_type") != "eurobert":
        raise CheckpointError(
            f"model_type is {raw_config.get('model_type')!r}: only EuroBERT token classifiers "
            "(model_type 'eurobert') can be exported"
        )
    wanted = {k: v for k, v in raw_config.items()
              if k not in {"auto_map", "rope_theta", "rope_scaling", "rope_parameters",
                           "transformers_version", "architectures", "torch_dtype", "dtype"}}
    num_labels = len(raw_config.get("id2label") or {}) or raw_config.get("num_labels")
    if num_labels not in (None, NUM_LABELS):
        raise CheckpointError(f"the checkpoint has {num_labels} labels; Pulpie models have 2")
    wanted["num_labels"] = NUM_LABELS
    wanted.pop("id2label", None)
    wanted.pop("label2id", None)
    # The reference recomputes default (unscaled) RoPE frequencies from theta after loading.
    wanted["rope_parameters"] = {"rope_type": "default", "rope_theta": rope_theta}
    config = EuroBertConfig(**wanted)
    # Eager attention: the reference's CPU path, and a plain MatMul/Softmax graph in ONNX.
    config._attn_implementation = "eager"
    return config


def _weight_files(path: Path) -> list[Path]:
    index = path / "model.safetensors.index.json"
    if index.is_file():
        names = sorted(set(_read_json(index)["weight_map"].values()))
        return [path / name for name in names]
    single = path / "model.safetensors"
    if single.is_file():
        return [single]
    if (path / "pytorch_model.bin").is_file():
        raise CheckpointError(f"{path}: only pytorch_model.bin found; convert it to safetensors "
                              "(the exporter never unpickles weights)")
    raise CheckpointError(f"{path}: no model.safetensors (or sharded index) found")


def _tensor_mismatch_message(path: Path, missing: list[str], extra: list[str],
                             shapes: list[str]) -> str:
    parts = [f"{path}: checkpoint tensors do not match EuroBertForTokenClassification"]
    if missing:
        parts.append(f"missing {len(missing)}: {', '.join(missing)}")
    if extra:
        parts.append(f"unexpected {len(extra)}: {', '.join(extra)}")
    if shapes:
        parts.append(f"wrong shape {len(shapes)}: {', '.join(shapes)}")
    return "; ".join(parts)


def load_state_dict_strict(model, path: Path, files: list[Path]) -> None:
    """Load every checkpoint tensor into ``model`` (fp32); refuse any missing/extra/misshapen."""
    import torch
    from safetensors import safe_open

    expected = model.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    for file in files:
        with safe_open(str(file), framework="pt") as fh:
            for name in fh.keys():  # noqa: SIM118 - safe_open is not a mapping
                tensors[name] = fh.get_tensor(name)
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    shapes = sorted(
        f"{name} {tuple(tensors[name].shape)} != {tuple(expected[name].shape)}"
        for name in set(expected) & set(tensors)
        if tuple(tensors[name].shape) != tuple(expected[name].shape)
    )
    if missing or extra or shapes:
        raise CheckpointError(_tensor_mismatch_message(path, missing, extra, shapes))
    model.load_state_dict({k: v.to(torch.float32) for k, v in tensors.items()},
                          strict=True, assign=True)


def restore_rotary(model, rope_theta: float) -> None:
    """Recompute the rotary inverse frequencies (never stored in checkpoints) on the CPU."""
    import torch

    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    rotary = model.model.rotary_emb
    rotary.inv_freq = inv_freq
    rotary.original_inv_freq = inv_freq.clone()
    rotary.attention_scaling = 1.0


def _token_ids(path: Path, config) -> dict[str, int | None]:
    """bos/eos/sep/pad ids exactly as the reference derives them (AutoTokenizer + config)."""
    from transformers import AutoTokenizer

    if not (path / "tokenizer.json").is_file():
        raise CheckpointError(f"{path}: no tokenizer.json (the runtime needs a fast tokenizer)")
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    vocab = tokenizer.get_vocab()
    if SEP_TOKEN not in vocab:
        raise CheckpointError(
            f"{path}: the tokenizer has no {SEP_TOKEN} token; the reference would append one "
            "with a randomly initialised embedding, which cannot be exported reproducibly"
        )
    sep_id = vocab[SEP_TOKEN]
    if sep_id >= config.vocab_size:
        raise CheckpointError(f"{path}: {SEP_TOKEN} has id {sep_id} but the model's "
                              f"vocab_size is {config.vocab_size}")
    return {"bos_id": tokenizer.bos_token_id, "eos_id": tokenizer.eos_token_id,
            "sep_id": sep_id, "pad_id": config.pad_token_id or 0}


def load_checkpoint(model: str | Path) -> Checkpoint:
    """Resolve ``model`` (hub name/id or directory) and load it strictly, fp32, eval mode."""
    import torch
    from transformers import EuroBertForTokenClassification

    path, source_id, revision = resolve_model(str(model))
    raw = _read_json(path / "config.json")
    theta = rope_theta_of(raw)
    config = eurobert_config(raw, theta)
    files = _weight_files(path)
    token_ids = _token_ids(path, config)

    with torch.device("meta"):
        net = EuroBertForTokenClassification(config)
    load_state_dict_strict(net, path, files)
    restore_rotary(net, theta)
    left_on_meta = [name for name, t in [*net.named_parameters(), *net.named_buffers()]
                    if t.is_meta]
    if left_on_meta:  # a buffer the checkpoint cannot hold and we did not recompute
        raise CheckpointError(f"{path}: tensors not restored after loading: "
                              f"{', '.join(left_on_meta)}")
    net.eval()
    return Checkpoint(model=net, path=path, source_id=source_id, revision=revision,
                      weights_sha256=files_sha256(files), rope_theta=theta, token_ids=token_ids)
