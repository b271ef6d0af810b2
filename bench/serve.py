"""Pages/s through ``pulpie-rt serve`` at 16 concurrent callers beside ``Pipeline`` on the same
pages, in one run (``make bench``'s "serve" row; the issue's goal: the service at >= 80% of
``Pipeline``).

- ``Pipeline``: ``Pipeline(model, workers=W).extract_batch(pages)`` in this process (model
  loaded and warmed up beforehand, load time not counted).
- ``serve``: ``pulpie-rt serve --workers W`` (W extraction threads on one engine) in a child
  process on 127.0.0.1 (started and warmed up beforehand); ``callers`` async httpx clients post
  one page a request until every page is answered. The clock runs from the first request to the
  last answer, so it includes HTTP, JSON and the client itself, which shares this machine's
  cores.

The two alternate ``repeats`` times; pages/s is the best pass of each (the least disturbed by
other work on the machine), every pass is in the JSON. Both must give the same Markdown.

Beside the clock, each side's own CPU time for each pass: ``Pipeline``'s is this process's
(``time.process_time``: its extraction threads; nothing else runs here meanwhile), the
service's is its process's and any child's (``/proc``), without the client's. On a machine
whose cores the client shares, pages per CPU-second say what the service costs, where pages/s
also counts what the client took from it.

    python -m bench.serve --pages 48 --callers 16
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.fuzz import cpu_seconds
from eval.pages import bench_pages
from eval.report import format_table, machine_info, write_result

DEFAULT_PAGES = 48
DEFAULT_CALLERS = 16


async def _post_all(url: str, pages: list[dict], callers: int) -> list[dict]:
    """Every page once, one page a request, ``callers`` requests at a time; results in order."""
    import httpx

    answers: list[Any] = [None] * len(pages)
    next_index = iter(range(len(pages)))

    async def caller(client: httpx.AsyncClient) -> None:
        for index in next_index:
            page = pages[index]
            response = await client.post(url + "/v1/extract", json={
                "pages": [{"id": page["id"], "html": page["html"]}]})
            response.raise_for_status()
            (answers[index],) = response.json()["results"]

    limits = httpx.Limits(max_connections=callers, max_keepalive_connections=callers)
    async with httpx.AsyncClient(limits=limits, timeout=600) as client:
        await asyncio.gather(*(caller(client) for _ in range(callers)))
    return answers


def run_serve_bench(pages: list[dict], callers: int = DEFAULT_CALLERS,
                    workers: int | None = None, model: str | None = None,
                    repeats: int = 2) -> dict[str, Any]:
    """Both sides on ``pages``, alternating ``repeats`` times; see the module docstring."""
    from pulpie_rt import Pipeline
    from pulpie_rt.integrations.serve.limits import default_workers
    from pulpie_rt.integrations.serve.process import LocalServer, descendants
    from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL

    model = model or DEFAULT_MODEL
    workers = workers if workers is not None else default_workers()
    pipeline = Pipeline(model, workers=workers)
    pipeline.extract_batch([p["html"] for p in pages[:2]])  # warm-up
    # throughput, not latency: a page may wait behind the others for longer than the default
    options = [model, "--workers", str(workers), "--request-timeout", "3600"]
    passes: dict[str, list[float]] = {"Pipeline": [], "serve": []}
    cpu: dict[str, list[float]] = {"Pipeline": [], "serve": []}
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-bench-serve-") as tmp, \
            LocalServer(options, Path(tmp) / "serve.log") as server:
        asyncio.run(_post_all(server.url, pages[:2], 2))  # warm-up
        processes = [server.process.pid, *descendants(server.process.pid)]

        def served_cpu() -> float:
            return sum(cpu_seconds(pid) for pid in processes)

        for _ in range(repeats):
            start, start_cpu = time.perf_counter(), time.process_time()
            ours = pipeline.extract_batch([p["html"] for p in pages])
            passes["Pipeline"].append(time.perf_counter() - start)
            cpu["Pipeline"].append(time.process_time() - start_cpu)
            start, start_cpu = time.perf_counter(), served_cpu()
            served = asyncio.run(_post_all(server.url, pages, callers))
            passes["serve"].append(time.perf_counter() - start)
            cpu["serve"].append(served_cpu() - start_cpu)
        status = server.stop()
    same = sum(r.markdown == s["markdown"] and r.error == s["error"]
               for r, s in zip(ours, served, strict=True))
    best = {side: len(pages) / min(seconds) for side, seconds in passes.items()}
    per_cpu = {side: len(pages) / max(min(seconds), 1e-9) for side, seconds in cpu.items()}
    return {
        "pages": len(pages), "callers": callers, "workers": workers, "model": model,
        "repeats": repeats, "seconds": passes,
        "pipeline_pages_per_s": best["Pipeline"], "serve_pages_per_s": best["serve"],
        "serve_vs_pipeline": best["serve"] / best["Pipeline"],
        "cpu_seconds": cpu, "pipeline_pages_per_cpu_s": per_cpu["Pipeline"],
        "serve_pages_per_cpu_s": per_cpu["serve"],
        "serve_vs_pipeline_cpu": per_cpu["serve"] / per_cpu["Pipeline"],
        "same_markdown": same, "errors": sum(r.error is not None for r in ours),
        "serve_exit_status": status,
    }


def serve_table(report: dict[str, Any]) -> str:
    rows = [
        ("Pipeline (in process)", report["pages"], report["pipeline_pages_per_s"], "1.00x",
         report["pipeline_pages_per_cpu_s"], "1.00x", "-"),
        (f"serve, {report['callers']} callers, 1 page/request", report["pages"],
         report["serve_pages_per_s"], f"{report['serve_vs_pipeline']:.2f}x",
         report["serve_pages_per_cpu_s"], f"{report['serve_vs_pipeline_cpu']:.2f}x",
         f"{report['same_markdown']}/{report['pages']}"),
    ]
    table = format_table([f"serve vs Pipeline ({report['workers']} workers)", "pages",
                          "pages/s", "vs Pipeline", "pages/CPU-s", "vs Pipeline",
                          "same Markdown"], rows)
    return table + "\n  (goal: serve >= 0.80x Pipeline; best of " \
        f"{report['repeats']} alternating passes; CPU: each side's own process, the client's " \
        "not counted)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES,
                        help=f"dev pages, evenly spread (default {DEFAULT_PAGES})")
    parser.add_argument("--corpus", default="dev")
    parser.add_argument("--inputs", nargs="+", default=None, metavar="FILE")
    parser.add_argument("--callers", type=int, default=DEFAULT_CALLERS)
    parser.add_argument("--workers", type=int, default=None,
                        help="Pipeline's workers and the service's extraction threads "
                             "(default: the service's default)")
    parser.add_argument("--model", default=None, help="default: the embedded model")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=None, help="JSON file or folder (default bench/results)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.serve",
                                     description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    pages = bench_pages(args.pages, args.inputs, args.corpus)
    report = run_serve_bench(pages, args.callers, args.workers, args.model, args.repeats)
    print(serve_table(report))
    path = write_result("serve", {"kind": "serve", "machine": machine_info(), "serve": report},
                        args.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
