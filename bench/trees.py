"""The tree kernel (``kernels/``) against ONNX Runtime's ``TreeEnsembleClassifier``, side by
side in one run on the same real pages (``make bench`` rows; ``PULPIE_RT_TREES`` chooses):

1. **rescorer ms per page**: each rescorer of the embedded default model as the core runs it —
   the ``fast`` profile's two stages in context (``native.CoreContextRescorer``: context
   features, first stage, stage features, last stage) and the ``accurate`` profile's
   (``native.CoreRescorer`` over ``blocks-v1`` rows) — opened twice in this process, once on
   the kernel and once with ``PULPIE_RT_TREES=onnxruntime``; page by page, the first side
   alternating; CPU seconds of this process (``time.process_time``); per side the median over
   ``--passes`` of the sum over pages; log-odds bitwise equal counted per page;
2. **pages per CPU-second of the default profile**: ``Extractor()`` (embedded model, default
   profile) in two worker processes, one per side, each given the same pages in turn, pass
   by pass, the first side alternating; each reports the CPU seconds of its own process (all
   its threads) for a pass and the Markdown of every page; per side the median over passes;
   Markdown compared page by page.

    python -m bench.trees [--pages 120] [--passes 3] [--out bench/results/]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval.report import tool_env

TREES_ENV = "PULPIE_RT_TREES"  # core/src/ort/rescorer.rs: TREES_ENV
KERNEL, ONNXRUNTIME = "kernel", "onnxruntime"
DEFAULT_PAGES = 120
DEFAULT_PASSES = 3
# the goal: the default profile at least this many times the pages per CPU-second
# with the kernel as with ONNX Runtime's TreeEnsemble
TARGET_SPEEDUP = 1.8


@contextlib.contextmanager
def trees_env(value: str | None) -> Iterator[None]:
    """``PULPIE_RT_TREES`` set to ``value`` (None: unset) while a rescorer opens."""
    old = os.environ.get(TREES_ENV)
    if value is None:
        os.environ.pop(TREES_ENV, None)
    else:
        os.environ[TREES_ENV] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(TREES_ENV, None)
        else:
            os.environ[TREES_ENV] = old


# ---------------------------------------------------------------- 1. rescorer ms per page


def rescorer_rows(pages: Sequence[dict]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each page's fast-profile rows (the embedded model's layout) and ``blocks-v1`` rows
    (pages without blocks left out)."""
    from eval.rows import fast_layout, page_rows

    layout = fast_layout()
    rows = []
    for page in pages:
        try:
            fast, v1 = page_rows(page["html"], layout)
        except Exception:  # noqa: BLE001 - a page the pipeline refuses has no blocks
            continue
        if len(fast):
            rows.append((fast, v1))
    return rows


