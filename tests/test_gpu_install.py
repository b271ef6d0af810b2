"""The ``gpu`` extra is one coherent set, checked offline against what the pinned
onnxruntime-gpu wheel itself loads (``make ort-gpu`` puts its libraries and metadata in
build/ort-gpu): its TensorRT provider's ``libnvinfer.so.N`` is the pinned TensorRT's major N,
the CUDA major its providers load (``libcudart.so.C``, ``libcublas.so.C``) is the pinned
TensorRT build's and cuBLAS's, and the wheel's own ``cuda`` extra names that CUDA too."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import tomllib

from eval.report import REPO_ROOT

ORT_GPU = REPO_ROOT / "build" / "ort-gpu"
CAPI = ORT_GPU / "onnxruntime" / "capi"


def gpu_extra() -> dict[str, str]:
    """The ``gpu`` extra's requirements by distribution name (extras dropped)."""
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    pins = {}
    for requirement in extras["gpu"]:
        name, spec = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[a-z,]+\])?(.*)", requirement).groups()
        pins[name] = spec
    return pins


def needed(library) -> list[str]:
    """The DT_NEEDED entries of a shared library (``readelf -d``)."""
    done = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True,
                          check=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", done.stdout)


def soname_major(names: list[str], stem: str) -> int:
    """N of ``<stem>.so.N`` among ``names``."""
    found = [int(m.group(1)) for n in names if (m := re.fullmatch(rf"{stem}\.so\.(\d+)", n))]
    assert len(found) == 1, f"{stem}: {names}"
    return found[0]


def test_the_gpu_extra_pins_one_build_of_each():
    pins = gpu_extra()
    assert set(pins) == {"onnxruntime-gpu", "nvidia-cublas", "tensorrt-cu13"}
    assert re.fullmatch(r"==\d+\.\d+\.\d+", pins["onnxruntime-gpu"])
    assert re.fullmatch(r"==\d+(\.\d+)+", pins["tensorrt-cu13"])
    # the Makefile's ort-gpu reads the version from the extra: one definition
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "ORT_GPU_VERSION ?= $(shell sed" in makefile and "1.31" not in makefile


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf (binutils)")
def test_the_pins_are_what_the_onnxruntime_gpu_wheel_loads():
    pins = gpu_extra()
    version = pins["onnxruntime-gpu"].removeprefix("==")
    metadata = ORT_GPU / f"onnxruntime_gpu-{version}.dist-info" / "METADATA"
    if not (CAPI / "libonnxruntime_providers_tensorrt.so").is_file() or not metadata.is_file():
        pytest.skip(f"no onnxruntime-gpu {version} in {ORT_GPU} (make ort-gpu: PyPI unreachable?)")
    assert (CAPI / f"libonnxruntime.so.{version}").is_file()
    tensorrt = needed(CAPI / "libonnxruntime_providers_tensorrt.so")
    cuda = needed(CAPI / "libonnxruntime_providers_cuda.so")
    # TensorRT: the provider's libnvinfer major is the pinned TensorRT's major
    nvinfer = soname_major(tensorrt, "libnvinfer")
    assert soname_major(tensorrt, "libnvonnxparser") == nvinfer
    assert int(pins["tensorrt-cu13"].removeprefix("==").split(".")[0]) == nvinfer
    # CUDA: one major for the runtime both providers load, cuBLAS, and TensorRT's build
    cuda_major = soname_major(cuda, "libcudart")
    assert soname_major(tensorrt, "libcudart") == cuda_major
    assert soname_major(cuda, "libcublas") == soname_major(cuda, "libcublasLt") == cuda_major
    assert pins["nvidia-cublas"] == f"~={cuda_major}.0"
    assert [name for name in pins if name.startswith("tensorrt")] == [f"tensorrt-cu{cuda_major}"]
    # the wheel's own extras name the same CUDA runtime (and cuDNN 9, libcudnn.so.9)
    requires = re.findall(r"^Requires-Dist: (.+)$", metadata.read_text(), flags=re.M)
    assert f'nvidia-cuda-runtime~={cuda_major}.0; extra == "cuda"' in requires
    assert soname_major(tensorrt, "libcudnn") == 9
    assert any(r.startswith(f"nvidia-cudnn-cu{cuda_major}~=9.") for r in requires)
    # cuBLAS is needed and named by none of the wheel's extras: the gpu extra names it
    assert not any(r.startswith("nvidia-cublas") for r in requires)


def test_make_engine_installs_the_gpu_extra_and_builds_from_the_fp16_export():
    dry = subprocess.run(["make", "-n", "engine", "MODEL=small", "GPU=l4"], cwd=REPO_ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert "install -q -e '.[gpu]'" in dry
    assert "--precision fp16" in dry
    assert "pulpie-rt engine build/small-onnx-fp16 --gpu l4 --precision fp16" in dry
    readme = (REPO_ROOT / "README.md").read_text()
    assert "make engine MODEL=small GPU=l4" in readme
