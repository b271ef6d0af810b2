"""The one engine behind every door (``runtime/flow/engine.py``): the Python doors open the
C library's engine and hand it whole batches; it says what runs the model, refuses devices it
cannot use, and serves threads at once."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from rt_helpers import small_dev_pages, tiny_bundle

from pulpie_rt import Extractor, PageInput
from pulpie_rt.runtime import native
from pulpie_rt.runtime.flow.engine import BackendError, Engine
from pulpie_rt.runtime.flow.pages import DEFAULT_LIMITS, DEFAULT_MAX_BATCH_TOKENS
from pulpie_rt.runtime.model.devices import backend_names, gpu_index


def test_the_engine_says_what_runs_the_model():
    fast = Extractor()  # the embedded default model's default profile: no transformer
    assert (fast.bundle.profile, fast.provider, fast.device) == ("fast", "none", "cpu")
    tiny = Extractor(tiny_bundle(), device="cpu")
    assert (tiny.provider, tiny.device) == ("cpu", "cpu")
    assert tiny.engine.info() == {"model": tiny_bundle().name, "profile": None,
                                  "favor": "balanced", "provider": "cpu", "device": "cpu",
                                  "transformer": True, "notice": None}
    precise = Extractor(tiny_bundle(), device="cpu", favor="precision")
    assert precise.engine.info()["favor"] == "precision"


def test_onnx_runtime_is_loaded_only_where_the_profile_needs_it(monkeypatch, tmp_path):
    # no library where the variable points: the default profile (no transformer, every tree
    # on the kernel) opens and extracts; the transformer's profile, or trees asked of ONNX
    # Runtime, are refused with the loader's reason
    missing = tmp_path / "libonnxruntime.so.1"
    monkeypatch.setenv(native.ORT_LIBRARY_ENV, str(missing))
    page = "<p>" + "Some words in a paragraph. " * 20
    assert Extractor().extract(page).markdown.startswith("Some words in a paragraph.")
    reason = (f"cannot load the ONNX Runtime library {missing}: {missing}: cannot open shared "
              "object file: No such file or directory")
    with pytest.raises(BackendError, match="^" + re.escape(reason) + "$"):
        Engine(profile="accurate")
    monkeypatch.setenv("PULPIE_RT_TREES", "onnxruntime")
    with pytest.raises(BackendError, match="^" + re.escape(reason) + "$"):
        Engine()


def test_the_cores_defaults_are_the_doors_defaults():
    assert (DEFAULT_LIMITS.max_input_bytes, DEFAULT_LIMITS.max_page_tokens) == (
        16 * 1024 * 1024, 131_072)
    assert DEFAULT_MAX_BATCH_TOKENS == 16_384


def test_a_gpu_asked_for_a_profile_without_a_model_is_said_not_refused(caplog):
    extractor = Extractor(device="cuda")
    assert (extractor.provider, extractor.device) == ("none", "cpu")
    said = ("profile 'fast' runs no transformer: backend 'cuda' changes nothing, its block "
            "trees run on the CPU")
    assert extractor.engine.info()["notice"] == said
    assert [r.getMessage() for r in caplog.records] == [f"pulpie-rt: {said}"]
    assert extractor.extract("<p>" + "Some words in a paragraph. " * 20).markdown


@pytest.mark.parametrize(("backend", "device", "message"), [
    ("tpu", None, "unknown backend 'tpu': choose one of auto, cpu, cuda, tensorrt"),
    ("auto", "gpu", "device 'gpu': choose 'cpu', 'cuda' or 'cuda:N'"),
    ("auto", "cuda:x", "device 'cuda:x': choose 'cpu', 'cuda' or 'cuda:N'"),
    ("tensorrt", "cpu", "backend 'tensorrt' runs on a GPU, not on device 'cpu'"),
    ("cpu", "cuda:1", "backend 'cpu' does not run on device 'cuda:1'"),
    # the name ONNX Runtime's CPU and CUDA providers had before they were named as the core
    # names them
    ("onnxruntime", "cpu", "unknown backend 'onnxruntime': choose one of auto, cpu, cuda, "
                           "tensorrt"),
])
def test_devices_it_cannot_use_are_refused_with_the_reason(backend, device, message):
    with pytest.raises(BackendError) as refused:
        Engine(tiny_bundle(), backend=backend, device=device)
    assert str(refused.value) == message


def test_the_backends_and_their_devices_are_the_cores_providers():
    # one table (core/src/ort/providers.rs) read through the C ABI; the CLIs offer it too
    assert native.providers() == (("cpu", "cpu"), ("cuda", "cuda:N"), ("tensorrt", "cuda:N"))
    assert backend_names() == ("auto", "cpu", "cuda", "tensorrt")
    assert gpu_index("cuda:3") == 3 and gpu_index("cuda") == 0 and gpu_index("cpu") is None
    engine = Engine(tiny_bundle(), backend="cpu", device="cpu")
    assert (engine.provider, engine.device) == ("cpu", "cpu")


def test_bytes_are_decoded_and_say_with_what_text_is_taken_as_it_is():
    extractor = Extractor()
    page = ("<html><body><h1>Le caf\xe9</h1><p>" + "Un caf\xe9 cr\xe8me. " * 20
            + "</p></body></html>")
    as_text, as_bytes, with_header = extractor.extract_batch(
        [page, page.encode("windows-1252"), page.encode("windows-1252")],
        [None, None, "text/html; charset=ISO-8859-7"])
    assert as_text.encoding is None and as_bytes.encoding == "windows-1252"
    assert as_text.markdown == as_bytes.markdown and "café" in as_text.markdown
    assert with_header.encoding == "ISO-8859-7" and "caf\u03b9" in with_header.markdown
    # a lone surrogate in a str page reaches the core as the Python page flow gave it
    (odd,) = extractor.extract_batch([page.replace("Un", "Un\ud800", 1)])
    assert odd.error is None and odd.markdown


def test_threads_on_one_engine_give_what_one_thread_gives():
    engine = Engine(tiny_bundle(), device="cpu")
    pages = [PageInput(p["html"], page_id=p["id"]) for p in small_dev_pages(20_000)[:12]]
    alone = engine.extract_pages(pages)
    groups = [pages[i:i + 3] for i in range(0, len(pages), 3)]
    with ThreadPoolExecutor(4) as pool:
        together = [r for group in pool.map(engine.extract_pages, groups) for r in group]
    assert [(r.page_id, r.markdown, r.labels) for r in together] == [
        (r.page_id, r.markdown, r.labels) for r in alone]
    assert all(r.error is None for r in alone)
    engine.close()
    assert engine.extract_pages([]) == []
