"""Extraction quality: ours vs trafilatura, side by side, on the dev pages with ground truth,
the dev corpus's readability articles and the public article sets held apart from training.

    python -m bench.quality [--sets groundtruth|readability|l3s-gn1|dragnet|all ...]
                                      [--model M] [--seed-models BUNDLE ...]
                                      [--profiles P ...] [--limit N] [--skip trafilatura]
                                      [--out PATH]
    python -m bench quality ...
    make quality   (--sets all, with the fast-seed copies of make fast-seeds)

Page sets (``--sets``, one table each, all in one run and one JSON):

- ``groundtruth`` (the default): the dev records with ``reference_kind == "groundtruth"`` (60
  WCXB pages, plain-text ``main_content``; 5 WebMainBench pages whose reference is Markdown:
  only words are scored, so Markdown syntax costs little, though link URLs count as reference
  words).
- ``readability`` (also ``--articles``): the dev corpus's mozilla/readability pages (news and
  blog articles, Readability.js's expected output as reference; the accurate profile's
  decoding was calibrated on them, the fast profile never reads them).
- ``modern-news-heldout``: today's news pages (Fundus's test pages and the Fundus evaluation
  set, 2023-2026, MIT) of sites held apart from the modern split the fast profile may train
  on, built by ``python -m eval.modern_news`` into ``build/article-sets/``; what
  choices about today's news are made on, never trained or calibrated on.
- ``l3s-gn1``, ``dragnet``: public news and blog article sets with human ground truth, built
  by ``python -m eval.article_sets`` into ``build/article-sets/`` (not committed:
  their licences are research-only and AGPLv3). Never trained, calibrated or chosen on.
- ``all``: the five, leaving out (with a note) the article sets not built.

Every set is also scored by its references' length (``LENGTH_BINS``: under 150 words,
150-400, 400-800, over 800; ``lengths`` in each row's JSON, and a table of their own).

The readability pages are two kinds, scored apart as well (``kinds`` in each row's JSON, and a
table of their own): the saved news and blog articles, and Readability.js's hand-written test
cases (``eval.pages.is_readability_fixture``: lorem ipsum around the markup under test), whose
conventions (a repeated paragraph kept twice, a heading or link list kept) weigh as much per
page as a whole article.
The held-apart modern news is two kinds too (``eval.modern_news.HELDOUT_KINDS``): the Fundus
test pages, whose references open with the story's title, and the Fundus evaluation set's
pages, whose hand-made references leave it out, as trafilatura's text does.

Rows (systems):

- ``ours (<profile>)``: ``Extractor(model, profile=...).extract_batch(htmls)``, scored on each
  result's ``.text``; one row per profile of the model (the embedded default model: ``fast``
  and ``accurate``; a model without profiles: one ``ours`` row). On the added article sets
  (thousands of pages) only the model's default profile, unless ``--profiles`` names others.
  With ``--seed-models`` (copies of the model whose fast profile was retrained with other
  seeds: ``make fast-seeds``) the fast row is the mean over the model and its copies, with
  the standard deviation (``±``) and range over them; its pages per CPU-second are over all
  their runs.
- ``trafilatura``: ``trafilatura.extract(html)`` with default settings (None -> ""); skipped
  with a one-line note when trafilatura is not installed (``pip install -e '.[bench]'``).
- ``rule labels (ceiling)``: our ``simplify`` -> ``extract_blocks`` ->
  ``train.labels.label_blocks(blocks, reference)`` -> ``labels_from_predictions`` ->
  ``extract_main_html`` -> ``to_text``: the best a model trained on those labels can reach.
- ``whole page``: the same path with every block main (a floor).

Metrics: word P/R/F1, ROUGE-5, empty outputs and the snippet checks, as
``eval.metrics`` defines them (one definition for ``bench`` and ``train``).

Throughput, same pages, same run, each system in its own forked process: pages per CPU-second
(user + system time of that process and every process or thread it started, so worker
processes and ONNX Runtime's intra-op threads count; imports and model load excluded) and
pages/s of wall clock. ours = ``extract_batch`` over the pages plus ``.text`` of each result;
ONNX Runtime uses its own intra-op threads (``--threads``). trafilatura = the ``extract``
loop. ``--all-pages`` times them over all dev pages (quality still only on the ground-truth
ones; groundtruth set only). The rule rows are not timed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from eval.article_sets import FUNDUS_HISTORY_TRAIN, MODERN_NEWS_HELDOUT, POSTLIGHT_TRAIN, SETS
from eval.metrics import ROUGE_N, score_pages, words
from eval.pages import (
    CALIBRATION_SOURCE,
    calibration_pages,
    groundtruth_pages,
    references_by_kind,
)
from eval.report import format_table, machine_info, write_result
from eval.systems import rule_texts, run_in_child, run_ours, run_trafilatura

# the page sets a run can score: the dev pages with ground truth, the dev corpus's readability
# articles, and the public article sets that eval.article_sets builds (held apart from training)
# postlight-train and fundus-history-train (pages to learn from, never in 'all'): asked by
# name, to read how a model not trained on them and trafilatura read their pages
PAGE_SETS = ("groundtruth", "readability", MODERN_NEWS_HELDOUT, *SETS, POSTLIGHT_TRAIN,
             FUNDUS_HISTORY_TRAIN)
DEV_SETS = ("groundtruth", "readability")
SET_NOTES = {"groundtruth": "dev pages with ground truth, never trained on",
             "readability": f"dev {CALIBRATION_SOURCE} pages, never trained on or in "
                            f"folds (the row says k-fold)",
             "modern-news-heldout": "today's news (Fundus), sites held apart from training",
             "l3s-gn1": "L3S-GN1 news, held apart from training",
             "dragnet": "Dragnet news and blogs, held apart from training",
             POSTLIGHT_TRAIN: "Postlight Parser's fixtures, to learn from; not in the shipped "
                              "recipe",
             FUNDUS_HISTORY_TRAIN: "Fundus's earlier test pages, to learn from; not in the "
                                   "shipped recipe"}
# the reference lengths (words) each set is also scored by: a short story is where a rail of
# headlines outweighs it
LENGTH_BINS = ((0, 150, "< 150 words"), (150, 400, "150-400 words"), (400, 800, "400-800 words"),
               (800, None, "> 800 words"))
SYSTEMS = ("ours", "trafilatura", "ceiling", "whole-page")
ROW_NAMES = {"ours": "ours", "trafilatura": "trafilatura", "ceiling": "rule labels (ceiling)",
             "whole-page": "whole page"}

# ---------------------------------------------------------------- metrics (pure)


# ---------------------------------------------------------------- systems


def _empty_with_blocks(texts: Mapping[str, str], references: Mapping[str, str],
                       n_blocks: Mapping[str, int]) -> list[str]:
    return [pid for pid, ref in references.items()
            if words(ref) and not words(texts.get(pid) or "") and n_blocks.get(pid, 0) > 0]


# ---------------------------------------------------------------- report


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def quality_table(rows: Sequence[dict[str, Any]]) -> str:
    headers = ["system", "pages", "word P", "word R", "word F1", "ROUGE-5 F1", "empty",
               "empty, blocks kept", "with", "w/o", "pages/CPU-s", "pages/s"]
    body = []
    for row in rows:
        s = row["scores"]
        body.append([row["name"], str(s["pages"]), _f(s["precision"]), _f(s["recall"]),
                     _f(s["f1"]), _f(s["rouge5_f1"]), str(s["empty"]),
                     "-" if row.get("empty_with_blocks") is None
                     else str(len(row["empty_with_blocks"])),
                     _f(s.get("with_rate"), 2), _f(s.get("without_rate"), 2),
                     _f(row.get("pages_per_cpu_s"), 1), _f(row.get("pages_per_s"), 1)])
    return format_table(headers, body)


def micro_table(rows: Sequence[dict[str, Any]]) -> str:
    headers = ["system (micro)", "word P", "word R", "word F1", "ROUGE-5 P", "ROUGE-5 R",
               "ROUGE-5 F1"]
    body = [[row["name"], *(_f(row["scores"]["micro"][k]) for k in
                            ("precision", "recall", "f1", "rouge5_p", "rouge5_r",
                             "rouge5_f1"))] for row in rows]
    return format_table(headers, body)


def _speeds(run: dict[str, Any]) -> dict[str, float | None]:
    n = run["timed_pages"]
    return {"pages_per_cpu_s": n / run["tree_cpu_s"] if run["tree_cpu_s"] > 0 else None,
            "pages_per_s": n / run["wall_s"] if run["wall_s"] else None}


def _profiles(args: argparse.Namespace, page_set: str = "groundtruth") -> list[str | None]:
    """The profiles to score: those asked, else every profile of the model on the dev sets and
    its default profile alone on the added article sets (thousands of pages: the transformer
    profile would take an hour there) (None: a model without profiles, or one that cannot be
    read here: its row then says why)."""
    if args.profiles:
        return list(args.profiles)
    from pulpie_rt.runtime.model.resolve import resolve_model

    try:
        bundle = resolve_model(args.model).bundle
    except Exception:
        return [None]
    if page_set not in DEV_SETS and bundle.profiles:
        return [bundle.profile]
    return list(bundle.profiles) or [None]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL

    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"what ours loads: hub name, checkpoint, bundle or engine "
                             f"(default {DEFAULT_MODEL})")
    parser.add_argument("--profiles", nargs="*", default=None,
                        help="the model's profiles to score, one row each (default: all it "
                             "has, e.g. fast accurate for the embedded model)")
    parser.add_argument("--seed-models", nargs="*", default=[], metavar="BUNDLE",
                        help="copies of --model retrained with other fast seeds (make "
                             "fast-seeds: build/fast-seeds/N): the fast profile's row is "
                             "then the mean ± standard deviation over the model and them")
    parser.add_argument("--sets", nargs="*", default=None, metavar="SET",
                        help=f"page sets to score, one table each: {', '.join(PAGE_SETS)}, "
                             "or 'all' (groundtruth, readability and every article set built "
                             "by python -m eval.article_sets; default: groundtruth)")
    parser.add_argument("--limit", type=int, default=None,
                        help="score only N pages of each set, evenly spread (default: all)")
    parser.add_argument("--skip", nargs="*", default=[], choices=SYSTEMS,
                        help="rows to leave out")
    parser.add_argument("--all-pages", action="store_true",
                        help="time ours and trafilatura over all corpus pages (quality still "
                             "on the ground-truth pages only; groundtruth set only)")
    parser.add_argument("--corpus", default="dev", help="corpus file (default dev)")
    parser.add_argument("--articles", action="store_true",
                        help=f"the same as --sets readability: the dev corpus's "
                             f"{CALIBRATION_SOURCE} pages (news and blog articles; reference: "
                             "Readability.js's expected output)")
    parser.add_argument("--threads", type=int, default=None,
                        help="ONNX Runtime intra-op threads for ours (default: its own)")
    parser.add_argument("--batch-pages", type=int, default=32,
                        help="pages per extract_batch call (default 32)")
    parser.add_argument("--per-page", action="store_true",
                        help="write per-page scores into the JSON")
    parser.add_argument("--out", default=None,
                        help="JSON file or folder (default: bench/results/)")


def page_sets(args: argparse.Namespace) -> list[str]:
    """The sets to score, in order; 'all' = groundtruth, readability and the article sets that
    are built (one not built is named with the command that builds it)."""
    from eval.article_sets import ARTICLE_SETS_DIR, SCORED_SETS, article_set_path

    asked = list(args.sets or []) + (["readability"] if args.articles else [])
    if not asked:
        return ["groundtruth"]
    names: list[str] = []
    for name in asked:
        if name == "all":
            built = [s for s in SCORED_SETS if article_set_path(s).is_file()]
            missing = [s for s in SCORED_SETS if s not in built]
            if missing:
                print(f"quality: article sets {', '.join(missing)} not built in "
                      f"{ARTICLE_SETS_DIR} (python -m eval.article_sets, "
                      "python -m eval.modern_news): skipped", flush=True)
            names += ["groundtruth", "readability", *built]
        elif name in PAGE_SETS:
            names.append(name)
        else:
            raise SystemExit(f"quality: unknown page set {name!r} (known: "
                             f"{', '.join(PAGE_SETS)}, all)")
    return list(dict.fromkeys(names))


def set_pages(name: str, args: argparse.Namespace) -> list[dict]:
    from eval.article_sets import load_article_set
    from eval.pages import spread

    if name == "groundtruth":
        return groundtruth_pages(args.limit, args.corpus)
    if name == "readability":
        return spread(calibration_pages(), args.limit)
    return spread(load_article_set(name), args.limit)


def _spread_scores(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The first run's scores with each mean metric replaced by the mean over ``runs`` (the
    model and its seed copies), its standard deviation (``<metric>_sd``, n - 1) and range."""
    scores = dict(runs[0])
    if len(runs) < 2:
        return scores
    for key in ("precision", "recall", "f1", "rouge5_p", "rouge5_r", "rouge5_f1"):
        values = [r[key] for r in runs]
        scores[key] = statistics.fmean(values)
        scores[f"{key}_sd"] = statistics.stdev(values)
        scores[f"{key}_min"], scores[f"{key}_max"] = min(values), max(values)
    scores["seed_f1"] = [r["f1"] for r in runs]
    scores["empty"] = max(r["empty"] for r in runs)
    return scores


