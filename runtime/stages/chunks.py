"""Chunks: pack a page's tokenized blocks into model-sized sequences, as the reference does.

Layout: ``[BOS] block_0 SEP block_1 SEP ... block_n SEP [EOS]``, at most ``max_tokens`` tokens
with BOS/EOS counted. A block that does not fit in the current chunk starts a new one; a block
that alone exceeds the budget is cut to ``budget - 1`` tokens and keeps its SEP.

The packing runs in the compiled core (``core/src/engine/prepare.rs``, the C library's); its
readable specification, the Python implementation it is tested against, is
``tests/spec/chunks_spec.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pulpie_rt.runtime import native


@dataclass
class Chunk:
    """One model input: its token ids and the indices (into the page's blocks) it holds."""

    token_ids: list[int]
    block_indices: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.token_ids)


def pack_chunks(
    block_token_ids: list[list[int]],
    max_tokens: int = 8192,
    sep_id: int | None = None,
    bos_id: int | None = None,
    eos_id: int | None = None,
) -> list[Chunk]:
    """Greedy packing of blocks into chunks of at most ``max_tokens`` tokens (token ids in
    [0, 2**32), as a tokenizer gives them)."""
    if sep_id is None:
        raise ValueError("sep_id is required")
    token_ids, blocks = native.pack_chunks(block_token_ids, max_tokens, sep_id, bos_id, eos_id)
    return [Chunk(ids, indices) for ids, indices in zip(token_ids, blocks, strict=True)]
