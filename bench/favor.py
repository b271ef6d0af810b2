"""Word precision, recall and F1 of each ``favor`` setting (``precision``, ``balanced``,
``recall``: the named shifts of a bundle's decision threshold, ``pulpie_rt.h``'s
``PULPIE_RT_FAVOR_*``) on the page sets ``bench.quality`` scores, for each profile asked.

    python -m bench.favor [--model M] [--profiles fast accurate] [--sets groundtruth readability]
                          [--limit N] [--out PATH]

Each setting runs the runtime itself (``Extractor(model, profile=..., favor=...)`` over the
set's pages, as ``bench.quality`` runs it), each result's ``.text`` scored by
``eval.metrics.score_pages`` against the set's reference: the mean over pages of word
precision, recall and F1. Measurement only: the shift is the core's (``decode::FAVOR_SHIFT``),
never chosen from these figures.
"""

from __future__ import annotations

import argparse
import os
import sys

from bench.quality import page_sets, set_pages
from eval.metrics import score_pages
from eval.report import format_table, machine_info, write_result
from eval.systems import run_ours
from pulpie_rt.runtime.flow.engine import favor_settings
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL

# the settings in the order of the blocks they keep, fewest first
FAVORS = ("precision", "balanced", "recall")


def measure(model: str, profile: str | None, pages: list[dict]) -> dict[str, dict[str, float]]:
    """Mean word precision, recall and F1 over ``pages`` of each setting."""
    references = {p["id"]: p["reference"] for p in pages}
    scores = {}
    for favor in FAVORS:
        texts = run_ours(pages, model, profile=profile, favor=favor)["texts"]
        found = score_pages(texts, references)
        scores[favor] = {k: round(found[k], 4) for k in ("precision", "recall", "f1")}
    return scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.favor",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--profiles", nargs="*", default=["fast", "accurate"])
    parser.add_argument("--sets", nargs="*", default=["groundtruth", "readability"],
                        metavar="SET")
    parser.add_argument("--limit", type=int, default=None, help="at most N pages per set")
    parser.add_argument("--out", default=None,
                        help="a .json file, or a folder for favor-<time>.json")
    args = parser.parse_args(argv)
    assert set(FAVORS) == set(favor_settings()), "the header's settings changed"
    quality_args = argparse.Namespace(sets=args.sets, articles=False, limit=args.limit,
                                      corpus="dev")
    results: dict[str, dict] = {}
    rows = []
    for name in page_sets(quality_args):
        pages = [p for p in set_pages(name, quality_args) if p.get("reference")]
        results[name] = {"pages": len(pages), "profiles": {}}
        for profile in args.profiles:
            scores = measure(args.model, profile, pages)
            results[name]["profiles"][profile] = scores
            for favor in FAVORS:
                s = scores[favor]
                rows.append([name, len(pages), profile, favor, f"{s['precision']:.4f}",
                             f"{s['recall']:.4f}", f"{s['f1']:.4f}"])
            print(f"favor: {name} {profile} done", file=sys.stderr, flush=True)
    print(format_table(["set", "pages", "profile", "favor", "precision", "recall", "F1"],
                       rows))
    print(f"mean word precision / recall / F1 per page of {args.model} at each favor; "
          f"{os.cpu_count()} CPUs")
    if args.out:
        path = write_result("favor", {"kind": "favor", "machine": machine_info(),
                                      "model": args.model, "sets": results}, args.out)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
