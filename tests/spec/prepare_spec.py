"""The specification of ``Preparer.prepare`` past the decode stage, in Python on the stages'
Python API and the Python twins of its steps (``cut_input``, ``extract_blocks``,
``pack_chunks``, ``keep_chunks``): the compiled core's ``prepare_text``
(``core/src/engine/mod.rs``), which ``Preparer.prepare`` runs through ``native.prepare_page``,
gives the same page; ``tests/test_prepare.py`` compares the two on the dev pages.

decode -> cut to ``PageLimits.max_input_bytes`` -> simplify -> blocks -> tokens -> chunks ->
the first chunks up to ``PageLimits.max_page_tokens`` (-> block features). A failure raises
``PageError`` naming the stage.
"""

from __future__ import annotations

from pulpie_rt.runtime.flow.pages import (
    PageError,
    PreparedPage,
    Preparer,
    as_text,
    describe,
)
from pulpie_rt.runtime.stages.chunks import Chunk
from pulpie_rt.runtime.stages.tokens import encode_blocks
from spec.blocks_spec import extract_blocks
from spec.chunks_spec import pack_chunks


def spec_prepare(preparer: Preparer, html: str | bytes,
                 content_type: str | None = None) -> PreparedPage:
    """``preparer.prepare(html, content_type)``, step by step in Python."""
    from pulpie_rt.runtime.stages.simplify import simplify

    html, encoding = as_text(html, content_type)
    html, input_cut = cut_input(html, preparer.limits.max_input_bytes)
    try:
        simplified, map_html = simplify(html, cutoff_length=preparer.cutoff_length)
    except Exception as exc:
        raise PageError("simplify", describe(exc)) from exc
    try:
        blocks, item_ids = extract_blocks(simplified)
        chunks: list[Chunk] = []
        if preparer.with_tokens:
            token_ids = encode_blocks(preparer.tokenizer, blocks)
            chunks = pack_chunks(
                token_ids, preparer.max_tokens, sep_id=preparer.sep_id, bos_id=preparer.bos_id,
                eos_id=preparer.eos_id,
            )
    except Exception as exc:
        raise PageError("tokenize", describe(exc)) from exc
    if preparer.with_tokens:
        chunks, n_classified = keep_chunks(chunks, preparer.limits.max_page_tokens)
    else:
        n_classified = len(item_ids)  # every block is scored from its features
    cuts = [input_cut] if input_cut else []
    if n_classified < len(item_ids):
        cuts.append(f"{len(item_ids) - n_classified} of {len(item_ids)} blocks past the "
                    f"first {preparer.limits.max_page_tokens:,} tokens were not classified "
                    "(labelled other)")
    features = None
    if preparer.with_features:
        from pulpie_rt.runtime.stages.features import block_features

        try:
            features = block_features(map_html, item_ids)
        except Exception as exc:
            raise PageError("features", describe(exc)) from exc
    return PreparedPage(item_ids, chunks, map_html, features,
                        "; ".join(cuts) or None, n_classified, encoding)


def cut_input(html: str, max_bytes: int | None) -> tuple[str, str | None]:
    """``html`` cut to its first ``max_bytes`` of UTF-8 (at a character boundary), and what was
    cut (None when nothing was)."""
    if max_bytes is None or len(html) <= max_bytes // 4:  # 4 bytes per character at most
        return html, None
    data = html.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return html, None
    kept = data[:max_bytes].decode("utf-8", "ignore")  # drops a character cut in two
    return kept, (f"the input was cut to its first {max_bytes:,} of {len(data):,} bytes")


def keep_chunks(chunks: list[Chunk], max_page_tokens: int | None) -> tuple[list[Chunk], int]:
    """The page's first chunks up to ``max_page_tokens`` tokens (at least one), and how many
    blocks they hold (the first blocks of the page: chunks hold blocks in order)."""
    if not chunks:
        return chunks, 0
    kept = len(chunks)
    if max_page_tokens is not None:
        total = 0
        for index, chunk in enumerate(chunks):
            total += len(chunk)
            if total > max_page_tokens and index > 0:
                kept = index
                break
    kept_chunks = chunks[:kept]
    return kept_chunks, max(kept_chunks[-1].block_indices, default=-1) + 1
