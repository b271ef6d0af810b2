"""Real pages: the dev pages in the repository, the training pages beside it.

``corpus/dev.jsonl.gz`` (254 pages, their sources' licences and attribution in
``corpus/README.md``) is part of the repository, so a clone runs and tests on its own:
``DEV_PAGES`` is the one definition of its path (the Makefile's default ``INPUT`` asks this
module, ``python3 pulpie_rt/corpus.py dev``). The training pages (``train.jsonl.gz``, 986
pages, 46.6 MiB) are not in the repository: they are looked for in ``$PULPIE_RT_CORPUS``, else
``../shared/corpus`` beside the checkout (``corpus/README.md`` says where to get them).
``PULPIE_RT_CORPUS``, when set, is looked in first for every name (a folder of one's own
pages). Nothing here downloads anything; the module imports only the standard library.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS_ENV = "PULPIE_RT_CORPUS"
# The repository's own pages, and the folder beside the checkout the training pages live in.
IN_REPO_DIR = _REPO_ROOT / "corpus"
DEV_PAGES = IN_REPO_DIR / "dev.jsonl.gz"
OUTSIDE_DIR = _REPO_ROOT.parent / "shared" / "corpus"
README = IN_REPO_DIR / "README.md"
CORPUS_SUFFIX = ".jsonl.gz"


def corpus_dirs() -> list[Path]:
    """The folders a corpus name is looked for in, in order: ``$PULPIE_RT_CORPUS`` (when set),
    the repository's ``corpus/``, ``../shared/corpus`` beside the checkout."""
    env = os.environ.get(CORPUS_ENV)
    return [*([Path(env)] if env else []), IN_REPO_DIR, OUTSIDE_DIR]


def find_corpus(name: str = "dev") -> Path | None:
    """Path of ``<name>.jsonl.gz`` in the first folder of ``corpus_dirs()`` holding it; a
    name that ends in ``.jsonl.gz`` is that file's path (a corpus derived from another, such
    as ``train.comments``' pages with comment threads)."""
    if name.endswith(CORPUS_SUFFIX):
        return Path(name) if Path(name).is_file() else None
    for folder in corpus_dirs():
        path = folder / f"{name}{CORPUS_SUFFIX}"
        if path.is_file():
            return path
    return None


def corpus_version(name: str) -> str:
    """What caches built from corpus ``name`` are named by: its name (for a path, the file's
    name without ``.jsonl.gz``), its file's size and its mtime in whole seconds, so a changed
    file gets new caches."""
    stat = corpus_path(name).stat()
    stem = Path(name).name.removesuffix(CORPUS_SUFFIX) if name.endswith(CORPUS_SUFFIX) else name
    return f"{stem}-{stat.st_size}-{int(stat.st_mtime)}"


def missing_reason(name: str) -> str:
    """Why ``<name>.jsonl.gz`` cannot be read, and where to get it (a skip reason, an error)."""
    if name.endswith(CORPUS_SUFFIX):
        return f"corpus file {name} not found"
    looked = ", ".join(str(folder) for folder in corpus_dirs())
    where = (" The training pages are not part of the repository: corpus/README.md says where "
             "they come from and how to get them." if name == "train" else "")
    return (f"corpus file {name}.jsonl.gz not found (looked in {looked}): put it in one of "
            f"those folders or set {CORPUS_ENV} to the folder holding it.{where}")


def corpus_available(name: str) -> bool:
    return find_corpus(name) is not None


def corpus_path(name: str = "dev") -> Path:
    """Path of ``<name>.jsonl.gz``; a clear error when it is missing."""
    path = find_corpus(name)
    if path is None:
        raise FileNotFoundError(missing_reason(name))
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


if __name__ == "__main__":
    # `python3 pulpie_rt/corpus.py NAME`: the path of a corpus file, relative to the working
    # folder where it lies under it (the Makefile's default INPUT); exit 2 with the reason.
    try:
        found = corpus_path(sys.argv[1] if len(sys.argv) > 1 else "dev")
    except FileNotFoundError as exc:
        print(f"pulpie_rt/corpus.py: {exc}", file=sys.stderr)
        sys.exit(2)
    print(os.path.relpath(found) if found.is_relative_to(Path.cwd()) else found)
