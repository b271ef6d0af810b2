"""GPU benchmark and TensorRT-vs-PyTorch label parity (run by ``bench/gpu_check.sh``).

``bench``: our TensorRT FP16 engine and ONNX Runtime CUDA vs the reference ``pulpie`` in bf16
(its GPU default), on the same 500 real pages (dev + train corpus, evenly spread), with an
Orange-Small-shaped checkpoint — random weights when the hub is unreachable, which the output
says. Per side: pages/s, tokens/s, GPU utilisation (``nvidia-smi`` sampled every 200 ms),
achieved TFLOP/s and the fraction of the GPU's dense FP16 peak (useful FLOPs: real tokens, no
padding, ``bench.flops``), GPU-hours and cost per billion pages, next to the ceiling the token
distribution allows.

``parity``: labels of our engine vs the reference on GPU, block by block (goal >= 99.9%).

Without a GPU both say so in one line and exit 0 with ``"skipped"`` in the JSON;
``--cpu-dry-run`` runs the same code on the CPU (ONNX Runtime CPU vs reference fp32) on a few
pages to prove the script works — its speed figures mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.end_to_end import (
    SideResult,
    TokenCounter,
    count_engine_tokens,
    engines_of,
    hook_torch_tokens,
    label_agreement,
    load_our_extractor,
    load_our_pipeline,
    load_ref_extractor,
    load_ref_pipeline,
)
from bench.flops import chunk_flops, model_shape
from bench.gpus import (
    GpuSpec,
    cost_per_billion_pages,
    gpu_hours_per_billion_pages,
    match_gpu,
    parse_price_overrides,
    peak_pages_per_second,
    price_table,
)
from eval.pages import bench_pages, spread
from eval.report import format_table, machine_info, write_result
from pulpie_rt.runtime.model.devices import detect_gpu

PARITY_GOAL = 0.999
DEFAULT_GPU_PAGES = 500


# ---------------------------------------------------------------- the GPU


def gpu_name() -> str | None:
    """Name of GPU 0 (None when there is no usable NVIDIA GPU)."""
    gpu = detect_gpu()
    return gpu.name if gpu is not None else None


class UtilSampler:
    """GPU utilisation (%) of GPU 0 sampled by ``nvidia-smi`` while the block runs."""

    def __init__(self, interval_ms: int = 200):
        self.interval_ms = interval_ms
        self.samples: list[float] = []
        self._proc: subprocess.Popen | None = None
        self._reader: threading.Thread | None = None

    def __enter__(self) -> UtilSampler:
        if shutil.which("nvidia-smi") is None:
            return self
        self._proc = subprocess.Popen(
            ["nvidia-smi", "-i", "0", "--query-gpu=utilization.gpu", "--format=csv,noheader,"
             "nounits", "-lms", str(self.interval_ms)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            with contextlib.suppress(ValueError):
                self.samples.append(float(line.strip()))

    def __exit__(self, *exc) -> None:
        if self._proc is not None:
            self._proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
        if self._reader is not None:
            self._reader.join(timeout=5)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.samples) if self.samples else None


# ---------------------------------------------------------------- token counts and FLOPs


def page_chunk_lengths(htmls: Sequence[str], tokenizer_dir: Path,
                       max_tokens: int = 8192) -> list[list[int]]:
    """Chunk lengths of each page through our simplify + tokenize + pack (same chunks as the
    reference's: the runtime's tests hold it to that), chunks of at most ``max_tokens``."""
    from bench.ours import tokenize_pack
    from pulpie_rt.runtime.stages.simplify import simplify

    pack = tokenize_pack(tokenizer_dir, max_tokens)
    lengths = []
    for html in htmls:
        try:
            lengths.append([len(c) for c in pack(simplify(html)[0])])
        except Exception:  # noqa: BLE001 - a page that fails has no tokens
            lengths.append([])
    return lengths


# ---------------------------------------------------------------- sides


def _time_side(name: str, load: Callable[[], Any], run: Callable[[Any, list[str]], list],
               htmls: list[str], hook: Callable[[Any, TokenCounter], Any] | None,
               engine_counting: bool, log: Callable[[str], None]) -> SideResult:
    side = SideResult(name)
    start = time.perf_counter()
    obj = load()
    side.load_s = time.perf_counter() - start
    run(obj, htmls[:4])  # warm-up: CUDA context, kernels, engine contexts
    if hook is not None:
        hook(obj, side.tokens)
    with UtilSampler() as util:
        counting = (count_engine_tokens(side.tokens, engines_of(obj)) if engine_counting
                    else contextlib.nullcontext())
        with counting:
            start = time.perf_counter()
            side.outputs = run(obj, htmls)
            side.wall_s = time.perf_counter() - start
    side.pages = len(htmls)
    side.errors = sum(1 for r in side.outputs if isinstance(r, Exception)
                      or getattr(r, "error", None))
    side.gpu_util = util.mean
    _close(obj)
    del obj
    _free_gpu_memory()
    log(f"  {name}: {side.pages / side.wall_s:.2f} pages/s"
        + (f", GPU util {util.mean:.0f}%" if util.mean is not None else ""))
    return side


def _close(obj: Any) -> None:
    """Stop a side's worker processes, if it has a ``close``."""
    close = getattr(obj, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()


def _free_gpu_memory() -> None:
    """Return the last side's cached GPU memory before the next side loads."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def _loop(extractor: Any, htmls: list[str]) -> list:
    out = []
    for html in htmls:
        try:
            out.append(extractor.extract(html))
        except Exception as exc:  # noqa: BLE001 - counted as an error
            out.append(exc)
    return out


def _ref_pipeline_run(pipe: Any, htmls: list[str]) -> list:
    from pulpie import PageInput

    return pipe.extract_batch([PageInput(html=h, page_id=i) for i, h in enumerate(htmls)])


def _our_pipeline_run(pipe: Any, htmls: list[str]) -> list:
    from bench.end_to_end import _our_api

    page_input = _our_api("PageInput")
    return pipe.extract_batch([page_input(html=h, page_id=i) for i, h in enumerate(htmls)])


def _ref_hook(obj: Any, counter: TokenCounter) -> None:
    models = [s.model for s in getattr(obj, "_gpu_models", [])] or [obj.model]
    for model in models:
        hook_torch_tokens(model, counter)


def reference_workers() -> int:
    """Pre- and post-processing workers given to the reference Pipeline: half the cores each,
    more than its own sizing (2 for one GPU), so the reference is not starved of CPU."""
    return max(2, (os.cpu_count() or 2) // 2)


def side_plan(checkpoint: Path, engine: Path | None, bundle: Path | None, device: str,
              sides: Sequence[str]) -> list[tuple[str, Callable, Callable, Callable | None, bool]]:
    """(name, load, run, token hook, count by the engine's counters) for each requested side,
    in that order."""
    ref_workers = reference_workers()
    plan = []
    ours_models: list[tuple[str, Path | None, str]] = []
    if device.startswith("cuda"):
        ours_models = [("tensorrt", engine, "tensorrt"), ("ort-cuda", bundle, "cuda")]
    else:
        ours_models = [("ort-cpu", bundle or checkpoint, "cpu")]
    for side in sides:
        if side == "ref-loop":
            plan.append(("ref Extractor loop (bf16)" if device.startswith("cuda")
                         else "ref Extractor loop (fp32)",
                         lambda: load_ref_extractor(checkpoint, device), _loop, _ref_hook, False))
        elif side == "ref-pipeline":
            plan.append(("ref Pipeline" + (" (bf16)" if device.startswith("cuda") else ""),
                         lambda: load_ref_pipeline(checkpoint, device, ref_workers),
                         _ref_pipeline_run, _ref_hook, False))
        for label, model, backend in ours_models:
            if model is None:
                continue
            if side == "ours-loop":
                plan.append((f"ours {label} loop",
                             lambda m=model, b=backend: load_our_extractor(m, b, device), _loop,
                             None, True))
            elif side == "ours-pipeline":
                plan.append((f"ours {label} Pipeline",
                             lambda m=model, b=backend: load_our_pipeline(m, b, device, None),
                             _our_pipeline_run, None, True))
    return plan


# ---------------------------------------------------------------- figures


def side_figures(side: SideResult, page_tokens: int, page_flops: float, gpu: GpuSpec | None,
                 prices: dict[str, GpuSpec]) -> dict[str, Any]:
    """Everything one side's run implies: throughput, FLOP/s, fraction of peak, cost."""
    row = side.as_dict()
    row["gpu_util_percent"] = side.gpu_util
    pps = row["pages_per_s"]
    if not pps:
        return row
    # The same chunks go through every side, so the useful work is the same; the hook's count
    # (when there is one) is kept in real_tokens for cross-checking.
    row["tokens_per_s"] = page_tokens / side.wall_s
    row["achieved_tflops"] = page_flops / side.wall_s / 1e12
    if gpu is not None:
        row["fraction_of_dense_fp16_peak"] = row["achieved_tflops"] / gpu.dense_fp16_tflops
        spec = prices[gpu.key]
        row["gpu_hours_per_billion_pages"] = gpu_hours_per_billion_pages(pps)
        row["usd_per_billion_pages"] = cost_per_billion_pages(pps, spec.usd_per_hour)
        row["usd_per_hour"] = spec.usd_per_hour
    return row


def projected_costs(fraction_of_peak: float, flops_per_page: float,
                    prices: dict[str, GpuSpec]) -> list[dict[str, Any]]:
    """Per GPU in the table: pages/s and cost at the measured fraction of peak, and at peak."""
    rows = []
    for key, spec in prices.items():
        ceiling = peak_pages_per_second(spec.dense_fp16_tflops, flops_per_page)
        projected = ceiling * fraction_of_peak
        rows.append({
            "gpu": key, "name": spec.name, "usd_per_hour": spec.usd_per_hour,
            "price_source": spec.price_source, "dense_fp16_tflops": spec.dense_fp16_tflops,
            "peak_source": spec.peak_source,
            "ceiling_pages_per_s": ceiling,
            "usd_per_billion_pages_at_ceiling": cost_per_billion_pages(ceiling,
                                                                       spec.usd_per_hour),
            "projected_pages_per_s": projected if projected > 0 else None,
            "projected_usd_per_billion_pages": (cost_per_billion_pages(projected,
                                                                      spec.usd_per_hour)
                                                if projected > 0 else None),
        })
    return rows


# ---------------------------------------------------------------- commands


def _pages(args: argparse.Namespace) -> list[dict]:
    if not args.light:
        return bench_pages(args.pages, args.inputs, args.corpus)
    pool = sorted(bench_pages(None, args.inputs, args.corpus), key=lambda p: len(p["html"]))
    return spread(pool[: max(len(pool) // 3, 1)], args.pages)


def run_bench(args: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    name = gpu_name()
    device = "cuda:0" if name else "cpu"
    report: dict[str, Any] = {"machine": machine_info(), "gpu": name, "kind": "gpu-bench"}
    if name is None and not args.cpu_dry_run:
        log("GPU bench: SKIPPED - no NVIDIA GPU on this machine (nvidia-smi finds none); "
            "bench/gpu_check.sh runs it on a GPU machine")
        report["skipped"] = "no NVIDIA GPU"
        return report
    if name is None:
        log("GPU bench: --cpu-dry-run - no GPU, running the same code on the CPU "
            "(ONNX Runtime CPU vs reference fp32); speed figures mean nothing")
        report["cpu_dry_run"] = True

    prices = price_table(parse_price_overrides(args.price))
    gpu = match_gpu(name) if name else None
    if args.gpu:
        gpu = prices[args.gpu]
    checkpoint = Path(args.checkpoint)
    config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    random_weights = (checkpoint / "RANDOM_WEIGHTS.txt").is_file()
    pages = _pages(args)
    htmls = [p["html"] for p in pages]
    log(f"GPU bench on {name or 'CPU (dry run)'}: {len(htmls)} pages, checkpoint {checkpoint}"
        + (" (RANDOM weights: speed only, labels meaningless)" if random_weights else ""))

    lengths = page_chunk_lengths(htmls, checkpoint)
    page_tokens = sum(sum(c) for c in lengths)
    total_flops = float(sum(chunk_flops(config, n) for c in lengths for n in c))
    flops_per_page = total_flops / len(htmls)
    from bench.token_report import token_distribution

    report.update({
        "checkpoint": str(checkpoint), "random_weights": random_weights,
        "model": model_shape(config), "pages": len(htmls),
        "page_ids": [p.get("id") for p in pages],
        "token_distribution": token_distribution(lengths, {**config, **model_shape(config)}),
        "flops_per_page_mean": flops_per_page,
        "gpu_spec": gpu.__dict__ if gpu else None,
    })
    report["reference_pipeline_workers"] = reference_workers()
    results = []
    started = time.perf_counter()
    for side_name, load, run, hook, engine_counting in side_plan(
            checkpoint, Path(args.engine) if args.engine else None,
            Path(args.bundle) if args.bundle else None, device, args.sides):
        if args.time_budget and time.perf_counter() - started > args.time_budget:
            log(f"  {side_name}: SKIPPED (time budget of {args.time_budget} s used up)")
            results.append({"side": side_name, "failed": "skipped: time budget used up"})
            continue
        try:
            side = _time_side(side_name, load, run, htmls, hook, engine_counting, log)
        except Exception as exc:  # noqa: BLE001 - one side failing must not lose the others
            log(f"  {side_name}: FAILED ({type(exc).__name__}: {exc})")
            results.append({"side": side_name, "failed": f"{type(exc).__name__}: {exc}"})
            continue
        row = side_figures(side, page_tokens, total_flops, gpu, prices)
        row["_outputs"] = side.outputs
        results.append(row)

    refs = [r for r in results if r["side"].startswith("ref") and r.get("pages_per_s")]
    best_ref = max(refs, key=lambda r: r["pages_per_s"]) if refs else None
    for row in results:
        if row["side"].startswith("ours") and row.get("pages_per_s") and best_ref:
            row["ratio_vs_best_ref"] = row["pages_per_s"] / best_ref["pages_per_s"]
            row["labels_vs_ref"] = label_agreement(row["_outputs"], best_ref["_outputs"])
    for row in results:
        row.pop("_outputs", None)
    report["sides"] = results
    report["best_ref"] = best_ref["side"] if best_ref else None
    ours = [r for r in results if r["side"].startswith("ours") and r.get("pages_per_s")]
    best = max(ours, key=lambda r: r["pages_per_s"]) if ours else None
    if best and best.get("fraction_of_dense_fp16_peak"):
        report["price_table"] = projected_costs(best["fraction_of_dense_fp16_peak"],
                                                flops_per_page, prices)
        report["price_table_basis"] = (f"projected at the fraction of dense FP16 peak measured "
                                       f"for '{best['side']}' on {name}")
    else:
        report["price_table"] = projected_costs(0.0, flops_per_page, prices)
        report["price_table_basis"] = "ceilings only (no GPU measurement)"
    return report


def bench_table(report: dict[str, Any]) -> str:
    if report.get("skipped"):
        return f"GPU bench: skipped ({report['skipped']})"
    rows = []
    for r in report["sides"]:
        if r.get("failed"):
            rows.append((r["side"], "-", "-", "-", "-", "-", "-", f"FAILED: {r['failed'][:60]}"))
            continue
        util = r.get("gpu_util_percent")
        frac = r.get("fraction_of_dense_fp16_peak")
        rows.append((r["side"], r["pages_per_s"], r["tokens_per_s"],
                     f"{util:.0f}%" if util is not None else "-", r.get("achieved_tflops"),
                     f"{frac:.1%}" if frac is not None else "-",
                     r.get("usd_per_billion_pages"),
                     f"{r['ratio_vs_best_ref']:.2f}x" if r.get("ratio_vs_best_ref") else ""))
    t = report["token_distribution"]["tokens_per_page"]
    head = (f"GPU bench on {report['gpu'] or 'CPU (dry run)'}: {report['pages']} pages, "
            f"tokens/page median {t['median']:,.0f} mean {t['mean']:,.0f} p90 {t['p90']:,.0f}; "
            f"{report['flops_per_page_mean'] / 1e12:.2f} TFLOP/page"
            + ("; RANDOM weights (speed only)" if report.get("random_weights") else ""))
    table = format_table(["side", "pages/s", "tokens/s", "GPU util", "TFLOP/s", "of peak",
                          "$/1e9 pages", "vs ref"], rows)
    prices = format_table(
        ["GPU", "$/h", "ceiling p/s", "$/1e9 at ceiling", "projected p/s", "projected $/1e9",
         "price source"],
        [(p["name"], p["usd_per_hour"], p["ceiling_pages_per_s"],
          p["usd_per_billion_pages_at_ceiling"], p["projected_pages_per_s"],
          p["projected_usd_per_billion_pages"], p["price_source"][:60])
         for p in report["price_table"]])
    return "\n".join([head, table, f"Price table ({report['price_table_basis']}):", prices])


def run_parity(args: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Labels of our engine (or bundle) vs the reference on GPU, block by block."""
    name = gpu_name()
    device = "cuda:0" if name else "cpu"
    report: dict[str, Any] = {"machine": machine_info(), "gpu": name, "kind": "gpu-parity"}
    if name is None and not args.cpu_dry_run:
        log("GPU parity: SKIPPED - no NVIDIA GPU on this machine")
        report["skipped"] = "no NVIDIA GPU"
        return report
    backend = "tensorrt" if name else "cpu"
    ours_model = args.engine if name else (args.bundle or args.checkpoint)
    pages = _pages(args)
    htmls = [p["html"] for p in pages]
    ref = load_ref_extractor(Path(args.checkpoint), device)
    ours = load_our_extractor(ours_model, backend, device)
    ref_out, ours_out = _loop(ref, htmls), _loop(ours, htmls)
    agreement = label_agreement(ours_out, ref_out)
    passed = agreement["block_agreement"] is not None and \
        agreement["block_agreement"] >= PARITY_GOAL
    report.update({"checkpoint": str(args.checkpoint), "ours": str(ours_model),
                   "backend": backend, "device": device,
                   "reference_precision": "bf16" if name else "fp32",
                   "pages": len(htmls), "agreement": agreement, "goal": PARITY_GOAL,
                   "passed": passed})
    log(f"parity {backend} vs reference ({report['reference_precision']}) on {len(htmls)} "
        f"pages: block agreement {agreement['block_agreement']}, identical pages "
        f"{agreement['pages_identical_labels']}/{len(htmls)} -> "
        f"{'PASS' if passed else 'FAIL'} (goal {PARITY_GOAL:.1%})")
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", choices=["bench", "parity"])
    parser.add_argument("--checkpoint", required=True, help="HF checkpoint (reference side)")
    parser.add_argument("--engine", help="our TensorRT engine file")
    parser.add_argument("--bundle", help="our ONNX bundle (ONNX Runtime CUDA / CPU)")
    parser.add_argument("--pages", type=int, default=DEFAULT_GPU_PAGES)
    parser.add_argument("--corpus", default="dev+train")
    parser.add_argument("--inputs", nargs="*", default=None, help="JSONL/WARC files")
    parser.add_argument("--light", action="store_true",
                        help="draw the pages from the lightest third by HTML size (CPU dry "
                             "runs: the reference's eager attention on 8k chunks needs GBs)")
    parser.add_argument("--sides", nargs="+",
                        default=["ours-pipeline", "ref-pipeline", "ref-loop", "ours-loop"],
                        choices=["ref-loop", "ref-pipeline", "ours-loop", "ours-pipeline"])
    parser.add_argument("--gpu", choices=["l4", "a10g", "a100", "h100", "h200"],
                        help="price/peak row to use (default: from the device name)")
    parser.add_argument("--price", action="append", metavar="GPU=USD_PER_HOUR",
                        help="override a price, e.g. --price l4=0.45 (repeatable)")
    parser.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                        help="start no further side after this many seconds (sides run in "
                             "the order of --sides)")
    parser.add_argument("--cpu-dry-run", action="store_true",
                        help="no GPU: run the same code on the CPU to prove it works")
    parser.add_argument("--out", default=None, help="JSON file or folder (default bench/results)")


def run(args: argparse.Namespace) -> int:
    if args.what == "parity":
        report = run_parity(args)
        path = write_result("gpu-parity", report, args.out)
        print(f"wrote {path}")
        return 0 if report.get("skipped") or report.get("passed") or args.cpu_dry_run else 1
    report = run_bench(args)
    print(bench_table(report))
    path = write_result("gpu-bench", report, args.out)
    print(f"wrote {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu",
                                     description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
