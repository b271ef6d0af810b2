"""Extraction quality on the dev pages with ground truth: ours vs trafilatura, side by side.

    python -m pulpie_rt.bench.quality [--model M] [--profiles P ...] [--limit N]
                                      [--skip trafilatura] [--out PATH]
    pulpie-rt bench quality ...

Pages: the dev records with ``reference_kind == "groundtruth"`` (60 WCXB pages, plain-text
``main_content``; 5 WebMainBench pages whose reference is Markdown: only words are scored, so
Markdown syntax costs little, though link URLs count as reference words).

Rows (systems):

- ``ours (<profile>)``: ``Extractor(model, profile=...).extract_batch(htmls)``, scored on each
  result's ``.text``; one row per profile of the model (the embedded default model: ``fast``
  and ``accurate``; a model without profiles: one ``ours`` row).
- ``trafilatura``: ``trafilatura.extract(html)`` with default settings (None -> ""); skipped
  with a one-line note when trafilatura is not installed (``pip install -e '.[bench]'``).
- ``rule labels (ceiling)``: our ``simplify`` -> ``extract_blocks`` ->
  ``train.labels.label_blocks(blocks, reference)`` -> ``labels_from_predictions`` ->
  ``extract_main_html`` -> ``to_text``: the best a model trained on those labels can reach.
- ``whole page``: the same path with every block main (a floor).

``--articles`` scores the dev corpus's mozilla/readability pages instead (news and blog
articles, Readability.js's expected output as reference; the accurate profile's decoding was
calibrated on them, the fast profile's on train pages only).

Metrics: word P/R/F1, ROUGE-5, empty outputs and the snippet checks, as
``pulpie_rt.eval.metrics`` defines them (one definition for ``bench`` and ``train``).

Throughput, same pages, same run, each system in its own forked process: pages per CPU-second
(user + system time of that process and every process or thread it started, so worker
processes and ONNX Runtime's intra-op threads count; imports and model load excluded) and
pages/s of wall clock. ours = ``extract_batch`` over the pages plus ``.text`` of each result;
ONNX Runtime uses its own intra-op threads (``--threads``). trafilatura = the ``extract``
loop. ``--all-pages`` times them over all dev pages (quality still only on the ground-truth
ones). The rule rows are not timed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pulpie_rt.eval.metrics import ROUGE_N, score_pages, words
from pulpie_rt.eval.pages import CALIBRATION_SOURCE, calibration_pages, groundtruth_pages
from pulpie_rt.eval.report import format_table, machine_info, write_result
from pulpie_rt.eval.systems import rule_texts, run_in_child, run_ours, run_trafilatura

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


def _profiles(args: argparse.Namespace) -> list[str | None]:
    """The profiles to score: those asked, else every profile of the model (None: a model
    without profiles, or one that cannot be read here: its row then says why)."""
    if args.profiles:
        return list(args.profiles)
    from pulpie_rt.runtime.model.resolve import resolve_model

    try:
        bundle = resolve_model(args.model).bundle
    except Exception:
        return [None]
    return list(bundle.profiles) or [None]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL

    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"what ours loads: hub name, checkpoint, bundle or engine "
                             f"(default {DEFAULT_MODEL})")
    parser.add_argument("--profiles", nargs="*", default=None,
                        help="the model's profiles to score, one row each (default: all it "
                             "has, e.g. fast accurate for the embedded model)")
    parser.add_argument("--limit", type=int, default=None,
                        help="score only N ground-truth pages, evenly spread (default: all)")
    parser.add_argument("--skip", nargs="*", default=[], choices=SYSTEMS,
                        help="rows to leave out")
    parser.add_argument("--all-pages", action="store_true",
                        help="time ours and trafilatura over all corpus pages (quality still "
                             "on the ground-truth pages only)")
    parser.add_argument("--corpus", default="dev", help="corpus file (default dev)")
    parser.add_argument("--articles", action="store_true",
                        help=f"score the dev corpus's {CALIBRATION_SOURCE} pages (news and blog "
                             "articles; reference: Readability.js's expected output) instead of "
                             "the ground-truth pages")
    parser.add_argument("--threads", type=int, default=None,
                        help="ONNX Runtime intra-op threads for ours (default: its own)")
    parser.add_argument("--batch-pages", type=int, default=32,
                        help="pages per extract_batch call (default 32)")
    parser.add_argument("--per-page", action="store_true",
                        help="write per-page scores into the JSON")
    parser.add_argument("--out", default=None,
                        help="JSON file or folder (default: bench/results/)")


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    if args.articles:
        from pulpie_rt.eval.pages import spread

        gt_pages = spread(calibration_pages(), args.limit)
    else:
        gt_pages = groundtruth_pages(args.limit, args.corpus)
    if not gt_pages:
        print("quality: no ground-truth pages to score", file=sys.stderr)
        return 1
    references = {p["id"]: p["reference"] for p in gt_pages}
    snippets = {p["id"]: p.get("snippets") for p in gt_pages}
    if args.all_pages:
        from pulpie_rt.corpus import load_pages

        timed_pages = load_pages(args.corpus)
        missing = set(references) - {p["id"] for p in timed_pages}
        timed_pages += [p for p in gt_pages if p["id"] in missing]
    else:
        timed_pages = gt_pages
    kind = f"{CALIBRATION_SOURCE} article" if args.articles else "ground-truth"
    print(f"quality: {len(gt_pages)} {kind} pages scored, {len(timed_pages)} timed",
          flush=True)
    report: dict[str, Any] = {"kind": "quality", "machine": machine_info(),
                              "corpus": args.corpus, "scored_pages": len(gt_pages),
                              "page_set": "articles" if args.articles else "groundtruth",
                              "timed_pages": len(timed_pages), "rouge_n": ROUGE_N,
                              "rows": [], "skipped": {}}
    rows: list[dict[str, Any]] = report["rows"]
    failed = False

    def score(texts: Mapping[str, str]) -> dict[str, Any]:
        return score_pages(texts, references, snippets, per_page=args.per_page)

    if "ours" not in args.skip:
        for profile in _profiles(args):
            name = "ours" if profile is None else f"ours ({profile})"
            try:
                ours = run_in_child(run_ours, timed_pages, str(args.model), args.threads,
                                    args.batch_pages, profile)
            except Exception as exc:  # the model could not be resolved or loaded
                line = f"{name}: skipped - cannot load model {args.model!r}: {exc}"
                print(line, flush=True)
                report["skipped"][name] = line
                failed = True
                continue
            rows.append({
                "system": "ours", "name": name, "model": str(args.model),
                "profile": ours["profile"],
                "device": ours["device"], "threads": args.threads,
                "scores": score(ours["texts"]),
                "empty_with_blocks": _empty_with_blocks(ours["texts"], references,
                                                        ours["n_blocks"]),
                "errors": {pid: e for pid, e in ours["errors"].items() if pid in references},
                "errors_all_timed": len(ours["errors"]),
                "model_load_s": ours["load_s"], "wall_s": ours["wall_s"],
                "cpu_s": ours["tree_cpu_s"], "timed_pages": ours["timed_pages"],
                **_speeds(ours),
            })
            print(f"{name}: {ours['wall_s']:.1f} s, {ours['tree_cpu_s']:.1f} CPU-s for "
                  f"{ours['timed_pages']} pages (model load {ours['load_s']:.1f} s, excluded)",
                  flush=True)
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
                         "scores": score(texts),
                         "empty_with_blocks": _empty_with_blocks(texts, references, n_blocks),
                         "pages_per_s": None})
    report["wall_s"] = time.perf_counter() - started
    print()
    print(quality_table(rows))
    print()
    print(micro_table(rows))
    print("\npages/CPU-s: pages per user+system second of each system's own process and every "
          "process and thread it started (model load excluded); pages/s: wall clock; same "
          "pages, same run; ours = extract_batch + .text; rule rows untimed")
    path = write_result("quality", report, args.out)
    print(f"wrote {path} ({report['wall_s']:.0f} s)")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pulpie_rt.bench.quality",
                                     description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