def page_kinds(name: str, pages: Sequence[dict]) -> dict[str, dict[str, str]]:
    """The references of ``pages`` by kind for the sets scored by kind (the readability
    pages: ``eval.pages.references_by_kind``; the held-apart modern news by its references'
    convention: ``eval.modern_news.references_by_kind``), else nothing."""
    if name == "readability":
        return references_by_kind(list(pages))
    if name == MODERN_NEWS_HELDOUT:
        from eval.modern_news import references_by_kind as modern_news_kinds

        return modern_news_kinds(list(pages))
    return {}


def length_bin(reference: str) -> str:
    """The ``LENGTH_BINS`` name of a reference's word count."""
    n = len(words(reference))
    return next(name for low, high, name in LENGTH_BINS if n >= low and (high is None or n < high))


def page_lengths(pages: Sequence[dict]) -> dict[str, dict[str, str]]:
    """The references of ``pages`` by ``LENGTH_BINS``, in order (a bin without pages left
    out)."""
    bins: dict[str, dict[str, str]] = {name: {} for _, _, name in LENGTH_BINS}
    for page in pages:
        bins[length_bin(page["reference"])][page["id"]] = page["reference"]
    return {name: references for name, references in bins.items() if references}


def kinds_table(sets: Sequence[Mapping[str, Any]], key: str = "kinds",
                title: str = "kind") -> str:
    """Per page set scored by kind (``key``: ``kinds``, or ``lengths``, the reference-length
    bins), per kind and system: word P/R/F1 (ours: the mean ± standard deviation over the model
    and its seed copies) and F1 less trafilatura's on those pages, the mean and each seed's
    own (the lowest and highest)."""
    headers = ["page set", title, "pages", "system", "seeds", "word P", "word R", "word F1",
               "F1 - trafilatura", "per seed"]
    body = []
    for one in sets:
        rows = [r for r in one["rows"] if r.get(key)]
        traf = next((r[key] for r in rows if r["system"] == "trafilatura"), None)
        for kind in rows[0][key] if rows else ():
            for row in rows:
                s = row[key][kind]
                seeds = s.get("seed_f1") or [s["f1"]]
                margin, per_seed = "-", "-"
                if traf is not None and row["system"] != "trafilatura":
                    base = traf[kind]["f1"]
                    margin = f"{s['f1'] - base:+.3f}"
                    per_seed = f"{min(seeds) - base:+.3f} to {max(seeds) - base:+.3f}"
                body.append([one["page_set"], kind, str(s["pages"]), row["name"],
                             str(len(seeds)), _pm(s, "precision"), _pm(s, "recall"),
                             _pm(s, "f1"), margin, per_seed])
    return format_table(headers, body)


