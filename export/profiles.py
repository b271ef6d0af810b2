"""Per-GPU token budgets for TensorRT engines (``pulpie-rt engine --gpu``): pure data.

The shape profiles themselves are the core's (``core/src/ort/gpu.rs``: one per batcher bucket,
its rows from the token budget and the attention budget), so the engine and the builder cannot
disagree; a preset only says how many padded tokens a batch may hold on that GPU (scaled down
for models wider than Orange Small, ``engine.batch_tokens_for``).
"""

from __future__ import annotations

from dataclasses import dataclass

REFERENCE_HIDDEN_SIZE = 768  # Orange Small; token budgets below are sized for it


@dataclass(frozen=True)
class GpuPreset:
    key: str
    name: str  # substring of the CUDA device name that identifies it
    compute_capability: str
    memory_gib: int
    batch_tokens: int  # padded tokens per batch at hidden size 768
    max_batch: int  # rows, whatever the length


GPU_PRESETS: dict[str, GpuPreset] = {
    "l4": GpuPreset("l4", "L4", "8.9", 24, 32_768, 64),
    "a10g": GpuPreset("a10g", "A10G", "8.6", 24, 32_768, 64),
    "a100": GpuPreset("a100", "A100", "8.0", 40, 65_536, 128),
    "h100": GpuPreset("h100", "H100", "9.0", 80, 131_072, 256),
    "h200": GpuPreset("h200", "H200", "9.0", 141, 131_072, 256),
}


def preset_for_device_name(device_name: str) -> GpuPreset | None:
    """The preset whose name occurs in a CUDA device name (``NVIDIA H200`` -> h200)."""
    # whole words only: "L4" must not match an "L40S", "A10G" not an "A100"
    words = set(device_name.upper().replace("-", " ").split())
    for preset in GPU_PRESETS.values():
        if preset.name.upper() in words:
            return preset
    return None
