"""Extractor parity with the reference (golden labels recorded from pulpie 0.0.2) and its API."""

from __future__ import annotations

import hashlib

import pytest
from rt_helpers import (
    GOLDEN_LABELS,
    TINY_CHECKPOINT,
    golden_labels,
    small_dev_pages,
    tiny_bundle,
)

from parity.record_golden_labels import weights_sha256
from pulpie_rt import ExtractionError, ExtractionResult, Extractor
from pulpie_rt.runtime.model.resolve import ModelError, resolve_model


@pytest.fixture(scope="module")
def extractor() -> Extractor:
    return Extractor(tiny_bundle(), backend="cpu", device="cpu")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_golden_file_matches_the_tiny_checkpoint():
    recorded = golden_labels()["checkpoint"]["weights_sha256"]
    assert recorded == weights_sha256(TINY_CHECKPOINT), (
        f"{GOLDEN_LABELS.name} was recorded from other weights: rerun "
        "python -m parity.record_golden_labels"
    )
    assert len(golden_labels()["pages"]) == 254


def test_labels_and_markdown_match_reference(extractor):
    """Our ONNX Runtime labels against the golden file the reference (PyTorch) recorded on
    another run: two float32 implementations, so agreement is required to 99.9% of blocks, not
    bitwise. On these 56 pages the smallest |SEP margin| is 6.2e-3, over 300 times the
    largest ORT-vs-PyTorch logit difference measured (1.8e-5), so another CPU's kernels do not
    move a label either."""
    pages = small_dev_pages()
    assert len(pages) >= 50
    golden = golden_labels()["pages"]
    results = extractor.extract_batch([p["html"] for p in pages])
    blocks = same_blocks = same_markdown = 0
    for page, result in zip(pages, results, strict=True):
        expected = golden[page["id"]]
        assert result.error is None, (page["id"], result.error)
        assert list(result.labels) == expected["item_ids"], page["id"]
        ours = "".join("M" if v == "main" else "o" for v in result.labels.values())
        blocks += len(ours)
        same_blocks += sum(a == b for a, b in zip(ours, expected["labels"], strict=True))
        same_markdown += sha(result.markdown) == expected["markdown_sha256"]
    assert blocks > 1000
    # labels are mixed (a constant model would make this check pass trivially)
    assert 0.1 < sum(r.n_main for r in results) / blocks < 0.9
    # Every label and every page's Markdown, as the README claims. Labels are argmaxes of
    # floats: on these pages the smallest |logit margin| at a SEP is 6e-3 (ONNX Runtime CPU),
    # far above what another CPU (AVX2 / AVX-512) changes in fp32, so identity holds on any
    # machine of this kind.
    assert same_blocks == blocks, (same_blocks, blocks)
    assert same_markdown == len(pages), (same_markdown, len(pages))


def test_result_fields(extractor):
    page = small_dev_pages()[0]
    result = extractor.extract(page["html"])
    assert isinstance(result, ExtractionResult)
    assert result.n_blocks == len(result.labels) == result.n_main + result.n_other
    assert result.n_main > 0 and result.markdown
    assert result.text and "<" not in result.text[:50]
    assert result.error is None
    # single and batch extraction agree
    (again,) = extractor.extract_batch([page["html"]])
    assert again.labels == result.labels and again.markdown == result.markdown


def test_bad_page_fails_alone(extractor):
    good = small_dev_pages()[1]["html"]
    results = extractor.extract_batch([good, 42, "", good.encode()])
    assert results[0].error is None and results[0].n_blocks > 0
    assert results[1].error == "input: html must be str or bytes, not int"
    assert results[1].markdown == "" and results[1].labels == {}
    assert results[2].error is None and results[2].n_blocks == 0
    assert results[3].labels == results[0].labels  # bytes are decoded as UTF-8
    with pytest.raises(ExtractionError, match="^input: html must be str or bytes, not int$"):
        extractor.extract(42)


def test_model_resolution_errors(tmp_path):
    with pytest.raises(ModelError, match="no such file or directory, and not a hub name"):
        resolve_model(str(tmp_path / "missing"))
    with pytest.raises(ModelError, match="neither a pulpie-rt bundle"):
        resolve_model(tmp_path)
    engine = tmp_path / "x.engine"
    engine.write_bytes(b"")
    with pytest.raises(ModelError) as refused:
        resolve_model(engine)
    assert str(refused.value) == (
        f"model {str(engine)!r}: a TensorRT engine file is not a model: pass its bundle "
        "directory (`pulpie-rt engine BUNDLE` builds the engines into it, and backend "
        "'tensorrt' loads them)")


def test_bundle_resolution():
    bundle = tiny_bundle()
    assert resolve_model(bundle).bundle.path == bundle


def test_checkpoint_directory_is_exported_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PULPIE_RT_CACHE", str(tmp_path))
    first = resolve_model(TINY_CHECKPOINT, verify_export=False)
    assert first.bundle.path.parent == tmp_path / "bundles"
    manifest = first.bundle.path / "manifest.json"
    stamp = manifest.stat().st_mtime_ns
    again = resolve_model(TINY_CHECKPOINT, verify_export=False)
    assert again.bundle.path == first.bundle.path
    assert manifest.stat().st_mtime_ns == stamp  # reused, not exported again


def test_a_checkpoint_without_the_export_extra_says_how_to_get_it(monkeypatch, tmp_path):
    """In the run environment (no torch) a model that must be exported first fails at once,
    naming the extra, instead of a child process's ModuleNotFoundError."""
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: (
        None if name == "torch" else real_find_spec(name, *args)))
    monkeypatch.setenv("PULPIE_RT_CACHE", str(tmp_path))  # nothing exported yet
    with pytest.raises(ModelError) as err:
        resolve_model(TINY_CHECKPOINT)
    assert str(err.value) == (
        f"{TINY_CHECKPOINT}: exporting a checkpoint to ONNX needs the export extra (torch "
        "missing here): pip install 'pulpie-rt[export]' (`make run MODEL=...` installs it), or "
        "pass a bundle directory")