def _pm(scores: dict[str, Any], key: str) -> str:
    sd = scores.get(f"{key}_sd")
    return _f(scores.get(key)) + ("" if sd is None else f" ± {sd:.3f}")


def set_table(rows: Sequence[dict[str, Any]]) -> str:
    headers = ["system", "seeds", "pages", "word P", "word R", "word F1", "F1 seed range",
               "ROUGE-5 F1", "empty", "pages/CPU-s"]
    body = []
    for row in rows:
        s = row["scores"]
        seeds = s.get("seed_f1")
        body.append([row["name"], str(len(seeds) if seeds else 1), str(s["pages"]),
                     _pm(s, "precision"), _pm(s, "recall"), _pm(s, "f1"),
                     "-" if not seeds else f"{min(seeds):.3f}-{max(seeds):.3f}",
                     _pm(s, "rouge5_f1"), str(s["empty"]),
                     _f(row.get("pages_per_cpu_s"), 1)])
    return format_table(headers, body)


def margin_table(sets: Sequence[Mapping[str, Any]]) -> str:
    """Per page set, each ``ours`` row's word F1 less trafilatura's: the mean over the seeds
    and each seed's own margin (the lowest and highest), and the precision margin; a set
    without a trafilatura row has none."""
    headers = ["page set", "pages", "system", "seeds", "F1 - trafilatura", "per seed",
               "P - trafilatura"]
    body = []
    for one in sets:
        traf = next((r["scores"] for r in one["rows"] if r["system"] == "trafilatura"), None)
        if traf is None:
            continue
        for row in one["rows"]:
            if row["system"] != "ours":
                continue
            s = row["scores"]
            seeds = [f - traf["f1"] for f in s.get("seed_f1") or [s["f1"]]]
            body.append([one["page_set"], str(one["scored_pages"]), row["name"],
                         str(len(seeds)), f"{s['f1'] - traf['f1']:+.3f}",
                         f"{min(seeds):+.3f} to {max(seeds):+.3f}",
                         f"{s['precision'] - traf['precision']:+.3f}"])
    return format_table(headers, body)


