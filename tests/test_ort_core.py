"""The compiled core's ONNX Runtime layer (``core/src/ort``: the C API through ``dlopen``)
against onnxruntime's Python API, on real dev pages, and its error messages.

Driven through ``parity/ort_core_parity.py`` (the layer's entry points in
``pulpie_rt_internal.h``); skipped when the
core is not built or no ONNX Runtime C library is found (``$PULPIE_RT_ORT_LIB``, else the
installed onnxruntime wheel's ``capi/libonnxruntime.so.*``).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from rt_helpers import small_dev_pages, tiny_bundle
from spec.rescore_spec import SpecRescorer

from eval.margins import SepLogitsSession
from parity.batches import DEFAULT_MAX_BATCH_ATTENTION, DEFAULT_MAX_BATCH_TOKENS
from parity.batches import make_batches as python_make_batches
from parity.ort_core_parity import (
    CoreError,
    CoreOrt,
    batching_configs,
    ort_library_path,
)
from pulpie_rt.runtime import native
from pulpie_rt.runtime.flow.pages import Preparer
from pulpie_rt.runtime.model.bundle import load_bundle
from pulpie_rt.runtime.model.resolve import embedded_model_dir

LIBRARY = ort_library_path()
pytestmark = [
    pytest.mark.skipif(native.library_path() is None,
                       reason="the compiled core is not built (make core)"),
    pytest.mark.skipif(LIBRARY is None or not LIBRARY.is_file(),
                       reason="no ONNX Runtime C library: set PULPIE_RT_ORT_LIB to "
                              "libonnxruntime.so or install the onnxruntime wheel"),
]


@pytest.fixture(scope="module")
def core() -> CoreOrt:
    return CoreOrt(LIBRARY)


@pytest.fixture(scope="module")
def default_bundle():
    return load_bundle(embedded_model_dir(), "accurate")  # the transformer and its rescorer


def _prepared(bundle, pages):
    preparer = Preparer.from_bundle(bundle)
    return [preparer.prepare(page["html"]) for page in pages]


def _items(prepared):
    return [((p, c), chunk.token_ids) for p, page in enumerate(prepared)
            for c, chunk in enumerate(page.chunks)]


def test_tiny_bundle_batch_gives_onnxruntimes_labels(core):
    """One batch of real chunks through the core and through onnxruntime: same SEP labels."""
    bundle = load_bundle(tiny_bundle())
    prepared = _prepared(bundle, small_dev_pages()[:8])
    batches = python_make_batches(_items(prepared), DEFAULT_MAX_BATCH_TOKENS, None,
                                  DEFAULT_MAX_BATCH_ATTENTION)
    batch = max(batches, key=lambda b: int((b.input_ids == bundle.sep_id).sum()))
    assert batch.rows > 1
    python = SepLogitsSession(bundle, threads=1).run_rows(
        [batch.row(i).tolist() for i in range(batch.rows)])
    classifier = core.classifier(bundle.onnx_path, intra_op_threads=1)
    ours = classifier.predict(batch, bundle.pad_id, bundle.sep_id)
    assert sum(len(row) for row in python) > 50
    for theirs, mine in zip(python, ours, strict=True):
        assert mine.shape == theirs.shape
        assert (mine.argmax(-1) == theirs.argmax(-1)).all()
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-4)


def test_default_model_from_bytes_and_from_several_threads(core, default_bundle):
    """The embedded model opened from memory gives the file's logits, and one session run
    from four threads at once gives each of them the single-thread answer."""
    prepared = _prepared(default_bundle, small_dev_pages()[:8])
    batches = python_make_batches(_items(prepared), DEFAULT_MAX_BATCH_TOKENS, None,
                                  DEFAULT_MAX_BATCH_ATTENTION)
    from_file = core.classifier(default_bundle.onnx_path, intra_op_threads=1)
    from_bytes = core.classifier(default_bundle.onnx_path.read_bytes(), intra_op_threads=1)
    expected = [from_file.predict(b, default_bundle.pad_id, default_bundle.sep_id)
                for b in batches]
    for batch, want in zip(batches, expected, strict=True):
        got = from_bytes.predict(batch, default_bundle.pad_id, default_bundle.sep_id)
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    failures: list[str] = []

    def work() -> None:
        for _ in range(3):
            for batch, want in zip(batches, expected, strict=True):
                got = from_file.predict(batch, default_bundle.pad_id, default_bundle.sep_id)
                if not all(np.array_equal(a, b) for a, b in zip(got, want, strict=True)):
                    failures.append("different logits")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_rescorer_matches_python_on_real_block_features(core, default_bundle):
    # the specification on onnxruntime's Python API (the runtime's rescorer is the core's)
    python = SpecRescorer(default_bundle.rescorer_path,
                          default_bundle.rescorer_spec["margin_weight"])
    ours = core.rescorer(default_bundle.rescorer_path, python.margin_weight)
    prepared = _prepared(default_bundle, small_dev_pages()[:30])
    rng = np.random.default_rng(0)
    blocks = 0
    for page in prepared:
        features = np.ascontiguousarray(page.features, np.float32)
        margins = rng.normal(0, 3, len(features)).astype(np.float32)
        margins[::7] = np.nan  # blocks without a margin
        probabilities = python.probabilities(features)
        got_probabilities, got_odds, got_scores = ours.run(features, margins)
        np.testing.assert_allclose(got_probabilities, probabilities, rtol=0, atol=1e-6)
        np.testing.assert_allclose(got_odds, python.log_odds(features), rtol=0, atol=1e-5)
        want_scores = python.scores(features, margins)
        np.testing.assert_allclose(got_scores, want_scores, rtol=0, atol=1e-5)
        threshold = default_bundle.main_margin
        assert ((got_scores > threshold) == (want_scores > threshold)).all()
        blocks += len(features)
    assert blocks > 300


def test_make_batches_matches_python_on_dev_chunk_lengths(core, default_bundle, dev_pages):
    """Every batcher setting, on the chunks of every 3rd dev page (default model's tokenizer,
    1,024-token chunks) and of the same pages cut at 8,192 tokens."""
    pages = dev_pages[::3]
    preparer = Preparer.from_bundle(default_bundle)
    long_chunks = Preparer(default_bundle.tokenizer_path, default_bundle.sep_id,
                           default_bundle.bos_id, default_bundle.eos_id, max_tokens=8192)
    for prep in (preparer, long_chunks):
        items = _items([prep.prepare(page["html"]) for page in pages])
        assert len(items) > len(pages)
        lengths = [len(tokens) for _, tokens in items]
        index_of = {key: i for i, (key, _) in enumerate(items)}
        for name, tokens, buckets, attention in batching_configs():
            python = [([index_of[k] for k in b.keys], b.bucket)
                      for b in python_make_batches(items, tokens, buckets, attention)]
            assert core.make_batches(lengths, tokens, buckets, attention) == python, name


def _int32_ids_float16_logits(source: Path, out: Path) -> Path:
    """``source`` with int32 ``input_ids``/``attention_mask`` (cast to int64 inside) and
    float16 ``logits`` (cast from float32 at the end): a graph of the other interface."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    model = onnx.load(str(source))
    graph = model.graph
    for graph_input in graph.input:
        name = graph_input.name
        for node in graph.node:
            node.input[:] = [f"{name}_int64" if i == name else i for i in node.input]
        graph.node.insert(0, helper.make_node("Cast", [name], [f"{name}_int64"],
                                              to=TensorProto.INT64))
        graph_input.type.tensor_type.elem_type = TensorProto.INT32
    (output,) = graph.output
    for node in graph.node:
        node.output[:] = ["logits_float32" if o == output.name else o for o in node.output]
    graph.node.append(helper.make_node("Cast", ["logits_float32"], [output.name],
                                       to=TensorProto.FLOAT16))
    output.type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.save(model, str(out))
    return out


