"""Our runtime's entry points as the benchmarks call them (one place to adapt if they move)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path


def special_ids(checkpoint: Path, tokenizer) -> tuple[int | None, int | None]:
    """BOS and EOS ids of a checkpoint: a bundle manifest's, else its tokenizer_config's tokens."""
    manifest = checkpoint / "manifest.json"
    if manifest.is_file():
        tokens = json.loads(manifest.read_text(encoding="utf-8"))["tokens"]
        return tokens.get("bos_id"), tokens.get("eos_id")
    config_path = checkpoint / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}

    def token_id(key: str) -> int | None:
        token = config.get(key)
        if isinstance(token, dict):
            token = token.get("content")
        return tokenizer.token_to_id(token) if token else None

    return token_id("bos_token"), token_id("eos_token")


def tokenize_pack(checkpoint: Path, max_tokens: int) -> Callable[[str], list]:
    """simplified HTML -> our chunks, with the checkpoint's ``tokenizer.json`` (no transformers)."""
    from pulpie_rt.runtime.stages.blocks import extract_blocks
    from pulpie_rt.runtime.stages.chunks import pack_chunks
    from pulpie_rt.runtime.stages.tokens import encode_blocks, load_tokenizer, sep_id

    tokenizer = load_tokenizer(checkpoint)
    sep = sep_id(tokenizer)
    bos, eos = special_ids(Path(checkpoint), tokenizer)

    def run(simplified: str) -> list:
        blocks, _item_ids = extract_blocks(simplified)
        return pack_chunks(encode_blocks(tokenizer, blocks), max_tokens=max_tokens,
                           sep_id=sep, bos_id=bos, eos_id=eos)

    return run
