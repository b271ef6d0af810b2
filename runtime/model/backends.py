"""Backends: run a flat token batch through an engine, return the logits at SEP positions.

Modeled on text-embeddings-inference's backend trait: the batcher hands every backend the same
flat ``Batch`` (``input_ids``, ``position_ids``, ``cumulative_seq_lengths``); ``is_padded()``
says whether the engine wants rows padded to a rectangle (both engines here do: the exported
graph takes ``input_ids`` + ``attention_mask`` of shape ``[rows, length]``).

``predict(batch)`` returns, per row, the ``[n_sep, num_labels]`` logits at the row's SEP tokens
(only real tokens: padding is never looked at). ``labels.argmax_labels`` turns them into
predictions.

- ``OnnxRuntimeBackend``: CPU or CUDA execution provider, reads a bundle's ``model.onnx``.
- ``TensorRTBackend``: a serialized engine; pinned host buffers, async copies on one stream,
  one execution context per optimisation profile (a profile is a batching bucket). Imported
  only when selected: ``tensorrt`` and ``cuda-python`` are optional (the ``gpu`` extra).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from pulpie_rt.runtime.model.bundle import Bundle
from pulpie_rt.runtime.model.devices import BACKEND_NAMES, gpu_available
from pulpie_rt.runtime.stages.batches import DEFAULT_MAX_BATCH_ATTENTION, Batch, Bucket


class BackendError(RuntimeError):
    """A backend that cannot be created here (missing package, no GPU, unreadable engine)."""


class Backend(Protocol):
    name: str
    device: str
    fallback: str | None  # why this backend is not the one the machine suggests, or None

    def is_padded(self) -> bool: ...

    def buckets(self) -> list[Bucket] | None:
        """The engine's fixed shape buckets, or None when any shape runs."""
        ...

    def predict(self, batch: Batch) -> list[np.ndarray]: ...


def sep_logits(
    logits: np.ndarray, input_ids: np.ndarray, lengths: np.ndarray, sep_id: int
) -> list[np.ndarray]:
    """Per row of a padded ``[rows, length, labels]`` output, the logits at its SEP tokens."""
    out = []
    for row, n in enumerate(lengths):
        positions = np.flatnonzero(input_ids[row, :n] == sep_id)
        out.append(np.asarray(logits[row, positions], dtype=np.float32))
    return out


# ---------------------------------------------------------------------------- no transformer


class RescorerOnlyBackend:
    """The backend of a profile that runs no transformer (``Bundle.uses_transformer`` False):
    its pages have no chunks, so it is never asked to predict; the bundle's rescorer scores
    the blocks from their features (``flow.pages.decide_blocks``)."""

    name = "rescorer-only"
    device = "cpu"
    fallback: str | None = None
    attention_budget: int | None = None

    def __init__(self, bundle: Bundle):
        self.bundle = bundle

    def is_padded(self) -> bool:
        return False

    def buckets(self) -> list[Bucket] | None:
        return None

    def predict(self, batch: Batch) -> list[np.ndarray]:
        raise BackendError(f"profile {self.bundle.profile!r} runs no transformer: it has no "
                           "chunks to predict")


# ---------------------------------------------------------------------------- ONNX Runtime


