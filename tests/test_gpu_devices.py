"""Honest devices through the C library: with the ``onnxruntime-gpu`` wheel's own ONNX Runtime
(``make ort-gpu`` puts its C library in ``build/ort-gpu``), asking for ``cuda`` or ``tensorrt``
on this GPU-less machine fails at ``pulpie_rt_engine_open`` with the reason, never runs on the
CPU; a profile that runs no transformer says so and runs.

The failures are met for real, each where it happens on a user's machine:
- no NVIDIA driver at all (this machine): the driver library cannot be loaded;
- a driver that sees no GPU, or fewer than asked: a stand-in ``libcuda.so.1``
  (``tests/c/fake_libcuda.c``) answers the driver calls the core asks first;
- a driver and a GPU, but not the CUDA libraries the wheel's providers link (cuBLAS, the CUDA
  runtime; TensorRT's libnvinfer): ONNX Runtime's own failure to load its provider.

The example program (``examples/c/extract.c``, a C program with no Python in it) is the caller.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.capi import EXTRACT, build_capi
from eval.report import REPO_ROOT

ORT_GPU_DIR = REPO_ROOT / "build" / "ort-gpu" / "onnxruntime" / "capi"
MISSING_TOOLS = [tool for tool in ("cargo", "cc", "make") if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING_TOOLS),
    reason=f"the C library needs {', '.join(MISSING_TOOLS)} on the PATH to be built")

NO_FALLBACK = "; pulpie-rt does not fall back to the CPU (ask for backend 'cpu' to run there)"
PAGE = (b"<html><body><main><h1>Title</h1><p>Some text that is the page's main content.</p>"
        b"</main></body></html>")


def gpu_library() -> Path:
    """The onnxruntime-gpu wheel's libonnxruntime.so (``make ort-gpu``), or a skip saying how."""
    found = sorted(ORT_GPU_DIR.glob("libonnxruntime.so.1.*"))
    if not found:
        pytest.skip(f"no onnxruntime-gpu C library in {ORT_GPU_DIR}: `make ort-gpu` downloads it "
                    "(pip download onnxruntime-gpu; it needs PyPI)")
    return found[-1]


@pytest.fixture(scope="module")
def capi() -> Path:
    build_capi()
    return EXTRACT


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory) -> Path:
    """A folder holding the stand-in ``libcuda.so.1``."""
    folder = tmp_path_factory.mktemp("fake-driver")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(folder / "libcuda.so.1"),
                    str(REPO_ROOT / "tests" / "c" / "fake_libcuda.c")], check=True)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from rt_helpers import short_context_bundle

    return short_context_bundle(tmp_path_factory.mktemp("tiny"), 1024)


def run(capi: Path, args: list[str], driver: Path | None = None,
        devices: int | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(capi), *args, "--timing", "-"], input=PAGE, capture_output=True,
                          env=gpu_env(driver, devices))


