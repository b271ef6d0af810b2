"""GPU price and peak table, and the cost of a billion pages at a measured pages/s.

Peaks are dense (no 2:4 sparsity) FP16/BF16 tensor-core TFLOP/s from NVIDIA's datasheets.
Prices are on-demand $/GPU-hour; each row names where its number comes from. They move
month to month: ``--price l4=0.45`` (repeatable) overrides a row for one run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class GpuSpec:
    key: str
    name: str
    dense_fp16_tflops: float
    peak_source: str
    usd_per_hour: float
    price_source: str


GPUS: dict[str, GpuSpec] = {
    spec.key: spec
    for spec in (
        GpuSpec(
            "l4", "NVIDIA L4", 121.0,
            "NVIDIA L4 datasheet: FP16 tensor 242 TFLOPS with sparsity -> 121 dense",
            0.39, "seed figure of the project brief (issue 5): L4 at $0.39/h",
        ),
        GpuSpec(
            "a10g", "NVIDIA A10G", 70.0,
            "baseten.co blog 'NVIDIA A10 vs A10G': A10G ~70 dense FP16 tensor TFLOPS "
            "(the A10 has 125)",
            1.006, "AWS EC2 on-demand g5.xlarge (1x A10G, 4 vCPU), us-east-1",
        ),
        GpuSpec(
            "a100", "NVIDIA A100", 312.0,
            "NVIDIA A100 datasheet: FP16/BF16 tensor 312 TFLOPS dense (624 sparse)",
            2.72, "seed figure of the project brief (issue 5): A100 at $2.72/h",
        ),
        GpuSpec(
            "h100", "NVIDIA H100 SXM", 989.0,
            "NVIDIA H100 datasheet: SXM FP16/BF16 tensor 1,979 TFLOPS with sparsity -> 989",
            3.00, "mercatus-ai.com 'cloud GPU pricing' (May 2026): specialty-cloud on-demand "
            "H100 SXM $2.50-3.50/h, midpoint",
        ),
        GpuSpec(
            "h200", "NVIDIA H200 SXM", 989.0,
            "NVIDIA H200 datasheet: same Hopper tensor cores as H100 SXM, 989 dense",
            4.00, "mercatus-ai.com 'cloud GPU pricing' (May 2026): specialty-cloud on-demand "
            "H200 SXM $3.50-4.50/h, midpoint",
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
