"""ONNX bundle -> TensorRT engines for one GPU type (``pulpie-rt engine``, ``make engine``).

The engines are built by the core's own engine path (ONNX Runtime's TensorRT execution
provider, ``core/src/ort/gpu.rs``), exactly as the engine builds them when it opens the bundle
with backend ``tensorrt``: one FP16 engine per batcher bucket, its rows sized for the GPU's
token budget (``profiles.GPU_PRESETS``), written with ONNX Runtime's EPContext models, the
engine files and TensorRT's timing cache into ``<bundle>/tensorrt/<gpu>/``. Every later open
of the bundle with backend ``tensorrt`` on that GPU type loads them without rebuilding. The
bundle's manifest lists what was built (``tensorrt_engines``).

Engines are tied to a GPU architecture and to the ONNX Runtime / TensorRT versions, so they are
built on the GPU that will run them. It needs the onnxruntime-gpu wheel's C library
(``PULPIE_RT_ORT_LIB``, else the installed ``onnxruntime`` package's when it is the GPU build)
and CUDA 13, cuDNN 9 and TensorRT 10 on the library path.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
from dataclasses import dataclass
from pathlib import Path

from pulpie_rt.runtime.model.bundle import edit_manifest, load_bundle

from .profiles import GPU_PRESETS, REFERENCE_HIDDEN_SIZE, GpuPreset, preset_for_device_name


class EngineUnavailableError(RuntimeError):
    """No NVIDIA GPU or no GPU build of ONNX Runtime here: engines cannot be built."""


class EngineMismatchError(RuntimeError):
    """A preset for another GPU architecture than this machine's."""


@dataclass(frozen=True)
class GpuInfo:
    name: str
    compute_capability: str
    folder: str  # the folder name its engines are cached under, e.g. "nvidia-l4-sm89"


def no_engine_message(bundle: Path, reason: str) -> str:
    return (f"pulpie-rt engine: {reason}; TensorRT engines are built on the GPU type that runs "
            f"them. The ONNX bundle {bundle} is ready for ONNX Runtime.")


def _core() -> ctypes.CDLL:
    """The compiled core (the library every door runs), its calls declared from its headers."""
    from pulpie_rt.runtime import native

    if native.library_path() is None:
        raise EngineUnavailableError("pulpie_rt's compiled core is not built (`make core`)")
    return native.engine_abi()


def _message() -> ctypes.Structure:
    from pulpie_rt.runtime import native

    return native.new("pulpie_rt_message")


def _text(lib: ctypes.CDLL, message: ctypes.Structure) -> str:
    if not message.ptr:
        return ""
    text = ctypes.string_at(message.ptr, message.len).decode("utf-8", "replace")
    lib.pulpie_rt_free(message.ptr, message.len)
    return text


def detect_gpu(device: int = 0) -> GpuInfo | str:
    """GPU ``device`` as the NVIDIA driver describes it, or why there is none."""
    lib = _core()
    out, error = _message(), _message()
    if lib.pulpie_rt_ort_gpu(device, ctypes.byref(out), ctypes.byref(error)) != 0:
        return _text(lib, error)
    name, capability, folder = _text(lib, out).split("\n")
    return GpuInfo(name, capability, folder)


def gpu_onnxruntime_library() -> str | None:
    """``PULPIE_RT_ORT_LIB``, else the installed onnxruntime package's C library when it has
    the CUDA provider beside it (the onnxruntime-gpu wheel), else None."""
    explicit = os.environ.get("PULPIE_RT_ORT_LIB")
    if explicit:
        return explicit
    try:
        import onnxruntime
    except ImportError:
        return None
    capi = Path(onnxruntime.__file__).parent / "capi"
    found = sorted(glob.glob(str(capi / "libonnxruntime.so.1*")))
    if found and (capi / "libonnxruntime_providers_cuda.so").is_file():
        return found[-1]
    return None