def gpu_env(driver: Path | None = None, devices: int | None = None) -> dict[str, str]:
    """This process's environment with the onnxruntime-gpu wheel's library, and the driver
    stand-in in ``driver`` seeing ``devices`` GPUs (LD_LIBRARY_PATH is read at process start:
    the callers start a process)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("LD_LIBRARY_PATH", "FAKE_CUDA_DEVICES")}
    env["PULPIE_RT_ORT_LIB"] = str(gpu_library())
    if driver is not None:
        env["LD_LIBRARY_PATH"] = str(driver)
    if devices is not None:
        env["FAKE_CUDA_DEVICES"] = str(devices)
    return env


def has_driver() -> bool:
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


@pytest.mark.parametrize("backend", ["cuda", "tensorrt"])
def test_without_a_driver_cuda_and_tensorrt_fail_with_the_reason(capi, tiny, backend):
    if has_driver():
        pytest.skip("this machine has an NVIDIA driver")
    done = run(capi, ["--model", str(tiny), "--backend", backend])
    assert done.returncode == 1
    assert done.stdout == b""
    assert done.stderr.decode() == (
        f"extract: cannot open the model: cannot run on execution provider '{backend}' on GPU 0: "
        "no NVIDIA driver here: libcuda.so.1 cannot be loaded (libcuda.so.1: cannot open shared "
        f"object file: No such file or directory){NO_FALLBACK}\n")


@pytest.mark.parametrize("backend", ["cuda", "tensorrt"])
def test_a_driver_without_the_gpu_asked_for_is_named(capi, tiny, fake_driver, backend):
    done = run(capi, ["--model", str(tiny), "--backend", backend], fake_driver, devices=0)
    assert done.returncode == 1
    assert done.stderr.decode() == (
        f"extract: cannot open the model: cannot run on execution provider '{backend}' on GPU 0: "
        "the NVIDIA driver finds no usable GPU: cuInit failed with CUDA_ERROR_NO_DEVICE (100)"
        f"{NO_FALLBACK}\n")
    done = run(capi, ["--model", str(tiny), "--backend", backend, "--device", "2"], fake_driver,
               devices=2)
    assert done.returncode == 1
    assert done.stderr.decode() == (
        f"extract: cannot open the model: cannot run on execution provider '{backend}' on GPU 2: "
        f"there is no GPU 2: the NVIDIA driver sees 2 GPUs (0 to 1){NO_FALLBACK}\n")


@pytest.mark.parametrize("backend,provider,missing", [
    ("cuda", "CUDA", "libcublasLt.so.13"),
    ("tensorrt", "TensorRT", "libcublas.so.13"),
])
def test_a_gpu_without_the_cuda_libraries_fails_with_onnx_runtimes_reason(
        capi, tiny, fake_driver, backend, provider, missing):
    done = run(capi, ["--model", str(tiny), "--backend", backend], fake_driver)
    assert done.returncode == 1
    message = done.stderr.decode()
    version = gpu_library().name.removeprefix("libonnxruntime.so.")
    assert message.startswith(
        f"extract: cannot open the model: cannot run on execution provider '{backend}' on GPU 0: "
        f"ONNX Runtime {version} cannot load its {provider} provider (")
    loading = f"providers_{backend}.so with error: {missing}: cannot open shared object file"
    assert loading in message
    assert "onnxruntime_src" not in message  # ONNX Runtime's source location is left out
    assert not (tiny / "tensorrt").exists()  # no engine cache folder left behind
    assert message.endswith(
        " - the onnxruntime-gpu wheel's providers need the NVIDIA CUDA 13 runtime, cuBLAS and "
        "cuRAND, cuDNN 9 and for TensorRT libnvinfer 10: pip install 'pulpie-rt[gpu]' puts them "
        "beside ONNX Runtime, where the core loads them from, or put them on the library path "
        "(LD_LIBRARY_PATH) (no NVIDIA library folder beside ONNX Runtime's or in "
        f"PULPIE_RT_GPU_LIB_DIRS){NO_FALLBACK}\n")


@pytest.mark.parametrize("profile,provider", [("accurate", "cuda"), ("fast", "none")])
def test_the_embedded_model_runs_cuda_only_where_it_can(capi, profile, provider):
    """``accurate`` runs the transformer: cuda fails here. ``fast`` runs no transformer:
    asking for cuda is said once and the page is extracted on the CPU, provider "none"."""
    done = run(capi, ["--profile", profile, "--backend", "cuda"])
    if provider == "cuda":
        assert done.returncode == 1
        assert "cannot run on execution provider 'cuda' on GPU 0: " in done.stderr.decode()
        return
    assert done.returncode == 0, done.stderr
    lines = done.stderr.decode().splitlines()
    assert lines[0] == ("extract: note: profile 'fast' runs no transformer: backend 'cuda' "
                        "changes nothing, its block trees run on the CPU")
    assert lines[1].startswith("timing: open ") and lines[1].endswith(", 1 pages, provider none")
    assert b"main content" in done.stdout


@pytest.mark.parametrize("asked", ["0", "65", "two"])
def test_a_bad_count_of_calls_per_gpu_is_refused_with_the_reason(capi, tiny, fake_driver, asked):
    """``PULPIE_RT_GPU_CALLS`` (model calls at once on one GPU) is checked when a GPU model
    opens, before anything is loaded; the CPU never reads it."""
    env = gpu_env(fake_driver) | {"PULPIE_RT_GPU_CALLS": asked}
    done = subprocess.run([str(capi), "--model", str(tiny), "--backend", "cuda", "-"],
                          input=PAGE, capture_output=True, env=env)
    assert done.returncode == 1
    assert done.stderr.decode() == (
        f"extract: cannot open the model: PULPIE_RT_GPU_CALLS='{asked}': give a number of model "
        "calls from 1 to 64\n")
    done = subprocess.run([str(capi), "--model", str(tiny), "-"], input=PAGE,
                          capture_output=True, env=env)
    assert done.returncode == 0, done.stderr


def test_the_cpu_says_so(capi, tiny):
    done = run(capi, ["--model", str(tiny)])
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().splitlines()[-1].endswith(", 1 pages, provider cpu")


# ── the Python doors: the same engine, the same refusals ───────────────────────────────────

PYTHON_OPEN = """
import sys
from pulpie_rt import Extractor
from pulpie_rt.runtime.flow.engine import BackendError
try:
    Extractor(sys.argv[1], backend=sys.argv[2], device=sys.argv[3])
