"""The C library's ABI 7 (``core/include/pulpie_rt.h``), called through ctypes on the library
``make capi`` builds: only the header's functions are exported, ``struct_size`` is read as the
size of a known ABI, status codes have names, a batch takes each page's Content-Type and a
result says what its bytes were decoded with, an engine says what runs its model, and a call
asks for its own favor (or each page's)."""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess

import pytest

from bench.capi import LIBRARY, build_capi, c_library
from eval.report import REPO_ROOT
from pulpie_rt import Extractor
from pulpie_rt.runtime import binding

MISSING_TOOLS = [tool for tool in ("cargo", "cc", "make", "nm") if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING_TOOLS),
    reason=f"the C library needs {', '.join(MISSING_TOOLS)} on the PATH to be built")

HEADER = REPO_ROOT / "core" / "include" / "pulpie_rt.h"
DECLARED = binding.parse(HEADER.read_text(encoding="utf-8"))
OK, ERR_ARGUMENT, ERR_MODEL = (DECLARED.constants[f"PULPIE_RT_{name}"]
                               for name in ("OK", "ERR_ARGUMENT", "ERR_MODEL"))


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    build_capi()
    lib, _ = c_library()
    # the Markdown may hold NUL bytes: read it by its length
    lib.pulpie_rt_result_markdown.restype = ctypes.c_void_p
    return lib


def options_type() -> type[ctypes.Structure]:
    """``pulpie_rt_options`` as the library's functions are declared to take it."""
    return c_library()[1].structs["pulpie_rt_options"]


def header_functions() -> set[str]:
    """The functions ``pulpie_rt.h`` declares."""
    return set(DECLARED.functions)


def test_the_library_exports_exactly_the_headers_functions(lib):
    """Every symbol the library defines in its dynamic table, whatever its name or kind (a
    function, data, a weak symbol): the header's functions and nothing else."""
    done = subprocess.run(["nm", "-D", "--defined-only", str(LIBRARY)], capture_output=True,
                          text=True, check=True)
    symbols = [line.split() for line in done.stdout.splitlines() if line.strip()]
    assert len(header_functions()) >= 20
    assert sorted(name for *_, name in symbols) == sorted(header_functions())
    assert {kind for _, kind, _ in symbols} == {"T"}  # code, in the text section


def _open(lib, options) -> tuple[int, ctypes.c_void_p, str | None]:
    engine, err = ctypes.c_void_p(), ctypes.c_char_p()
    status = lib.pulpie_rt_engine_open(ctypes.byref(options), ctypes.byref(engine),
                                       ctypes.byref(err))
    message = err.value.decode() if err.value else None
    if err.value:
        lib.pulpie_rt_string_free(err)
    return status, engine, message


def test_struct_size_is_read_as_the_size_of_a_known_abi(lib):
    options = options_type()()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    assert options.struct_size == ctypes.sizeof(options_type()) == 96
    assert options.cutoff_length == 500
    options.profile = b"no-such-profile"
    status, engine, message = _open(lib, options)
    assert status == ERR_MODEL and "no profile 'no-such-profile'" in message
    # a size that ends inside `profile` (ABI 2's pointer) is read as ABI 1's: no profile
    # is read, half a pointer is never copied, and the default profile opens
    options.struct_size = options_type().profile.offset + 4
    status, engine, message = _open(lib, options)
    assert (status, message) == (OK, None)
    assert lib.pulpie_rt_engine_provider(engine) == b"none"  # fast: no model on a device
    lib.pulpie_rt_engine_close(engine)
    # ABI 3's field is read at ABI 3's size only
    options = options_type()()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    options.cutoff_length = -1
    assert _open(lib, options)[0] == ERR_ARGUMENT
    options.struct_size = options_type().cutoff_length.offset + 7
    status, engine, _ = _open(lib, options)
    assert status == OK
    lib.pulpie_rt_engine_close(engine)
    # and ABI 4's at ABI 4's size only: a favor that names no setting is refused by name
    options = options_type()()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    assert options.favor == 0  # PULPIE_RT_FAVOR_BALANCED
    options.favor = 7
    assert _open(lib, options)[:3:2] == (ERR_ARGUMENT, "options.favor is 7 "
                                         "(PULPIE_RT_FAVOR_BALANCED, _PRECISION or _RECALL)")
    options.struct_size = options_type().favor.offset
    status, engine, _ = _open(lib, options)
    assert status == OK
    lib.pulpie_rt_engine_close(engine)
    # ABI 7's metadata at ABI 7's size only: ABI 4's to 6's struct (its favor padded to 88
    # bytes)
    # never has its padding read as it
    options = options_type()()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    assert options.metadata == 1 and options_type().metadata.offset == 88
    options.metadata = 2
    assert _open(lib, options)[:3:2] == (ERR_ARGUMENT, "options.metadata is 2 (1: read, 0: do "
                                         "not)")
    options.struct_size = 88
    status, engine, _ = _open(lib, options)
    assert status == OK
    lib.pulpie_rt_engine_close(engine)


