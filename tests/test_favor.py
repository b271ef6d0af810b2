"""``favor``: a named shift of a bundle's decision threshold (``pulpie_rt.h``'s
``PULPIE_RT_FAVOR_*``). Each setting decides exactly as the bundle would with its threshold
moved by 1 (precision up, recall down), in every profile and for a bundle decided by the
argmax at each SEP, and every door takes it (its P/R/F1 effect: ``python -m bench.favor``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from rt_helpers import small_dev_pages, tiny_bundle

from bench.thresholds import bundle_at, linked_copy
from pulpie_rt import Extractor, Pipeline
from pulpie_rt.runtime.flow.engine import favor_settings
from pulpie_rt.runtime.model.resolve import resolve_model

SHIFTS = {"precision": 1.0, "balanced": 0.0, "recall": -1.0}


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return [p["html"] for p in small_dev_pages(20_000)[:12]]


def labels(extractor: Extractor, pages: list[str]) -> list[dict]:
    return [r.labels for r in extractor.extract_batch(pages)]


@pytest.mark.parametrize("profile", ["fast", "accurate"])
def test_each_setting_decides_at_the_bundles_threshold_moved_by_1(tmp_path, pages, profile):
    bundle = resolve_model("default", profile=profile).bundle
    assert favor_settings() == {"balanced": 0, "precision": 1, "recall": 2}
    kept = {}
    for favor, shift in SHIFTS.items():
        moved = bundle_at(bundle.path, profile, bundle.main_margin + shift, tmp_path / favor)
        ours = labels(Extractor(profile=profile, favor=favor), pages)
        assert ours == labels(Extractor(moved, profile=profile), pages), favor
        kept[favor] = sum(v == "main" for page in ours for v in page.values())
    assert kept["precision"] < kept["balanced"] < kept["recall"], kept


def test_a_bundle_decided_by_the_argmax_is_decided_by_margins_when_shifted(tmp_path, pages):
    plain = tiny_bundle()
    manifest = json.loads((plain / "manifest.json").read_text())
    assert "decoding" not in manifest and "profiles" not in manifest  # the argmax at each SEP

    for favor, shift in SHIFTS.items():
        moved = linked_copy(plain, tmp_path / favor,
                            lambda m, shift=shift: m.update(decoding={"main_margin": shift}))
        assert labels(Extractor(plain, favor=favor), pages) == labels(
            Extractor(moved), pages), favor


def test_every_door_takes_it(tmp_path, pages):
    expected = Extractor(favor="precision").extract_batch(pages[:3])
    assert [r.markdown for r in Pipeline(favor="precision", workers=1).extract_batch(
        pages[:3])] == [r.markdown for r in expected]
    page = tmp_path / "page.html"
    page.write_text(pages[0], encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pulpie_rt.cli", "extract", str(page),
                           "--favor", "precision"], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == Extractor(favor="precision").extract(
        page.read_bytes()).markdown + "\n"
    refused = subprocess.run([sys.executable, "-m", "pulpie_rt.cli", "extract", str(page),
                              "--favor", "most"], capture_output=True, timeout=300)
    assert refused.returncode == 2 and b"invalid choice: 'most'" in refused.stderr
    from pulpie_rt.integrations.serve.service import ExtractionService

    service = ExtractionService(favor="recall")
    engine = service.open_engine()
    assert engine.favor == "recall" and engine.info()["favor"] == "recall"
    assert service.info()["favor"] == "recall"
    pytest.importorskip("ray.data")
    pytest.importorskip("datatrove")
    import pyarrow as pa

    from pulpie_rt.integrations.datatrove import PulpieExtractor as DatatroveStep
    from pulpie_rt.integrations.ray import PulpieExtractor as RayStep

    out = RayStep(threads=1, favor="precision")(pa.table({"html": pages[:3]}))
    assert out.column("markdown").to_pylist() == [r.markdown for r in expected]
    assert [e.favor for e in DatatroveStep(favor="precision", workers=1, threads=1)
            .pipeline().engines] == ["precision"]
    with pytest.raises(ValueError, match=r"^favor 'most' is not one of balanced, precision, "
                                         r"recall$"):
        Extractor(favor="most")


def test_the_bench_scores_each_setting_on_each_set(tmp_path, capsys):
    from bench import favor

    out = tmp_path / "favor.json"
    assert favor.main(["--profiles", "fast", "--sets", "groundtruth", "--limit", "3",
                       "--out", str(out)]) == 0
    found = json.loads(out.read_text())["sets"]["groundtruth"]
    assert found["pages"] == 3 and list(found["profiles"]) == ["fast"]
    scores = found["profiles"]["fast"]
    assert list(scores) == ["precision", "balanced", "recall"]
    assert all(set(s) == {"precision", "recall", "f1"} and 0 <= min(s.values()) <= max(
        s.values()) <= 1 for s in scores.values())
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:5]]
    assert [row[:4] for row in rows] == [["groundtruth", "3", "fast", favor_name]
                                         for favor_name in ("precision", "balanced", "recall")]