def _fold_texts(pages: Sequence[dict], runs: Sequence[dict[str, Any]]
                ) -> tuple[list[dict[str, str]], int | None]:
    """Per run (the model and its seed copies), the texts to score on the readability pages:
    where the run's bundle was trained on them in folds (``eval.systems.fold_decisions``),
    the texts of its out-of-fold decisions, else its own; and the number of folds (None when
    no bundle was). ``ValueError`` when some bundles were trained on them and some not (one
    row cannot mix the two) or a page's decisions do not fit it."""
    from eval.systems import fold_decisions, fold_texts

    decisions = [fold_decisions(r["bundle"]) for r in runs]
    if not any(decisions):
        return [r["texts"] for r in runs], None
    if not all(decisions):
        raise ValueError("some of the models were trained on the readability pages in folds "
                         "and some were not: " + ", ".join(
                             f"{r['bundle']} ({'folds' if d else 'not trained on them'})"
                             for r, d in zip(runs, decisions, strict=True)))
    folds = {d["folds"] for d in decisions}
    if len(folds) != 1:
        raise ValueError(f"the models were trained in different numbers of folds: {folds}")
    return ([fold_texts(pages, d["labels"], r["keep_hidden"], r["drop_noscript"])
             for r, d in zip(runs, decisions, strict=True)], folds.pop())


