"""GPU price, peak and bandwidth table (the one price table: every benchmark and
``bench/gpu_check.sh`` read it), the cost of a billion pages at a measured pages/s, and the
roofline projection from one GPU to another.

Peaks are dense (no 2:4 sparsity) FP16/BF16 tensor-core TFLOP/s and memory bandwidths from
NVIDIA's datasheets. Prices are on-demand $/GPU-hour; each row names where its number comes
from. They move month to month: ``--price l4=0.45`` (repeatable) overrides a row for one run.

The projection (``project``), one method, stated: a page costs ``F`` FLOPs (``flops.page_flops``
over its real chunks) and moves ``B`` bytes of GPU memory (``page_bytes``: every model call
reads the non-embedding weights once, and each token's activations are written and read once
per operator of a fused FP16 layer, no ``n x n`` scores: flash attention); its roofline time on
a GPU is ``max(F / peak, B / bandwidth)``. A run that measured ``P`` pages/s on GPU ``a`` reached
the share ``P x roofline_a`` of its roofline; GPU ``b`` is projected at the same share:
``P x roofline_a / roofline_b``. Stdlib only: ``gpu_check.sh`` imports it on the GPU machine.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class GpuSpec:
    key: str
    name: str
    dense_fp16_tflops: float
    peak_source: str
    usd_per_hour: float
    price_source: str
    memory_gbs: float  # memory bandwidth, GB/s
    bandwidth_source: str


GPUS: dict[str, GpuSpec] = {
    spec.key: spec
    for spec in (
        GpuSpec(
            "l4", "NVIDIA L4", 121.0,
            "NVIDIA L4 datasheet: FP16 tensor 242 TFLOPS with sparsity -> 121 dense",
            0.39, "seed figure of the project brief (issue 5): L4 at $0.39/h",
            300.0, "NVIDIA L4 datasheet: 300 GB/s GDDR6",
        ),
        GpuSpec(
            "a10g", "NVIDIA A10G", 70.0,
            "baseten.co blog 'NVIDIA A10 vs A10G': A10G ~70 dense FP16 tensor TFLOPS "
            "(the A10 has 125)",
            1.006, "AWS EC2 on-demand g5.xlarge (1x A10G, 4 vCPU), us-east-1",
            600.0, "AWS/NVIDIA A10G: 600 GB/s GDDR6",
        ),
        GpuSpec(
            "a100", "NVIDIA A100", 312.0,
            "NVIDIA A100 datasheet: FP16/BF16 tensor 312 TFLOPS dense (624 sparse)",
            2.72, "seed figure of the project brief (issue 5): A100 at $2.72/h",
            2039.0, "NVIDIA A100 datasheet: 80 GB SXM, 2,039 GB/s HBM2e",
        ),
        GpuSpec(
            "h100", "NVIDIA H100 SXM", 989.0,
            "NVIDIA H100 datasheet: SXM FP16/BF16 tensor 1,979 TFLOPS with sparsity -> 989",
            3.00, "mercatus-ai.com 'cloud GPU pricing' (May 2026): specialty-cloud on-demand "
            "H100 SXM $2.50-3.50/h, midpoint",
            3350.0, "NVIDIA H100 datasheet: SXM, 3.35 TB/s HBM3",
        ),
        GpuSpec(
            "h200", "NVIDIA H200 SXM", 989.0,
            "NVIDIA H200 datasheet: same Hopper tensor cores as H100 SXM, 989 dense",
            4.00, "mercatus-ai.com 'cloud GPU pricing' (May 2026): specialty-cloud on-demand "
            "H200 SXM $3.50-4.50/h, midpoint",
            4800.0, "NVIDIA H200 datasheet: 4.8 TB/s HBM3e",
        ),
    )
}


def parse_price_overrides(items: list[str] | None) -> dict[str, float]:
    """``["l4=0.45", "h100=2.1"]`` -> ``{"l4": 0.45, "h100": 2.1}``; a clear error otherwise."""
    prices: dict[str, float] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or key not in GPUS:
            raise ValueError(
                f"--price {item!r}: expected GPU=USD_PER_HOUR with GPU one of {', '.join(GPUS)}"
            )
        try:
            price = float(value)
        except ValueError:
            raise ValueError(f"--price {item!r}: {value!r} is not a number") from None
        if price <= 0:
            raise ValueError(f"--price {item!r}: the price must be positive")
        prices[key] = price
    return prices


def price_table(overrides: dict[str, float] | None = None) -> dict[str, GpuSpec]:
    """The GPU table with ``--price`` overrides applied (their source says so)."""
    table = dict(GPUS)
    for key, price in (overrides or {}).items():
        table[key] = replace(table[key], usd_per_hour=price, price_source="--price override")
    return table


def gpu_hours_per_billion_pages(pages_per_second: float) -> float:
    """GPU-hours to process 1e9 pages at ``pages_per_second`` on one GPU."""
    if pages_per_second <= 0:
        raise ValueError("pages_per_second must be positive")
    return 1e9 / pages_per_second / 3600.0


def cost_per_billion_pages(pages_per_second: float, usd_per_hour: float) -> float:
    """US dollars for 1e9 pages at ``pages_per_second`` on one GPU rented at ``usd_per_hour``."""
    return gpu_hours_per_billion_pages(pages_per_second) * usd_per_hour


def peak_pages_per_second(dense_fp16_tflops: float, flops_per_page: float) -> float:
    """The ceiling: pages/s if every FLOP ran at the GPU's dense FP16 peak."""
    return dense_fp16_tflops * 1e12 / flops_per_page


