"""PULPIE_RT_ORT_LOG_LEVEL and PULPIE_RT_ORT_PROFILE: what a developer sees of ONNX Runtime.

Unset, the engine logs ONNX Runtime's errors only (a library must not fill a service's stderr);
set, the log level shows every node's provider and the profile every node's time, which is
how a GPU run's idle time is traced to a node (bench/README.md, "GPU").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pulpie_rt.export.build import export_bundle

TINY = Path(__file__).parent / "fixtures" / "tiny-eurobert"
RUN = """
import sys
from pulpie_rt.corpus import load_pages
from pulpie_rt.runtime.flow.extractor import Extractor
extractor = Extractor(model=sys.argv[1], backend="cpu", device="cpu")
results = extractor.extract_batch([p["html"] for p in load_pages("dev")[:2]])
assert all(r.error is None for r in results), [r.error for r in results]
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return export_bundle(TINY, tmp_path_factory.mktemp("diag") / "b", verify=False,
                         log=lambda *_: None, max_tokens=512)


def _run(bundle: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PULPIE_RT_ORT_")}
    return subprocess.run([sys.executable, "-c", RUN, str(bundle)], capture_output=True,
                          text=True, timeout=300, env={**clean, **env})


def test_by_default_onnx_runtime_says_nothing(bundle):
    done = _run(bundle)
    assert done.returncode == 0, done.stderr
    assert "onnxruntime" not in done.stderr


def test_the_log_level_shows_where_each_node_runs(bundle):
    done = _run(bundle, PULPIE_RT_ORT_LOG_LEVEL="0")
    assert done.returncode == 0, done.stderr
    assert "Node placements" in done.stderr
    assert "All nodes placed on [CPUExecutionProvider]" in done.stderr
    quiet = _run(bundle, PULPIE_RT_ORT_LOG_LEVEL="9")  # out of 0..4: errors only
    assert "onnxruntime" not in quiet.stderr


def test_the_profile_times_every_node(bundle, tmp_path):
    done = _run(bundle, PULPIE_RT_ORT_PROFILE=str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    (profile,) = tmp_path.glob("run_*.json")
    events = json.loads(profile.read_text())
    ops = {e["args"]["op_name"] for e in events if e.get("cat") == "Node"}
    assert {"MatMul", "Gather"} <= ops
    assert any(e["name"] == "model_run" for e in events)
