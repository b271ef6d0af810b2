"""Real pages from ``../shared/corpus`` (tests, benchmarks, export verification).

The corpus lives beside the checkout, never inside the package; ``PULPIE_RT_CORPUS`` points
elsewhere. Nothing here downloads anything.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent


def corpus_dir() -> Path:
    """The corpus folder: ``$PULPIE_RT_CORPUS`` or ``../shared/corpus`` beside the checkout."""
    env = os.environ.get("PULPIE_RT_CORPUS")
    if env:
        return Path(env)
    return _REPO_ROOT.parent / "shared" / "corpus"


def corpus_path(name: str = "dev") -> Path:
    """Path of ``<name>.jsonl.gz``; a clear error when it is missing."""
    path = corpus_dir() / f"{name}.jsonl.gz"
    if not path.is_file():
        raise FileNotFoundError(
            f"corpus file {path} not found: set PULPIE_RT_CORPUS to the folder holding "
            f"{name}.jsonl.gz"
        )
    return path


def iter_pages(name: str = "dev") -> Iterator[dict]:
    """Yield the corpus records (``id``, ``html``, ``reference`` …) in file order."""
    with gzip.open(corpus_path(name), "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def load_pages(name: str = "dev", limit: int | None = None) -> list[dict]:
    """All records of a corpus file (or the first ``limit``)."""
    pages = []
    for page in iter_pages(name):
        pages.append(page)
        if limit is not None and len(pages) >= limit:
            break
    return pages