def match_gpu(device_name: str) -> GpuSpec | None:
    """The table row for a CUDA device name such as 'NVIDIA H200' or 'NVIDIA A100-SXM4-80GB'."""
    name = device_name.lower().replace(" ", "").replace("-", "")
    if "l40" in name:  # L40 / L40S are other cards, not in the table
        return None
    for key in ("a10g", "a100", "h100", "h200", "l4"):
        if key in name:
            return GPUS[key]
    return None


# ---------------------------------------------------------------- the roofline projection

BYTES_FP16 = 2


def weight_bytes(config: Mapping[str, Any], dtype_bytes: int = BYTES_FP16) -> int:
    """Bytes of the weights a model call reads: every layer's projections and MLP and the
    classifier (the embedding table is gathered row by row, not read whole)."""
    return _flops().linear_flops_per_token(config) // 2 * dtype_bytes  # 2 FLOPs per weight


def activation_bytes_per_token(config: Mapping[str, Any], dtype_bytes: int = BYTES_FP16) -> int:
    """Bytes one token's activations move per forward pass through a fused layer, each
    operator reading its inputs and writing its outputs once: QKV GEMM h -> 3h, rotary 2h -> 2h,
    attention 3h -> h, output GEMM h -> h, two skip-norms 2h -> h each, gate+up GEMM h -> 2i,
    SiLU-and-multiply 2i -> i, down GEMM i -> h: 22h + 6i values per layer; plus the embedding
    row and the logits."""
    s = _flops().model_shape(config)
    h, i = s["hidden_size"], s["intermediate_size"]
    return (s["num_hidden_layers"] * (22 * h + 6 * i) + h + s["num_labels"]) * dtype_bytes


@dataclass(frozen=True)
class PageCost:
    """What a mean page asks of a GPU (``page_cost``)."""

    pages: int
    tokens_per_page: float
    chunks_per_page: float
    calls_per_page: float
    flops_per_page: float
    bytes_per_page: float


def page_cost(config: Mapping[str, Any], chunk_lengths: Sequence[Sequence[int]],
              tokens_per_call: int | None = None) -> PageCost:
    """The mean page's FLOPs and bytes over pages given by their chunks' lengths.
    ``tokens_per_call``: the tokens a model call holds (None: one chunk per call)."""
    flops = _flops()
    pages = max(len(chunk_lengths), 1)
    tokens = sum(sum(c) for c in chunk_lengths)
    chunks = sum(len(c) for c in chunk_lengths)
    calls = chunks if tokens_per_call is None else max(tokens / tokens_per_call, 1.0)
    total_flops = sum(flops.page_flops(config, c) for c in chunk_lengths)
    total_bytes = calls * weight_bytes(config) + tokens * activation_bytes_per_token(config)
    return PageCost(pages=len(chunk_lengths), tokens_per_page=tokens / pages,
                    chunks_per_page=chunks / pages, calls_per_page=calls / pages,
                    flops_per_page=total_flops / pages, bytes_per_page=total_bytes / pages)


