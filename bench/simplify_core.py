"""The compiled core of ``simplify`` against its Python implementation, on a whole corpus file.

    python -m pulpie_rt.bench.simplify_core --corpus train     # 986 pages, about 2 minutes

For every page: whether the core handles it (or refuses it, and why: ``simplify`` then runs
Python), and whether ``simplify`` (core) and ``simplify_python`` give exactly the same
``(simplified_html, map_html)``. Also the CPU seconds of each, interleaved page by page (the
side-by-side speed figures against the reference are ``bench.cpu_stages``). Exit status 1 if
any page differs.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

from pulpie_rt.corpus import iter_pages
from pulpie_rt.runtime import dom, simplify_native
from pulpie_rt.runtime.simplify import simplify, simplify_python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="dev", help="corpus file name (dev, train)")
    parser.add_argument("--limit", type=int, default=None, help="first N pages only")
    args = parser.parse_args(argv)
    if not simplify_native.available():
        print("no compiled core in this environment (make core builds it)", file=sys.stderr)
        return 2
    pages = differ = 0
    refused: collections.Counter[str] = collections.Counter()
    core_s = python_s = 0.0
    for page in iter_pages(args.corpus):
        if args.limit is not None and pages >= args.limit:
            break
        pages += 1
        html = page["html"]
        reason = simplify_native.last_reason_for(dom.lexbor_serialization(html))
        if reason is not None:
            refused[reason] += 1
        start = time.process_time()
        core = simplify(html)
        middle = time.process_time()
        python = simplify_python(html)
        core_s += middle - start
        python_s += time.process_time() - middle
        if core != python:
            differ += 1
            print(f"DIFF {page['id']}", flush=True)
    handled = pages - sum(refused.values())
    print(f"{args.corpus}: {pages} pages, core handles {handled}, refused "
          f"{dict(refused) or 0} (simplify ran Python there)")
    print(f"identical (simplified_html and map_html, exact): {pages - differ}/{pages}")
    print(f"CPU s: simplify {core_s:.2f}, simplify_python {python_s:.2f} "
          f"({python_s / core_s:.2f}x)")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
