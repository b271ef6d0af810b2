"""sha256 digests: of files (weights, engines: cache keys and provenance) and of text (golden
files). One definition each, used by every layer."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

_BLOCK = 1 << 24


def files_sha256(paths: Iterable[str | Path], with_names: bool = False) -> str:
    """Hex sha256 of the files' bytes, in the order given; ``with_names`` also hashes each
    file's name before its bytes (a cache key that changes when a file is renamed)."""
    digest = hashlib.sha256()
    for path in paths:
        path = Path(path)
        if with_names:
            digest.update(path.name.encode())
        with path.open("rb") as fh:
            while block := fh.read(_BLOCK):
                digest.update(block)
    return digest.hexdigest()


def text_sha256(text: str) -> str:
    """Hex sha256 of ``text`` as UTF-8 (lone surrogates kept: pages may hold them)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
