"""Pages per CPU-second by page length: each system over the same pages, binned by the page's
HTML size (``make bench``'s row, the plot ``bench.plots`` draws from it).

    python -m bench.page_lengths [--systems fast accurate trafilatura] [--corpus dev]
                                 [--pages N] [--repeats R] [--out PATH]

Every page goes through each system back to back, the order turning page by page, after an
untimed warm-up on the first pages; a page's cost is the CPU seconds of this process for its call
(``time.process_time``: other jobs on the machine do not count; ONNX Runtime is held to one
thread, so a call's CPU seconds are one core's). A bin's pages per CPU-second is its pages
over the CPU seconds they took.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from eval.report import format_table, machine_info, write_result

# (label, smallest, largest) HTML bytes of each bin; the last has no upper bound
BINS = (("under 25 KB", 0, 25_000), ("25-75 KB", 25_000, 75_000),
        ("75-200 KB", 75_000, 200_000), ("200-500 KB", 200_000, 500_000),
        ("over 500 KB", 500_000, None))
SYSTEMS = ("fast", "accurate", "trafilatura")
WARM_UP_PAGES = 5


def bin_of(size: int) -> str:
    for label, low, high in BINS:
        if size >= low and (high is None or size < high):
            return label
    raise ValueError(size)


def system_call(name: str) -> Callable[[str], Any]:
    """A system's call on one page's HTML: ours by profile (the embedded model, ONNX Runtime
    on one thread), trafilatura with its defaults."""
    if name == "trafilatura":
        import trafilatura

        return trafilatura.extract
    from pulpie_rt import Extractor

    extractor = Extractor(profile=name, threads=1)
    return lambda html: extractor.extract_batch([html])


def measure(pages: Sequence[dict], names: Sequence[str], repeats: int = 1) -> dict[str, Any]:
    calls = {name: system_call(name) for name in names}
    for page in pages[:WARM_UP_PAGES]:  # warm-up: models loaded, lazy imports done
        for call in calls.values():
            call(page["html"])
    cpu: dict[str, dict[str, float]] = {name: {label: 0.0 for label, *_ in BINS}
                                        for name in names}
    counts = {label: 0 for label, *_ in BINS}
    for repeat in range(repeats):
        for index, page in enumerate(pages):
            html = page["html"]
            label = bin_of(len(html.encode("utf-8", "surrogatepass")))
            if repeat == 0:
                counts[label] += 1
            order = list(names) if (index + repeat) % 2 == 0 else list(reversed(names))
            for name in order:
                start = time.process_time()
                calls[name](html)
                cpu[name][label] += time.process_time() - start
    bins = []
    for label, low, high in BINS:
        n = counts[label] * repeats
        bins.append({"bin": label, "min_bytes": low, "max_bytes": high,
                     "pages": counts[label],
                     "systems": {name: {"cpu_s": cpu[name][label],
                                        "pages_per_cpu_s": (n / cpu[name][label]
                                                            if cpu[name][label] > 0 else None)}
                                 for name in names}})
    return {"bins": bins}


def table(bins: Sequence[dict[str, Any]], names: Sequence[str]) -> str:
    rows = [[b["bin"], b["pages"], *(b["systems"][n]["pages_per_cpu_s"] for n in names)]
            for b in bins]
    return format_table(["HTML size", "pages", *(f"{n} pages/CPU-s" for n in names)], rows)


def main(argv: list[str] | None = None) -> int:
    from eval.pages import bench_pages

    parser = argparse.ArgumentParser(prog="python -m bench.page_lengths",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS),
                        choices=list(SYSTEMS), help="our profiles and the peers to time")
    parser.add_argument("--corpus", default="dev")
    parser.add_argument("--pages", type=int, default=None,
                        help="N pages spread evenly over the corpus (default: all)")
    parser.add_argument("--repeats", type=int, default=1, help="timed passes over the pages")
    parser.add_argument("--out", default=None, help="JSON result (a file or a folder)")
    args = parser.parse_args(argv)
    pages = bench_pages(args.pages, corpus=args.corpus)
    measured = measure(pages, args.systems, args.repeats)
    payload = {"kind": "page-lengths", "machine": machine_info(), "corpus": args.corpus,
               "pages": len(pages), "repeats": args.repeats, "systems": args.systems,
               **measured}
    path = write_result("page-lengths", payload, args.out)
    print(table(measured["bins"], args.systems))
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
