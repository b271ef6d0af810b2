"""Record the reference's pre/post-processing outputs on the dev pages as golden files.

``make golden`` runs this (and the label recorder). It needs the reference ``pulpie==0.0.2``
(the dev install); CI never runs it, it only compares against the files it writes:

``tests/golden/prepost.json.gz``: per dev page id
  ``simplified_sha``  sha256 of the whitespace-normalised ``simplified_html``
  ``n_blocks``, ``item_ids``
  ``recon``: for label sets ``all_main``, ``all_other``, ``alternating`` (odd ids main):
             sha256 of the exact ``extract_main_html`` output and of its ``to_markdown``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from pathlib import Path

from parity.label_sets import item_ids_of, label_sets
from pulpie_rt.corpus import iter_pages
from pulpie_rt.runtime.digest import text_sha256

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "tests" / "golden"
PREPOST_PATH = GOLDEN_DIR / "prepost.json.gz"
_ASCII_WS = re.compile(r"[ \t\n\r\f\v]+")


def normalize_ws(text: str) -> str:
    """Runs of ASCII whitespace collapsed to one space, stripped (the parity criterion)."""
    return _ASCII_WS.sub(" ", text).strip()


def record_prepost(out: Path = PREPOST_PATH) -> dict:
    from pulpie.markdown import to_markdown
    from pulpie.reconstruct import extract_main_html
    from pulpie.simplify import simplify

    golden: dict[str, dict] = {}
    start = time.perf_counter()
    for n, page in enumerate(iter_pages("dev"), 1):
        simplified, map_html = simplify(page["html"])
        item_ids = item_ids_of(simplified)
        recon = {}
        for name, labels in label_sets(item_ids).items():
            main_html = extract_main_html(map_html, labels)
            recon[name] = {"html_sha": text_sha256(main_html),
                          "md_sha": text_sha256(to_markdown(main_html))}
        golden[page["id"]] = {
            "simplified_sha": text_sha256(normalize_ws(simplified)),
            "n_blocks": len(item_ids),
            "item_ids": item_ids,
            "recon": recon,
        }
        if n % 25 == 0:
            print(f"  {n} pages, {time.perf_counter() - start:.0f}s", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        json.dump(golden, fh, sort_keys=True)
    print(f"wrote {out} ({len(golden)} pages)")
    return golden


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-labels", action="store_true",
                        help="only the pre/post-processing golden (no model run)")
    args = parser.parse_args(argv)
    record_prepost()
    if not args.skip_labels:
        from parity import record_golden_labels

        record_golden_labels.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
