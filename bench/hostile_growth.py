"""How the engine's CPU time grows with pages built to be slow, in one run: each shape at n,
2n and 4n of its unit, and the exponent of the growth (1: linear, 2: quadratic), beside a
page of plain blocks that is linear.

The shapes are what made lexbor quadratic before ``core/src/lexbor_parse.c``: many attributes
on one element (the tree builder compared each with the element's), and many distinct tag or
attribute names (lexbor's name hashes have 128 buckets that never grow). Each page goes
through ``Extractor.extract`` (the embedded model's default profile) once after a warm-up;
the time is the process's CPU time around the call.

    python -m bench.hostile_growth [--unit 200000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from typing import Any

from eval.report import format_table, machine_info, write_result

DEFAULT_UNIT = 200_000


def _names(n: int, prefix: str) -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


SHAPES: dict[str, Callable[[int], str]] = {
    "plain blocks (linear reference)": lambda n: "<html><body>" + "".join(
        f"<p>block {i}</p>" for i in range(n // 4)) + "</body></html>",
    "attributes on one element": lambda n: f"<html><body><p {_names(n, 'a')}>text</p>"
    "</body></html>",
    "attribute names, 100 an element": lambda n: "<html><body>" + "".join(
        f"<i {_names(100, f'a{i}x')}>x</i>" for i in range(n // 100)) + "</body></html>",
    "tag names": lambda n: "<html><body>" + "".join(f"<t{i}>x</t{i}>" for i in range(n))
    + "</body></html>",
}


def run_growth(unit: int = DEFAULT_UNIT) -> dict[str, Any]:
    from pulpie_rt import Extractor

    extractor = Extractor()
    extractor.extract("<html><body><p>warm up</p></body></html>")
    rows = []
    for name, make in SHAPES.items():
        seconds = []
        for factor in (1, 2, 4):
            html = make(unit * factor)
            started = time.process_time()
            result = extractor.extract(html)
            seconds.append(time.process_time() - started)
            if result.error is not None:
                raise RuntimeError(f"{name} x{factor}: {result.error}")
        exponent = math.log2(seconds[2] / seconds[1]) if seconds[1] > 0 else float("nan")
        rows.append({"shape": name, "bytes_4n": len(html), "cpu_s": seconds,
                     "exponent_2n_to_4n": exponent})
    return {"unit": unit, "rows": rows}


def growth_table(report: dict[str, Any]) -> str:
    return format_table(
        ["shape", "CPU-s n", "CPU-s 2n", "CPU-s 4n", "bytes 4n", "growth exponent 2n->4n"],
        [(row["shape"], *(f"{s:.3f}" for s in row["cpu_s"]), row["bytes_4n"],
          f"{row['exponent_2n_to_4n']:.2f}") for row in report["rows"]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile_growth", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--unit", type=int, default=DEFAULT_UNIT)
    parser.add_argument("--out", default=None, help="JSON file or folder (default bench/results)")
    args = parser.parse_args(argv)
    report = run_growth(args.unit)
    print(growth_table(report))
    path = write_result("hostile-growth", {"machine": machine_info(), **report}, args.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