def test_status_codes_have_names(lib):
    names = [lib.pulpie_rt_status_string(code).decode() for code in range(6)]
    assert names == ["PULPIE_RT_OK: success", "PULPIE_RT_ERR_ARGUMENT: a bad argument",
                     "PULPIE_RT_ERR_INTERNAL: a fault inside the library",
                     "PULPIE_RT_ERR_MODEL: the model cannot be used",
                     "PULPIE_RT_ERR_RUNTIME: ONNX Runtime failed", "unknown status"]


# café in windows-1252 bytes, with no declaration: a header's charset changes what it reads
PAGE = ("<html><body><h1>Le caf\xe9</h1><p>" + "Un caf\xe9 cr\xe8me et deux croissants. " * 8
        + "</p></body></html>").encode("windows-1252")
# PAGE and two short lines after the story ("Partager sur Facebook", a "Lire aussi" link): with
# the embedded model each favor labels this page differently (the heading and the share line
# lie within the favors' shift of the threshold), which the favor test needs and asserts
FAVOR_PAGE = PAGE.replace(b"</p></body>", "</p><p>Partager sur Facebook</p><p>Lire aussi: "
                          "<a href='/x'>Le th\xe9</a></p></body>".encode("windows-1252"))


def test_a_batch_reads_each_pages_content_type_as_python_does(lib):
    options = options_type()()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    status, engine, message = _open(lib, options)
    assert status == OK, message
    types = [None, b"text/html; charset=ISO-8859-7", b"text/html; charset=windows-1252"]
    n = len(types)
    out = (ctypes.c_void_p * n)()
    err = ctypes.c_char_p()
    status = lib.pulpie_rt_extract_pages(
        engine, (ctypes.c_char_p * n)(*[PAGE] * n), (ctypes.c_size_t * n)(*[len(PAGE)] * n),
        (ctypes.c_char_p * n)(*types), n, out, ctypes.byref(err))
    assert status == OK
    ours = []
    for result in out:
        size = ctypes.c_size_t()
        pointer = lib.pulpie_rt_result_markdown(result, ctypes.byref(size))
        ours.append((ctypes.string_at(pointer, size.value).decode(),
                     lib.pulpie_rt_result_encoding(result).decode()))
        assert lib.pulpie_rt_result_error(result) is None
        lib.pulpie_rt_result_free(result)
    lib.pulpie_rt_engine_close(engine)
    python = Extractor().extract_batch([PAGE] * n, [None if t is None else t.decode()
                                                    for t in types])
    assert ours == [(r.markdown, r.encoding) for r in python]
    assert ours[1][1] == "ISO-8859-7" and "caf\u03b9" in ours[1][0]  # 0xE9 read as Greek ι
    assert ours[2][1] == "windows-1252" and "café" in ours[2][0]


def test_each_label_has_the_score_it_was_decided_from_and_the_page_its_threshold(lib):
    """ABI 5: ``pulpie_rt_result_score`` per label and ``pulpie_rt_result_threshold``, the
    figures Python's ``PageResult.scores`` / ``threshold`` give (the page inspector's)."""
    options = options_type()()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    options.favor = DECLARED.constants["PULPIE_RT_FAVOR_PRECISION"]
    status, engine, message = _open(lib, options)
    assert status == OK, message
    result, err = ctypes.c_void_p(), ctypes.c_char_p()
    assert lib.pulpie_rt_extract(engine, PAGE, len(PAGE), None, ctypes.byref(result),
                                 ctypes.byref(err)) == OK
    n = lib.pulpie_rt_result_n_labels(result)
    is_main = ctypes.c_int()
    ours = {lib.pulpie_rt_result_label(result, i, ctypes.byref(is_main)).decode():
            (bool(is_main.value), lib.pulpie_rt_result_score(result, i)) for i in range(n)}
    threshold = lib.pulpie_rt_result_threshold(result)
    assert math.isnan(lib.pulpie_rt_result_score(result, n))  # past the end
    lib.pulpie_rt_result_free(result)
    lib.pulpie_rt_engine_close(engine)
    assert math.isnan(lib.pulpie_rt_result_threshold(None))
    python = Extractor(favor="precision").extract(PAGE)
    assert n > 1 and ours == {i: (python.labels[i] == "main", python.scores[i])
                              for i in python.labels}
    assert threshold == python.threshold == Extractor().extract(PAGE).threshold + 1.0


