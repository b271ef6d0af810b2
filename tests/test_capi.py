"""The C library (``make capi``: ``libpulpie_rt.so``, ``pulpie_rt.h``, the example program
``examples/c/extract.c``) against the Python doors (the same engine, reached through ctypes):
the example program, a C program
with no Python in it, must give ``pulpie_rt.Extractor(model).extract(html)``'s Markdown, error,
``n_main`` and ``n_other`` on every dev page, with the tiny checkpoint's bundle and with the
embedded default model; 8 threads sharing one engine give what one thread gives; every hostile
page gives a result or an error.

The tiny checkpoint runs here packing 1,024-token chunks (``short_context_bundle``): the same
weights and code path, more chunks per page, and a fraction of the cost of its 8,192-token
chunks, whose eager attention made the 254 dev pages take 19 min in C and 27 min in Python on
this loaded 2-core machine (they gave 254/254 identical pages; ``python -m
bench.capi --parity --model <tiny bundle>`` runs it).

The embedded default model runs here on every 4th dev page (64 pages; its run over all 254
in C and Python took 10 and 15 min on this loaded machine and gave 254/254 identical pages:
``python -m bench.capi --parity`` runs it), and with its ``fast`` profile (the
rescorer alone over blocks in context, ``options.profile``) on every 5th
(``python -m bench.capi --parity --profile fast`` runs all 254).

The library is built here (``make capi``) when cargo and a C compiler are on the PATH; the
tests are skipped, saying so, when they are not.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest
from rt_helpers import hostile_pages, short_context_bundle

from bench.capi import EXTRACT, build_capi, c_library, run_extract, write_pages
from eval.report import REPO_ROOT
from pulpie_rt import Extractor
from pulpie_rt.runtime.flow import schema

MISSING_TOOLS = [tool for tool in ("cargo", "cc", "make") if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING_TOOLS),
    reason=f"the C library needs {', '.join(MISSING_TOOLS)} on the PATH to be built")


@pytest.fixture(scope="module")
def capi() -> Path:
    build_capi()
    return EXTRACT


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return short_context_bundle(tmp_path_factory.mktemp("tiny"), 1024)


DEFAULT_MODEL_PAGE_STEP = 4


@pytest.fixture(scope="module")
def dev_jsonl(dev_pages, tmp_path_factory) -> Path:
    return write_pages(dev_pages, tmp_path_factory.mktemp("capi") / "dev.jsonl")


@pytest.fixture(scope="module")
def default_model_pages(dev_pages) -> list[dict]:
    return dev_pages[::DEFAULT_MODEL_PAGE_STEP]


@pytest.fixture(scope="module")
def default_model_jsonl(default_model_pages, tmp_path_factory) -> Path:
    return write_pages(default_model_pages, tmp_path_factory.mktemp("capi") / "default.jsonl")


def python_records(extractor: Extractor, htmls: list) -> list[dict]:
    """What the C program writes for each page, from ``Extractor.extract_batch`` page by page
    (``extract`` raises where ``extract_batch`` gives the page's error)."""
    records = []
    for html in htmls:
        (result,) = extractor.extract_batch([as_bytes(html)])
        records.append(result_record(result))
    return records


def as_bytes(html: str) -> bytes:
    """A page as the C program passes it: the UTF-8 bytes of its JSON string, decoded by the
    library as any page's bytes are (the record's ``encoding`` says with what)."""
    return html.encode("utf-8", "surrogatepass")


def result_record(result, output: str = "markdown") -> dict:
    """The page's record as the schema defines it (``flow.schema.record``) but its id: what
    the C program writes (``--labels``: the json format's, with ``labels``)."""
    record = schema.record(None, result, output)
    del record["id"]
    return record


def assert_same(c_records: list[dict], expected: list[dict], ids: list) -> None:
    assert len(c_records) == len(expected)
    different = [
        (page_id, {k: (c[k], e[k]) for k in e if c[k] != e[k] and k != "markdown"},
         c["markdown"] == e["markdown"])
        for page_id, c, e in zip(ids, c_records, expected, strict=True)
        if {k: c[k] for k in e} != e
    ]
    assert not different, f"{len(different)} of {len(ids)} pages differ: {different[:5]}"


@pytest.mark.parametrize("model", ["tiny", "default"])
def test_the_c_program_gives_the_extractors_markdown_on_dev_pages(capi, dev_pages, dev_jsonl,
                                                                  default_model_pages,
                                                                  default_model_jsonl, tiny,
                                                                  model):
    """The tiny bundle on every dev page, the embedded default model (its default profile,
    ``fast``) on every 4th."""
    bundle = tiny if model == "tiny" else None
    pages, path = (dev_pages, dev_jsonl) if bundle else (default_model_pages,
                                                         default_model_jsonl)
    c_records = run_extract(path, bundle)
    assert [r["id"] for r in c_records] == [p["id"] for p in pages]
    # the schema's fields, in its order
    assert [list(r) for r in c_records] == [[f.name for f in schema.record_fields()]] * len(pages)
    extractor = Extractor(bundle) if bundle else Extractor()
    expected = python_records(extractor, [p["html"] for p in pages])
    assert_same(c_records, expected, [p["id"] for p in pages])
    assert sum(1 for r in c_records if r["markdown"]) >= 0.9 * len(pages)


def test_eight_threads_sharing_one_engine_give_what_one_thread_gives(capi, dev_pages, dev_jsonl,
                                                                    default_model_jsonl, tiny):
    one = run_extract(default_model_jsonl, None, threads=1)
    eight = run_extract(default_model_jsonl, None, threads=8)
    assert eight == one
    # batches of pages through pulpie_rt_extract_batch, 8 threads: Extractor.extract_batch's
    # batching is across the call's pages, so compare with it batch by batch
    batched = run_extract(dev_jsonl, tiny, threads=8, batch=5)
    extractor = Extractor(tiny)
    htmls = [p["html"] for p in dev_pages]
    expected = []
    for start in range(0, len(htmls), 5):
        expected += [result_record(r) for r in
                     extractor.extract_batch([as_bytes(h) for h in htmls[start:start + 5]])]
    assert_same(batched, expected, [p["id"] for p in dev_pages])


def test_labels_make_the_json_formats_record(capi, default_model_pages, tmp_path):
    """``--labels``: the record of the json format, each block's label by its id in page order,
    the schema's fields in its order, as Python's record of the page."""
    pages = default_model_pages[:12]
    c_records = run_extract(write_pages(pages, tmp_path / "pages.jsonl"), labels=True)
    extractor = Extractor()
    expected = [result_record(extractor.extract_batch([as_bytes(p["html"])])[0], "json")
                for p in pages]
    assert [list(r) for r in c_records] == [[f.name for f in schema.record_fields("json")]] * 12
    assert [list(r["labels"].items()) for r in c_records] == [list(e["labels"].items())
                                                             for e in expected]
    assert_same(c_records, expected, [p["id"] for p in pages])


def test_one_row_per_model_call_gives_what_packed_calls_give(capi, dev_pages, tiny, tmp_path):
    """``--max-batch-tokens 1``: every chunk its own model call (a row over the budget is a
    batch of its own), unpadded; the same records as the default 16,384-token calls, which
    pad rows to the longest of each batch. 0 is refused by name."""
    path = write_pages(dev_pages[::10], tmp_path / "pages.jsonl")
    assert run_extract(path, tiny, max_batch_tokens=1) == run_extract(path, tiny)
    done = subprocess.run([str(capi), "--max-batch-tokens", "0", "--jsonl", str(path)],
                          capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (
        1, "extract: --max-batch-tokens: needs a positive number\n")


@pytest.mark.parametrize("model", ["tiny", "default"])
def test_every_hostile_page_gives_a_result_or_an_error(capi, tmp_path, tiny, model):
    pages = hostile_pages()
    path = write_pages([{"id": name, "html": html} for name, html in pages.items()],
                       tmp_path / "hostile.jsonl")
    bundle = tiny if model == "tiny" else None
    records = run_extract(path, bundle, threads=2)
    assert [r["id"] for r in records] == list(pages)
    extractor = Extractor(bundle) if bundle else Extractor()
    expected = python_records(extractor, list(pages.values()))
    assert_same(records, expected, list(pages))


def test_html_files_and_stdin(capi, dev_pages, tmp_path):
    page = dev_pages[3]
    file = tmp_path / "page.html"
    file.write_bytes(page["html"].encode("utf-8"))
    expected = Extractor().extract(page["html"]).markdown
    from_file = subprocess.run([str(capi), str(file)], capture_output=True, check=True)
    assert from_file.stdout.decode("utf-8") == expected + "\n"
    from_stdin = subprocess.run([str(capi), "-"], input=file.read_bytes(), capture_output=True,
                                check=True)
    assert from_stdin.stdout == from_file.stdout


def test_a_missing_model_and_a_missing_onnx_runtime_are_named(capi, tmp_path):
    done = subprocess.run([str(capi), "--model", str(tmp_path / "nowhere"), "-"], input=b"<p>x",
                          capture_output=True)
    assert done.returncode == 1
    assert done.stderr.decode() == (f"extract: cannot open the model: {tmp_path / 'nowhere'}: "
                                    "not a pulpie-rt bundle (no manifest.json)\n")
    # a profile that runs the transformer, or trees asked of ONNX Runtime, need its library:
    # it is named
    env = {"PULPIE_RT_ORT_LIB": str(tmp_path / "libonnxruntime.so.1")}
    missing = tmp_path / "libonnxruntime.so.1"
    for args, extra in ((["--profile", "accurate"], {}), ([], {"PULPIE_RT_TREES": "onnxruntime"})):
        done = subprocess.run([str(capi), *args, "-"], input=b"<p>x", capture_output=True,
                              env={**env, **extra})
        assert done.returncode == 1
        assert done.stderr.decode() == (
            f"extract: cannot open the model: cannot load the ONNX Runtime library {missing}: "
            f"{missing}: cannot open shared object file: No such file or directory\n")
    # the default profile (no transformer, its trees on the kernel) never loads the library
    done = subprocess.run([str(capi), "-"], input=b"<p>x", capture_output=True, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"x\n", b"")


def _c_library() -> ctypes.CDLL:
    """The C library, its functions declared from the header it was installed with."""
    return c_library()[0]


def _options() -> ctypes.Structure:
    return c_library()[1].structs["pulpie_rt_options"]()


def test_the_header_the_options_and_the_status_codes(capi):
    header = (REPO_ROOT / "build" / "capi" / "pulpie_rt.h").read_text()
    assert header == (REPO_ROOT / "core" / "include" / "pulpie_rt.h").read_text()
    lib = _c_library()
    assert lib.pulpie_rt_abi_version() == 7
    options = _options()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    assert options.struct_size == ctypes.sizeof(options) == 96
    assert (options.model, options.backend, options.threads, options.profile,
            options.favor, options.metadata) == (None, None, 0, None, 0, 1)
    assert (options.max_input_bytes, options.max_page_tokens, options.max_batch_tokens,
            options.cutoff_length) == (16 * 1024 * 1024, 131_072, 16_384, 500)
    engine, err = ctypes.c_void_p(), ctypes.c_char_p()
    options.backend = b"tpu"
    assert lib.pulpie_rt_engine_open(ctypes.byref(options), ctypes.byref(engine),
                                     ctypes.byref(err)) == 1
    assert err.value == b"unknown backend 'tpu': choose cpu, cuda or tensorrt"
    assert not engine.value
    options.backend, options.struct_size = None, 16
    assert lib.pulpie_rt_engine_open(ctypes.byref(options), ctypes.byref(engine), None) == 1


PROFILE_PAGE_STEP = 5


def test_the_accurate_profile_asked_by_name_gives_the_extractors_markdown_on_dev_pages(
        capi, dev_pages, tmp_path):
    """The embedded model's ``accurate`` profile (the transformer and its rescorer), asked
    for by name, on every 5th dev page (the default, ``fast``, is checked on every 4th above);
    the default is what ``profile="fast"`` runs; each profile's labels through the C ABI on a
    page the two decide differently."""
    pages = dev_pages[::PROFILE_PAGE_STEP]
    c_records = run_extract(write_pages(pages, tmp_path / "accurate.jsonl"), profile="accurate")
    accurate_extractor = Extractor(profile="accurate")
    expected = python_records(accurate_extractor, [p["html"] for p in pages])
    assert_same(c_records, expected, [p["id"] for p in pages])
    assert sum(1 for r in c_records if r["markdown"]) >= 0.9 * len(pages)
    fast = run_extract(write_pages(pages[:8], tmp_path / "fast.jsonl"), profile="fast")
    assert fast == run_extract(tmp_path / "fast.jsonl")
    extractor = Extractor(profile="fast")
    page = next(p["html"] for p in pages[:20]
                if extractor.extract(p["html"]).labels
                != accurate_extractor.extract(p["html"]).labels)
    assert _c_labels(page) == list(extractor.extract(page).labels.items())
    assert _c_labels(page, profile=b"accurate") == list(
        accurate_extractor.extract(page).labels.items())


def _c_labels(page: str, model: bytes | None = None, profile: bytes | None = None) -> list:
    """Each block's label of ``page`` through the C ABI (``pulpie_rt_result_label``)."""
    lib = _c_library()
    options = _options()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    options.model, options.profile = model, profile
    engine, result = ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.pulpie_rt_engine_open(ctypes.byref(options), ctypes.byref(engine), None) == 0
    data = page.encode("utf-8")
    assert lib.pulpie_rt_extract(engine, data, len(data), None, ctypes.byref(result), None) == 0
    is_main = ctypes.c_int()
    labels = []
    for index in range(lib.pulpie_rt_result_n_labels(result)):
        item_id = lib.pulpie_rt_result_label(result, index, ctypes.byref(is_main)).decode()
        labels.append((item_id, "main" if is_main.value else "other"))
    lib.pulpie_rt_result_free(result)
    lib.pulpie_rt_engine_close(engine)
    return labels


def test_an_unknown_profile_is_named_with_the_ones_there_are(capi, tmp_path, tiny):
    lib = _c_library()
    options = _options()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    engine, err = ctypes.c_void_p(), ctypes.c_char_p()

    def open_error() -> tuple[int, str]:
        status = lib.pulpie_rt_engine_open(ctypes.byref(options), ctypes.byref(engine),
                                           ctypes.byref(err))
        assert not engine.value
        message = err.value.decode()
        lib.pulpie_rt_string_free(err)
        return status, message

    options.profile = b"fastest"
    assert open_error() == (3, "the embedded default model: no profile 'fastest' (this bundle "
                               "has accurate, fast)")
    options.model = str(tiny).encode()
    assert open_error() == (3, f"{tiny / 'manifest.json'}: this bundle has no profiles (profile "
                               "'fastest' asked); only the embedded default model has "
                               "fast/accurate profiles")
    done = subprocess.run([str(capi), "--profile", "fastest", "-"], input=b"<p>x",
                          capture_output=True)
    assert (done.returncode, done.stderr.decode()) == (
        1, "extract: cannot open the model: the embedded default model: no profile 'fastest' "
           "(this bundle has accurate, fast)\n")


def test_page_limits_cut_as_in_python(capi, dev_pages, tiny):
    """The page limits through the options (via the C ABI, not the program): the input's
    last 1,000 bytes cut and the tokens to 2,048 (2 chunks of the tiny bundle), with
    PageLimits' messages; the labels in order."""
    from pulpie_rt.runtime.flow.pages import PageLimits

    page = next(p["html"] for p in dev_pages if 100_000 < len(p["html"]) < 300_000)
    max_input_bytes = len(page.encode("utf-8")) - 1000
    bundle = tiny
    expected = Extractor(bundle, limits=PageLimits(max_input_bytes=max_input_bytes,
                                                   max_page_tokens=2048)).extract(page)
    assert f"the input was cut to its first {max_input_bytes:,} of" in expected.truncated
    assert "tokens were not classified (labelled other)" in expected.truncated
    lib = _c_library()
    options = _options()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    options.model = str(bundle).encode()
    options.max_input_bytes, options.max_page_tokens = max_input_bytes, 2048
    engine, result = ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.pulpie_rt_engine_open(ctypes.byref(options), ctypes.byref(engine), None) == 0
    data = page.encode("utf-8")
    assert lib.pulpie_rt_extract(engine, data, len(data), None, ctypes.byref(result), None) == 0
    for name in ("markdown", "html", "text"):  # they may hold NUL bytes: read by their length
        getattr(lib, f"pulpie_rt_result_{name}").restype = ctypes.c_void_p
    size = ctypes.c_size_t()
    markdown = ctypes.string_at(lib.pulpie_rt_result_markdown(result, ctypes.byref(size)),
                                size.value).decode()
    html = ctypes.string_at(lib.pulpie_rt_result_html(result, ctypes.byref(size)),
                            size.value).decode()
    text = ctypes.string_at(lib.pulpie_rt_result_text(result, ctypes.byref(size)),
                            size.value).decode()
    assert (markdown, html, text) == (expected.markdown, expected.html, expected.text)
    assert lib.pulpie_rt_result_error(result) is None
    assert lib.pulpie_rt_result_truncated(result).decode() == expected.truncated
    assert lib.pulpie_rt_result_n_labels(result) == len(expected.labels)
    is_main = ctypes.c_int()
    labels = {}
    for index in range(len(expected.labels)):
        item_id = lib.pulpie_rt_result_label(result, index, ctypes.byref(is_main)).decode()
        labels[item_id] = "main" if is_main.value else "other"
    assert list(labels.items()) == list(expected.labels.items())
    lib.pulpie_rt_result_free(result)
    lib.pulpie_rt_engine_close(engine)