def test_int32_ids_and_float16_logits_read_as_onnxruntime_gives_them(core, default_bundle,
                                                                     tmp_path):
    import onnxruntime

    path = _int32_ids_float16_logits(default_bundle.onnx_path, tmp_path / "int32-fp16.onnx")
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.type for i in session.get_inputs()] == ["tensor(int32)", "tensor(int32)"]
    assert session.get_outputs()[0].type == "tensor(float16)"
    prepared = _prepared(default_bundle, small_dev_pages()[:4])
    batch = python_make_batches(_items(prepared), DEFAULT_MAX_BATCH_TOKENS, None,
                                DEFAULT_MAX_BATCH_ATTENTION)[-1]
    ids, mask = batch.padded(default_bundle.pad_id)
    (half,) = session.run(["logits"], {"input_ids": ids.astype(np.int32),
                                       "attention_mask": mask.astype(np.int32)})
    assert half.dtype == np.float16
    ours = core.classifier(path, intra_op_threads=1).run(ids, mask)
    assert ours.dtype == np.float32 and ours.shape == half.shape
    # one graph, two callers: the same halves, widened exactly (tolerance: half precision)
    np.testing.assert_allclose(ours, half.astype(np.float32), rtol=0, atol=1e-2)
    assert (ours.argmax(-1) == half.argmax(-1))[mask.astype(bool)].all()