def test_a_call_asks_for_its_favor_or_each_pages_on_one_engine(lib):
    """ABI 6: ``pulpie_rt_extract_pages_with`` and ``pulpie_rt_extract_options``: the call's
    favor, or each page's, decides as an engine opened with it (Python's ``Extractor(favor=)``),
    on an engine opened balanced; a favor that names no setting fails the call by name."""
    constants = DECLARED.constants
    extract_options = c_library()[1].structs["pulpie_rt_extract_options"]
    options = options_type()()
    lib.pulpie_rt_options_init(ctypes.byref(options))
    status, engine, message = _open(lib, options)
    assert status == OK, message
    n = 3

    def labels_of(call_options) -> list[dict[str, bool]]:
        out, err = (ctypes.c_void_p * n)(), ctypes.c_char_p()
        status = lib.pulpie_rt_extract_pages_with(
            engine, (ctypes.c_char_p * n)(*[FAVOR_PAGE] * n),
            (ctypes.c_size_t * n)(*[len(FAVOR_PAGE)] * n),
            None, n, call_options, out, ctypes.byref(err))
        if status != OK:
            message = err.value.decode()
            lib.pulpie_rt_string_free(err)
            return status, message
        found = []
        is_main = ctypes.c_int()
        for result in out:
            found.append({lib.pulpie_rt_result_label(result, i, ctypes.byref(is_main)).decode():
                          bool(is_main.value)
                          for i in range(lib.pulpie_rt_result_n_labels(result))})
            lib.pulpie_rt_result_free(result)
        return found

    python = {favor: {i: v == "main" for i, v in Extractor(favor=favor).extract(FAVOR_PAGE)
                      .labels.items()} for favor in ("balanced", "precision", "recall")}
    assert python["precision"] != python["balanced"] != python["recall"]
    call = extract_options()
    lib.pulpie_rt_extract_options_init(ctypes.byref(call))
    assert call.struct_size == ctypes.sizeof(extract_options) == 16
    assert call.favor == constants["PULPIE_RT_ENGINE_FAVOR"] == -1 and not call.page_favor
    assert labels_of(None) == labels_of(ctypes.byref(call)) == [python["balanced"]] * n
    call.favor = constants["PULPIE_RT_FAVOR_RECALL"]
    assert labels_of(ctypes.byref(call)) == [python["recall"]] * n
    each = (ctypes.c_int32 * n)(constants["PULPIE_RT_FAVOR_PRECISION"],
                                constants["PULPIE_RT_ENGINE_FAVOR"],
                                constants["PULPIE_RT_FAVOR_BALANCED"])
    call.page_favor = ctypes.addressof(each)
    assert labels_of(ctypes.byref(call)) == [python["precision"], python["recall"],
                                             python["balanced"]]
    each[2] = 5
    assert labels_of(ctypes.byref(call)) == (
        ERR_ARGUMENT, "extract options.page_favor[2] is 5 (PULPIE_RT_FAVOR_BALANCED, "
        "_PRECISION, _RECALL or PULPIE_RT_ENGINE_FAVOR)")
    call.struct_size = extract_options.page_favor.offset  # page_favor not read
    assert labels_of(ctypes.byref(call)) == [python["recall"]] * n
    call.favor = 7
    assert labels_of(ctypes.byref(call)) == (
        ERR_ARGUMENT, "extract options.favor is 7 (PULPIE_RT_FAVOR_BALANCED, _PRECISION, "
        "_RECALL or PULPIE_RT_ENGINE_FAVOR)")
    lib.pulpie_rt_engine_close(engine)
