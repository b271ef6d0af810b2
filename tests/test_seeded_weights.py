"""bench/seeded_weights.py: a bundle stripped of its large weights and drawn again elsewhere.

bench/gpu_check.sh carries an Orange-Small-shaped bundle to the GPU machine this way. What
must hold: the stripped graph is small and names its missing data; ``restore`` needs numpy
alone; the drawn tensors are what the spec says (per-name seeds, so FP16 is the FP32 draw
rounded); small tensors keep their exported values; the engine runs the restored bundle and two
restores give the same labels on real pages.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from bench import seeded_weights
from pulpie_rt.corpus import load_pages
from pulpie_rt.export.build import export_bundle
from pulpie_rt.runtime.flow.extractor import Extractor

TINY = Path(__file__).parent / "fixtures" / "tiny-eurobert"
SCRIPT = Path(seeded_weights.__file__)
MIN_ELEMENTS = 4096  # the tiny model's matrices are below the real threshold


def _quiet(*_args, **_kwargs) -> None:
    pass


def _initializers(model_path: Path) -> dict[str, np.ndarray]:
    model = onnx.load(str(model_path), load_external_data=True)
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("seeded")
    return {precision: export_bundle(TINY, root / precision, precision=precision, verify=False,
                                     log=_quiet)
            for precision in ("fp32", "fp16")}


@pytest.fixture(scope="module")
def stripped(exported, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stripped")
    out = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(seeded_weights, "MIN_SEEDED_ELEMENTS", MIN_ELEMENTS)
        for precision, bundle in exported.items():
            out[precision] = Path(shutil.copytree(bundle, root / precision))
            seeded_weights.strip(out[precision], like=out["fp32"] if precision == "fp16" else None)
    return out


def _restored(stripped: Path, into: Path) -> Path:
    """A copy of a stripped bundle restored by the script in a fresh interpreter, which must
    import neither onnx nor pulpie_rt (the GPU machine has numpy, not this package)."""
    bundle = Path(shutil.copytree(stripped, into))
    check = ("import runpy, sys; bundle, script = sys.argv[1:]\n"
             "sys.argv = ['seeded_weights.py', 'restore', bundle]\n"
             "try:\n    runpy.run_path(script, run_name='__main__')\n"
             "except SystemExit as e:\n    assert not e.code, e.code\n"
             "bad = [m for m in sys.modules if m.split('.')[0] in ('onnx', 'pulpie_rt')]\n"
             "assert not bad, bad")
    done = subprocess.run([sys.executable, "-c", check, str(bundle), str(SCRIPT)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{bundle / 'model.onnx.data'}: written"
    return bundle


def test_strip_leaves_the_graph_and_a_spec(exported, stripped):
    for precision in ("fp32", "fp16"):
        before, after = exported[precision], stripped[precision]
        spec = json.loads((after / "seeded_weights.json").read_text())
        original = _initializers(before / "model.onnx")
        big = {n for n, v in original.items() if v.dtype in (np.float32, np.float16)
               and v.size >= MIN_ELEMENTS}
        assert {t["name"] for t in spec["tensors"]} == big and big
        assert not (after / "model.onnx.data").exists()
        assert (after / "model.onnx").stat().st_size < (before / "model.onnx").stat().st_size / 4
        graph = onnx.load(str(after / "model.onnx"), load_external_data=False)
        external = {t.name for t in graph.graph.initializer
                    if t.data_location == onnx.TensorProto.EXTERNAL}
        assert external == big
        manifest = json.loads((after / "manifest.json").read_text())
        assert manifest["onnx"]["external_data"] is True
        assert manifest["seeded_weights"].startswith(f"{len(big)} initializers drawn again")
        for entry in spec["tensors"]:
            values = original[entry["name"]].astype(np.float32)  # FP16: the FP32 one's, rounded
            assert entry["mean"] == pytest.approx(float(values.mean()), abs=1e-4)
            assert entry["std"] == pytest.approx(float(values.std()), rel=1e-3)
            assert entry["offset"] % 4096 == 0


def test_restore_draws_what_the_spec_says(exported, stripped, tmp_path):
    restored = {p: _restored(stripped[p], tmp_path / p) for p in ("fp32", "fp16")}
    for precision, bundle in restored.items():
        spec = json.loads((bundle / "seeded_weights.json").read_text())
        assert (bundle / "model.onnx.data").stat().st_size == spec["data_bytes"]
        got = _initializers(bundle / "model.onnx")
        original = _initializers(exported[precision] / "model.onnx")
        seeded = {t["name"]: t for t in spec["tensors"]}
        assert got.keys() == original.keys()
        for name, values in got.items():
            if name in seeded:
                assert np.array_equal(values, seeded_weights.draw(seeded[name]))
                assert not np.array_equal(values, original[name])
                drawn = values.astype(np.float32)
                assert abs(drawn.std() - seeded[name]["std"]) < 0.1 * seeded[name]["std"]
            else:
                assert np.array_equal(values, original[name]), name
    # seeded by name: the FP16 bundle holds the FP32 bundle's draws, rounded
    fp32, fp16 = (_initializers(restored[p] / "model.onnx") for p in ("fp32", "fp16"))
    shared = [n for n in json.loads((restored["fp16"] / "seeded_weights.json").read_text())[
        "tensors"] if n["name"] in fp32]
    assert shared
    for entry in shared:
        assert np.array_equal(fp16[entry["name"]], fp32[entry["name"]].astype(np.float16))


def test_the_engine_runs_a_restored_bundle_and_two_restores_agree(stripped, tmp_path):
    pages = [p for p in load_pages("dev") if 5_000 <= len(p["html"]) <= 30_000][:4]
    labels = []
    for copy in ("one", "two"):
        bundle = _restored(stripped["fp32"], tmp_path / copy)
        extractor = Extractor(model=str(bundle), backend="cpu", device="cpu")
        results = extractor.extract_batch([p["html"] for p in pages])
        assert all(r.error is None and r.labels for r in results), [r.error for r in results]
        labels.append([r.labels for r in results])
    assert labels[0] == labels[1]


def test_a_stripped_bundle_without_its_data_is_refused_by_name(stripped):
    with pytest.raises(Exception, match="model.onnx"):
        Extractor(model=str(stripped["fp32"]), backend="cpu", device="cpu")


def test_usage():
    done = subprocess.run([sys.executable, str(SCRIPT), "draw"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr == ("usage: seeded_weights.py strip BUNDLE [--like STRIPPED] | "
                           "restore BUNDLE\n")