# ---------------------------------------------------------------------------- error paths


def test_a_missing_library_is_named_with_the_loaders_reason():
    with pytest.raises(CoreError) as error:
        CoreOrt("/nonexistent/libonnxruntime.so.1")
    assert str(error.value) == (
        "cannot load the ONNX Runtime library /nonexistent/libonnxruntime.so.1: "
        "/nonexistent/libonnxruntime.so.1: cannot open shared object file: No such file or "
        "directory")


def test_a_library_that_is_not_onnx_runtime_is_refused():
    # the core itself is a shared library without OrtGetApiBase
    path = native.library_path()
    with pytest.raises(CoreError) as error:
        CoreOrt(path)
    assert str(error.value) == (
        f"{path} is not an ONNX Runtime library: it has no OrtGetApiBase symbol")


def test_an_onnx_runtime_too_old_for_the_api_version_is_refused(tmp_path):
    """A stand-in library (compiled here) whose OrtGetApiBase serves no table, as ONNX
    Runtime < 1.11 answers GetApi(11)."""
    import shutil
    import subprocess

    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the stand-in library")
    source = tmp_path / "old_ort.c"
    source.write_text(
        "#include <stddef.h>\n#include <stdint.h>\n"
        "static const void *get_api(uint32_t version) { (void)version; return NULL; }\n"
        "static const char *version_string(void) { return \"1.10.0\"; }\n"
        "static const struct { const void *(*get_api)(uint32_t);\n"
        "  const char *(*version)(void); } base = { get_api, version_string };\n"
        "const void *OrtGetApiBase(void) { return &base; }\n")
    library = tmp_path / "libonnxruntime.so.1"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    with pytest.raises(CoreError) as error:
        CoreOrt(library)
    assert str(error.value) == (
        f"{library} is ONNX Runtime 1.10.0, which does not serve C API version 11: pulpie-rt "
        "needs ONNX Runtime 1.11 or newer")


def test_no_library_anywhere_says_where_it_looked(tmp_path):
    """In a fresh process (here the wheel's library is loaded already, and dlopen finds a
    loaded library by its soname) with no PULPIE_RT_ORT_LIB and nothing on the path, from a
    copy of the core in a folder of its own (the package ships ONNX Runtime beside the core)."""
    import os
    import shutil
    import subprocess
    import sys

    from eval.report import tool_env

    copy = tmp_path / "core" / native.library_path().name
    copy.parent.mkdir()
    shutil.copy(native.library_path(), copy)
    env = {k: v for k, v in os.environ.items() if k not in ("PULPIE_RT_ORT_LIB", "LD_LIBRARY_PATH")}
    env["PULPIE_RT_NATIVE_LIB"] = str(copy)
    probe = ("from parity.ort_core_parity import CoreOrt, CoreError\n"
             "try:\n    CoreOrt(None)\nexcept CoreError as e:\n    print(e)\n"
             "else:\n    print('found')\n")
    out = subprocess.run([sys.executable, "-c", probe], env=tool_env(env), capture_output=True,
                         text=True, check=True).stdout.strip()
    if out == "found":
        pytest.skip("libonnxruntime.so.1 is on this machine's library path")
    folder = copy.parent
    assert out == (
        f"ONNX Runtime library not found; tried: {folder}/libonnxruntime.so.1 ("
        f"{folder}/libonnxruntime.so.1: cannot open shared object file: No such file or "
        "directory); libonnxruntime.so.1 on the dynamic linker's search path "
        "(libonnxruntime.so.1: cannot open shared object file: No such file or directory). "
        "Set PULPIE_RT_ORT_LIB to the path of libonnxruntime.so (the onnxruntime Python "
        "wheel holds it in onnxruntime/capi/libonnxruntime.so.<version>) or put "
        "libonnxruntime.so.1 beside this library")


