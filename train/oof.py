"""Decoding settings of the ``fast`` profile measured on the train pages out of fold, from the
out-of-fold scores a fast-only training leaves beside its bundle (``WORK/fast-oof.npz``):

    python -m train.oof WORK [WORK ...] [--story-prior none 0.5/1 0.5/3 ...]
                                        [--thresholds 0 0.25 ...] [--page-kind]
                                        [--short-story none 150/3/0.5 ...]

Each WORK is one seed's ``--work`` folder (its ``results.json`` gives the recipe, the threshold
and the container prior the training chose); each story prior (at each of ``--thresholds``,
the selection's shift of the log-odds; by default the threshold each training chose) is
decoded over the same scores as the training decodes them (``train.fast``'s ``_decode_page``:
threshold, container prior, ``continue_story``, then the story prior), and word F1 (means over
pages) is printed for the train corpus's pages and for each added set's pages apart, per seed
and as means ± spread (half the range) over the seeds. With ``--page-kind`` each of those
groups is split by what the page says it is (``ARTICLE_COLUMNS``: ``og:type`` article or a
JSON-LD story) and what it does not, so that a decoding meant for article pages alone can be
measured on them. With ``--short-story`` each story prior is decoded with each of those short
stories in turn (``WORDS/SHIFT/PROSE_SHIFT``, manifest ``decoding.short_story``; none:
without). No set scored here is a judge: the pages are the training's.
"""

from __future__ import annotations

import argparse
import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from eval.article_sets import load_article_set
from eval.metrics import score_pages
from pulpie_rt.corpus import iter_pages
from train.comments import comment_thread_corpus
from train.data import joined_corpus
from train.fast import _page_texts, given_container_prior, prior_name

# the blocks-v6 page columns (every block of a page holds its page's) that call a page an
# article: its og:type, or a JSON-LD story (NewsArticle, BlogPosting, Report …)
ARTICLE_COLUMNS = ("page_og_article", "page_ld_article")


def parse_story_prior(text: str) -> tuple[float, float] | None:
    """``none`` or ``SHARE/SHIFT``."""
    if text == "none":
        return None
    share, _, shift = text.partition("/")
    return given_container_prior([share, shift], "story prior")  # a clear error if not


