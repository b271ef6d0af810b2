"""Fused against unfused attention on the CPU, side by side in one run.

    python -m bench.attention [--checkpoint DIR] [--pages N] [--repeats R]
                                        [--max-tokens N] [--threads N] [--out PATH]

Exports ``--checkpoint`` (default the tiny test checkpoint) twice, ``--attention unfused`` and
``--attention fused`` (``export/attention.py``), without verification, into a temporary
folder; then runs both bundles through the engine (``Extractor(device="cpu")``) on the same N
dev pages, alternating A B A B for R repeats so that machine noise hits both alike. Per bundle:
CPU seconds (this process's user + system time, ONNX Runtime's threads included) and wall
seconds of the best repeat, pages per CPU-second; then the ratio fused / unfused and the pages
whose labels differ between the two (the same weights: they must not).
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

TINY = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "tiny-eurobert"


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(checkpoint: Path, pages: int, repeats: int, max_tokens: int, threads: int | None,
        out: Path | None) -> dict:
    from pulpie_rt.corpus import load_pages
    from pulpie_rt.export.build import export_bundle
    from pulpie_rt.runtime.flow.extractor import Extractor

    htmls = [p["html"] for p in load_pages("dev")[:pages]]
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        extractors = {}
        for attention in ("unfused", "fused"):
            bundle = export_bundle(checkpoint, Path(tmp) / attention, verify=False,
                                   log=lambda *_: None, max_tokens=max_tokens,
                                   attention=attention)
            extractors[attention] = Extractor(model=str(bundle), backend="cpu",
                                              device="cpu", threads=threads)
            extractors[attention].extract_batch(htmls[:1])  # warm-up: sessions, arenas
            results[attention] = {"cpu_s": [], "wall_s": []}
        labels = {}
        for _ in range(repeats):
            for attention, extractor in extractors.items():
                cpu, wall = _cpu_seconds(), time.perf_counter()
                done = extractor.extract_batch(htmls)
                results[attention]["cpu_s"].append(_cpu_seconds() - cpu)
                results[attention]["wall_s"].append(time.perf_counter() - wall)
                labels[attention] = [r.labels if r.error is None else r.error for r in done]
    for attention, row in results.items():
        row["best_cpu_s"] = round(min(row["cpu_s"]), 2)
        row["best_wall_s"] = round(min(row["wall_s"]), 2)
        row["pages_per_cpu_s"] = round(pages / row["best_cpu_s"], 3)
        print(f"{attention:8s} {pages} pages: best of {repeats}: {row['best_cpu_s']:.2f} CPU-s, "
              f"{row['best_wall_s']:.2f} s wall, {row['pages_per_cpu_s']:.3f} pages/CPU-s")
    ratio = results["fused"]["pages_per_cpu_s"] / results["unfused"]["pages_per_cpu_s"]
    differ = sum(a != b for a, b in zip(labels["unfused"], labels["fused"], strict=True))
    print(f"fused / unfused pages per CPU-second: {ratio:.2f}x; pages whose labels differ: "
          f"{differ} of {pages}")
    record = {"kind": "attention", "checkpoint": str(checkpoint), "pages": pages,
              "repeats": repeats, "max_tokens": max_tokens, "threads": threads,
              "results": results, "fused_over_unfused": round(ratio, 3),
              "pages_with_other_labels": differ}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=TINY)
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=None,
                        help="ONNX Runtime's intra-op threads (default: its own)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    record = run(args.checkpoint, args.pages, args.repeats, args.max_tokens, args.threads,
                 args.out)
    return 1 if record["pages_with_other_labels"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
