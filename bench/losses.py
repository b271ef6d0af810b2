"""Where a system loses word F1 against another, by kind of page: from a ``bench.quality``
result written with ``--per-page``.

    python -m bench.losses RESULT.json [--system "ours (fast)"]
                                     [--against trafilatura] [--out PATH]

For each page set of the result that holds both rows' per-page scores, two tables:

- by the length of the page's reference (words: under 150, 150-299, 300-599, 600 and more):
  pages (and their share of the set), each system's mean word F1, and the share of the
  system's lost word F1 (the sum over pages of 1 - F1) that lies there: a share of the loss
  well above the share of pages marks where it loses;
- by comment markup: pages whose HTML names a comment container (an element whose ``class``
  or ``id`` holds ``comment``, ``COMMENT_MARKUP``) against the rest, the same columns.

The pages' HTML is read from the set (``bench.quality``'s ``set_pages``: the dev corpus or
the article sets ``python -m eval.article_sets`` builds). Measurement only.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Mapping

from bench.quality import set_pages
from eval.report import format_table, write_result

# an element whose class or id names a comment container (class="comments", id="comment-12")
COMMENT_MARKUP = re.compile(r"""\b(?:class|id)\s*=\s*["'][^"'>]*comment""", re.IGNORECASE)
MARKUP_GROUPS = ("comment markup", "no comment markup")
# reference lengths, in words: [low, high) for each group
LENGTHS = ((0, 150), (150, 300), (300, 600), (600, None))


def length_group(words: int) -> str:
    for low, high in LENGTHS:
        if high is None or words < high:
            return f"{low}+ words" if high is None else f"{low}-{high - 1} words"
    raise AssertionError(words)


def loss_table(ours: Mapping[str, dict], theirs: Mapping[str, dict],
               group_of: Mapping[str, str], groups: list[str]) -> list[dict]:
    """Per group (``group_of``: page id -> group): pages, their share of all pages, mean F1 of
    each side, and the share of ``ours``' lost F1 (sum of 1 - F1) there."""
    lost = sum(1.0 - s["f1"] for s in ours.values()) or 1.0
    rows = []
    for group in groups:
        ids = [pid for pid in ours if group_of[pid] == group]
        rows.append({
            "group": group, "pages": len(ids), "pages_share": round(len(ids) / len(ours), 4),
            "f1": round(statistics.fmean(ours[p]["f1"] for p in ids), 4) if ids else None,
            "against_f1": (round(statistics.fmean(theirs[p]["f1"] for p in ids), 4)
                           if ids else None),
            "lost_share": round(sum(1.0 - ours[p]["f1"] for p in ids) / lost, 4)})
    return rows


def per_page(page_set: dict, name: str) -> dict[str, dict] | None:
    """The per-page scores of ``page_set``'s row ``name`` (None: no such row or scores)."""
    for row in page_set["rows"]:
        if row.get("name") == name:
            return (row.get("scores") or {}).get("per_page")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.losses",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("result", help="a bench.quality JSON written with --per-page")
    parser.add_argument("--system", default="ours (fast)", help="row to analyse")
    parser.add_argument("--against", default="trafilatura", help="row to compare with")
    parser.add_argument("--out", default=None, help="JSON result: a .json file or a folder")
    args = parser.parse_args(argv)
    with open(args.result, encoding="utf-8") as fh:
        result = json.load(fh)
    found = {}
    for page_set in result["sets"]:
        name = page_set["page_set"]
        ours, theirs = per_page(page_set, args.system), per_page(page_set, args.against)
        if not ours or not theirs:
            print(f"losses: {name}: no per-page scores for {args.system!r} and "
                  f"{args.against!r} (bench.quality --per-page): skipped")
            continue
        pages = {p["id"]: p for p in set_pages(name, argparse.Namespace(limit=None,
                                                                        corpus="dev"))}
        missing = sorted(set(ours) - set(pages))
        if missing:
            raise SystemExit(f"losses: {name}: {len(missing)} scored pages are not in the set "
                             f"as built here (first: {missing[0]})")
        by_length = loss_table(ours, theirs,
                               {p: length_group(s["ref_words"]) for p, s in ours.items()},
                               [length_group(low) for low, _ in LENGTHS])
        by_markup = loss_table(ours, theirs,
                               {p: MARKUP_GROUPS[not COMMENT_MARKUP.search(pages[p]["html"])]
                                for p in ours}, list(MARKUP_GROUPS))
        found[name] = {"pages": len(ours), "by_reference_length": by_length,
                       "by_comment_markup": by_markup}
        print(f"\n== {name}: {len(ours)} pages, {args.system} against {args.against}")
        for rows in (by_length, by_markup):
            print(format_table(
                ["pages of", "pages", "share of pages", f"{args.system} F1",
                 f"{args.against} F1", f"share of {args.system}'s lost F1"],
                [[r["group"], r["pages"], f"{r['pages_share']:.0%}",
                  "-" if r["f1"] is None else f"{r['f1']:.3f}",
                  "-" if r["against_f1"] is None else f"{r['against_f1']:.3f}",
                  f"{r['lost_share']:.0%}"] for r in rows]))
    if args.out:
        path = write_result("losses", {"kind": "losses", "result": args.result,
                                       "system": args.system, "against": args.against,
                                       "sets": found}, args.out)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
