"""Devices: which CPUs and GPUs this process may use, and what the GPUs are (found without
importing any CUDA library). The engine (``runtime/flow/engine.py``) runs the model on ONNX
Runtime's CPU, CUDA or TensorRT execution provider; these helpers pick a device, size a
process's threads and describe a GPU."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pulpie_rt.runtime import native


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity mask, lowered by a cgroup v2 CPU quota
    (a container's ``--cpus``), at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as fh:
            quota, period = fh.read().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, int(int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cpus)


# ``backend="auto"``: a GPU when one is visible (and the profile runs a model), else the CPU
AUTO = "auto"


def backend_names() -> tuple[str, ...]:
    """The doors' ``backend=`` choices: ``auto`` and the core's execution providers (``cpu``,
    ``cuda``, ``tensorrt``: named once in the core, read through ``native.providers``)."""
    return (AUTO, *(name for name, _ in native.providers()))


def gpu_backends() -> tuple[str, ...]:
    """The backends that run on a GPU (their device is written ``cuda:N``)."""
    return tuple(name for name, device in native.providers() if device != "cpu")


def device_choices() -> str:
    """``'cpu', 'cuda' or 'cuda:N'``: the devices as the core writes them, for a message."""
    syntaxes = dict.fromkeys(device for _, device in native.providers())
    words = [f"'{s}'" for s in syntaxes if s == "cpu"]
    for syntax in syntaxes:
        if syntax != "cpu":
            words += [f"'{syntax.split(':')[0]}'", f"'{syntax}'"]
    return ", ".join(words[:-1]) + f" or {words[-1]}"


def gpu_index(device: str) -> int | None:
    """GPU N of ``cuda:N`` (``cuda``: 0), None for ``cpu``; ValueError for anything else."""
    if device == "cpu":
        return None
    prefix, _, index = device.partition(":")
    if prefix == "cuda" and not index:
        return 0
    if prefix == "cuda" and index.isdigit():
        return int(index)
    raise ValueError(f"device {device!r}: choose {device_choices()}")


def gpu_devices() -> list[str]:
    """``cuda:N`` for every NVIDIA GPU this process may use, found without importing any CUDA
    library (``CUDA_VISIBLE_DEVICES`` honoured); empty without one."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return []
    if not (Path("/dev/nvidiactl").exists() or Path("/proc/driver/nvidia/version").exists()):
        return []
    if visible:
        return [f"cuda:{i}" for i in range(len(visible.split(",")))]
    count = sum(1 for name in os.listdir("/dev")
                if name.startswith("nvidia") and name[6:].isdigit())
    return [f"cuda:{i}" for i in range(max(count, 1))]


@dataclass(frozen=True)
class GpuInfo:
    name: str
    compute_capability: str
    memory_mib: int


def detect_gpu() -> GpuInfo | None:
    """The first NVIDIA GPU as ``nvidia-smi`` reports it (name, compute capability, memory: what
    engine builds and GPU benchmarks need), or None (no driver, no GPU)."""
    import shutil  # (here, as subprocess: a run that asks for no GPU imports neither)
    import subprocess

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,compute_cap,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    if not out:
        return None
    name, capability, memory = (part.strip() for part in out[0].split(","))
    return GpuInfo(name, capability, int(float(memory)))


def gpu_available() -> bool:
    """True when an NVIDIA GPU is visible (see ``gpu_devices``)."""
    return bool(gpu_devices())
