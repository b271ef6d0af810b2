"""``bench/gpu_check.sh --cpu-dry-run``: the GPU check's every step on the CPU (the C library,
the tiny checkpoint's bundles, the page costs), each run's labels against the CPU's, the
honest-device check, and the projection to every GPU of ``bench/gpus.py``'s table, an L4 among
them, written into ``gpu_check.json``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from bench.gpus import GPUS
from eval.report import REPO_ROOT

MISSING_TOOLS = [tool for tool in ("cargo", "cc", "make") if shutil.which(tool) is None]


@pytest.mark.skipif(bool(MISSING_TOOLS), reason=f"needs {', '.join(MISSING_TOOLS)}")
def test_the_cpu_dry_run_passes_and_writes_the_l4_projection(tmp_path):
    out = tmp_path / "dry-run"
    env = os.environ | {"GPU_CHECK_ORANGE_SMALL": "0", "GPU_CHECK_PAGE_LIMIT": "4",
                        "GPU_CHECK_ONLY": r"^tiny\.(cpu|cuda)", "GPU_CHECK_GPU_GRAPHS": "0"}
    done = subprocess.run(["bash", "bench/gpu_check.sh", "--cpu-dry-run", str(out)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "gpu_check.json").read_text())
    assert report["passed"] and report["cpu_dry_run"]
    ran = {r["run"]: r for r in report["runs"] if r["rc"] == "0"}
    assert {"tiny.cpu-fp32", "tiny.cuda-fp32", "tiny.cuda-fp16"} <= set(ran)
    assert all(r["pages_same_labels"] == r["pages_compared"] == 4 for r in ran.values())
    projection = report["projection"]["tiny"]
    assert projection["measured"] == {"gpu": "h200", "pages_per_s": 110.0,
                                      "source": "issue 51's target (CPU dry run)"}
    assert set(projection["gpus"]) == set(GPUS)
    l4 = projection["gpus"]["l4"]
    assert l4["usd_per_hour"] == GPUS["l4"].usd_per_hour
    assert l4["projected_pages_per_s"] > 0 and l4["usd_per_billion_pages"] > 0
    assert projection["page"]["flops_per_page"] > 0 and projection["page"]["bytes_per_page"] > 0
    assert "projection of tiny" in done.stdout and "L4" in done.stdout
    # each FP16 run against its model's FP32 GPU run
    assert ran["tiny.cuda-fp16"]["fp32_run"] == "tiny.cuda-fp32"
    assert ran["tiny.cuda-fp16"]["fp32_block_agreement"] == 1.0
