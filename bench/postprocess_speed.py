"""Post-processing speed, ours vs the reference ``pulpie`` 0.0.2, interleaved on the same pages.

For every page, the reference prepares the inputs once (untimed): its ``map_html`` and, per
label set, its main-content HTML. Then, stage by stage, ours and the reference run back to
back on the same input (``harness.side_by_side``: alternating order, CPU seconds of this one
process, so figures are per core):

- ``reconstruct``  (map_html, labels) -> main HTML
- ``markdown``     main HTML -> Markdown
- ``post``         both, (map_html, labels) -> Markdown
- ``cpu_path``     the whole CPU path, raw HTML -> simplify -> reconstruct -> Markdown
                   (``--cpu-path``; our simplify is another engineer's, measured as it is)

Label sets: ``alternating`` (odd block ids main: about half the page, close to what a model
keeps), ``all_main``, ``all_other``. Outputs are compared too (``same`` column).

    python -m pulpie_rt.bench.postprocess_speed [--pages N] [--labels alternating,all_main]
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from pulpie_rt.bench.harness import (
    bench_pages,
    format_table,
    machine_info,
    side_by_side,
    write_result,
)
from pulpie_rt.bench.record_golden import label_set

_ITEM_ID = re.compile(r'_item_id="(\d+)"')
LABEL_SETS = ("alternating", "all_main", "all_other")


def run(n_pages: int | None, label_names: list[str], repeats: int = 1,
        cpu_path: bool = False) -> dict[str, Any]:
    from pulpie.markdown import to_markdown as ref_markdown
    from pulpie.reconstruct import extract_main_html as ref_reconstruct
    from pulpie.simplify import simplify as ref_simplify

    from pulpie_rt.runtime.markdown import to_markdown
    from pulpie_rt.runtime.reconstruct import extract_main_html

    machine = machine_info()
    pages = bench_pages(n_pages)
    prepared = []
    for page in pages:
        simplified, map_html = ref_simplify(page["html"])
        prepared.append((page["id"], map_html, _ITEM_ID.findall(simplified)))
    htmls = {page["id"]: page["html"] for page in pages}

    rows = []
    results = []
    for name in label_names:
        recon_items = [(m, label_set(name, ids)) for _, m, ids in prepared]
        main_htmls = [ref_reconstruct(m, labels) for m, labels in recon_items]
        stages = [
            side_by_side(f"reconstruct/{name}", recon_items,
                         lambda item: extract_main_html(*item),
                         lambda item: ref_reconstruct(*item), repeats, same=str.__eq__),
            side_by_side(f"markdown/{name}", main_htmls, to_markdown, ref_markdown, repeats,
                         same=str.__eq__),
            side_by_side(f"post/{name}", recon_items,
                         lambda item: to_markdown(extract_main_html(*item)),
                         lambda item: ref_markdown(ref_reconstruct(*item)), repeats,
                         same=str.__eq__),
        ]
        if cpu_path:
            from pulpie_rt.runtime.simplify import simplify

            path_items = [(htmls[page_id], label_set(name, ids)) for page_id, _, ids in prepared]
            stages.append(side_by_side(
                f"cpu_path/{name}", path_items,
                lambda item: to_markdown(extract_main_html(simplify(item[0])[1], item[1])),
                lambda item: ref_markdown(ref_reconstruct(ref_simplify(item[0])[1], item[1])),
                repeats, same=str.__eq__))
        for stage in stages:
            d = stage.as_dict()
            results.append(d)
            rows.append([d["stage"], d["pages"], d["ours_pages_per_cpu_s"],
                         d["ref_pages_per_cpu_s"], d["ratio"], f"{d['same_output_pages']}/"
                         f"{len(prepared)}"])
    print(format_table(["stage", "pages", "ours p/s", "ref p/s", "ratio", "same"], rows))
    return {"pages": len(prepared), "repeats": repeats, "machine": machine, "stages": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=None, help="evenly spread subset")
    parser.add_argument("--labels", default="alternating,all_main,all_other")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cpu-path", action="store_true",
                        help="also time the whole CPU path (with our simplify)")
    parser.add_argument("--out", default=None, help="JSON result path")
    args = parser.parse_args(argv)
    names = [n for n in args.labels.split(",") if n]
    for n in names:
        if n not in LABEL_SETS:
            parser.error(f"unknown label set {n!r} (one of {', '.join(LABEL_SETS)})")
    payload = run(args.pages, names, args.repeats, args.cpu_path)
    path = write_result("postprocess_speed", payload, args.out)
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
