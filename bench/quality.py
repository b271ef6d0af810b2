"""Extraction quality on the dev pages with ground truth: ours vs trafilatura, side by side.

    python -m pulpie_rt.bench.quality [--model M] [--limit N] [--skip trafilatura] [--out PATH]
    pulpie-rt bench quality ...

Pages: the dev records with ``reference_kind == "groundtruth"`` (60 WCXB pages, plain-text
``main_content``; 5 WebMainBench pages whose reference is Markdown: only words are scored, so
Markdown syntax costs little, though link URLs count as reference words).

Rows (systems):

- ``ours``: ``Extractor(model).extract_batch(htmls)``, scored on each result's ``.text``.
- ``trafilatura``: ``trafilatura.extract(html)`` with default settings (None -> ""); skipped
  with a one-line note when trafilatura is not installed (``pip install -e '.[bench]'``).
- ``rule labels (ceiling)``: our ``simplify`` -> ``extract_blocks`` ->
  ``train.labels.label_blocks(blocks, reference)`` -> ``labels_from_predictions`` ->
  ``extract_main_html`` -> ``to_text``: the best a model trained on those labels can reach.
- ``whole page``: the same path with every block main (a floor).

Metrics, per page, then the plain mean over pages (as WCXB's ``evaluate.py``); micro totals
(sums of overlaps and token counts over all pages) go to the JSON as well.

- Tokens: WCXB's, lowercase ``\\w+`` runs (``pulpie_rt.train.labels.words``).
- Word P/R/F1 (WCXB's ``word_f1``): overlap = size of the multiset intersection of the two
  token lists (a word repeated k times in both counts min of the two counts);
  P = overlap / #pred tokens, R = overlap / #ref tokens, F1 = 2PR / (P + R), 0 when P + R = 0.
  Reference without tokens: (1, 1, 1) when the prediction has none either, else (0, 0, 0).
  Prediction without tokens (reference has some): (0, 0, 0). A page with no prediction at all
  (missing id, failed extraction) is scored as the empty string.
- ROUGE-N (N = 5): the same formulas over the multisets of N-grams of consecutive tokens.
  Short texts: when the reference has fewer than N tokens (but some), N is lowered to the
  reference's token count for that page, so a 3-word reference is scored on 3-grams (an exact
  extraction scores 1). The empty cases are those of the word metric (both empty: 1; one
  empty: 0); a prediction shorter than the (lowered) N has no N-grams and scores 0.
- empty: pages where the system's text has no token while the reference has some. For ours
  (and the rule rows), ``empty, blocks kept`` counts those of them where simplify kept blocks
  (the result has labels), the acceptance criterion being that it stays 0.
- with / w/o (WCXB's snippet check, only pages with snippets): mean fraction of the ``with``
  snippets found in the text (higher is better) and of the ``without`` ones (lower is better).
  WCXB looks for lowercase raw substrings; its snippets have straight quotes and spaced-out
  code (``f ( x )``) where pages have typographic quotes and ``f(x)``, so here a snippet is
  found when its token sequence occurs contiguously in the text's tokens (a snippet without
  tokens counts as not found).

Throughput (pages/s, wall clock, one process, same pages, same run): ours = ``extract_batch``
over the pages plus ``.text`` of each result, model load (``Extractor(...)``) excluded and
reported apart; ONNX Runtime uses its own intra-op threads (``--threads``). trafilatura = the
``extract`` loop. ``--all-pages`` times both over all dev pages (quality still only on the
ground-truth ones). The rule rows are not timed. CPU seconds of the process are recorded too.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pulpie_rt.bench.harness import format_table, machine_info, spread, write_result
from pulpie_rt.train.labels import words

ROUGE_N = 5
SYSTEMS = ("ours", "trafilatura", "ceiling", "whole-page")
ROW_NAMES = {"ours": "ours", "trafilatura": "trafilatura", "ceiling": "rule labels (ceiling)",
             "whole-page": "whole page"}

# ---------------------------------------------------------------- metrics (pure)


def _prf(overlap: int, n_pred: int, n_ref: int) -> tuple[float, float, float]:
    """P/R/F1 from counts, with WCXB's conventions for empty sides."""
    if n_ref == 0:
        return (1.0, 1.0, 1.0) if n_pred == 0 else (0.0, 0.0, 0.0)
    if n_pred == 0:
        return (0.0, 0.0, 0.0)
    p, r = overlap / n_pred, overlap / n_ref
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


