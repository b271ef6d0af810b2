"""The two environments: ``make run`` installs what a run needs (the package and the ``io``
extra), never torch, transformers or the reference ``pulpie``; the test/export environment is
``make test``'s. Checked on the declared requirements and on what make would run (``make -n
-B``: every command, nothing executed)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# What only the tests, the exporter or training import.
HEAVY = ("torch", "transformers", "pulpie", "lightgbm", "onnx", "onnxscript", "onnxmltools")


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_run_requirements_name_nothing_heavy():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    run = [_name(r) for r in project["dependencies"] + project["optional-dependencies"]["io"]]
    # no ONNX Runtime distribution: the package carries ONNX Runtime's CPU library itself
    assert "pyarrow" in run and not {"onnxruntime", "onnxruntime-gpu"} & set(run)
    assert not set(run) & set(HEAVY), run
    export = {_name(r) for r in project["optional-dependencies"]["export"]}
    assert {"torch", "transformers", "onnx"} <= export


def _dry_run(*args: str) -> list[str]:
    done = subprocess.run(["make", "-n", "-B", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if " install " in line]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make here")
def test_make_run_installs_the_run_environment_only():
    installs = _dry_run("run")
    assert installs and all(line.startswith(".venv-run/bin/python -m pip") for line in installs)
    assert any("-e '.[io]'" in line for line in installs)
    joined = "\n".join(installs)
    assert not any(re.search(rf"\b{name}\b", joined) for name in HEAVY), joined
    # a bundle directory needs no export either
    bundle = "\n".join(_dry_run("run", "MODEL=pulpie_rt/default_model"))
    assert "torch" not in bundle and "export" not in bundle


@pytest.mark.skipif(shutil.which("make") is None, reason="no make here")
def test_a_model_to_export_adds_the_export_extra_and_make_test_builds_the_full_one():
    hub = "\n".join(_dry_run("run", "MODEL=orange-small"))
    assert "torch==2.13.0" in hub and "'.[io,export,cpu]'" in hub and "pulpie==" not in hub
    full = _dry_run("test")
    # Python packages go into the test venv only; the one system install is the inspector's
    # browser (make browser: Debian's chromium, when missing and root)
    python = [line for line in full if " pip " in line]
    assert python and all(line.startswith(".venv/bin/python -m pip") for line in python)
    system = [line for line in full if " pip " not in line]
    assert system and all("chromium" in line for line in system)
    assert any("torch==2.13.0" in line for line in full)
    assert any("pulpie==0.0.2" in line for line in full)