def choose_preset(requested: str, gpu: GpuInfo) -> GpuPreset:
    """The preset to build for: ``auto`` from the device name, else the named one if it fits."""
    detected = preset_for_device_name(gpu.name)
    if requested == "auto":
        if detected is not None:
            return detected
        # an unlisted GPU: the budget of the smallest listed GPU (its engines fit anywhere)
        smallest = min(GPU_PRESETS.values(), key=lambda p: p.memory_gib)
        return GpuPreset("auto", gpu.name, gpu.compute_capability, smallest.memory_gib,
                         smallest.batch_tokens, smallest.max_batch)
    preset = GPU_PRESETS[requested]
    if preset.compute_capability != gpu.compute_capability:
        raise EngineMismatchError(
            f"--gpu {requested} is compute capability {preset.compute_capability} but this "
            f"machine's GPU is {gpu.name} ({gpu.compute_capability}); an engine only runs on "
            f"the architecture it was built on: build it on a {preset.name} or pass --gpu auto")
    return preset


def batch_tokens_for(preset: GpuPreset, hidden_size: int) -> int:
    """The preset's padded tokens per batch, scaled down for a model wider than Orange Small
    (never up: a narrower model's rows are capped by the preset's budget all the same)."""
    scaled = preset.batch_tokens * REFERENCE_HIDDEN_SIZE // max(hidden_size, 1)
    return max(1024, min(preset.batch_tokens, scaled))


def run_engine_command(bundle_dir: str | Path, gpu: str = "auto", precision: str = "fp16",
                       device: int = 0, log=print) -> dict:
    """``pulpie-rt engine``: checks first (bundle, GPU, ONNX Runtime), then builds."""
    bundle_dir = Path(bundle_dir)
    bundle = load_bundle(bundle_dir)  # a missing/broken bundle is reported before anything else
    if bundle.manifest["onnx"].get("attention") == "fused":
        raise EngineMismatchError(
            f"{bundle_dir} has fused attention (ONNX Runtime's com.microsoft.MultiHeadAttention), "
            "which TensorRT does not build: export the checkpoint again without --attention fused "
            "for TensorRT (it fuses attention itself), and run this bundle with backend cuda")
    found = detect_gpu(device)
    if isinstance(found, str):
        raise EngineUnavailableError(
            no_engine_message(bundle_dir, f"no NVIDIA GPU found ({found})"))
    library = gpu_onnxruntime_library()
    if library is None:
        raise EngineUnavailableError(no_engine_message(
            bundle_dir, f"no GPU build of ONNX Runtime (GPU: {found.name}): pip install "
                        "onnxruntime-gpu, or set PULPIE_RT_ORT_LIB to its libonnxruntime.so"))
    preset = choose_preset(gpu, found)
    budget = batch_tokens_for(preset, bundle.manifest["model"]["hidden_size"])
    log(f"building {precision} TensorRT engines for {found.name} (preset {preset.key}, "
        f"{budget} tokens per batch) from {bundle.onnx_path}")
    lib = _core()
    ort, error = ctypes.c_void_p(), _message()
    path = library.encode()
    if lib.pulpie_rt_ort_load(path, len(path), ctypes.byref(ort), ctypes.byref(error)) != 0:
        raise EngineUnavailableError(no_engine_message(bundle_dir, _text(lib, error)))
    try:
        model = str(bundle.onnx_path).encode()
        out = _message()
        status = lib.pulpie_rt_ort_tensorrt_build(
            ort, model, len(model), device, int(precision == "fp32"), budget, b"", 0,
            ctypes.byref(out), ctypes.byref(error))
        if status != 0:
            raise EngineUnavailableError(no_engine_message(bundle_dir, _text(lib, error)))
        provider, *notes = _text(lib, out).split("\n")
    finally:
        lib.pulpie_rt_ort_release(ort)
    folder = bundle_dir / "tensorrt" / found.folder
    record = json.loads((folder / "tensorrt.json").read_text(encoding="utf-8"))
    entry = {"gpu": found.name, "compute_capability": found.compute_capability,
             "preset": preset.key, "folder": f"tensorrt/{found.folder}",
             "precision": record["precision"], "max_batch_tokens": budget,
             "onnxruntime": record["onnxruntime"], "model_hash": record["model_hash"],
             "profiles": record["profiles"],
             "provider": provider, "notes": notes}

    def with_engine(manifest: dict) -> None:
        built = [e for e in manifest.get("tensorrt_engines", [])
                 if e.get("folder") != entry["folder"]]
        manifest["tensorrt_engines"] = [*built, entry]

    edit_manifest(bundle_dir, with_engine)
    for note in notes:
        log(note)
    return entry
