"""Fused attention in the exported graph: ONNX Runtime's ``com.microsoft.MultiHeadAttention``.

The TorchScript exporter writes EuroBERT's attention unfused: per head a MatMul to the
``[seq, seq]`` scores, the mask added, a Softmax (kept FP32 in FP16 graphs), a MatMul with the
values. At 8,192 tokens that is 12 × 8,192 × 8,192 scores per layer written to and read back
from GPU memory, in FP16 and again in FP32: on an H200 an Orange-Small-shaped model ran at 3.5%
of the chip's FP16 peak, the GPU busy throughout (bench/results/gpu-20261204-h200). With
``attention="fused"`` the export puts one ``MultiHeadAttention`` node per layer in its place,
which ONNX Runtime's CUDA provider runs as flash attention (the scores are never written) and
its CPU provider runs too.

The node gets no padding mask: flash attention takes none (with an attention bias ONNX Runtime
falls back to its memory-efficient kernel: 28.6 pages/s against flash's 47.6 on the H200,
bench/results/gpu-20261204-h200-attention-kernels). So the graph attends to every position it
is given and has no ``attention_mask`` input (the exporter drops what nothing reads); the core
gives a graph without that input one unpadded chunk per model call (``ROWS_PER_CALL``) and
refuses to pad for it (core/src/ort/engine.rs).
"""

from __future__ import annotations

# one chunk per model call, unpadded: the graph has no padding mask (above)
ROWS_PER_CALL = 1
ATTENTION_NAME = "pulpie_rt_fused"
MHA_OP = "MultiHeadAttention"
MS_DOMAIN = "com.microsoft"


def _mha_function():
    import torch

    class FusedAttention(torch.autograd.Function):
        """SDPA in PyTorch (what the trace runs), one ``MultiHeadAttention`` node in ONNX."""

        @staticmethod
        def forward(ctx, query, key, value, num_heads: int, scale: float):
            out = torch.nn.functional.scaled_dot_product_attention(query, key, value, scale=scale)
            batch, heads, seq, head_size = out.shape
            return out.transpose(1, 2).reshape(batch, seq, heads * head_size)

        @staticmethod
        def symbolic(g, query, key, value, num_heads: int, scale: float):
            shape = g.op("Constant", value_t=torch.tensor([0, 0, -1], dtype=torch.int64))

            def bsd(x):  # [batch, heads, seq, head] -> [batch, seq, heads × head]
                return g.op("Reshape", g.op("Transpose", x, perm_i=[0, 2, 1, 3]), shape)

            return g.op(f"{MS_DOMAIN}::{MHA_OP}", bsd(query), bsd(key), bsd(value),
                        num_heads_i=num_heads, scale_f=scale)

    return FusedAttention


def register() -> str:
    """Register the fused attention with transformers; returns its implementation name."""
    from transformers import AttentionInterface

    function = _mha_function()

    def fused_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                        **_kwargs):
        # attention_mask is not read: the engine gives this graph one unpadded row per call
        # plain ints: shapes read off a traced tensor are graph values, not attributes
        heads = int(module.config.num_attention_heads)
        if int(module.config.num_key_value_heads) != heads:
            raise ValueError("fused attention: grouped key/value heads are not supported")
        scale = float(scaling if scaling is not None else module.head_dim ** -0.5)
        return function.apply(query, key, value, heads, scale), None

    AttentionInterface.register(ATTENTION_NAME, fused_attention)
    return ATTENTION_NAME


def count_fused_nodes(model) -> int:
    """The graph's MultiHeadAttention nodes."""
    return sum(1 for node in model.graph.node
               if node.op_type == MHA_OP and node.domain == MS_DOMAIN)
