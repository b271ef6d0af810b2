"""``make bench`` / ``python -m bench``: CPU stages, end to end (+ tokens, + the service vs
``Pipeline``, + the Ray Data path vs ``pulpie-rt run``, + a soak run of the service), tables
and one JSON.

    python -m bench.run_all                       # all dev pages for CPU stages,
                                                            # 12 for end to end (tiny model)
    python -m bench.run_all --pages 40 --checkpoint DIR --inputs pages.jsonl.gz
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from eval.pages import bench_pages
from eval.report import machine_info, write_result

DEFAULT_E2E_PAGES = 12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", nargs="+", default=None, metavar="FILE",
                        help="JSONL[.gz] (field 'html') or WARC[.gz] files instead of the corpus")
    parser.add_argument("--corpus", default="dev", help="corpus file(s) when no inputs: dev, "
                        "train or dev+train")
    parser.add_argument("--cpu-pages", type=int, default=None,
                        help="pages for the CPU stages (default: all)")
    parser.add_argument("--pages", type=int, default=DEFAULT_E2E_PAGES,
                        help=f"pages for end to end (default {DEFAULT_E2E_PAGES}: the reference "
                             "runs eager attention on CPU and is slow)")
    parser.add_argument("--repeats", type=int, default=1, help="passes over the CPU-stage pages")
    parser.add_argument("--checkpoint", type=Path, default=None,
                        help="HF checkpoint for tokenize+pack and end to end (default: the tiny "
                             "test checkpoint)")
    parser.add_argument("--backends", nargs="+", default=None,
                        help="our backends end to end (default: auto; tensorrt needs "
                             "--model ENGINE and --device cuda:0)")
    parser.add_argument("--model", default=None,
                        help="what our side loads end to end (bundle or engine; default: the "
                             "checkpoint, exported once into the cache)")
    parser.add_argument("--device", default="cpu", help="device for end to end (cpu, cuda:0)")
    parser.add_argument("--workers", type=int, default=2,
                        help="pre/post-processing workers of both Pipelines (default 2)")
    parser.add_argument("--scale-pages", type=int, default=None,
                        help="pages for the Ray-vs-run row (default: all)")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["cpu", "e2e", "pipelines", "tokens", "serve", "ray", "capi",
                                 "soak", "trees", "resume", "processes", "lengths",
                                 "metadata"],
                        help="parts to leave out")
    parser.add_argument("--serve-pages", type=int, default=None,
                        help="dev pages for the service vs Pipeline row (default: "
                             "bench.serve's)")
    parser.add_argument("--doors-pages", type=int, default=200,
                        help="pages of the pulpie-rt run vs C program row (default 200)")
    parser.add_argument("--capi-pages", type=int, default=None,
                        help="dev pages for the C library vs Pipeline row (default: "
                             "bench.capi's)")
    parser.add_argument("--soak-seconds", type=float, default=None,
                        help="length of the service's soak run (default: bench.soak's, 600)")
    parser.add_argument("--trees-pages", type=int, default=None,
                        help="dev pages for the tree kernel vs ONNX Runtime rows (default: "
                             "bench.trees')")
    parser.add_argument("--processes-rounds", type=int, default=None,
                        help="alternating rounds of the whole-process row (default: "
                             "bench.processes')")
    parser.add_argument("--resume-records", type=int, default=None,
                        help="done records of the resume row's large output (default: "
                             "bench.resume's, 300,000)")
    parser.add_argument("--out", default=None,
                        help="JSON file or folder (default: bench/results/)")


def run(args: argparse.Namespace) -> int:
    report: dict[str, Any] = {"kind": "bench", "machine": machine_info()}
    tables: list[str] = []
    if "cpu" not in args.skip:
        from bench.cpu_stages import cpu_stages_table, run_cpu_stages

        pages = bench_pages(args.cpu_pages, args.inputs, args.corpus)
        print(f"CPU stages: {len(pages)} pages, ours vs reference interleaved", flush=True)
        report["cpu_stages"] = run_cpu_stages(pages, checkpoint=args.checkpoint,
                                              repeats=args.repeats)
        tables.append(cpu_stages_table(report["cpu_stages"]))
        print(tables[-1], flush=True)
    if "metadata" not in args.skip:
        from bench.metadata import cost, cost_line

        print("Page metadata: the fast profile with and without it, interleaved", flush=True)
        pages = bench_pages(args.cpu_pages, args.inputs, args.corpus)
        report["metadata"] = cost(pages, args.corpus, repeats=max(args.repeats, 3))
        tables.append(cost_line(report["metadata"]))
        print(tables[-1], flush=True)
    if "processes" not in args.skip:
        from bench.processes import DEFAULT_ROUNDS, processes_table, run_processes

        pages = bench_pages(None, args.inputs, args.corpus)
        rounds = args.processes_rounds or DEFAULT_ROUNDS
        print(f"Whole processes: pulpie-rt run (working tree, merge base), resiliparse, "
              f"trafilatura on {len(pages)} pages, {rounds} rounds", flush=True)
        report["processes"] = run_processes(pages, rounds=rounds)
        tables.append(processes_table(report["processes"]))
        print(tables[-1], flush=True)
    if "e2e" not in args.skip:
        from bench.end_to_end import end_to_end_table, run_end_to_end

        pages = bench_pages(args.pages, args.inputs, args.corpus)
        print(f"End to end: {len(pages)} pages, device {args.device}", flush=True)
        report["end_to_end"] = run_end_to_end(
            pages, checkpoint=args.checkpoint, backends=args.backends or ["auto"],
            device=args.device, our_model=args.model,
            with_pipelines="pipelines" not in args.skip, workers=args.workers)
        tables.append(end_to_end_table(report["end_to_end"]))
        print(tables[-1], flush=True)
    if "ray" not in args.skip:
        from importlib.util import find_spec

        if find_spec("ray") is None:
            line = "Scale out (Ray Data vs pulpie-rt run): skipped - pip install -e '.[ray]'"
            report["scale_out"] = line
            print(line)
        else:
            from bench.scale_out import run_scale_out, scale_out_table

            pages = bench_pages(args.scale_pages, args.inputs, args.corpus)
            print(f"Scale out: {len(pages)} pages, Ray Data (2 actors) vs pulpie-rt run",
                  flush=True)
            report["scale_out"] = run_scale_out(pages)
            tables.append(scale_out_table(report["scale_out"]))
            print(tables[-1], flush=True)
    if "tokens" not in args.skip:
        try:
            from bench.token_report import run_token_report, token_report_table

            pages = bench_pages(None, args.inputs, args.corpus)
            report["tokens"] = run_token_report(pages)
            tables.append(token_report_table(report["tokens"]))
            print(tables[-1], flush=True)
        except ImportError as exc:
            print(f"Token distribution: skipped ({exc})")
    if "serve" not in args.skip:
        try:
            from bench.serve import DEFAULT_PAGES, run_serve_bench, serve_table

            pages = bench_pages(args.serve_pages or DEFAULT_PAGES, args.inputs, args.corpus)
            print(f"Service vs Pipeline: {len(pages)} pages", flush=True)
            report["serve"] = run_serve_bench(pages)
            tables.append(serve_table(report["serve"]))
            print(tables[-1], flush=True)
        except ImportError as exc:  # the serve extra (starlette, uvicorn) or httpx missing
            print(f"Service vs Pipeline: skipped ({exc})")
    if "capi" not in args.skip:
        from bench.capi import DEFAULT_PAGES as CAPI_PAGES
        from bench.capi import bench as capi_bench
        from bench.capi import bench_processes, build_capi, capi_line, processes_line

        try:
            build_capi()
        except RuntimeError as exc:  # no cargo / C compiler here
            print(f"C library vs Pipeline: skipped ({exc})")
        else:
            pages = bench_pages(args.capi_pages or CAPI_PAGES, args.inputs, args.corpus)
            print(f"C library vs Pipeline: {len(pages)} pages", flush=True)
            report["capi"] = capi_bench(pages)
            tables.append(capi_line(report["capi"]))
            print(tables[-1], flush=True)
            # the doors as a user runs them: whole processes, model load included
            doors = bench_pages(args.doors_pages, args.inputs, args.corpus)
            print(f"pulpie-rt run vs the C program: {len(doors)} pages", flush=True)
            report["doors"] = bench_processes(doors, threads=2, batch=8)
            tables.append(processes_line(report["doors"]))
            print(tables[-1], flush=True)
    if "soak" not in args.skip:
        try:
            from bench.soak import DEFAULT_SECONDS, run_soak, soak_table
        except ImportError as exc:  # the serve extra or httpx missing
            print(f"Soak: skipped ({exc})")
        else:
            seconds = args.soak_seconds or DEFAULT_SECONDS
            print(f"Soak: pulpie-rt serve, 16 callers, {seconds:g} s", flush=True)
            report["soak"] = run_soak(seconds)
            tables.append(soak_table(report["soak"]))
            print(tables[-1], flush=True)
    if "lengths" not in args.skip:
        from bench.page_lengths import SYSTEMS, measure, table

        pages = bench_pages(args.cpu_pages, args.inputs, args.corpus)
        print(f"Pages per CPU-second by page length: {len(pages)} pages", flush=True)
        report["page_lengths"] = measure(pages, SYSTEMS)
        # its own result too, beside the report: bench.plots draws speed-by-length.svg from
        # the newest one
        beside = None if args.out is None else (
            Path(args.out).parent if str(args.out).endswith(".json") else Path(args.out))
        write_result("page-lengths", {"kind": "page-lengths", "machine": machine_info(),
                                      "corpus": args.corpus, "pages": len(pages),
                                      "repeats": 1, "systems": list(SYSTEMS),
                                      **report["page_lengths"]}, beside)
        tables.append(table(report["page_lengths"]["bins"], SYSTEMS))
        print(tables[-1], flush=True)
    if "trees" not in args.skip:
        from bench.trees import DEFAULT_PAGES as TREES_PAGES
        from bench.trees import run as trees_bench
        from bench.trees import trees_table

        pages = bench_pages(args.trees_pages or TREES_PAGES, args.inputs, args.corpus)
        print(f"Tree kernel vs ONNX Runtime: {len(pages)} pages", flush=True)
        report["trees"] = trees_bench(pages)
        tables.append(trees_table(report["trees"]))
        print(tables[-1], flush=True)
    if "resume" not in args.skip:
        from bench.resume import DEFAULT_RECORDS, resume_rows, resume_table

        records = args.resume_records or DEFAULT_RECORDS
        print(f"Resume: pulpie-rt run over {records:,} records done against a small output",
              flush=True)
        report["resume"] = resume_rows(records)
        tables.append(resume_table(report["resume"]))
        print(tables[-1], flush=True)
    from bench.gpu import gpu_name

    if gpu_name() is None:
        line = ("GPU bench: skipped - no NVIDIA GPU here; bench/gpu_check.sh runs it "
                "(engines, parity, 500 pages) on a GPU machine")
    else:
        line = ("GPU bench: a GPU is present - run bench/gpu_check.sh for TensorRT / "
                "ORT CUDA vs the reference on 500 pages")
    report["gpu"] = line
    print(line)
    path = write_result("bench", report, args.out)
    print(f"\nwrote {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run_all",
                                     description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
