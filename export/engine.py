"""ONNX bundle -> TensorRT engine for one GPU type (``pulpie-rt engine``).

Engines are tied to a GPU architecture (compute capability) and a TensorRT version, so they are
built on the GPU that will run them. The builder adds one optimization profile per
sequence-length bucket (``profiles.py``), keeps RMSNorm, softmax and the rotary cos/sin in FP32
inside an FP16 engine (norms after attention overflow FP16, and their cost is negligible), and
persists the timing cache so rebuilding on the same GPU type is quick. Beside the engine goes
``<engine>.json``: TensorRT version, GPU name, compute capability, profiles, bundle source.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pulpie_rt.runtime.digest import files_sha256
from pulpie_rt.runtime.model.bundle import Bundle, load_bundle
from pulpie_rt.runtime.model.devices import GpuInfo, detect_gpu

from .profiles import GPU_PRESETS, GpuPreset, Profile, preset_for_device_name, profiles_for
from .to_onnx import FP32_SCOPES

WORKSPACE_BYTES = 8 << 30
# Non-float layers need no precision; setting one on them is an error in TensorRT.
_NO_PRECISION_LAYERS = ("CONSTANT", "SHAPE", "IDENTITY", "ASSERTION")


class EngineUnavailableError(RuntimeError):
    """No NVIDIA GPU or no TensorRT here: the engine cannot be built on this machine."""


class EngineMismatchError(RuntimeError):
    """An engine built for another GPU architecture or TensorRT version."""


def no_engine_message(bundle: Path, reason: str) -> str:
    return (f"pulpie-rt engine: {reason}; TensorRT engines are built on the GPU type that runs "
            f"them. The ONNX bundle {bundle} is ready for ONNX Runtime.")


def _import_tensorrt():
    try:
        import tensorrt
    except ImportError:
        return None
    return tensorrt


def choose_preset(requested: str, gpu: GpuInfo) -> GpuPreset:
    """The preset to build for: ``auto`` from the device name, else the named one if it fits."""
    detected = preset_for_device_name(gpu.name)
    if requested == "auto":
        if detected is not None:
            return detected
        # An unlisted GPU: size batches like the listed GPU with the nearest memory.
        nearest = min(GPU_PRESETS.values(),
                      key=lambda p: abs(p.memory_gib * 1024 - gpu.memory_mib))
        return GpuPreset("auto", gpu.name, gpu.compute_capability, nearest.memory_gib,
                         nearest.batch_tokens, nearest.max_batch)
    preset = GPU_PRESETS[requested]
    if preset.compute_capability != gpu.compute_capability:
        raise EngineMismatchError(
            f"--gpu {requested} is compute capability {preset.compute_capability} but this "
            f"machine's GPU is {gpu.name} ({gpu.compute_capability}); an engine only runs on "
            f"the architecture it was built on: build it on a {preset.name} or pass --gpu auto")
    return preset


def _mark_fp32(network, trt, fp32_softmax: bool) -> int:
    """Force FP32 on RMSNorm and rotary layers (and softmax if asked); return the count.

    The rotary chain matters most: in FP16, positions above 2048 are no longer integers and
    the angles lose their low bits (measured with ONNX Runtime on an 8191-token chunk: max
    |dlogit| 1.9 and 97.3% SEP agreement with FP16 rotary, 0.027 and 100% with FP32 rotary).

    Softmax is left to TensorRT by default: its fused attention kernels accumulate the softmax
    in FP32 already, and a forced FP32 softmax layer can keep them from fusing.
    """
    skip = {getattr(trt.LayerType, name) for name in _NO_PRECISION_LAYERS
            if hasattr(trt.LayerType, name)}
    floats = (trt.float16, trt.float32)
    marked = 0
    for index in range(network.num_layers):
        layer = network.get_layer(index)
        is_softmax = layer.type == trt.LayerType.SOFTMAX or "Softmax" in layer.name
        wanted = (fp32_softmax if is_softmax
                  else any(scope in layer.name for scope in FP32_SCOPES))
        outputs = [layer.get_output(i) for i in range(layer.num_outputs)]
        if not wanted or layer.type in skip or not all(o.dtype in floats for o in outputs):
            continue
        if layer.type != trt.LayerType.CAST:  # a cast's own type is its output type
            layer.precision = trt.float32
        for i in range(layer.num_outputs):
            layer.set_output_type(i, trt.float32)
        marked += 1
    return marked


def build_engine(bundle: Bundle, trt, gpu: GpuInfo, preset: GpuPreset, precision: str,
                 out: Path, timing_cache: Path, fp32_softmax: bool = False,
                 log=print) -> dict:
    """Build and write the engine plus ``<engine>.json``; return that metadata."""
    if bundle.manifest["onnx"]["precision"] != "fp32":
        log("note: building from an fp16 ONNX graph; an fp32 bundle gives TensorRT more room")
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(bundle.onnx_path)):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise RuntimeError(f"TensorRT cannot parse {bundle.onnx_path}: {errors}")

    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, WORKSPACE_BYTES)
    marked = 0
    if precision == "fp16":
        config.set_flag(trt.BuilderFlag.FP16)
        config.set_flag(trt.BuilderFlag.OBEY_PRECISION_CONSTRAINTS)
        marked = _mark_fp32(network, trt, fp32_softmax)

    profiles: list[Profile] = profiles_for(preset, bundle.manifest["model"]["hidden_size"])
    for profile in profiles:
        opt_profile = builder.create_optimization_profile()
        for name in ("input_ids", "attention_mask"):
            opt_profile.set_shape(name, *profile.shapes())
        config.add_optimization_profile(opt_profile)

    cache_bytes = timing_cache.read_bytes() if timing_cache.is_file() else b""
    cache = config.create_timing_cache(cache_bytes)
    config.set_timing_cache(cache, ignore_mismatch=False)

    start = time.perf_counter()
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise RuntimeError("TensorRT failed to build the engine (see the messages above)")
    seconds = time.perf_counter() - start
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(memoryview(serialized))
    timing_cache.parent.mkdir(parents=True, exist_ok=True)
    timing_cache.write_bytes(memoryview(config.get_timing_cache().serialize()))

    metadata = {
        "engine": out.name, "tensorrt": trt.__version__, "gpu": gpu.name,
        "compute_capability": gpu.compute_capability, "preset": preset.key,
        "precision": precision, "fp32_layers": marked, "fp32_softmax": fp32_softmax,
        "profiles": [p.as_dict() for p in profiles],
        "inputs": ["input_ids", "attention_mask"], "output": "logits",
        # the runtime finds the bundle of an engine through this path (relative to the engine)
        "bundle": os.path.relpath(bundle.path.resolve(), out.parent.resolve()),
        "bundle_source": bundle.manifest["source"],
        "bundle_onnx_sha256": files_sha256([bundle.onnx_path]),
        "timing_cache": str(timing_cache), "build_seconds": round(seconds, 1),
    }
    metadata_path(out).write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
    return metadata


def metadata_path(engine: Path) -> Path:
    return Path(str(engine) + ".json")


def check_engine_compatible(engine: str | Path, trt_version: str, gpu: GpuInfo) -> dict:
    """The engine's metadata if it was built for this TensorRT and GPU architecture.

    TensorRT itself fails on a foreign engine with an opaque deserialisation error; this names
    what differs and what to do.
    """
    engine = Path(engine)
    meta_file = metadata_path(engine)
    if not meta_file.is_file():
        raise EngineMismatchError(f"{engine}: no {meta_file.name} beside it; rebuild it with "
                                  "`pulpie-rt engine BUNDLE --gpu auto`")
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    problems = []
    if meta.get("tensorrt") != trt_version:
        problems.append(f"built with TensorRT {meta.get('tensorrt')}, this is {trt_version}")
    if meta.get("compute_capability") != gpu.compute_capability:
        problems.append(f"built for {meta.get('gpu')} (compute capability "
                        f"{meta.get('compute_capability')}), this GPU is {gpu.name} "
                        f"({gpu.compute_capability})")
    if problems:
        raise EngineMismatchError(f"{engine}: " + "; ".join(problems) + ". Engines are tied to "
                                  "the GPU architecture and TensorRT version: rebuild it here "
                                  "with `pulpie-rt engine BUNDLE --gpu auto`.")
    return meta


def load_engine(engine: str | Path):
    """Deserialise an engine after checking it matches this GPU and TensorRT version."""
    trt = _import_tensorrt()
    gpu = detect_gpu()
    if trt is None or gpu is None:
        raise EngineUnavailableError("loading a TensorRT engine needs an NVIDIA GPU and the "
                                     "tensorrt package")
    check_engine_compatible(engine, trt.__version__, gpu)
    runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))
    return runtime.deserialize_cuda_engine(Path(engine).read_bytes())


def run_engine_command(bundle_dir: str | Path, gpu: str = "auto", precision: str = "fp16",
                       out: str | Path | None = None, fp32_softmax: bool = False,
                       log=print) -> dict:
    """``pulpie-rt engine``: checks first (GPU, TensorRT, bundle), then builds."""
    bundle_dir = Path(bundle_dir)
    bundle = load_bundle(bundle_dir)  # a missing/broken bundle is reported before anything else
    device = detect_gpu()
    if device is None:
        raise EngineUnavailableError(no_engine_message(bundle_dir, "no NVIDIA GPU found"))
    trt = _import_tensorrt()
    if trt is None:
        raise EngineUnavailableError(no_engine_message(
            bundle_dir, f"TensorRT is not installed (GPU: {device.name}; "
                        "pip install -e '.[gpu]')"))
    preset = choose_preset(gpu, device)
    engine_path = Path(out) if out else bundle_dir / f"model-{preset.key}-{precision}.engine"
    cache = engine_path.parent / f"timing-{preset.key}-trt{trt.__version__}.cache"
    log(f"building {precision} engine for {device.name} (preset {preset.key}) from "
        f"{bundle.onnx_path}")
    return build_engine(bundle, trt, device, preset, precision, engine_path, cache,
                        fp32_softmax=fp32_softmax, log=log)
