"""Training data: every corpus page segmented by our ``simplify``, its blocks labelled.

``prepare_pages`` runs simplify -> blocks -> labels for many pages in worker processes and
caches the result (gzip JSONL, one record per page: ``id``, ``blocks``, ``labels``) under
``build/train-data/``, keyed by the corpus file's size and mtime, this code's rule and the
segmentation (``keep_hidden``: without removing hidden elements, ``drop_noscript``: without
the ``noscript`` elements that hold no block, as the fast profile runs), so
the tokenizer and the model are trained on exactly what the runtime will feed them.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from eval.labels import MIN_AVAILABLE, label_blocks
from pulpie_rt.corpus import corpus_version, iter_pages
from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.simplify import simplify

CACHE_DIR = Path("build") / "train-data"


def page_blocks(page: dict, keep_hidden: bool = False, drop_noscript: bool = False) -> dict:
    """``id``, ``blocks`` (the model's strings) and rule ``labels`` of one corpus page
    (segmented with ``keep_hidden`` and ``drop_noscript``, see ``stages.simplify``; a page's
    ``added_main``, the paragraphs ``train.stories`` added, labelled main as they are)."""
    simplified, _ = simplify(page["html"], keep_hidden=keep_hidden, drop_noscript=drop_noscript)
    blocks, _ = extract_blocks(simplified)
    reference = page.get("reference")
    labels = (label_blocks(blocks, reference, added_main=page.get("added_main") or ())
              if reference else None)
    return {"id": page["id"], "blocks": blocks, "labels": labels}


def segmentation_key(keep_hidden: bool, drop_noscript: bool = False) -> str:
    """The part of a cache file's name that says how pages were segmented (empty for the
    reference's segmentation: the names of earlier caches stay valid)."""
    return ("-keep-hidden" if keep_hidden else "") + ("-drop-noscript" if drop_noscript else "")


def prepare_pages(name: str = "train", workers: int | None = None,
                  cache_dir: Path = CACHE_DIR, keep_hidden: bool = False,
                  drop_noscript: bool = False) -> list[dict]:
    """Blocks and labels of every page of corpus ``name`` (cached after the first run),
    segmented with ``keep_hidden`` and ``drop_noscript``."""
    key = f"{corpus_version(name)}-{MIN_AVAILABLE}{segmentation_key(keep_hidden, drop_noscript)}"
    cache = Path(cache_dir) / f"{key}.jsonl.gz"
    if cache.is_file():
        with gzip.open(cache, "rt", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh]
    workers = workers or os.cpu_count() or 1
    with ProcessPoolExecutor(workers) as pool:
        segment = functools.partial(page_blocks, keep_hidden=keep_hidden,
                                    drop_noscript=drop_noscript)
        records = list(pool.map(segment, iter_pages(name), chunksize=4))
    write_records(cache, records)
    return records


def write_records(path: Path, records: list[dict]) -> None:
    """``records`` as gzip JSON Lines at ``path``, written beside it first and renamed into
    place, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".tmp-{os.getpid()}")
    with gzip.open(partial, "wt", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    partial.rename(path)


def derived_corpus(corpus: str, name: str, share: float, seed: int,
                   derive: Callable[[list[dict]], tuple[list[dict], list[str]]],
                   what: str, done: str, chosen: str, cache_dir: Path = CACHE_DIR,
                   log=print) -> str:
    """The path (a corpus name, ``pulpie_rt.corpus``) of ``corpus``'s pages as ``derive``
    changes them (it returns every page and the ids of those it changed), written under
    ``cache_dir`` once (keyed by ``corpus_version``, ``name``, the share and the seed) and
    read from there after; logged as ``what`` ("comment threads"), the pages changed as
    ``done`` ("given one") among those ``chosen`` names ("WCXB article pages")."""
    path = Path(cache_dir) / f"{corpus_version(corpus)}-{name}-{share}-{seed}.jsonl.gz"
    if path.is_file():
        log(f"{what}: {corpus} pages (share {share}, seed {seed}) from {path}")
        return str(path)
    pages, changed = derive(list(iter_pages(corpus)))
    write_records(path, pages)
    log(f"{what}: {len(changed)} of {len(pages)} {corpus} pages {done} ({chosen}, share "
        f"{share}, seed {seed}) -> {path}")
    return str(path)


def joined_corpus(corpus: str, sets: Sequence[str], cache_dir: Path = CACHE_DIR,
                  log=print) -> str:
    """The path (a corpus name, ``pulpie_rt.corpus``) of ``corpus``'s pages followed by those
    of the built article sets ``sets`` (``eval.article_sets.article_set_path``: e.g.
    ``modern-news-train``, built by ``python -m eval.modern_news``), written under
    ``cache_dir`` once (keyed by every part's ``corpus_version``) and read from there after. A
    set not built stops with the command that builds it."""
    from eval.article_sets import load_article_set_path

    parts = [str(load_article_set_path(name)) for name in sets]
    path = Path(cache_dir) / ("joined-" + "+".join(corpus_version(name)
                                                   for name in [corpus, *parts]) + ".jsonl.gz")
    if path.is_file():
        log(f"joined corpus: {corpus} and {', '.join(sets)} from {path}")
        return str(path)
    pages = list(iter_pages(corpus))
    added = [page for part in parts for page in iter_pages(part)]
    ids = {page["id"] for page in pages}
    repeated = sorted(page["id"] for page in added if page["id"] in ids)
    if repeated:
        raise ValueError(f"joined corpus: {len(repeated)} page ids of {', '.join(sets)} are "
                         f"in {corpus} already (first {repeated[0]})")
    write_records(path, pages + added)
    log(f"joined corpus: {len(pages)} {corpus} pages and {len(added)} pages of "
        f"{', '.join(sets)} -> {path}")
    return str(path)
