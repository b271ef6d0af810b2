"""The compiled core (``core``) against the Python implementation, on a corpus file.

    python -m pulpie_rt.parity.native_core --corpus train     # 986 pages, a few minutes

simplify: for every page, whether the core handles it (or refuses it, and why: ``simplify``
then runs Python), and whether ``simplify`` and ``simplify_python`` give exactly the same
``(simplified_html, map_html)``.

reconstruct: for every page and three label sets (alternating, all main, all other) on our
``map_html``, the same for ``extract_main_html`` and ``extract_main_html_python``. Where the
two differ, the reference's own ``pulpie.reconstruct.extract_main_html`` on the same input
says which one is right (libxml2 reads our ``map_html``; the Python implementation walks
lexbor's tree of it and reproduces libxml2's differences, not all of them).

Also the CPU seconds of each side (the side-by-side speed against the reference is
``bench.cpu_stages``). Exit status 1 if any page differs where the core is not the one that
agrees with the reference.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

from pulpie_rt.corpus import iter_pages
from pulpie_rt.parity.label_sets import item_ids_of, label_sets
from pulpie_rt.runtime import native
from pulpie_rt.runtime.stages import dom
from pulpie_rt.runtime.stages.reconstruct import extract_main_html, extract_main_html_python
from pulpie_rt.runtime.stages.simplify import simplify, simplify_python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="dev", help="corpus file name (dev, train)")
    parser.add_argument("--limit", type=int, default=None, help="first N pages only")
    args = parser.parse_args(argv)
    if not native.available():
        print("no compiled core in this environment (make core builds it)", file=sys.stderr)
        return 2
    try:
        from pulpie.reconstruct import extract_main_html as reference_extract
    except ImportError:
        reference_extract = None
    pages = simplify_differ = cases = 0
    simplify_refused: collections.Counter[str] = collections.Counter()
    recon_refused: collections.Counter[str] = collections.Counter()
    recon_differ: list[tuple[str, str, str]] = []  # (page, labels, who agrees with reference)
    seconds = collections.Counter()
    for page in iter_pages(args.corpus):
        if args.limit is not None and pages >= args.limit:
            break
        pages += 1
        html = page["html"]
        reason = native.simplify_reason(dom.lexbor_serialization(html))
        if reason is not None:
            simplify_refused[reason] += 1
        start = time.process_time()
        core = simplify(html)
        middle = time.process_time()
        python = simplify_python(html)
        seconds["simplify core"] += middle - start
        seconds["simplify python"] += time.process_time() - middle
        if core != python:
            simplify_differ += 1
            print(f"DIFF simplify {page['id']}", flush=True)
        simplified, map_html = core
        for name, labels in label_sets(item_ids_of(simplified)).items():
            cases += 1
            reason = native.reconstruct_reason(map_html, labels)
            if reason is not None:
                recon_refused[reason] += 1
            start = time.process_time()
            core_html = extract_main_html(map_html, labels)
            middle = time.process_time()
            python_html = extract_main_html_python(map_html, labels)
            seconds["reconstruct core"] += middle - start
            seconds["reconstruct python"] += time.process_time() - middle
            if core_html == python_html:
                continue
            judge = "no reference"
            if reference_extract is not None:
                ref_html = reference_extract(map_html, labels)
                judge = ("core" if core_html == ref_html
                         else "python" if python_html == ref_html else "neither")
            recon_differ.append((page["id"], name, judge))
            print(f"DIFF reconstruct {page['id']} {name}: reference agrees with {judge}",
                  flush=True)
    handled = pages - sum(simplify_refused.values())
    print(f"{args.corpus}: {pages} pages")
    print(f"simplify: core handles {handled}, refused {dict(simplify_refused) or 0} (Python ran "
          f"there); identical (simplified_html and map_html, exact): "
          f"{pages - simplify_differ}/{pages}")
    judged = collections.Counter(judge for _, _, judge in recon_differ)
    print(f"reconstruct: {cases} cases (3 label sets), core handles "
          f"{cases - sum(recon_refused.values())}, refused {dict(recon_refused) or 0}; identical "
          f"{cases - len(recon_differ)}/{cases}; where they differ the reference agrees with: "
          f"{dict(judged) or '-'}")
    for stage in ("simplify", "reconstruct"):
        core_s, python_s = seconds[f"{stage} core"], seconds[f"{stage} python"]
        print(f"CPU s {stage}: core {core_s:.2f}, python {python_s:.2f} "
              f"({python_s / max(core_s, 1e-9):.2f}x)")
    bad = simplify_differ + sum(n for judge, n in judged.items() if judge != "core")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
