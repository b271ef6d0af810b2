"""Fused attention in the exported graph: ONNX Runtime's ``com.microsoft.MultiHeadAttention``.

The TorchScript exporter writes EuroBERT's attention unfused: per head a MatMul to the
``[seq, seq]`` scores, the mask added, a Softmax (kept FP32 in FP16 graphs), a MatMul with the
values. At 8,192 tokens that is 12 × 8,192 × 8,192 scores per layer written to and read back
from GPU memory, in FP16 and again in FP32: on an H200 an Orange-Small-shaped model ran at 3.5%
of the chip's FP16 peak, the GPU busy throughout (bench/results/gpu-20261204-h200). With
``attention="fused"`` the export puts one ``MultiHeadAttention`` node per layer in its place,
which ONNX Runtime's CUDA provider runs as a memory-efficient kernel (the scores are never
written) and its CPU provider runs too.

The padding mask becomes the node's additive ``attention_bias`` ``[batch, 1, seq, seq]``:
0 on real keys, ``MASK_VALUE`` on padding. The CUDA kernel takes a bias only when the sequence
length is a multiple of ``PAD_MULTIPLE`` (else ONNX Runtime runs its own unfused kernel,
correct but slow), so such a bundle's manifest asks the engine to pad each batch to it
(``onnx.pad_multiple``).
"""

from __future__ import annotations

# the additive bias on a padding key: exp(-30000) is 0 in FP32 and FP16 alike, and it stays
# finite in FP16 (a row of -inf would make NaN in padding rows)
MASK_VALUE = -30000.0
# CUDA's memory-efficient attention with a bias needs seq % (4 × element bytes) == 0: 16 for FP32
PAD_MULTIPLE = 16
ATTENTION_NAME = "pulpie_rt_fused"
MHA_OP = "MultiHeadAttention"
MS_DOMAIN = "com.microsoft"


def _mha_function():
    import torch

    class FusedAttention(torch.autograd.Function):
        """SDPA in PyTorch (what the trace runs), one ``MultiHeadAttention`` node in ONNX."""

        @staticmethod
        def forward(ctx, query, key, value, bias, num_heads: int, scale: float):
            out = torch.nn.functional.scaled_dot_product_attention(
                query, key, value, attn_mask=bias, scale=scale)
            batch, heads, seq, head_size = out.shape
            return out.transpose(1, 2).reshape(batch, seq, heads * head_size)

        @staticmethod
        def symbolic(g, query, key, value, bias, num_heads: int, scale: float):
            shape = g.op("Constant", value_t=torch.tensor([0, 0, -1], dtype=torch.int64))

            def bsd(x):  # [batch, heads, seq, head] -> [batch, seq, heads × head]
                return g.op("Reshape", g.op("Transpose", x, perm_i=[0, 2, 1, 3]), shape)

            # q, k, v and the bias; place_bias_inputs moves the bias to its slot (5) afterwards
            return g.op(f"{MS_DOMAIN}::{MHA_OP}", bsd(query), bsd(key), bsd(value), bias,
                        num_heads_i=num_heads, scale_f=scale)

    return FusedAttention


class BiasHolder:
    """The ``[batch, 1, seq, seq]`` bias of the batch being traced, set by the export wrapper
    before each forward (the attention function receives transformers' own mask instead)."""

    bias = None


def register(holder: BiasHolder):
    """Register the fused attention with transformers; returns its implementation name."""
    from transformers import AttentionInterface

    function = _mha_function()

    def fused_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                        **_kwargs):
        if holder.bias is None:
            raise RuntimeError("fused attention needs the export wrapper's padding bias")
        # plain ints: shapes read off a traced tensor are graph values, not attributes
        heads = int(module.config.num_attention_heads)
        if int(module.config.num_key_value_heads) != heads:
            raise ValueError("fused attention: grouped key/value heads are not supported")
        scale = float(scaling if scaling is not None else module.head_dim ** -0.5)
        return function.apply(query, key, value, holder.bias, heads, scale), None

    AttentionInterface.register(ATTENTION_NAME, fused_attention)
    return ATTENTION_NAME


def padding_bias(attention_mask):
    """``[batch, seq]`` 1/0 mask -> ``[batch, 1, seq, seq]`` additive bias (float32)."""
    import torch

    keys = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * MASK_VALUE
    seq = attention_mask.shape[1]
    return keys.expand(attention_mask.shape[0], 1, seq, seq)


def place_bias_inputs(model) -> int:
    """Move each MultiHeadAttention node's 4th input (the bias) to its attention_bias slot
    (index 5; 3 bias and 4 key_padding_mask left empty); returns the number of nodes."""
    count = 0
    for node in model.graph.node:
        if node.op_type == MHA_OP and node.domain == MS_DOMAIN:
            if len(node.input) == 4:
                q, k, v, bias = node.input
                del node.input[:]
                node.input.extend([q, k, v, "", "", bias])
            count += 1
    return count