def run_rescorers(pages: Sequence[dict], passes: int = DEFAULT_PASSES) -> dict[str, Any]:
    """Row 1: CPU milliseconds per page of each profile's rescorer, kernel vs ONNX Runtime."""
    from pulpie_rt.runtime import native
    from pulpie_rt.runtime.model.resolve import embedded_model_dir

    model = embedded_model_dir()
    opened: dict[str, dict[str, Any]] = {}
    for side, value in ((KERNEL, None), (ONNXRUNTIME, ONNXRUNTIME)):
        with trees_env(value):
            fast = native.CoreContextRescorer(model / "rescorer-fast.onnx",
                                              model / "rescorer-fast-first.onnx")
            accurate = native.CoreRescorer(model / "rescorer.onnx", 0.0)
        opened[side] = {"fast": fast, "accurate": accurate,
                        "trees": {"fast": fast.trees, "accurate": [accurate.trees]}}
    rows = rescorer_rows(pages)

    def call(side: str, profile: str, v3: np.ndarray, v1: np.ndarray) -> np.ndarray:
        if profile == "fast":
            return opened[side]["fast"].log_odds(v3)
        return opened[side]["accurate"].run(v1, np.zeros(len(v1), np.float32))[1]

    report: dict[str, Any] = {"pages": len(rows), "blocks": int(sum(len(v3) for v3, _ in rows)),
                              "passes": passes, "profiles": {}}
    for profile in ("fast", "accurate"):
        seconds: dict[str, list[float]] = {KERNEL: [], ONNXRUNTIME: []}
        same = 0
        for v3, v1 in rows:  # warm-up, and the outputs compared
            outs = {side: call(side, profile, v3, v1) for side in (KERNEL, ONNXRUNTIME)}
            same += int(outs[KERNEL].tobytes() == outs[ONNXRUNTIME].tobytes())
        for rep in range(passes):
            spent = {KERNEL: 0.0, ONNXRUNTIME: 0.0}
            for n, (v3, v1) in enumerate(rows):
                order = (KERNEL, ONNXRUNTIME) if (n + rep) % 2 == 0 else (ONNXRUNTIME, KERNEL)
                for side in order:
                    started = time.process_time()
                    call(side, profile, v3, v1)
                    spent[side] += time.process_time() - started
            for side in spent:
                seconds[side].append(spent[side])
        kernel_ms = 1000 * statistics.median(seconds[KERNEL]) / max(len(rows), 1)
        ort_ms = 1000 * statistics.median(seconds[ONNXRUNTIME]) / max(len(rows), 1)
        report["profiles"][profile] = {
            "kernel_ms_per_page": kernel_ms, "onnxruntime_ms_per_page": ort_ms,
            "speedup": ort_ms / kernel_ms if kernel_ms else None,
            "same_log_odds_pages": same, "kernel_s_per_pass": seconds[KERNEL],
            "onnxruntime_s_per_pass": seconds[ONNXRUNTIME],
            "trees": {side: opened[side]["trees"][profile] for side in opened},
        }
    return report


# ---------------------------------------------------------------- 2. pages per CPU-second


def worker_main() -> int:
    """A default-profile worker: reads ``{"pages": FILE}``, loads ``Extractor()``, warms up,
    answers ``ready``; then per line ``{"pass": n}`` extracts every page and answers the CPU
    seconds of this process and each page's Markdown digest."""
    from pulpie_rt.runtime.flow.extractor import Extractor

    request = json.loads(sys.stdin.readline())
    with open(request["pages"], encoding="utf-8") as fh:
        htmls = [json.loads(line)["html"] for line in fh if line.strip()]
    extractor = Extractor()
    extractor.extract_batch(htmls[:4])  # warm-up: first calls, caches
    print(json.dumps({"ready": True, "trees": os.environ.get(TREES_ENV) or KERNEL}),
          flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        started = time.process_time()
        results = extractor.extract_batch(htmls)
        cpu_s = time.process_time() - started
        digests = [hashlib.sha256((r.markdown or "").encode("utf-8", "surrogatepass")).hexdigest()
                   [:16] if r.error is None else f"error: {r.error}" for r in results]
        print(json.dumps({"cpu_s": cpu_s, "markdown": digests}), flush=True)
    return 0


class _Worker:
    def __init__(self, side: str, pages_file: Path):
        env = {k: v for k, v in os.environ.items() if k != TREES_ENV}
        if side == ONNXRUNTIME:
            env[TREES_ENV] = ONNXRUNTIME
        self.side = side
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.trees", "--worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, env=tool_env(env))
        self._send({"pages": str(pages_file)})
        self.hello = self._receive()

    def _send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def _receive(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.side} worker exited (status {self.process.wait()})")
        return json.loads(line)

    def run_pass(self, n: int) -> dict:
        self._send({"pass": n})
        return self._receive()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.process.stdin.write("\n")
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def run_default_profile(pages: Sequence[dict], passes: int = DEFAULT_PASSES) -> dict[str, Any]:
    """Row 2: pages per CPU-second of ``Extractor()`` with the kernel and with ONNX Runtime."""
    from eval.report import REPO_ROOT

    folder = REPO_ROOT / "build"
    folder.mkdir(exist_ok=True)
    pages_file = folder / "bench-trees-pages.jsonl"
    with open(pages_file, "w", encoding="utf-8") as out:
        for page in pages:
            out.write(json.dumps({"html": page["html"]}, ensure_ascii=False) + "\n")
    workers = {side: _Worker(side, pages_file) for side in (KERNEL, ONNXRUNTIME)}
    try:
        seconds: dict[str, list[float]] = {KERNEL: [], ONNXRUNTIME: []}
        markdown: dict[str, list[str]] = {}
        for rep in range(passes):
            order = (KERNEL, ONNXRUNTIME) if rep % 2 == 0 else (ONNXRUNTIME, KERNEL)
            for side in order:
                answer = workers[side].run_pass(rep)
                seconds[side].append(answer["cpu_s"])
                markdown[side] = answer["markdown"]
    finally:
        for worker in workers.values():
            worker.close()
    rate = {side: len(pages) / statistics.median(s) for side, s in seconds.items()}
    same = sum(a == b for a, b in zip(markdown[KERNEL], markdown[ONNXRUNTIME], strict=True))
    return {"pages": len(pages), "passes": passes,
            "kernel_pages_per_cpu_s": rate[KERNEL],
            "onnxruntime_pages_per_cpu_s": rate[ONNXRUNTIME],
            "speedup": rate[KERNEL] / rate[ONNXRUNTIME], "target": TARGET_SPEEDUP,
            "same_markdown": same,
            "kernel_s_per_pass": seconds[KERNEL], "onnxruntime_s_per_pass": seconds[ONNXRUNTIME]}


