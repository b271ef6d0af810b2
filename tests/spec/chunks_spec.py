"""The specification of chunk packing (``runtime.stages.chunks``, which runs on the compiled
core): ``tests/test_chunks.py`` compares the two on the dev pages and on edge cases.

Chunks: pack a page's tokenized blocks into model-sized sequences, as the reference does.

Layout: ``[BOS] block_0 SEP block_1 SEP ... block_n SEP [EOS]``, at most ``max_tokens`` tokens
with BOS/EOS counted. A block that does not fit in the current chunk starts a new one; a block
that alone exceeds the budget is cut to ``budget - 1`` tokens and keeps its SEP.
"""

from __future__ import annotations

from pulpie_rt.runtime.stages.chunks import Chunk


def pack_chunks(
    block_token_ids: list[list[int]],
    max_tokens: int = 8192,
    sep_id: int | None = None,
    bos_id: int | None = None,
    eos_id: int | None = None,
) -> list[Chunk]:
    """Greedy packing of blocks into chunks of at most ``max_tokens`` tokens."""
    if sep_id is None:
        raise ValueError("sep_id is required")
    head = [] if bos_id is None else [bos_id]
    tail = [] if eos_id is None else [eos_id]
    budget = max_tokens - len(head) - len(tail)

    chunks: list[Chunk] = []
    body: list[int] = []
    indices: list[int] = []

    for index, ids in enumerate(block_token_ids):
        cost = len(ids) + 1  # the block and its SEP
        if len(body) + cost > budget:
            if body:
                chunks.append(Chunk(head + body + tail, indices))
            body, indices = [], []
            if cost > budget:
                # Same slice as the reference, including its behaviour for tiny budgets.
                body = [*ids[: budget - 1], sep_id]
                indices = [index]
                continue
        body.extend(ids)
        body.append(sep_id)
        indices.append(index)
    if body:
        chunks.append(Chunk(head + body + tail, indices))
    return chunks
