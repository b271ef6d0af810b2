"""Post-processing parity with the reference ``pulpie`` 0.0.2, on its own map_html.

For every page the reference's ``simplify`` gives ``map_html`` (lxml's serialization); ours
gets that string and lexbor's re-serialization of it (``LexborHTMLParser(map_html).html``,
the form our own ``simplify`` writes). For the label sets ``all_main``, ``all_other`` and
``alternating`` (odd block ids main), ``extract_main_html`` must equal the reference's byte
for byte, and ``to_markdown`` of it the reference's Markdown.

    python -m parity.postprocess_parity [--corpus dev|train] [--step N]
"""

from __future__ import annotations

import argparse
import sys

from parity.label_sets import LABEL_SETS, item_ids_of, label_set
from pulpie_rt.corpus import load_pages


def run(corpus: str = "dev", step: int = 1) -> dict[str, list[str]]:
    """``{page_id: [what differs]}`` over every ``step``-th page of ``corpus``."""
    from pulpie.markdown import to_markdown as ref_markdown
    from pulpie.reconstruct import extract_main_html as ref_reconstruct
    from pulpie.simplify import simplify as ref_simplify
    from selectolax.lexbor import LexborHTMLParser

    from pulpie_rt.runtime.stages.markdown import to_markdown
    from pulpie_rt.runtime.stages.reconstruct import extract_main_html

    pages = load_pages(corpus)[::step]
    mismatches: dict[str, list[str]] = {}
    for n, page in enumerate(pages, 1):
        simplified, map_html = ref_simplify(page["html"])
        reserialized = LexborHTMLParser(map_html).html or ""
        item_ids = item_ids_of(simplified)
        for name in LABEL_SETS:
            labels = label_set(name, item_ids)
            expected = ref_reconstruct(map_html, labels)
            ours = extract_main_html(map_html, labels)
            if ours != expected:
                mismatches.setdefault(page["id"], []).append(f"{name}: html (lxml map_html)")
            if extract_main_html(reserialized, labels) != expected:
                mismatches.setdefault(page["id"], []).append(f"{name}: html (lexbor map_html)")
            if to_markdown(ours) != ref_markdown(expected):
                mismatches.setdefault(page["id"], []).append(f"{name}: markdown")
        if n % 50 == 0:
            print(f"  {n}/{len(pages)} pages", file=sys.stderr)
    print(f"{len(pages)} {corpus} pages x {len(LABEL_SETS)} label sets: "
          f"{len(pages) - len(mismatches)} identical, {len(mismatches)} differ")
    for page_id, what in sorted(mismatches.items()):
        print(f"  {page_id}: {', '.join(what)}")
    return mismatches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="dev", help="dev or train")
    parser.add_argument("--step", type=int, default=1, help="every N-th page")
    args = parser.parse_args(argv)
    return 1 if run(args.corpus, args.step) else 0


if __name__ == "__main__":
    raise SystemExit(main())
