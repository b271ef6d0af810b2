"""Throughput regression gate (``make bench-check``): ratios vs reference, never absolute times.

Runs the CPU-stage benchmark on a fixed, evenly spread subset of the dev pages, prints every
stage's ours/reference ratio next to the committed ``bench/baseline.json``, and exits 1 when any
ratio is more than ``tolerance`` (15%) below its baseline, or a baselined stage did not run.

    python -m pulpie_rt.bench.check              # the gate
    python -m pulpie_rt.bench.check --update     # new baseline: per-stage median of 3 runs
    PULPIE_RT_BENCH_SLOWDOWN=simplify=1.3 python -m pulpie_rt.bench.check   # must fail
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulpie_rt.eval.pages import bench_pages
from pulpie_rt.eval.report import REPO_ROOT, format_table, machine_info, write_result

BASELINE_PATH = REPO_ROOT / "bench" / "baseline.json"
DEFAULT_TOLERANCE = 0.15
DEFAULT_PAGES = 64
DEFAULT_REPEATS = 2


@dataclass(frozen=True)
class GateLine:
    stage: str
    baseline: float | None
    current: float | None
    passed: bool
    note: str

    @property
    def change(self) -> float | None:
        if self.baseline and self.current is not None:
            return self.current / self.baseline - 1
        return None


def compare_ratios(current: dict[str, float | None], baseline: dict[str, float],
                   tolerance: float = DEFAULT_TOLERANCE) -> list[GateLine]:
    """One line per stage: fails when ``current < baseline * (1 - tolerance)`` or is missing.

    A stage measured now but absent from the baseline is reported and passes (new stage).
    """
    lines = []
    for stage in sorted(set(baseline) | set(current)):
        base, now = baseline.get(stage), current.get(stage)
        if base is None:
            lines.append(GateLine(stage, None, now, True, "no baseline yet"))
        elif now is None:
            lines.append(GateLine(stage, base, None, False, "FAIL: stage did not run"))
        elif now < base * (1 - tolerance):
            lines.append(GateLine(stage, base, now, False,
                                  f"FAIL: more than {tolerance:.0%} below baseline"))
        else:
            lines.append(GateLine(stage, base, now, True, "ok"))
    return lines


def median_ratios(rounds: list[dict[str, float | None]]) -> dict[str, float]:
    """Per stage, the median over several measurements (a stage missing in any is left out)."""
    stages = set.intersection(*(set(k for k, v in r.items() if v is not None) for r in rounds))
    return {stage: statistics.median(r[stage] for r in rounds) for stage in sorted(stages)}


def gate_passed(lines: list[GateLine]) -> bool:
    return all(line.passed for line in lines)


def gate_table(lines: list[GateLine]) -> str:
    rows = [(line.stage,
             f"{line.baseline:.2f}x" if line.baseline is not None else "-",
             f"{line.current:.2f}x" if line.current is not None else "-",
             f"{line.change:+.1%}" if line.change is not None else "-",
             line.note) for line in lines]
    return format_table(["stage", "baseline", "now", "change", "verdict"], rows)


def load_baseline(path: Path = BASELINE_PATH) -> dict[str, Any]:
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: create it with "
                                f"`python -m pulpie_rt.bench.check --update`")
    return json.loads(path.read_text(encoding="utf-8"))


def measure_ratios(pages: int, repeats: int, checkpoint: Path | None) -> dict[str, Any]:
    from pulpie_rt.bench.cpu_stages import run_cpu_stages

    report = run_cpu_stages(bench_pages(pages), checkpoint=checkpoint, repeats=repeats,
                            log=lambda line: print(line, flush=True))
    report["ratios"] = {row["stage"]: row["ratio"] for row in report["stages"]}
    return report


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="python -m pulpie_rt.bench.check",
                                               description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, default=BASELINE_PATH)
    parser.add_argument("--pages", type=int, default=None,
                        help=f"dev pages to time (default: the baseline's, else {DEFAULT_PAGES})")
    parser.add_argument("--repeats", type=int, default=None,
                        help=f"passes over the pages (default: the baseline's, "
                             f"else {DEFAULT_REPEATS})")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="allowed drop below baseline (default: the baseline's, else 0.15)")
    parser.add_argument("--checkpoint", type=Path, default=None,
                        help="checkpoint whose tokenizer tokenize+pack uses (default: tiny)")
    parser.add_argument("--update", action="store_true",
                        help="measure and write the baseline instead of checking")
    parser.add_argument("--rounds", type=int, default=3,
                        help="with --update: measurements whose per-stage median becomes the "
                             "baseline (default 3)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    return parser


def run(args: argparse.Namespace) -> int:
    baseline: dict[str, Any] = {}
    if not args.update:
        try:
            baseline = load_baseline(args.baseline)
        except FileNotFoundError as exc:
            print(f"bench-check: {exc}", file=sys.stderr)
            return 2
    pages = args.pages or baseline.get("pages") or DEFAULT_PAGES
    repeats = args.repeats or baseline.get("repeats") or DEFAULT_REPEATS
    tolerance = args.tolerance if args.tolerance is not None else baseline.get(
        "tolerance", DEFAULT_TOLERANCE)

    print(f"bench-check: CPU stages, ours vs reference, {pages} dev pages x {repeats}",
          flush=True)
    report = measure_ratios(pages, repeats, args.checkpoint)
    machine = machine_info()
    if args.update:
        rounds = [report["ratios"]]
        for n in range(2, args.rounds + 1):
            print(f"bench-check: baseline round {n}/{args.rounds}", flush=True)
            rounds.append(measure_ratios(pages, repeats, args.checkpoint)["ratios"])
        report["ratios"] = median_ratios(rounds)
        new = {
            "description": "ours/reference pages-per-core ratios of the CPU stages; "
                           "`make bench-check` fails when one drops more than `tolerance` "
                           "below these",
            "pages": pages, "repeats": repeats, "tolerance": tolerance,
            "ratios": {k: round(v, 3) for k, v in report["ratios"].items() if v is not None},
            "measured": {"utc": machine["utc"], "git_commit": machine["git_commit"],
                         "cpu": machine["cpu"], "cpu_count": machine["cpu_count"],
                         "rounds": rounds, "stages_of_first_round": report["stages"]},
        }
        args.baseline.write_text(json.dumps(new, indent=2) + "\n", encoding="utf-8")
        print(f"bench-check: wrote baseline {args.baseline}")
        for stage, ratio in new["ratios"].items():
            print(f"  {stage}: {ratio:.2f}x")
        return 0

    lines = compare_ratios(report["ratios"], baseline["ratios"], tolerance)
    print(gate_table(lines))
    passed = gate_passed(lines)
    if args.json:
        write_result("bench-check", {"machine": machine, "tolerance": tolerance,
                                     "passed": passed, "report": report,
                                     "baseline": baseline["ratios"]}, args.json)
    print(f"bench-check: {'PASSED' if passed else 'FAILED'} "
          f"(tolerance {tolerance:.0%} below baseline; absolute speeds are not gated)")
    return 0 if passed else 1


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
