"""Forward-pass FLOPs of a EuroBERT token classifier, from its config and real token counts.

Counted as 2 FLOPs per multiply-add, useful work only (padding excluded), per chunk of ``n``
tokens, per layer:

- projections: q and o are ``hidden x (heads*head_dim)``, k and v ``hidden x (kv_heads*head_dim)``
  -> ``2 n hidden (2 a + 2 kv)`` with ``a = heads*head_dim``, ``kv = kv_heads*head_dim``;
- SiLU-gated MLP: gate, up and down, each ``hidden x intermediate`` -> ``6 n hidden inter``;
- attention (bidirectional, full ``n x n``): ``Q K^T`` and ``softmax(.) V``, each ``2 n^2 a``
  -> ``4 n^2 a``;

plus the classifier head ``2 n hidden labels``. The embedding lookup, norms, RoPE and softmax
are memory-bound elementwise work and not counted (well under 1% of the total).

For Orange Small (hidden 768, 12 layers, 12 heads, intermediate 3072) that is 226.5 MFLOP per
token of matmuls plus ``4 * 12 * 768 * n`` of attention: about 0.42 GFLOP per token at the mean
chunk of 5,153 tokens, attention nearly half of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# EuroBERT-210m, the backbone of pulpie-orange-small (transformers' EuroBertConfig defaults).
ORANGE_SMALL_SHAPE: dict[str, int] = {
    "vocab_size": 128256,
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_key_value_heads": 12,
    "num_labels": 2,
}


def model_shape(config: Mapping[str, Any]) -> dict[str, int]:
    """The numbers the FLOP count needs, from an HF ``config.json`` or a bundle manifest."""
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = int(config.get("head_dim") or hidden // heads)
    kv_heads = int(config.get("num_key_value_heads") or heads)
    return {
        "hidden_size": hidden,
        "intermediate_size": int(config["intermediate_size"]),
        "num_hidden_layers": int(config["num_hidden_layers"]),
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "num_labels": int(config.get("num_labels") or 2),
    }


def linear_flops_per_token(config: Mapping[str, Any]) -> int:
    """Matmul FLOPs per token that do not depend on the sequence length."""
    s = model_shape(config)
    attn_width = s["num_attention_heads"] * s["head_dim"]
    kv_width = s["num_key_value_heads"] * s["head_dim"]
    hidden = s["hidden_size"]
    per_layer = 2 * hidden * (2 * attn_width + 2 * kv_width) + 6 * hidden * s["intermediate_size"]
    return s["num_hidden_layers"] * per_layer + 2 * hidden * s["num_labels"]


def chunk_flops(config: Mapping[str, Any], n_tokens: int) -> int:
    """FLOPs of one forward pass over one chunk of ``n_tokens`` real tokens."""
    s = model_shape(config)
    attn_width = s["num_attention_heads"] * s["head_dim"]
    attention = s["num_hidden_layers"] * 4 * n_tokens * n_tokens * attn_width
    return n_tokens * linear_flops_per_token(config) + attention


def page_flops(config: Mapping[str, Any], chunk_lengths: Iterable[int]) -> int:
    """FLOPs of one page: the sum over its chunks (attention is within a chunk only)."""
    return sum(chunk_flops(config, n) for n in chunk_lengths)