def roofline_seconds(spec: GpuSpec, cost: PageCost) -> float:
    """A page's roofline time on ``spec``: compute or memory, whichever takes longer."""
    return max(cost.flops_per_page / (spec.dense_fp16_tflops * 1e12),
               cost.bytes_per_page / (spec.memory_gbs * 1e9))


def project(cost: PageCost, measured: Mapping[str, float] | None = None,
            table: Mapping[str, GpuSpec] | None = None) -> dict[str, Any]:
    """Every GPU of ``table`` at the roofline share a run reached: ``measured`` is
    ``{"gpu": key, "pages_per_s": P}`` (None: the ceilings alone). Per GPU: its roofline
    ceiling (pages/s), which bound it is, the projected pages/s and $ per billion pages."""
    table = dict(table or GPUS)
    share = None
    if measured is not None:
        source = table[measured["gpu"]]
        share = measured["pages_per_s"] * roofline_seconds(source, cost)
    rows = {}
    for key, spec in table.items():
        seconds = roofline_seconds(spec, cost)
        compute = cost.flops_per_page / (spec.dense_fp16_tflops * 1e12)
        row: dict[str, Any] = {
            "ceiling_pages_per_s": round(1 / seconds, 2),
            "bound": "compute" if compute >= seconds else "memory",
            "usd_per_hour": spec.usd_per_hour,
        }
        if share is not None:
            pages_per_s = share / seconds
            row["projected_pages_per_s"] = round(pages_per_s, 2)
            row["usd_per_billion_pages"] = round(cost_per_billion_pages(pages_per_s,
                                                                        spec.usd_per_hour))
        rows[key] = row
    return {"method": "same share of the roofline max(FLOPs / dense FP16 peak, bytes / "
                      "memory bandwidth) per page (bench/gpus.py)",
            "page": asdict(cost), "measured": dict(measured) if measured else None,
            "roofline_share": None if share is None else round(share, 4), "gpus": rows}


def share_of_peak(pages_per_s: float, cost: PageCost, spec: GpuSpec) -> float:
    """The share of ``spec``'s dense FP16 peak that ``pages_per_s`` pages of ``cost`` use."""
    return pages_per_s * cost.flops_per_page / (spec.dense_fp16_tflops * 1e12)


def _flops():
    """``bench/flops.py`` (stdlib only), from the package or, on a GPU machine with python3
    alone, from beside this file."""
    try:
        from bench import flops
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import flops  # type: ignore[no-redef]
    return flops


def cost_of_pages(bundle: Path, pages: Iterable[dict], tokens_per_call: int | None = None,
                  config: Mapping[str, Any] | None = None) -> PageCost:
    """``page_cost`` of ``pages`` as ``bundle``'s tokenizer chunks them (the engine's chunks);
    ``config``: the model's shape (default: the bundle manifest's)."""
    from bench.gpu import page_chunk_lengths

    manifest = json.loads((Path(bundle) / "manifest.json").read_text(encoding="utf-8"))
    lengths = page_chunk_lengths([p["html"] for p in pages], Path(bundle),
                                 int(manifest.get("max_tokens", 8192)))
    return page_cost(config or manifest["model"], lengths, tokens_per_call)


def main(argv: list[str] | None = None) -> int:
    """``cost BUNDLE PAGES.jsonl[.gz] OUT.json``: the mean page's FLOPs and bytes with the
    bundle's chunks, and every GPU's ceiling, written for ``gpu_check.sh``."""
    import argparse
    import gzip

    parser = argparse.ArgumentParser(prog="python -m bench.gpus")
    sub = parser.add_subparsers(dest="command", required=True)
    cost = sub.add_parser("cost", help="a bundle's page cost on the given pages")
    cost.add_argument("bundle", type=Path)
    cost.add_argument("pages", type=Path)
    cost.add_argument("out", type=Path)
    cost.add_argument("--tokens-per-call", type=int, default=None)
    args = parser.parse_args(argv)
    opener = gzip.open if args.pages.suffix == ".gz" else open
    with opener(args.pages, "rt", encoding="utf-8") as fh:
        pages = [json.loads(line) for line in fh if line.strip()]
    found = cost_of_pages(args.bundle, pages, args.tokens_per_call)
    report = project(found)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report["page"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