except BackendError as exc:
    print(exc)
    raise SystemExit(3)
"""


def python_open(model: Path, backend: str, device: str, driver: Path | None = None,
                devices: int | None = None) -> subprocess.CompletedProcess:
    """``Extractor(model, backend=, device=)`` in a fresh process with the onnxruntime-gpu
    wheel's library (and a driver stand-in: LD_LIBRARY_PATH is read at process start)."""
    import sys

    return subprocess.run([sys.executable, "-c", PYTHON_OPEN, str(model), backend, device],
                          capture_output=True, text=True, env=gpu_env(driver, devices),
                          timeout=300)


@pytest.mark.parametrize("backend,device,provider", [
    ("cuda", "cuda", "cuda"), ("tensorrt", "cuda:0", "tensorrt"),
])
def test_python_asking_for_a_gpu_fails_with_the_reason_never_on_the_cpu(
        tiny, fake_driver, backend, device, provider):
    gpu_library()
    if not has_driver():
        done = python_open(tiny, backend, device)
        assert done.returncode == 3, done.stderr
        assert done.stdout == (
            f"cannot run on execution provider '{provider}' on GPU 0: no NVIDIA driver here: "
            "libcuda.so.1 cannot be loaded (libcuda.so.1: cannot open shared object file: No "
            f"such file or directory){NO_FALLBACK}\n")
    done = python_open(tiny, backend, device, fake_driver)  # a GPU, no CUDA libraries
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith(f"cannot run on execution provider '{provider}' on GPU 0: "
                                  "ONNX Runtime ")
    assert done.stdout.endswith(f"{NO_FALLBACK}\n")
    done = python_open(tiny, backend, "cuda:2", fake_driver, devices=2)
    assert done.returncode == 3, done.stderr
    assert done.stdout == (f"cannot run on execution provider '{provider}' on GPU 2: there is "
                           f"no GPU 2: the NVIDIA driver sees 2 GPUs (0 to 1){NO_FALLBACK}\n")


def test_the_cli_asking_for_a_gpu_fails_with_the_reason(tiny, fake_driver):
    import sys

    done = subprocess.run([sys.executable, "-m", "pulpie_rt.cli", "extract", "-", "--model",
                           str(tiny), "--device", "cuda"], input=PAGE, capture_output=True,
                          env=gpu_env(fake_driver), timeout=300)
    assert done.returncode == 2
    assert done.stdout == b""
    message = done.stderr.decode()
    assert message.startswith("pulpie-rt extract: cannot run on execution provider 'cuda' on "
                              "GPU 0: ONNX Runtime ")
    assert message.endswith(f"{NO_FALLBACK}\n")
