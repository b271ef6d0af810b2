"""The compiled core (``core/``) against its Python specification (``tests/spec/``), on a
corpus file.

    python -m parity.native_core --corpus train     # 986 pages, several minutes

lexbor: for every page, whether the core's lexbor serialization of its UTF-8 bytes is byte for
byte selectolax's ``LexborHTMLParser(data).html``, and whether the core's whole
``lexbor_serialization`` (the raw page's rewrites, lexbor, the ``<?xml`` removal) equals the
specification's.

simplify: for every page, whether the core's ``(simplified_html, map_html)`` equals the
specification's exactly. Where they differ, the reference's own ``pulpie.simplify.simplify``
says which one is right (on ``simplified_html``, white space normalized as the parity tests
compare it).

reconstruct: for every page and three label sets (alternating, all main, all other) on the
core's ``map_html``, the same for ``extract_main_html``. Where the two differ, the reference's
own ``pulpie.reconstruct.extract_main_html`` on the same input says which one is right
(libxml2 reads ``map_html`` there, as the core does; the specification walks lexbor's tree of
it and reproduces libxml2's differences, not all of them).

The core never refuses a page; an error it reports counts as a difference. Also the CPU seconds
of each side (the side-by-side speed against the reference is ``bench.cpu_stages``). Exit
status 1 if any page differs where the core is not the one the reference agrees with.

The specification is read from the checkout (``tests/spec`` beside this folder).
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

from parity.label_sets import item_ids_of, label_sets
from pulpie_rt.corpus import iter_pages
from pulpie_rt.runtime import native
from pulpie_rt.runtime.stages.reconstruct import extract_main_html
from pulpie_rt.runtime.stages.simplify import SimplifyError, simplify

_TESTS_DIR = Path(__file__).resolve().parent.parent / "tests"


def load_spec():
    """The specification modules (``tests/spec``) of this checkout."""
    if not (_TESTS_DIR / "spec" / "__init__.py").is_file():
        raise SystemExit(f"no specification at {_TESTS_DIR / 'spec'}: run from a checkout")
    if str(_TESTS_DIR) not in sys.path:
        sys.path.insert(0, str(_TESTS_DIR))
    from spec import dom_spec, reconstruct_spec, simplify_spec

    return dom_spec, simplify_spec, reconstruct_spec


def _judge(core: str, spec: str, reference: str | None) -> str:
    if reference is None:
        return "no reference"
    return "core" if core == reference else "spec" if spec == reference else "neither"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="dev", help="corpus file name (dev, train)")
    parser.add_argument("--limit", type=int, default=None, help="first N pages only")
    args = parser.parse_args(argv)
    if not native.available():
        print("no compiled core in this environment (make core builds it)", file=sys.stderr)
        return 2
    dom_spec, simplify_spec, reconstruct_spec = load_spec()
    from selectolax.lexbor import LexborHTMLParser

    try:
        from pulpie.reconstruct import extract_main_html as reference_extract
        from pulpie.simplify import simplify as reference_simplify

        from parity.record_golden import normalize_ws
    except ImportError:
        reference_extract = reference_simplify = None
    pages = cases = 0
    lexbor_differ: list[str] = []
    serialization_differ: list[str] = []
    simplify_differ: list[tuple[str, str]] = []  # (page, who agrees with the reference)
    recon_differ: list[tuple[str, str, str]] = []  # (page, labels, who agrees)
    seconds: collections.Counter[str] = collections.Counter()
    for page in iter_pages(args.corpus):
        if args.limit is not None and pages >= args.limit:
            break
        pages += 1
        html = page["html"]
        data = html.encode("utf-8", "ignore")
        start = time.process_time()
        selectolax_html = LexborHTMLParser(data).html
        middle = time.process_time()
        core_html = native.simplify_step(data, native.STEP_LEXBOR_HTML)
        seconds["lexbor selectolax"] += middle - start
        seconds["lexbor core"] += time.process_time() - middle
        if core_html != selectolax_html:
            lexbor_differ.append(page["id"])
            print(f"DIFF lexbor {page['id']}", flush=True)
        core_serialization = native.simplify_step(html, native.STEP_LEXBOR_SERIALIZATION)
        if core_serialization != dom_spec.lexbor_serialization(html):
            serialization_differ.append(page["id"])
            print(f"DIFF lexbor_serialization {page['id']}", flush=True)

        start = time.process_time()
        try:
            core = simplify(html)
        except SimplifyError as exc:
            core = ("", f"error: {exc}")
        middle = time.process_time()
        spec = simplify_spec.simplify(html)
        seconds["simplify core"] += middle - start
        seconds["simplify spec"] += time.process_time() - middle
        if core != spec:
            judge = "no reference"
            if reference_simplify is not None:
                ref = normalize_ws(reference_simplify(html)[0])
                judge = _judge(normalize_ws(core[0]), normalize_ws(spec[0]), ref)
                if judge == "neither" and core[0] == spec[0]:
                    judge = "map_html only"
            simplify_differ.append((page["id"], judge))
            print(f"DIFF simplify {page['id']}: reference agrees with {judge}", flush=True)
        simplified, map_html = spec
        for name, labels in label_sets(item_ids_of(simplified)).items():
            cases += 1
            start = time.process_time()
            try:
                core_main = extract_main_html(map_html, labels)
            except ValueError as exc:
                core_main = f"error: {exc}"
            middle = time.process_time()
            spec_main = reconstruct_spec.extract_main_html(map_html, labels)
            seconds["reconstruct core"] += middle - start
            seconds["reconstruct spec"] += time.process_time() - middle
            if core_main == spec_main:
                continue
            ref_main = reference_extract(map_html, labels) if reference_extract else None
            judge = _judge(core_main, spec_main, ref_main)
            recon_differ.append((page["id"], name, judge))
            print(f"DIFF reconstruct {page['id']} {name}: reference agrees with {judge}",
                  flush=True)
    print(f"{args.corpus}: {pages} pages")
    print(f"lexbor: core's serialization == selectolax's LexborHTMLParser(bytes).html "
          f"{pages - len(lexbor_differ)}/{pages}; core's lexbor_serialization == spec's "
          f"{pages - len(serialization_differ)}/{pages}")
    simplify_judged = collections.Counter(judge for _, judge in simplify_differ)
    print(f"simplify: identical (simplified_html and map_html, exact) "
          f"{pages - len(simplify_differ)}/{pages}; where they differ the reference agrees "
          f"with: {dict(simplify_judged) or '-'}")
    judged = collections.Counter(judge for _, _, judge in recon_differ)
    print(f"reconstruct: {cases} cases (3 label sets), identical "
          f"{cases - len(recon_differ)}/{cases}; where they differ the reference agrees with: "
          f"{dict(judged) or '-'}")
    for stage, other in (("lexbor", "selectolax"), ("simplify", "spec"),
                         ("reconstruct", "spec")):
        core_s, other_s = seconds[f"{stage} core"], seconds[f"{stage} {other}"]
        print(f"CPU s {stage}: core {core_s:.2f}, {other} {other_s:.2f} "
              f"({other_s / max(core_s, 1e-9):.2f}x)")
    bad = (len(lexbor_differ) + len(serialization_differ)
           + sum(n for judge, n in simplify_judged.items() if judge != "core")
           + sum(n for judge, n in judged.items() if judge != "core"))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