def trees_table(report: dict[str, Any]) -> str:
    """The ``make bench`` rows."""
    lines = []
    rescorers = report.get("rescorers")
    if rescorers:
        lines += [f"Tree kernel vs ONNX Runtime TreeEnsemble: rescorer CPU ms per page "
                  f"({rescorers['pages']} dev pages, {rescorers['blocks']:,} blocks, median of "
                  f"{rescorers['passes']} passes)",
                  "| rescorer | kernel ms/page | ONNX Runtime ms/page | speed-up | "
                  "same log-odds (pages) |", "|---|---:|---:|---:|---:|"]
        for profile, row in rescorers["profiles"].items():
            name = ("fast (2 stages in context)" if profile == "fast"
                    else "accurate (blocks-v1)")
            lines.append(f"| {name} | {row['kernel_ms_per_page']:.2f} | "
                         f"{row['onnxruntime_ms_per_page']:.2f} | {row['speedup']:.2f}x | "
                         f"{row['same_log_odds_pages']}/{rescorers['pages']} |")
    profile = report.get("default_profile")
    if profile:
        verdict = "meets" if profile["speedup"] >= TARGET_SPEEDUP else "BELOW"
        lines += [f"Default profile, Extractor() pages per CPU-second ({profile['pages']} dev "
                  f"pages, median of {profile['passes']} passes, one worker process per side)",
                  "| trees on | pages/CPU-s | same Markdown |", "|---|---:|---:|",
                  f"| kernel | {profile['kernel_pages_per_cpu_s']:.1f} | "
                  f"{profile['same_markdown']}/{profile['pages']} |",
                  f"| ONNX Runtime (PULPIE_RT_TREES=onnxruntime) | "
                  f"{profile['onnxruntime_pages_per_cpu_s']:.1f} | |",
                  f"kernel / ONNX Runtime: {profile['speedup']:.2f}x ({verdict} the "
                  f"{TARGET_SPEEDUP}x goal)"]
    return "\n".join(lines)


def run(pages: Sequence[dict], passes: int = DEFAULT_PASSES) -> dict[str, Any]:
    return {"rescorers": run_rescorers(pages, passes),
            "default_profile": run_default_profile(pages, passes)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trees",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES,
                        help=f"dev pages, evenly spread (default {DEFAULT_PAGES})")
    parser.add_argument("--corpus", default="dev")
    parser.add_argument("--passes", type=int, default=DEFAULT_PASSES)
    parser.add_argument("--out", default=None, help="JSON file or folder (default: "
                        "bench/results/)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main()
    from eval.pages import bench_pages
    from eval.report import machine_info, write_result

    pages = bench_pages(args.pages, None, args.corpus)
    report = {"kind": "trees", "machine": machine_info(), **run(pages, args.passes)}
    print(trees_table(report))
    print(f"wrote {write_result('trees', report, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
