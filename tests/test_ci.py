"""What CI promises about itself: a test skips there only because of what the machine is (no
GPU), never for something that could not be installed; every run prints its skips; and the
targets that install what tests need fail when they cannot."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import MACHINE_SKIP_REASONS, STRICT_SKIPS_VARIABLE

REPO = Path(__file__).resolve().parent.parent
SKIPPING_TESTS = """\
import pytest


def test_needs_a_gpu():
    pytest.skip("no NVIDIA GPU")


def test_needs_an_extra():
    pytest.importorskip("a_module_not_installed_anywhere")
"""


def run_pytest(folder: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("CI", STRICT_SKIPS_VARIABLE)} | env
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(folder)], cwd=folder, capture_output=True, text=True,
                          env=environment, timeout=120)


def test_under_ci_a_skip_fails_unless_the_machine_is_the_reason(tmp_path):
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_skips.py").write_text(SKIPPING_TESTS)
    here = run_pytest(tmp_path)
    assert here.returncode == 0, here.stdout
    assert "2 skipped" in here.stdout
    assert "skipped: 2" in here.stdout  # the list, printed on every run
    assert "test_skips.py::test_needs_an_extra: could not import " in here.stdout
    for env in ({"CI": "true"}, {STRICT_SKIPS_VARIABLE: "1"}):
        ci = run_pytest(tmp_path, **env)
        assert ci.returncode == 1, ci.stdout
        assert "1 failed, 1 skipped" in ci.stdout
        assert ("skipped for a reason the machine can change (could not import "
                "'a_module_not_installed_anywhere': No module named "
                "'a_module_not_installed_anywhere'); under CI only these skip: no NVIDIA GPU, "
                "this machine has an NVIDIA GPU, this machine has an NVIDIA driver\n") in ci.stdout
        assert "test_skips.py::test_needs_a_gpu: no NVIDIA GPU" in ci.stdout
    assert MACHINE_SKIP_REASONS == ("no NVIDIA GPU", "this machine has an NVIDIA GPU",
                                    "this machine has an NVIDIA driver")


def test_ci_runs_the_tests_with_skips_strict():
    script = (REPO / ".ci" / "run").read_text()
    assert f"export {STRICT_SKIPS_VARIABLE}=1" in script.splitlines()
    assert script.rstrip().splitlines()[-1] == "make test"


def test_make_ort_gpu_fails_when_the_gpu_library_cannot_be_downloaded(tmp_path):
    """The GPU-provider tests need onnxruntime-gpu's C library: a failed download stops make
    (and make test), it does not leave those tests to skip."""
    done = subprocess.run(["make", "ort-gpu", "ORT_GPU_VERSION=0.0.0",
                           f"ORT_GPU={tmp_path / 'ort-gpu'}", f"PY={sys.executable}"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0, done.stdout
    assert (f"make ort-gpu: onnxruntime-gpu 0.0.0 could not be downloaded (see "
            f"{tmp_path / 'ort-gpu'}/download.log): the GPU-provider tests need it") in done.stdout
    assert not (tmp_path / "ort-gpu" / ".done").exists()
