"""Parity of our ``simplify`` with the reference's, live, on a whole corpus file.

    python -m parity.simplify_parity --corpus train     # 986 pages, several minutes

The tests compare the dev pages against recorded golden files; this runs the reference itself
(slow), for the other real pages. Prints each differing page and the count.
"""

from __future__ import annotations

import argparse
import sys

from parity.record_golden import normalize_ws
from pulpie_rt.corpus import iter_pages
from pulpie_rt.runtime.stages.simplify import simplify


def first_difference(a: str, b: str, context: int = 120) -> tuple[str, str]:
    n = min(len(a), len(b))
    i = next((k for k in range(n) if a[k] != b[k]), n)
    return a[max(0, i - context) : i + context], b[max(0, i - context) : i + context]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="train", help="corpus file name (dev, train)")
    parser.add_argument("--limit", type=int, default=None, help="first N pages only")
    args = parser.parse_args(argv)
    from pulpie.simplify import simplify as reference_simplify

    pages = differ = 0
    for page in iter_pages(args.corpus):
        if args.limit is not None and pages >= args.limit:
            break
        pages += 1
        ours = normalize_ws(simplify(page["html"])[0])
        ref = normalize_ws(reference_simplify(page["html"])[0])
        if ours != ref:
            differ += 1
            ref_part, our_part = first_difference(ref, ours)
            print(f"DIFF {page['id']}\n  ref:  {ref_part!r}\n  ours: {our_part!r}", flush=True)
    print(f"simplify parity on {args.corpus}: {pages - differ}/{pages} pages identical")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