def parse_short_story(text: str) -> tuple[float, float, float] | None:
    """``none`` or ``WORDS/SHIFT/PROSE_SHIFT``."""
    if text == "none":
        return None
    try:
        words, shift, prose_shift = (float(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"short story {text!r}: give none or WORDS/SHIFT/PROSE_SHIFT, "
                         "e.g. 150/3/0.5") from None
    return words, shift, prose_shift


def short_name(short: tuple[float, float, float] | None) -> str:
    return "none" if short is None else "/".join(f"{x:g}" for x in short)


def work_scores(work: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """One training's results and its out-of-fold log-odds per page id."""
    results = json.loads((work / "results.json").read_text())
    oof = np.load(work / "fast-oof.npz")
    ids = [str(i) for i in oof["ids"]]
    return results, {pid: oof[f"p{i}"] for i, pid in enumerate(ids)}


def is_article_page(job: tuple[str, str, bool, bool]) -> tuple[str, bool]:
    """A page (``(id, html, keep_hidden, drop_noscript)``) and whether its ``ARTICLE_COLUMNS``
    call it an article (False for a page without blocks)."""
    from pulpie_rt.runtime.stages.blocks import extract_blocks
    from pulpie_rt.runtime.stages.features import FEATURE_NAMES_V6, FEATURES_V6, block_features
    from pulpie_rt.runtime.stages.simplify import simplify

    page_id, html, keep_hidden, drop_noscript = job
    simplified, map_html = simplify(html, keep_hidden=keep_hidden, drop_noscript=drop_noscript)
    _, item_ids = extract_blocks(simplified)
    rows = block_features(map_html, item_ids, FEATURES_V6)
    columns = [FEATURE_NAMES_V6.index(name) for name in ARTICLE_COLUMNS]
    return page_id, bool(len(rows)) and bool(rows[0, columns].any())


def decoded_f1(work: Path, story_priors: list[tuple[float, float] | None],
               workers: int | None = None, thresholds: list[float] | None = None,
               page_kind: bool = False,
               short_stories: list[tuple[float, float, float] | None] | None = None
               ) -> dict[str, list[float]]:
    """Per page group (``train``, each added set; with ``page_kind`` each split into
    ``GROUP, article pages`` and ``GROUP, other pages``) the word F1 of each story prior (and
    within it each of ``short_stories``; None: without one) at each threshold
    (threshold-major; None: the training's own), and ``pages`` per group."""
    results, scores = work_scores(work)
    recipe = results["recipe"]
    fast = results["fast"]
    decoding = fast["decoding"]
    corpus = recipe["corpus"]
    if recipe.get("fast_comment_threads"):
        corpus = comment_thread_corpus(corpus, recipe["fast_comment_threads"],
                                       recipe["fast_comment_seed"], log=lambda *_: None)
    extra = recipe.get("fast_extra_sets") or []
    if extra:
        corpus = joined_corpus(corpus, extra, log=lambda *_: None)
    prior = decoding.get("container_prior")
    prior = None if prior is None else (prior["share"], prior["shift"])
    continue_story = bool(decoding.get("continue_story"))
    decodings = [(threshold, prior, continue_story, story, short)
                 for threshold in (thresholds or [decoding["main_margin"]])
                 for story in story_priors for short in (short_stories or [None])]
    pages = [p for p in iter_pages(corpus) if p["id"] in scores]
    jobs = ((p, scores[p["id"]], decodings, fast["keep_hidden"], fast["drop_noscript"],
             decoding.get("selection") == "expected_f1") for p in pages)
    with ProcessPoolExecutor(workers or os.cpu_count() or 1) as pool:
        texts = dict(pool.map(_page_texts, jobs, chunksize=4))
        article = (dict(pool.map(is_article_page,
                                 ((p["id"], p["html"], fast["keep_hidden"], fast["drop_noscript"])
                                  for p in pages), chunksize=4)) if page_kind else {})
    set_of = {p["id"]: name for name in extra for p in load_article_set(name)}
    groups: dict[str, dict[str, str]] = {}
    for page in pages:
        group = set_of.get(page["id"], "train")
        if page_kind:
            group += ", article pages" if article[page["id"]] else ", other pages"
        groups.setdefault(group, {})[page["id"]] = page["reference"]
    return {group: [score_pages({pid: texts[pid][i] for pid in refs}, refs)["f1"]
                    for i in range(len(decodings))]
            for group, refs in groups.items()} | {
        "pages": {group: len(refs) for group, refs in groups.items()}}


def oof_table(runs: list[dict], rows: list[tuple], at_thresholds: bool) -> list[str]:
    """Each group's word F1 out of fold, a line per decoding (``rows``: threshold, story prior
    and optionally a short story),
    a column per run and their mean ± half the range. A group some runs did not train on (an
    article set added to one recipe) shows ``-`` in their columns and the mean of the others."""
    groups = sorted({g for run in runs for g in run if g != "pages"})
    lines = []
    for group in groups:
        holding = [run for run in runs if group in run]
        lines.append(f"{group} ({holding[0]['pages'][group]} pages), word F1 out of fold"
                     + ("" if len(holding) == len(runs) else
                        f" (in {len(holding)} of {len(runs)} runs)") + ":")
        for i, (threshold, prior, *short) in enumerate(rows):
            values = [run[group][i] for run in holding]
            spread = (max(values) - min(values)) / 2
            at = f"threshold {threshold}, " if at_thresholds else ""
            cells = " ".join(f"{run[group][i]:.4f}" if group in run else "     -" for run in runs)
            also = f", short story {short_name(short[0]):>10}" if short else ""
            lines.append(f"  {at}story prior {prior_name(prior):>8}{also}: {cells}  mean "
                         f"{np.mean(values):.4f} ± {spread:.4f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.oof",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("work", nargs="+", type=Path, help="a fast-only training's --work")
    parser.add_argument("--story-prior", nargs="+", default=["none", "0.5/3"],
                        metavar="none|SHARE/SHIFT")
    parser.add_argument("--thresholds", nargs="+", type=float, default=None,
                        metavar="SHIFT", help="decode at each of these thresholds (default: "
                        "the one each training chose)")
    parser.add_argument("--page-kind", action="store_true",
                        help="split each group into the pages that call themselves articles "
                             "(og:type, JSON-LD) and the others")
    parser.add_argument("--short-story", nargs="+", default=None,
                        metavar="none|WORDS/SHIFT/PROSE_SHIFT",
                        help="decode each story prior with each of these short stories "
                             "(manifest decoding.short_story)")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    priors = [parse_story_prior(text) for text in args.story_prior]
    shorts = ([parse_short_story(text) for text in args.short_story]
              if args.short_story else None)
    runs = [decoded_f1(work, priors, args.workers, args.thresholds, args.page_kind, shorts)
            for work in args.work]
    rows = [(f"{t:+.2f}" if args.thresholds else "own", prior,
             *([short] if shorts else []))
            for t in (args.thresholds or [None]) for prior in priors
            for short in (shorts or [None])]
    print("\n".join(oof_table(runs, rows, bool(args.thresholds))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