class OnnxRuntimeBackend:
    """ONNX Runtime on the CPU or CUDA execution provider."""

    name = "onnxruntime"
    fallback: str | None = None  # set by create_backend
    # the exported graph computes eager attention: cap rows * length**2 per batch
    attention_budget: int | None = DEFAULT_MAX_BATCH_ATTENTION

    def __init__(self, bundle: Bundle, device: str = "cpu", threads: int | None = None):
        import onnxruntime as ort

        self.bundle = bundle
        self.sep_id = bundle.sep_id
        self.pad_id = bundle.pad_id
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        if device.startswith("cuda"):
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise BackendError(
                    f"device {device!r}: onnxruntime has no CUDAExecutionProvider here "
                    "(install onnxruntime-gpu)"
                )
            index = int(device.split(":", 1)[1]) if ":" in device else 0
            providers: list = [("CUDAExecutionProvider", {"device_id": index})]
        elif device == "cpu":
            providers = ["CPUExecutionProvider"]
        else:
            raise BackendError(f"device {device!r}: onnxruntime runs on 'cpu' or 'cuda[:N]'")
        self.device = device
        try:
            self.session = ort.InferenceSession(
                str(bundle.onnx_path), options, providers=providers
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise BackendError(f"{bundle.onnx_path}: onnxruntime cannot load it ({exc})") from exc
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.input_dtypes = {
            i.name: np.int32 if i.type == "tensor(int32)" else np.int64
            for i in self.session.get_inputs()
        }
        self.output_name = bundle.manifest.get("onnx", {}).get("output", "logits")

    def is_padded(self) -> bool:
        return True

    def buckets(self) -> list[Bucket] | None:
        return None

    def predict(self, batch: Batch) -> list[np.ndarray]:
        input_ids, attention_mask = batch.padded(self.pad_id)
        feed = {}
        for name in self.input_names:
            if name == "input_ids":
                value = input_ids
            elif name == "attention_mask":
                value = attention_mask
            elif name == "position_ids":  # graphs exported with explicit positions
                value = batch.padded_positions()
            else:
                raise BackendError(f"{self.bundle.onnx_path}: unknown model input {name!r}")
            feed[name] = value.astype(self.input_dtypes[name], copy=False)
        (logits,) = self.session.run([self.output_name], feed)
        return sep_logits(logits, input_ids, batch.lengths, self.sep_id)


# ---------------------------------------------------------------------------- TensorRT


def _cuda_check(result):
    """cuda-python calls return ``(err, *values)``; raise on error, return the values."""
    err, *values = result
    if int(err) != 0:
        raise BackendError(f"CUDA error {err}")
    return values[0] if len(values) == 1 else values


class _Profile:
    """One optimisation profile: its execution context and max-shape buffers."""

    def __init__(self, engine, index: int, stream, cudart, input_names, output_name):
        self.index = index
        self.context = engine.create_execution_context()
        self.context.set_optimization_profile_async(index, stream)
        first = input_names[0]
        (_min_shape, _opt_shape, max_shape) = engine.get_tensor_profile_shape(first, index)
        self.max_rows, self.max_length = int(max_shape[0]), int(max_shape[1])
        self.min_length = int(_min_shape[1])
        labels = int(engine.get_tensor_shape(output_name)[-1])
        self.host: dict[str, np.ndarray] = {}
        self.host_ptr: dict[str, int] = {}
        self.device_ptr: dict[str, int] = {}
        half = "HALF" in str(engine.get_tensor_dtype(output_name))
        out_dtype = np.float16 if half else np.float32
        shapes = {name: ((self.max_rows, self.max_length), np.int64) for name in input_names}
        shapes[output_name] = ((self.max_rows, self.max_length, labels), out_dtype)
        for name, (shape, dtype) in shapes.items():
            if name in input_names and "INT32" in str(engine.get_tensor_dtype(name)):
                dtype = np.int32
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            host_ptr = _cuda_check(cudart.cudaMallocHost(nbytes))  # pinned: async copies
            self.host_ptr[name] = int(host_ptr)
            buffer = np.ctypeslib.as_array((ctypes.c_byte * nbytes).from_address(int(host_ptr)))
            self.host[name] = buffer.view(dtype)
            self.device_ptr[name] = int(_cuda_check(cudart.cudaMalloc(nbytes)))
            self.context.set_tensor_address(name, self.device_ptr[name])

    def free(self, cudart) -> None:
        """Release the profile's pinned host and device buffers (once)."""
        self.host.clear()
        for pointer in self.host_ptr.values():
            cudart.cudaFreeHost(pointer)
        for pointer in self.device_ptr.values():
            cudart.cudaFree(pointer)
        self.host_ptr.clear()
        self.device_ptr.clear()
        self.context = None


class TensorRTBackend:
    """A serialized TensorRT engine (built by ``pulpie-rt engine``) on one GPU."""

    name = "tensorrt"
    fallback: str | None = None
    attention_budget: int | None = None  # the engine profiles' row caps bound memory

    def __init__(self, engine_path: str | Path, bundle: Bundle, device: str = "cuda:0"):
        try:
            import tensorrt as trt
            from cuda.bindings import runtime as cudart
        except ImportError as exc:
            raise BackendError(
                f"tensorrt backend needs the 'tensorrt' and 'cuda-python' packages ({exc.name} "
                "is missing): pip install 'pulpie-rt[gpu]'"
            ) from exc
        self.bundle = bundle
        self.sep_id, self.pad_id = bundle.sep_id, bundle.pad_id
        self.device = device
        self.cudart = cudart
        gpu = int(device.split(":", 1)[1]) if ":" in device else 0
        _cuda_check(cudart.cudaSetDevice(gpu))
        logger = trt.Logger(trt.Logger.WARNING)
        runtime = trt.Runtime(logger)
        engine_bytes = Path(engine_path).read_bytes()
        self.engine = runtime.deserialize_cuda_engine(engine_bytes)
        if self.engine is None:
            raise BackendError(
                f"{engine_path}: TensorRT cannot deserialize it (built for another GPU/version?)"
            )
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        inputs = [n for n in names if self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        self.input_names = inputs
        self.output_name = next(n for n in names if n not in inputs)
        self.stream = int(_cuda_check(cudart.cudaStreamCreate()))
        self.profiles = [
            _Profile(self.engine, i, self.stream, cudart, inputs, self.output_name)
            for i in range(self.engine.num_optimization_profiles)
        ]
        self.profiles.sort(key=lambda p: p.max_length)

    def close(self) -> None:
        """Free the engine's buffers, contexts and stream (also when garbage-collected)."""
        profiles, self.profiles = getattr(self, "profiles", []), []
        for profile in profiles:
            profile.free(self.cudart)
        stream, self.stream = getattr(self, "stream", None), None
        if stream is not None:
            self.cudart.cudaStreamDestroy(stream)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: CUDA may already be gone
            pass

    def is_padded(self) -> bool:
        return True

    def buckets(self) -> list[Bucket] | None:
        return [Bucket(p.max_length, p.max_rows) for p in self.profiles]

    def _profile_for(self, rows: int, length: int) -> _Profile:
        for profile in self.profiles:
            if length <= profile.max_length and rows <= profile.max_rows:
                return profile
        raise BackendError(f"no engine profile takes a batch of {rows} x {length} tokens")

    def predict(self, batch: Batch) -> list[np.ndarray]:
        cudart = self.cudart
        profile = self._profile_for(batch.rows, batch.max_length)
        length = max(batch.max_length, profile.min_length)
        input_ids, attention_mask = batch.padded(self.pad_id, length)
        shape = (batch.rows, length)
        values = {"input_ids": input_ids, "attention_mask": attention_mask}
        h2d = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
        for name in self.input_names:
            host = profile.host[name][: input_ids.size].reshape(shape)
            host[...] = values[name]
            profile.context.set_input_shape(name, shape)
            _cuda_check(cudart.cudaMemcpyAsync(
                profile.device_ptr[name], host.ctypes.data, host.nbytes, h2d, self.stream))
        if not profile.context.execute_async_v3(self.stream):
            raise BackendError("TensorRT execution failed")
        out = profile.host[self.output_name]
        n_out = batch.rows * length * (out.size // (profile.max_rows * profile.max_length))
        _cuda_check(cudart.cudaMemcpyAsync(
            out.ctypes.data, profile.device_ptr[self.output_name], n_out * out.itemsize,
            cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, self.stream))
        _cuda_check(cudart.cudaStreamSynchronize(self.stream))
        logits = out[:n_out].reshape(batch.rows, length, -1)
        return sep_logits(logits, input_ids, batch.lengths, self.sep_id)


# ---------------------------------------------------------------------------- selection


def create_backend(
    bundle: Bundle,
    backend: str = "auto",
    device: str | None = None,
    engine_path: Path | Sequence[Path] | None = None,
    threads: int | None = None,
) -> Backend:
    """The backend for ``backend``/``device``.

    ``auto``: TensorRT when an engine file (the first of ``engine_path`` that loads here) and a
    GPU are present, then ONNX Runtime CUDA, then ONNX Runtime CPU. ``device`` None picks the
    GPU when one is usable, else the CPU. When ``auto`` had to take a slower path than the
    machine suggests (an engine that does not load, a GPU without onnxruntime's CUDA provider),
    the backend's ``fallback`` says so (else it is None); the page flow reports it.
    """
    if backend not in BACKEND_NAMES:
        raise BackendError(f"unknown backend {backend!r}: choose one of {', '.join(BACKEND_NAMES)}")
    if not bundle.uses_transformer:
        return RescorerOnlyBackend(bundle)  # nothing to run on a device: the CPU scores blocks
    engines = [engine_path] if isinstance(engine_path, (str, Path)) else list(engine_path or [])
    if backend == "tensorrt":
        if not engines:
            raise BackendError("tensorrt backend needs an engine file (pulpie-rt engine ...)")
        return _first_engine(engines, bundle, device or "cuda:0")
    fallback = None
    if backend == "auto" and device != "cpu" and engines and gpu_available():
        try:
            return _first_engine(engines, bundle, device or "cuda:0")
        except BackendError as exc:
            fallback = f"the TensorRT engine did not load ({exc}): ONNX Runtime instead"
    if device is None:
        import onnxruntime as ort

        has_cuda = "CUDAExecutionProvider" in ort.get_available_providers()
        device = "cuda:0" if has_cuda and gpu_available() else "cpu"
        if device == "cpu" and gpu_available():
            fallback = fallback or ("a GPU is present but onnxruntime has no "
                                    "CUDAExecutionProvider (install onnxruntime-gpu): CPU instead")
    created = OnnxRuntimeBackend(bundle, device, threads=threads)
    created.fallback = fallback
    return created


def _first_engine(engines: list, bundle: Bundle, device: str) -> TensorRTBackend:
    """The first engine that loads on this GPU; the last error when none does."""
    error: BackendError | None = None
    for engine in engines:
        try:
            return TensorRTBackend(engine, bundle, device)
        except BackendError as exc:
            error = exc
    assert error is not None
    raise error