def test_a_file_that_is_not_onnx_is_refused(core, tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_text("<html>not a model</html>")
    with pytest.raises(CoreError) as error:
        core.classifier(bad)
    assert str(error.value).startswith(f"ONNX Runtime cannot load {bad}: ")
    assert "Protobuf parsing failed" in str(error.value)
    with pytest.raises(CoreError) as error:
        core.classifier(b"<html>not a model</html>")
    assert str(error.value).startswith("ONNX Runtime cannot load the 24-byte model in memory: ")


def _graph(tmp_path: Path, inputs: list[str]) -> Path:
    """A one-node model over int64 ``[rows, length]`` inputs named ``inputs``."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    values = [helper.make_tensor_value_info(n, TensorProto.INT64, ["rows", "length"])
              for n in inputs]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["rows", "length"])
    node = helper.make_node("Cast", [inputs[0]], ["logits"], to=TensorProto.FLOAT)
    graph = helper.make_graph([node], "g", values, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    path = tmp_path / "graph.onnx"
    onnx.save(model, str(path))
    return path


def test_a_model_input_the_core_cannot_feed_is_named(core, tmp_path):
    path = _graph(tmp_path, ["tokens", "attention_mask"])
    with pytest.raises(CoreError) as error:
        core.classifier(path)
    assert str(error.value) == (
        f"{path}: model input 'tokens' is none of the inputs pulpie-rt feeds (input_ids, "
        "attention_mask, position_ids, cumulative_sequence_length, token_offset); the model's "
        "inputs: tokens, attention_mask")


def test_a_model_without_input_ids_is_refused(core, tmp_path):
    path = _graph(tmp_path, ["attention_mask"])
    with pytest.raises(CoreError) as error:
        core.classifier(path)
    assert str(error.value) == (
        f"{path}: model has no input 'input_ids' (the model's inputs: attention_mask)")


@pytest.mark.parametrize("provider,missing", [("cuda", "CUDAExecutionProvider"),
                                              ("tensorrt", "TensorrtExecutionProvider")])
def test_a_provider_missing_from_the_library_is_named(core, default_bundle, provider, missing):
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("a GPU build of onnxruntime: the providers are there")
    path, version = core.describe()
    with pytest.raises(CoreError) as error:
        core.classifier(default_bundle.onnx_path, provider=provider)
    message = str(error.value)
    assert message.startswith(
        f"execution provider '{provider}' is not available: the ONNX Runtime library {path} "
        f"(version {version}) has no {missing} (it has: ")
    assert "CPUExecutionProvider" in message
    assert message.endswith(
        "); point PULPIE_RT_ORT_LIB at the libonnxruntime.so of a GPU build (the "
        "onnxruntime-gpu wheel's onnxruntime/capi/libonnxruntime.so.<version>)")


def test_wrong_shapes_and_feature_widths_are_refused(core, default_bundle):
    classifier = core.classifier(default_bundle.onnx_path, intra_op_threads=1)
    with pytest.raises(CoreError) as error:
        classifier.run(np.zeros((2, 3), np.int64), np.zeros((1, 2), np.int64))
    assert str(error.value) == "attention_mask holds 2 values, not rows × length = 2 × 3"
    rescorer = core.rescorer(default_bundle.rescorer_path, 0.25)
    with pytest.raises(CoreError) as error:
        rescorer.run(np.zeros((2, 3), np.float32), np.zeros(2, np.float32))
    assert str(error.value) == "features have 3 columns, the rescorer reads 166"
