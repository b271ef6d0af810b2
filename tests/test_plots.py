"""The docs site's plots (``bench/plots.py``): drawn from the result files alone, the same
bytes from the same results, and the committed ones drawn from the newest results (what
``make quality`` and ``make bench`` leave behind)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bench import plots

pytest.importorskip("matplotlib")

REPO = Path(__file__).resolve().parent.parent
DOCS_PLOTS = REPO / "docs" / "plots"


def _results_copy(tmp_path: Path) -> Path:
    """The newest quality and page-length results and one GPU check, in a scratch folder."""
    results = tmp_path / "results"
    results.mkdir()
    for source in (plots.newest_quality(plots.RESULTS), plots.newest(plots.RESULTS,
                                                                      "page-lengths")):
        shutil.copy(source, results / source.name)
    gpu = plots.gpu_checks(plots.RESULTS)[0]
    (results / "gpu-a").mkdir()
    shutil.copy(gpu, results / "gpu-a" / "gpu_check.json")
    return results


def test_the_plots_are_drawn_from_the_results_the_same_each_time(tmp_path):
    results = _results_copy(tmp_path)
    assert plots.main(["--results", str(results), "--out", str(tmp_path / "a")]) == 0
    assert plots.main(["--results", str(results), "--out", str(tmp_path / "b")]) == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == ["gpu-calls-in-flight.svg", "quality-speed.svg", "speed-by-length.svg"]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    quality = (tmp_path / "a" / "quality-speed.svg").read_text()
    # every timed row of every set is a labelled point
    data = json.loads(next(results.glob("quality-*.json")).read_text())
    for page_set in data["sets"]:
        for row in page_set["rows"]:
            if row.get("pages_per_cpu_s"):
                assert f">{row['name']}<" in quality, row["name"]
    lengths = (tmp_path / "a" / "speed-by-length.svg").read_text()
    assert ">ours (fast)<" in lengths and ">trafilatura<" in lengths
    gpu = (tmp_path / "a" / "gpu-calls-in-flight.svg").read_text()
    assert "gpu-a (NVIDIA" in gpu
    assert not re.search(r"<dc:date>", quality + lengths + gpu)


def test_no_results_no_plots(tmp_path):
    (tmp_path / "results").mkdir()
    assert plots.main(["--results", str(tmp_path / "results"), "--out",
                       str(tmp_path / "out")]) == 1
    assert not (tmp_path / "out").exists()


def test_the_docs_plots_are_drawn_from_the_newest_results():
    """Each committed plot names the result it was drawn from: the newest one (make quality
    and make bench redraw them); the docs pages show each one."""
    quality = (DOCS_PLOTS / "quality-speed.svg").read_text()
    assert plots.newest_quality(plots.RESULTS).name in quality
    lengths = (DOCS_PLOTS / "speed-by-length.svg").read_text()
    assert plots.newest(plots.RESULTS, "page-lengths").name in lengths
    gpu = (DOCS_PLOTS / "gpu-calls-in-flight.svg").read_text()
    for check in plots.gpu_checks(plots.RESULTS):
        assert str(check.parent.relative_to(plots.RESULTS)) in gpu
    shown = "".join((REPO / "docs" / page).read_text() for page in
                    ("models-and-quality.md", "benchmarks-and-parity.md"))
    for plot in DOCS_PLOTS.glob("*.svg"):
        assert f"](plots/{plot.name})" in shown, plot.name


def test_the_package_never_imports_matplotlib():
    for path in [*(REPO / "runtime").rglob("*.py"), *(REPO / "integrations").rglob("*.py"),
                 *(REPO / "pulpie_rt").rglob("*.py")]:
        assert "matplotlib" not in path.read_text(encoding="utf-8"), path
