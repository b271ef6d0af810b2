"""TensorRT optimization profiles per GPU preset: data shared by the engine builder and batcher.

One profile per sequence-length bucket: TensorRT tunes kernels for a profile's ``opt`` shape,
so a single 1..8192 profile would be fast only near its ``opt``. A batch of chunks is padded to
the smallest bucket that holds its longest chunk and runs on that bucket's profile. Batch
ranges come from a per-GPU budget of padded tokens per batch (scaled down for wider models).

Pure data and arithmetic: importable by the runtime without torch or TensorRT.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pulpie_rt.runtime import native

# the engine's sequence-length buckets (the core defines them)
SEQ_BUCKETS: tuple[int, ...] = native.seq_buckets()
MAX_TOKENS = SEQ_BUCKETS[-1]
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


@dataclass(frozen=True)
class Profile:
    """Shapes of one optimization profile: ``[batch, seq]`` for both inputs."""

    min_seq: int
    opt_seq: int
    max_seq: int
    min_batch: int
    opt_batch: int
    max_batch: int

    def shapes(self) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
        """(min, opt, max) input shapes as TensorRT's ``set_shape`` takes them."""
        return ((self.min_batch, self.min_seq), (self.opt_batch, self.opt_seq),
                (self.max_batch, self.max_seq))

    def as_dict(self) -> dict:
        return asdict(self)


def preset_for_device_name(device_name: str) -> GpuPreset | None:
    """The preset whose name occurs in a CUDA device name (``NVIDIA H200`` -> h200)."""
    # whole words only: "L4" must not match an "L40S", "A10G" not an "A100"
    words = set(device_name.upper().replace("-", " ").split())
    for preset in GPU_PRESETS.values():
        if preset.name.upper() in words:
            return preset
    return None


def max_batch_for(preset: GpuPreset, seq: int, hidden_size: int = REFERENCE_HIDDEN_SIZE) -> int:
    """Rows a batch of sequence length ``seq`` may hold on ``preset`` (at least 1)."""
    budget = preset.batch_tokens * REFERENCE_HIDDEN_SIZE // max(hidden_size, 1)
    return max(1, min(preset.max_batch, budget // seq))


def profiles_for(preset: GpuPreset | str, hidden_size: int = REFERENCE_HIDDEN_SIZE,
                 buckets: tuple[int, ...] = SEQ_BUCKETS) -> list[Profile]:
    """One profile per bucket: sequences in ``(previous bucket, bucket]``, tuned at the bucket."""
    if isinstance(preset, str):
        preset = GPU_PRESETS[preset]
    profiles = []
    previous = 0
    for bucket in buckets:
        rows = max_batch_for(preset, bucket, hidden_size)
        profiles.append(Profile(min_seq=previous + 1, opt_seq=bucket, max_seq=bucket,
                                min_batch=1, opt_batch=rows, max_batch=rows))
        previous = bucket
    return profiles


def bucket_for(seq_len: int, buckets: tuple[int, ...] = SEQ_BUCKETS) -> int:
    """The smallest bucket holding ``seq_len`` tokens; the index is the profile index."""
    for bucket in buckets:
        if seq_len <= bucket:
            return bucket
    raise ValueError(f"{seq_len} tokens exceed the largest bucket ({buckets[-1]})")