def _overlap(pred: Iterable, ref: Iterable) -> tuple[int, int, int]:
    """(multiset overlap, #pred, #ref) of two sequences of hashable items."""
    pred_counts, ref_counts = Counter(pred), Counter(ref)
    overlap = sum((pred_counts & ref_counts).values())
    return overlap, sum(pred_counts.values()), sum(ref_counts.values())


def word_counts(pred: str, ref: str) -> tuple[int, int, int]:
    """(overlapping tokens, prediction tokens, reference tokens)."""
    return _overlap(words(pred), words(ref))


def word_prf(pred: str, ref: str) -> tuple[float, float, float]:
    """WCXB's word precision, recall and F1 of ``pred`` against ``ref``."""
    return _prf(*word_counts(pred, ref))


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def rouge_counts(pred: str, ref: str, n: int = ROUGE_N) -> tuple[int, int, int]:
    """(overlapping n-grams, prediction n-grams, reference n-grams); n lowered to the
    reference's token count when the reference is shorter (see the module docstring)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, not {n}")
    pred_tokens, ref_tokens = words(pred), words(ref)
    if not ref_tokens:  # counts only decide which empty case applies
        return 0, len(pred_tokens), 0
    n = min(n, len(ref_tokens))
    return _overlap(_ngrams(pred_tokens, n), _ngrams(ref_tokens, n))


def rouge_n(pred: str, ref: str, n: int = ROUGE_N) -> tuple[float, float, float]:
    """ROUGE-N precision, recall and F1 over word tokens (multisets of n-grams)."""
    return _prf(*rouge_counts(pred, ref, n))


def snippet_rate(text: str, snippets: Sequence[str]) -> float | None:
    """Fraction of ``snippets`` whose token sequence occurs contiguously in ``text``'s tokens;
    None without snippets (see the module docstring for why tokens, not raw substrings)."""
    if not snippets:
        return None
    haystack = f" {' '.join(words(text))} "
    found = 0
    for snippet in snippets:
        tokens = words(snippet)
        found += bool(tokens) and f" {' '.join(tokens)} " in haystack
    return found / len(snippets)


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def score_pages(texts: Mapping[str, str], references: Mapping[str, str],
                snippets: Mapping[str, dict | None] | None = None,
                per_page: bool = False) -> dict[str, Any]:
    """Scores of ``texts`` against ``references`` (both keyed by page id).

    Every page of ``references`` is scored; one missing from ``texts`` counts as empty.
    Returns ``pages``, the means ``precision``/``recall``/``f1``/``rouge5_p``/``rouge5_r``/
    ``rouge5_f1``, ``empty`` (no token while the reference has some), ``micro`` (the same
    metrics from summed counts), ``with_rate``/``without_rate`` when ``snippets`` is given,
    and ``per_page`` when asked.
    """
    rows: dict[str, dict[str, Any]] = {}
    sums = [0] * 6
    for page_id, ref in references.items():
        text = texts.get(page_id) or ""
        wc, rc = word_counts(text, ref), rouge_counts(text, ref)
        p, r, f1 = _prf(*wc)
        rp, rr, rf = _prf(*rc)
        for i, v in enumerate((*wc, *rc)):
            sums[i] += v
        row = {"precision": p, "recall": r, "f1": f1, "rouge5_p": rp, "rouge5_r": rr,
               "rouge5_f1": rf, "pred_words": wc[1], "ref_words": wc[2],
               "empty": wc[1] == 0 and wc[2] > 0}
        page_snippets = (snippets or {}).get(page_id) or {}
        if snippets is not None:
            row["with_rate"] = snippet_rate(text, page_snippets.get("with") or [])
            row["without_rate"] = snippet_rate(text, page_snippets.get("without") or [])
        rows[page_id] = row
    keys = ("precision", "recall", "f1", "rouge5_p", "rouge5_r", "rouge5_f1")
    result: dict[str, Any] = {"pages": len(rows)}
    for key in keys:
        result[key] = _mean(row[key] for row in rows.values())
    result["empty"] = sum(row["empty"] for row in rows.values())
    wp, wr, wf = _prf(*sums[:3])
    rp, rr, rf = _prf(*sums[3:])
    result["micro"] = {"precision": wp, "recall": wr, "f1": wf, "rouge5_p": rp,
                       "rouge5_r": rr, "rouge5_f1": rf, "overlap_words": sums[0],
                       "pred_words": sums[1], "ref_words": sums[2]}
    if snippets is not None:
        result["with_rate"] = _mean(row["with_rate"] for row in rows.values())
        result["without_rate"] = _mean(row["without_rate"] for row in rows.values())
    if per_page:
        result["per_page"] = rows
    return result


# ---------------------------------------------------------------- systems


def groundtruth_pages(limit: int | None = None, corpus: str = "dev") -> list[dict]:
    """The corpus pages with a ground-truth reference (``limit``: evenly spread subset)."""
    from pulpie_rt.corpus import load_pages

    pages = [p for p in load_pages(corpus) if p.get("reference_kind") == "groundtruth"
             and isinstance(p.get("reference"), str)]
    return spread(pages, limit)


def rule_texts(pages: Sequence[dict]) -> tuple[dict[str, str], dict[str, str],
                                                 dict[str, int]]:
    """Texts of the rule-label ceiling and of the whole page, and each page's block count.

    A page that fails in simplify / reconstruct gets "" (and block count 0 when simplify
    failed).
    """
    from pulpie_rt.runtime.blocks import extract_blocks
    from pulpie_rt.runtime.labels import labels_from_predictions
    from pulpie_rt.runtime.markdown import to_text
    from pulpie_rt.runtime.reconstruct import extract_main_html
    from pulpie_rt.runtime.simplify import simplify
    from pulpie_rt.train.labels import label_blocks

    ceiling: dict[str, str] = {}
    whole: dict[str, str] = {}
    n_blocks: dict[str, int] = {}
    for page in pages:
        pid = page["id"]
        ceiling[pid] = whole[pid] = ""
        try:
            simplified, map_html = simplify(page["html"])
            blocks, item_ids = extract_blocks(simplified)
        except Exception:  # counted as an empty output, not fatal
            n_blocks[pid] = 0
            continue
        n_blocks[pid] = sum(1 for i in item_ids if i is not None)
        for target, preds in ((ceiling, label_blocks(blocks, page["reference"])),
                              (whole, [1] * len(blocks))):
            try:
                labels = labels_from_predictions(item_ids, preds)
                target[pid] = to_text(extract_main_html(map_html, labels))
            except Exception:
                pass
    return ceiling, whole, n_blocks


def run_ours(pages: Sequence[dict], model: str, threads: int | None = None,
             batch_pages: int = 32) -> dict[str, Any]:
    """Our extractor over ``pages``: texts, errors, block counts, load and extraction time."""
    from pulpie_rt import Extractor

    t0 = time.perf_counter()
    extractor = Extractor(model, threads=threads)
    load_s = time.perf_counter() - t0
    texts: dict[str, str] = {}
    errors: dict[str, str] = {}
    n_blocks: dict[str, int] = {}
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for start in range(0, len(pages), batch_pages):
        batch = pages[start:start + batch_pages]
        results = extractor.extract_batch([p["html"] for p in batch])
        for page, result in zip(batch, results, strict=True):
            texts[page["id"]] = result.text
            n_blocks[page["id"]] = result.n_blocks
            if result.error is not None:
                errors[page["id"]] = result.error
    wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"texts": texts, "errors": errors, "n_blocks": n_blocks, "load_s": load_s,
            "wall_s": wall_s, "cpu_s": cpu_s, "timed_pages": len(pages),
            "device": extractor.device}


def run_trafilatura(pages: Sequence[dict]) -> dict[str, Any]:
    """``trafilatura.extract`` (defaults) over ``pages``; raises ImportError without it."""
    import trafilatura

    texts: dict[str, str] = {}
    errors: dict[str, str] = {}
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for page in pages:
        try:
            texts[page["id"]] = trafilatura.extract(page["html"]) or ""
        except Exception as exc:  # a page that fails is scored empty, not fatal
            texts[page["id"]] = ""
            errors[page["id"]] = f"{type(exc).__name__}: {exc}"
    wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"texts": texts, "errors": errors, "wall_s": wall_s, "cpu_s": cpu_s,
            "timed_pages": len(pages), "version": getattr(trafilatura, "__version__", None)}


def _empty_with_blocks(texts: Mapping[str, str], references: Mapping[str, str],
                       n_blocks: Mapping[str, int]) -> list[str]:
    return [pid for pid, ref in references.items()
            if words(ref) and not words(texts.get(pid) or "") and n_blocks.get(pid, 0) > 0]


# ---------------------------------------------------------------- report


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def quality_table(rows: Sequence[dict[str, Any]]) -> str:
    headers = ["system", "pages", "word P", "word R", "word F1", "ROUGE-5 F1", "empty",
               "empty, blocks kept", "with", "w/o", "pages/s"]
    body = []
    for row in rows:
        s = row["scores"]
        body.append([row["name"], str(s["pages"]), _f(s["precision"]), _f(s["recall"]),
                     _f(s["f1"]), _f(s["rouge5_f1"]), str(s["empty"]),
                     "-" if row.get("empty_with_blocks") is None
                     else str(len(row["empty_with_blocks"])),
                     _f(s.get("with_rate"), 2), _f(s.get("without_rate"), 2),
                     _f(row.get("pages_per_s"), 1)])
    return format_table(headers, body)


def micro_table(rows: Sequence[dict[str, Any]]) -> str:
    headers = ["system (micro)", "word P", "word R", "word F1", "ROUGE-5 P", "ROUGE-5 R",
               "ROUGE-5 F1"]
    body = [[row["name"], *(_f(row["scores"]["micro"][k]) for k in
                            ("precision", "recall", "f1", "rouge5_p", "rouge5_r",
                             "rouge5_f1"))] for row in rows]
    return format_table(headers, body)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pulpie_rt.runtime.models import DEFAULT_MODEL

    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"what ours loads: hub name, checkpoint, bundle or engine "
                             f"(default {DEFAULT_MODEL})")
    parser.add_argument("--limit", type=int, default=None,
                        help="score only N ground-truth pages, evenly spread (default: all)")
    parser.add_argument("--skip", nargs="*", default=[], choices=SYSTEMS,
                        help="rows to leave out")
    parser.add_argument("--all-pages", action="store_true",
                        help="time ours and trafilatura over all corpus pages (quality still "
                             "on the ground-truth pages only)")
    parser.add_argument("--corpus", default="dev", help="corpus file (default dev)")
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
    print(f"quality: {len(gt_pages)} ground-truth pages scored, {len(timed_pages)} timed",
          flush=True)
    report: dict[str, Any] = {"kind": "quality", "machine": machine_info(),
                              "corpus": args.corpus, "scored_pages": len(gt_pages),
                              "timed_pages": len(timed_pages), "rouge_n": ROUGE_N,
                              "rows": [], "skipped": {}}
    rows: list[dict[str, Any]] = report["rows"]
    failed = False

    def score(texts: Mapping[str, str]) -> dict[str, Any]:
        return score_pages(texts, references, snippets, per_page=args.per_page)

    if "ours" not in args.skip:
        try:
            ours = run_ours(timed_pages, str(args.model), args.threads, args.batch_pages)
        except Exception as exc:  # the model could not be resolved or loaded
            line = f"ours: skipped - cannot load model {args.model!r}: {exc}"
            print(line, flush=True)
            report["skipped"]["ours"] = line
            failed = True
        else:
            rows.append({
                "system": "ours", "name": ROW_NAMES["ours"], "model": str(args.model),
                "device": ours["device"], "threads": args.threads,
                "scores": score(ours["texts"]),
                "empty_with_blocks": _empty_with_blocks(ours["texts"], references,
                                                        ours["n_blocks"]),
                "errors": {pid: e for pid, e in ours["errors"].items() if pid in references},
                "errors_all_timed": len(ours["errors"]),
                "model_load_s": ours["load_s"], "wall_s": ours["wall_s"],
                "cpu_s": ours["cpu_s"], "timed_pages": ours["timed_pages"],
                "pages_per_s": ours["timed_pages"] / ours["wall_s"] if ours["wall_s"] else None,
            })
            print(f"ours: {ours['wall_s']:.1f} s for {ours['timed_pages']} pages "
                  f"(model load {ours['load_s']:.1f} s, excluded)", flush=True)
    if "trafilatura" not in args.skip:
        try:
            traf = run_trafilatura(timed_pages)
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
                "wall_s": traf["wall_s"], "cpu_s": traf["cpu_s"],
                "timed_pages": traf["timed_pages"],
                "pages_per_s": traf["timed_pages"] / traf["wall_s"] if traf["wall_s"] else None,
            })
            print(f"trafilatura: {traf['wall_s']:.1f} s for {traf['timed_pages']} pages",
                  flush=True)
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
    print("\npages/s: wall clock over the same pages in this run, one process; ours = "
          "extract_batch + .text, model load excluded; rule rows untimed")
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
