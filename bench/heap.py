"""The service's fixed heap thresholds (``fix_heap_thresholds``) beside glibc's dynamic ones,
in one run: pages/CPU-s, peak RSS and the RSS left once the heap is released.

Each side is a child process running the embedded model's engine over the corpus pages
``--passes`` times from one thread per usable CPU, as the service's extraction threads do,
then ``malloc_trim(0)`` (``release_free_heap``) with the threads still alive; the RSS before
is after one page and a release. The fixed side starts with ``GLIBC_TUNABLES`` set to the
service's thresholds, which is what its ``mallopt`` calls do (either turns glibc's dynamic
thresholds off); the dynamic side starts without. The sides alternate ``--rounds`` times;
each figure is the mean over rounds, every round is in the JSON. glibc only.

    python -m bench.heap --rounds 4 --passes 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from eval.report import format_table, machine_info, write_result

DEFAULT_ROUNDS = 4
DEFAULT_PASSES = 5
SIDES = ("dynamic", "fixed")


def _status_kib(field: str) -> int:
    for line in open("/proc/self/status", encoding="ascii"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def child(corpus: str, passes: int) -> dict[str, Any]:
    """This process's side: the engine over the pages, then the heap released."""
    from pulpie_rt import Extractor
    from pulpie_rt.corpus import load_pages
    from pulpie_rt.integrations.serve.limits import default_workers
    from pulpie_rt.integrations.serve.service import release_free_heap

    pages = [page["html"] for page in load_pages(corpus)] * passes
    extractor = Extractor()
    extractor.extract(pages[0])
    release_free_heap()
    rss_before = _status_kib("VmRSS")
    work = iter(pages)
    lock = threading.Lock()
    done = threading.Event()
    finished = threading.Barrier(default_workers() + 1)

    def run() -> None:
        while True:
            with lock:
                html = next(work, None)
            if html is None:
                break
            extractor.extract(html)
        finished.wait()
        done.wait()  # alive while the heap is released, as the service's threads are

    threads = [threading.Thread(target=run, daemon=True) for _ in range(default_workers())]
    cpu, wall = time.process_time(), time.perf_counter()
    for thread in threads:
        thread.start()
    finished.wait()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    released = release_free_heap()
    rss_released = _status_kib("VmRSS")
    done.set()
    return {"pages": len(pages), "threads": len(threads), "cpu_s": cpu, "wall_s": wall,
            "pages_per_cpu_s": len(pages) / cpu, "rss_before_mib": rss_before / 1024,
            "peak_rss_mib": _status_kib("VmHWM") / 1024,
            "released_rss_mib": rss_released / 1024, "released": released}


def fixed_tunables() -> str:
    """``GLIBC_TUNABLES`` for the service's thresholds."""
    from pulpie_rt.integrations.serve.service import (
        HEAP_MMAP_THRESHOLD_BYTES,
        HEAP_TRIM_THRESHOLD_BYTES,
    )

    return (f"glibc.malloc.trim_threshold={HEAP_TRIM_THRESHOLD_BYTES}:"
            f"glibc.malloc.mmap_threshold={HEAP_MMAP_THRESHOLD_BYTES}")


def run_heap_bench(corpus: str = "dev", passes: int = DEFAULT_PASSES,
                   rounds: int = DEFAULT_ROUNDS) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    for _ in range(rounds):
        for side in SIDES:
            env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
            if side == "fixed":
                env["GLIBC_TUNABLES"] = fixed_tunables()
            answer = subprocess.run(
                [sys.executable, "-m", "bench.heap", "--child", "--corpus", corpus,
                 "--passes", str(passes)], env=env, check=True, capture_output=True, text=True)
            runs[side].append(json.loads(answer.stdout.splitlines()[-1]))
    means = {side: {key: statistics.fmean(run[key] for run in runs[side])
                    for key in ("pages_per_cpu_s", "rss_before_mib", "peak_rss_mib",
                                "released_rss_mib")}
             for side in SIDES}
    return {"corpus": corpus, "passes": passes, "rounds": rounds,
            "fixed_tunables": fixed_tunables(), "means": means,
            "speed_ratio": means["fixed"]["pages_per_cpu_s"]
            / means["dynamic"]["pages_per_cpu_s"], "runs": runs}


def heap_table(report: dict[str, Any]) -> str:
    rows = [(side, f"{m['pages_per_cpu_s']:.1f}", f"{m['rss_before_mib']:.0f}",
             f"{m['peak_rss_mib']:.0f}",
             f"{m['released_rss_mib']:.0f}",
             " ".join(f"{run['pages_per_cpu_s']:.0f}" for run in report["runs"][side]))
            for side, m in report["means"].items()]
    return (format_table(["thresholds", "pages/CPU-s", "RSS before MiB", "peak RSS MiB",
                          "RSS released MiB", "pages/CPU-s by round"], rows)
            + f"\n  fixed / dynamic pages/CPU-s: {report['speed_ratio']:.3f}"
            + f" (means over {report['rounds']} alternating rounds)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.heap", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="dev")
    parser.add_argument("--passes", type=int, default=DEFAULT_PASSES)
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help="JSON file or folder (default bench/results)")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.corpus, args.passes)))
        return 0
    report = run_heap_bench(args.corpus, args.passes, args.rounds)
    print(heap_table(report))
    print(f"\nwrote {write_result('heap', {'machine': machine_info(), **report}, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
