"""ONNX Runtime backend on the tiny bundle, SEP-position labels with the reference's quirks, and
backend selection errors."""

from __future__ import annotations

import numpy as np
import pytest
from rt_helpers import small_dev_pages, tiny_bundle
from spec.labels_spec import argmax_labels, block_predictions

from pulpie_rt.runtime.flow.pages import Preparer
from pulpie_rt.runtime.model.backends import BackendError, OnnxRuntimeBackend, create_backend
from pulpie_rt.runtime.model.bundle import load_bundle
from pulpie_rt.runtime.stages.batches import make_batches
from pulpie_rt.runtime.stages.labels import labels_from_predictions


@pytest.fixture(scope="module")
def bundle():
    return load_bundle(tiny_bundle())


@pytest.fixture(scope="module")
def backend(bundle):
    return OnnxRuntimeBackend(bundle, "cpu")


@pytest.fixture(scope="module")
def real_chunks(bundle):
    preparer = Preparer(bundle.tokenizer_path, bundle.sep_id, bundle.bos_id, bundle.eos_id)
    chunks = [c for p in small_dev_pages(20_000)[:12] for c in preparer.prepare(p["html"]).chunks]
    return [(i, c.token_ids) for i, c in enumerate(chunks)]


def test_padded_batches_give_the_same_labels_as_single_rows(backend, bundle, real_chunks):
    batched = {}
    for batch in make_batches(real_chunks, max_batch_tokens=8192):
        for key, logits in zip(batch.keys, backend.predict(batch), strict=True):
            batched[key] = logits
    assert any(b.rows > 1 for b in make_batches(real_chunks, max_batch_tokens=8192))
    for key, ids in real_chunks:
        (single,) = backend.predict(make_batches([(key, ids)])[0])
        n_sep = sum(1 for t in ids if t == bundle.sep_id)
        assert single.shape == (n_sep, 2)
        np.testing.assert_allclose(batched[key], single, atol=1e-4)
        assert argmax_labels(batched[key]) == argmax_labels(single)


def test_sep_quirks_as_reference():
    # more SEPs than blocks (a literal <|sep|> in text): extra predictions are dropped
    # fewer SEPs than blocks: the rest stay 0 ("other")
    preds = block_predictions(5, [[0, 1], [2, 3, 4]], [[1, 0, 1], [1]])
    assert preds == [1, 0, 1, 0, 0]
    labels = labels_from_predictions(["1", None, "2", "1", "3"], [1, 1, 0, 0, 1])
    assert labels == {"1": "other", "2": "other", "3": "main"}
    assert list(labels) == ["1", "2", "3"]
    assert argmax_labels(np.array([[0.5, 0.5], [0.1, 0.2]])) == [0, 1]  # ties: first


def test_backend_selection_errors(bundle):
    with pytest.raises(BackendError, match="unknown backend 'torch'"):
        create_backend(bundle, "torch")
    with pytest.raises(BackendError, match="tensorrt backend needs an engine file"):
        create_backend(bundle, "tensorrt")
    with pytest.raises(BackendError, match="onnxruntime runs on 'cpu' or 'cuda"):
        create_backend(bundle, "onnxruntime", "tpu")
    assert create_backend(bundle, "auto", "cpu").name == "onnxruntime"
    # auto on the CPU never tries TensorRT, even with an engine file
    assert create_backend(bundle, "auto", "cpu", engine_path=bundle.path / "x.engine").name == (
        "onnxruntime")


def test_tensorrt_without_its_packages_is_a_clear_error(bundle, tmp_path):
    try:
        import tensorrt  # noqa: F401

        pytest.skip("tensorrt is installed here: the GPU tests cover it")
    except ImportError:
        pass
    with pytest.raises(BackendError, match=r"tensorrt backend needs the 'tensorrt' and "
                                           r"'cuda-python' packages \(tensorrt is missing\)"):
        create_backend(bundle, "tensorrt", engine_path=tmp_path / "m.engine")