def score_set(name: str, args: argparse.Namespace) -> tuple[dict[str, Any], bool]:
    """One page set's rows: ours (each profile; the fast profile over the seed copies too),
    trafilatura, the ceiling and the whole page."""
    gt_pages = set_pages(name, args)
    references = {p["id"]: p["reference"] for p in gt_pages}
    snippets = {p["id"]: p.get("snippets") for p in gt_pages}
    timed_pages = gt_pages
    if args.all_pages and name == "groundtruth":
        from pulpie_rt.corpus import load_pages

        timed_pages = load_pages(args.corpus)
        missing = set(references) - {p["id"] for p in timed_pages}
        timed_pages += [p for p in gt_pages if p["id"] in missing]
    print(f"quality: {name}: {len(gt_pages)} pages scored ({SET_NOTES.get(name, 'held apart')})"
          f", {len(timed_pages)} timed", flush=True)
    report: dict[str, Any] = {"page_set": name, "scored_pages": len(gt_pages),
                              "timed_pages": len(timed_pages), "rows": [], "skipped": {}}
    rows: list[dict[str, Any]] = report["rows"]
    failed = False

    def score(texts: Mapping[str, str]) -> dict[str, Any]:
        return score_pages(texts, references, snippets, per_page=args.per_page)

    groupings = {"kinds": page_kinds(name, gt_pages), "lengths": page_lengths(gt_pages)}

    def by_kind(texts_per_run: Sequence[Mapping[str, str]]) -> dict[str, Any]:
        """``{"kinds": ..., "lengths": ...}``: the runs' scores on each kind's pages (no
        ``kinds`` for a set not scored by kind) and on each reference length's."""
        return {key: {kind: _spread_scores([score_pages(texts, refs)
                                             for texts in texts_per_run])
                      for kind, refs in kinds.items()}
                for key, kinds in groupings.items() if kinds}

    if "ours" not in args.skip:
        for profile in _profiles(args, name):
            name_row = "ours" if profile is None else f"ours ({profile})"
            models = [str(args.model)] + (list(args.seed_models) if profile == "fast" else [])
            runs = []
            try:
                for model in models:
                    runs.append(run_in_child(run_ours, timed_pages, model, args.threads,
                                             args.batch_pages, profile))
            except Exception as exc:  # the model could not be resolved or loaded
                line = f"{name_row}: skipped - cannot load model {model!r}: {exc}"
                print(line, flush=True)
                report["skipped"][name_row] = line
                failed = True
                continue
            ours = runs[0]
            cpu_s = sum(r["tree_cpu_s"] for r in runs)
            texts_per_run = [r["texts"] for r in runs]
            if name == "readability" and ours["profile"] == "fast":
                try:
                    texts_per_run, folds = _fold_texts(gt_pages, runs)
                except ValueError as exc:
                    line = f"{name_row}: skipped - {exc}"
                    print(line, flush=True)
                    report["skipped"][name_row] = line
                    failed = True
                    continue
                if folds:
                    name_row += f", {folds}-fold"
                    print(f"{name_row}: the model's fast profile was trained on these pages in "
                          f"{folds} folds: each page's text is rebuilt from the decisions of "
                          f"the fold's stages that never saw it (results.json); timed as "
                          f"shipped", flush=True)
            rows.append({
                "system": "ours", "name": name_row, "model": str(args.model),
                "seed_models": models[1:], "profile": ours["profile"],
                "device": ours["device"], "threads": args.threads,
                "scores": _spread_scores([score(texts) for texts in texts_per_run]),
                **by_kind(texts_per_run),
                "empty_with_blocks": _empty_with_blocks(ours["texts"], references,
                                                        ours["n_blocks"]),
                "errors": {pid: e for pid, e in ours["errors"].items() if pid in references},
                "errors_all_timed": len(ours["errors"]),
                "model_load_s": ours["load_s"], "wall_s": ours["wall_s"],
                "cpu_s": ours["tree_cpu_s"], "timed_pages": ours["timed_pages"],
                **_speeds({"timed_pages": ours["timed_pages"] * len(runs),
                           "tree_cpu_s": cpu_s, "wall_s": sum(r["wall_s"] for r in runs)}),
            })
            print(f"{name_row}: {len(runs)} model(s), {cpu_s:.1f} CPU-s for "
                  f"{ours['timed_pages']} pages each (model load excluded)", flush=True)
    if "trafilatura" not in args.skip:
        try:
            import trafilatura  # noqa: F401  (installed? the child needs it)

            traf = run_in_child(run_trafilatura, timed_pages)
        except ImportError:
            line = ("trafilatura: skipped - not installed (pip install -e '.[bench]' or "
                    "pip install trafilatura)")
            print(line, flush=True)
            report["skipped"]["trafilatura"] = line
        else:
            rows.append({
                "system": "trafilatura", "name": ROW_NAMES["trafilatura"],
                "version": traf["version"], "scores": score(traf["texts"]),
                **by_kind([traf["texts"]]),
                "empty_with_blocks": None,
                "errors": {pid: e for pid, e in traf["errors"].items() if pid in references},
                "wall_s": traf["wall_s"], "cpu_s": traf["tree_cpu_s"],
                "timed_pages": traf["timed_pages"], **_speeds(traf),
            })
            print(f"trafilatura: {traf['wall_s']:.1f} s, {traf['tree_cpu_s']:.1f} CPU-s for "
                  f"{traf['timed_pages']} pages", flush=True)
    if "ceiling" not in args.skip or "whole-page" not in args.skip:
        ceiling, whole, n_blocks = rule_texts(gt_pages)
        for system, texts in (("ceiling", ceiling), ("whole-page", whole)):
            if system in args.skip:
                continue
            rows.append({"system": system, "name": ROW_NAMES[system],
                         "scores": score(texts), **by_kind([texts]),
                         "empty_with_blocks": _empty_with_blocks(texts, references, n_blocks),
                         "pages_per_s": None})
    return report, failed


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    names = page_sets(args)
    report: dict[str, Any] = {"kind": "quality", "machine": machine_info(),
                              "corpus": args.corpus, "rouge_n": ROUGE_N,
                              "seed_models": list(args.seed_models), "sets": []}
    failed = False
    for name in names:
        one, one_failed = score_set(name, args)
        if not one["scored_pages"]:
            print(f"quality: {name}: no pages to score", file=sys.stderr)
            return 1
        report["sets"].append(one)
        failed = failed or one_failed
    report["wall_s"] = time.perf_counter() - started
    for one in report["sets"]:
        rows = one["rows"]
        print(f"\n== {one['page_set']}: {one['scored_pages']} pages "
              f"({SET_NOTES.get(one['page_set'], 'held apart from training')})")
        print(quality_table(rows))
        print()
        print(micro_table(rows))
    if args.seed_models or len(names) > 1:
        print("\n== word F1 by page set (ours: mean ± standard deviation over the model and "
              "its seed copies; pages/CPU-s over all their runs)")
        for one in report["sets"]:
            print(f"\n{one['page_set']} ({one['scored_pages']} pages)")
            print(set_table(one["rows"]))
    if any(r["system"] == "trafilatura" for one in report["sets"] for r in one["rows"]):
        print("\n== word F1 against trafilatura's (ours less trafilatura, same pages, same "
              "run: the mean over the model and its seed copies, and each seed's own)")
        print(margin_table(report["sets"]))
    if any(r.get("kinds") for one in report["sets"] for r in one["rows"]):
        print("\n== by kind of page, each scored apart: the readability pages' saved articles "
              "and Readability.js's hand-written test cases (eval.pages.is_readability_fixture); "
              "the held-apart modern news by its references' convention (the Fundus test pages' "
              "open with the title, the Fundus evaluation set's leave it out, as trafilatura's "
              "text does)")
        print(kinds_table(report["sets"]))
    if any(r.get("lengths") for one in report["sets"] for r in one["rows"]):
        print("\n== by reference length (words of the page's reference): short stories are "
              "where rails of headlines beside them weigh most")
        print(kinds_table(report["sets"], "lengths", "reference"))
    print("\npages/CPU-s: pages per user+system second of each system's own process and every "
          "process and thread it started (model load excluded); pages/s: wall clock; same "
          "pages, same run; ours = extract_batch + .text; rule rows untimed")
    path = write_result("quality", report, args.out)
    print(f"wrote {path} ({report['wall_s']:.0f} s)")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quality",
                                     description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
