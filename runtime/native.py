"""The compiled core (``core/``: Rust, std only, with lexbor linked in), through ctypes.

``simplify`` and ``reconstruct`` run here: the core parses and serializes the raw page with
lexbor, builds libxml2's tree of that serialization, segments it and writes blocks and
``map_html``; and it builds libxml2's tree of ``map_html`` and writes the main content. Their
Python specification lives in ``tests/spec/``; ``tests/test_native.py`` and ``python -m
parity.native_core`` compare the two on real pages. The byte-level BPE tokenizer
(``CoreTokenizer``, ids identical to the ``tokenizers`` library's) and Markdown / plain text
(html2text ported; specification ``tests/spec/markdown_spec.py``) run here too, and the
default model's block features (``block_features``, on the same libxml2 tree of ``map_html``
as ``reconstruct``; specification ``tests/spec/features_spec.py``).

``pip install`` builds the library (setuptools-rust and cargo, ``pyproject.toml``; lexbor's C
sources are fetched by ``core/build.rs``). ``PULPIE_RT_NATIVE_LIB`` loads another build of it.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pulpie_rt.runtime import binding

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "LIBRARY_ENV", "CoreError", "CoreMissing", "available", "extract_main_html",
    "library_path", "declarations", "new",
    "simplify_page", "simplify_step", "SpecificationRaises", "markdown", "text", "prune",
    "CoreTokenizer", "TokenizerLoadError", "block_features", "plan_batches",
    "ORT_LIBRARY_ENV", "ort_library_path", "CoreRescorer", "DecodeError", "decide_blocks",
    "FinishError", "finish_page", "PageFailed", "PreparedCore", "prepare_page",
    "extract_blocks", "pack_chunks", "hidden_blocks", "context_features", "stage_features",
    "CoreContextRescorer",
]

# an explicit library file (a build elsewhere); otherwise the one pip built into the package
# folder (`make core` rebuilds it after a change to core/)
LIBRARY_ENV = "PULPIE_RT_NATIVE_LIB"

_HERE = Path(__file__).resolve().parent


class CoreError(RuntimeError):
    """The core could not run on this input; the message says why."""


class CoreMissing(RuntimeError):
    """No compiled core in this installation."""


# the header's constants the page flow names (read from the header on first use: __getattr__)
_HEADER_NAMES = {
    "STEP_LEXBOR_HTML": "PULPIE_RT_STEP_LEXBOR_HTML",
    "STEP_LEXBOR_SERIALIZATION": "PULPIE_RT_STEP_LEXBOR_SERIALIZATION",
    "STEP_TREE": "PULPIE_RT_STEP_TREE",
    "STEP_TREE_SOURCE": "PULPIE_RT_STEP_TREE_SOURCE",
    "STEP_FEATURES_TREE": "PULPIE_RT_STEP_FEATURES_TREE",
    "STEP_RECONSTRUCT_TREE": "PULPIE_RT_STEP_RECONSTRUCT_TREE",
    "EMPTY_NONE": "PULPIE_RT_EMPTY_NONE",
    "EMPTY_NO_TEXT": "PULPIE_RT_EMPTY_NO_TEXT",
    "EMPTY_NO_MAIN": "PULPIE_RT_EMPTY_NO_MAIN",
    "EMPTY_MAIN_WITHOUT_TEXT": "PULPIE_RT_EMPTY_MAIN_WITHOUT_TEXT",
    "ABI_VERSION": "PULPIE_RT_ABI_VERSION",
}


def __getattr__(name: str) -> int:
    if name in _HEADER_NAMES:
        return _c(_HEADER_NAMES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def library_path() -> Path | None:
    """Where the compiled core is, or None."""
    explicit = os.environ.get(LIBRARY_ENV)
    if explicit:
        return Path(explicit)
    candidates = sorted(_HERE.glob("_core_rs*.so")) + sorted(_HERE.glob("_core_rs*.pyd"))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


# the loaded library and its declarations, per process (a cache: empty until first use)
_LIBRARY_CACHE: list[tuple[ctypes.CDLL, binding.Declarations]] = []


def _load() -> tuple[ctypes.CDLL, binding.Declarations]:
    if _LIBRARY_CACHE:
        return _LIBRARY_CACHE[0]
    path = library_path()
    if path is None:
        raise CoreMissing(
            "pulpie_rt's compiled core is not built: reinstall with a Rust toolchain (cargo) "
            "on the PATH (`pip install .`, or `make core` in a checkout)"
        )
    lib = ctypes.CDLL(str(path))
    try:
        header = lib.pulpie_rt_py_header
    except AttributeError:
        raise CoreMissing(f"{path} is not the Python package's build of the core (no "
                          "pulpie_rt_py_header): rebuild it (`make core`, or reinstall)") from None
    # the one declaration by hand: the function that gives the headers every other comes from
    header.argtypes, header.restype = [], ctypes.c_char_p
    declarations = binding.parse(header().decode("utf-8"))
    binding.declare(lib, declarations)
    _LIBRARY_CACHE.append((lib, declarations))
    return lib, declarations


def _library() -> ctypes.CDLL:
    """The core, its functions declared from its headers."""
    return _load()[0]


def declarations() -> binding.Declarations:
    """What the core's headers declare: its structs, functions and constants."""
    return _load()[1]


def _c(name: str) -> int:
    """A constant of the core's headers."""
    return _load()[1].constants[name]


def new(struct: str, **values) -> ctypes.Structure:
    """A ``struct`` of the core's headers with ``values`` set (``binding.new``)."""
    return binding.new(_load()[1].structs[struct], **values)


def available() -> bool:
    """Whether the compiled core can be loaded in this process."""
    try:
        _library()
    except (CoreMissing, OSError):
        return False
    return True


def _python_function(name: str, restype: Any, *argtypes: Any) -> Any:
    """CPython's C function ``name`` under a prototype of our own (AttributeError where this
    interpreter has none). Not ``ctypes.pythonapi.NAME``: that is one object per name for the
    whole process, so another library's argtypes and restype replace ours and ours theirs
    (fsspec sets PyBytes_FromStringAndSize's restype to py_object and PyBytes_AsString's
    argument to py_object)."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


# str straight from the library's UTF-8 buffer (ctypes.string_at would copy it to bytes first)
_decode_utf8 = _python_function("PyUnicode_DecodeUTF8", ctypes.py_object, ctypes.c_void_p,
                                ctypes.c_ssize_t, ctypes.c_char_p)


def _take(lib: ctypes.CDLL, ptr: int | None, size: int) -> str:
    try:
        return _decode_utf8(ptr, size, None) if size else ""
    finally:
        lib.pulpie_rt_free(ptr, size)


def _take_into(lib: ctypes.CDLL, ptr: int | None, size: int, array: np.ndarray) -> np.ndarray:
    """``array`` filled with the ``size`` bytes of a core buffer, which is released."""
    try:
        if size:
            ctypes.memmove(array.ctypes.data, ptr, size)
    finally:
        lib.pulpie_rt_free(ptr, size)
    return array


def _check(status: int, reason: bytes | None) -> None:
    if status != _c("PULPIE_RT_DONE"):
        why = reason.decode("utf-8", "replace") if reason else f"status {status}"
        raise CoreError(f"the compiled core failed on this input: {why}")


# ── a str's UTF-8 for one call, without Python's encoder ────────────────────────────────────
# CPython's str.encode("utf-8") takes a branch per character: a sixth of reconstruct's benchmark,
# where most pages are stored as UCS-2 for a few non-ASCII characters among ASCII markup. So a
# str is read where CPython keeps it (PEP 393: a compact str's code points, 1, 2 or 4 bytes each,
# follow its header; lxml reads them the same way) and the core encodes them
# (pulpie_rt_utf8_of_code_points); an ASCII str is already its UTF-8. The layout is derived
# from this interpreter and confirmed on probe strings of every width at first use; where it is
# not confirmed (another implementation, another layout), where a str is not compact, and for a
# lone surrogate, the str is encoded by Python as before, with the door's own error handling.

_KIND_SHIFT, _KIND_MASK, _COMPACT, _ASCII = 2, 7, 1 << 5, 1 << 6  # PyASCIIObject.state's bits
# (offset of the state word, of an ASCII str's bytes, of another compact str's code points), or
# None where unconfirmed; empty until first use
_STR_LAYOUT: list[tuple[int, int, int] | None] = []


def _fresh(*parts: str) -> str:
    """A new str object (no cached UTF-8 that sys.getsizeof would count)."""
    return "".join(parts)


def _str_layout() -> tuple[int, int, int] | None:
    if _STR_LAYOUT:
        return _STR_LAYOUT[0]
    layout = None
    if sys.implementation.name == "cpython" and sys.byteorder == "little":
        # the state word follows the object header, the length and the hash
        state = object.__basicsize__ + 2 * ctypes.sizeof(ctypes.c_ssize_t)
        ascii_probe, latin1_probe = _fresh("pul", "pie"), _fresh("p\xe9", "pie")
        layout = (state, sys.getsizeof(ascii_probe) - len(ascii_probe) - 1,
                  sys.getsizeof(latin1_probe) - len(latin1_probe) - 1)
        probes = [(ascii_probe, 1, True, b"pulpie"),
                  (latin1_probe, 1, False, latin1_probe.encode("latin-1")),
                  (_fresh("\u0416x", "\xe9"), 2, False, "\u0416x\xe9".encode("utf-16-le")),
                  (_fresh("\U0001f600x", "\u0416"), 4, False,
                   "\U0001f600x\u0416".encode("utf-32-le"))]
        for text, width, is_ascii, points in probes:
            flags = ctypes.c_uint32.from_address(id(text) + state).value
            start = layout[1] if is_ascii else layout[2]
            if ((flags >> _KIND_SHIFT) & _KIND_MASK) != width or not flags & _COMPACT \
                    or bool(flags & _ASCII) != is_ascii \
                    or ctypes.string_at(id(text) + start, len(points)) != points:
                layout = None
                break
    _STR_LAYOUT.append(layout)
    return layout


def _str_storage(text: str) -> tuple[int, int] | None:
    """Where CPython keeps a non-empty compact ``text``'s code points, and their width (1, 2 or
    4; 0: ASCII, whose bytes are its UTF-8); None where the layout is unconfirmed or ``text`` is
    empty or not compact."""
    layout = _str_layout()
    if layout is None or not text:
        return None
    address = id(text)
    flags = ctypes.c_uint32.from_address(address + layout[0]).value
    if not flags & _COMPACT:
        return None
    if flags & _ASCII:
        return address + layout[1], 0
    return address + layout[2], (flags >> _KIND_SHIFT) & _KIND_MASK


class _Utf8:
    """``text.encode("utf-8", errors)`` as a core call takes it, for the length of a ``with``:
    ``with _Utf8(text, errors) as (data, size):``, ``data`` an address or bytes. Raises what
    ``encode`` raises (``UnicodeEncodeError``)."""

    __slots__ = ("data", "size", "_owned")

    def __init__(self, text: str, errors: str = "strict") -> None:
        self._owned = None
        stored = _str_storage(text)
        if stored is not None:
            address, width = stored
            if width == 0:  # ASCII: its bytes are its UTF-8 (text outlives the call)
                self.data, self.size = address, len(text)
                return
            lib = _library()
            out = new("pulpie_rt_text_output")
            if lib.pulpie_rt_utf8_of_code_points(address, len(text), width,
                                                 ctypes.byref(out)) == _c("PULPIE_RT_DONE"):
                self.data = self._owned = out.ptr
                self.size = out.len
                return
        self.data = text.encode("utf-8", errors)
        self.size = len(self.data)

    def __enter__(self) -> tuple[int | bytes, int]:
        return self.data, self.size

    def __exit__(self, *exc_info: object) -> None:
        if self._owned is not None:
            _library().pulpie_rt_free(self._owned, self.size)
            self._owned = None


def _page_bytes(html: str) -> bytes:
    """``html`` as the core takes a page: UTF-8, a lone surrogate as the 3 bytes of its code
    point (``surrogatepass``; the core ignores it as selectolax did, and counts it as a
    character XML does not allow, as the specification does)."""
    try:
        return html.encode("utf-8")
    except UnicodeEncodeError:
        return html.encode("utf-8", "surrogatepass")


def _page_utf8(html: str) -> _Utf8:
    """``_page_bytes(html)`` for the length of a ``with`` (``_Utf8``: without a copy where
    CPython's layout allows; the same bytes, ``surrogatepass`` being ``strict`` where ``html``
    holds no lone surrogate)."""
    return _Utf8(html, "surrogatepass")


class PageText:
    """A page's text as the core takes text (``_page_bytes``: UTF-8) in ``data``, had without
    a ``str``: a JSONL line's HTML read by the core (``JsonStringMember``). Every door takes it
    as the ``str`` it encodes (text: no encoding to detect), not as page bytes. It holds its
    bytes rather than being a ``bytes`` subclass: making a subclass's object from a buffer
    zeroes it and copies the bytes twice (CPython's ``bytes_subtype_new``), 10% of the main
    thread of a ``pulpie-rt run`` of the dev pages."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def text(self) -> str:
        """The ``str`` these bytes encode."""
        return self.data.decode("utf-8", "surrogatepass")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PageText) and other.data == self.data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PageText({len(self.data)} bytes)"


# A new bytes object the core writes a JSONL page's text into: CPython's C API for building a
# bytes object (PyBytes_FromStringAndSize with no bytes: its memory not written; PyBytes_AsString:
# where its bytes are; _PyBytes_Resize: cut to the length written, before anyone else has the
# object); None where this interpreter has no C API to call (the text goes through a buffer).
_BYTES_API: list[tuple | None] = []


def _bytes_api() -> tuple | None:
    if not _BYTES_API:
        api = None
        try:
            # the object as a bare pointer, owned here until it is whole: a py_object would be
            # Python's, and a resize may move it
            api = (_python_function("PyBytes_FromStringAndSize", ctypes.c_void_p,
                                    ctypes.c_void_p, ctypes.c_ssize_t),
                   _python_function("PyBytes_AsString", ctypes.c_void_p, ctypes.c_void_p),
                   _python_function("_PyBytes_Resize", ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_void_p), ctypes.c_ssize_t),
                   _python_function("Py_DecRef", None, ctypes.c_void_p))
        except AttributeError:
            pass
        _BYTES_API.append(api)
    return _BYTES_API[0]


class JsonStringMember:
    """The string member ``name`` of JSON objects, one line after another, as the core reads
    it (``pulpie_rt_json_string_member``): the core writes each line's text straight into the
    bytes object its ``PageText`` holds, made as long as the line (the text is never longer)
    and cut to the text. There was a buffer kept here for every line, grown to the longest
    line, whose text was then copied into its bytes: ~30 ms of the main thread of a ``pulpie-rt
    run`` of the dev pages, in the copy, the page faults of each new object's memory and of
    the buffer's growth (``bytearray`` writes zeros over all of it), against ~48 ms for the
    core's reading. Where the interpreter has no C API to call (``_bytes_api``), the text goes
    through that buffer. One instance per reader (not shared by threads)."""

    def __init__(self, name: bytes) -> None:
        self.name = name
        self._lib = _library()
        self._done = _c("PULPIE_RT_DONE")
        self._span = (ctypes.c_size_t * 2)()
        self._length = ctypes.c_size_t()
        self._bytes = _bytes_api()
        self._buffer = bytearray()
        self._text = (ctypes.c_char * 0).from_buffer(self._buffer)

    def __call__(self, line: int, length: int) -> tuple[PageText, int, int] | None:
        """The member of the line of ``length`` bytes at address ``line`` (inside a reader's
        buffer): its text (``PageText``) and the byte span of its string token, quotes
        included; None where the line is to be read otherwise (not one object, the member
        missing, repeated or not a string, a lone surrogate escape: a JSON reader decides what
        it holds)."""
        if self._bytes is None:
            return self._through_buffer(line, length)
        new_bytes, data, resize, decref = self._bytes
        made = ctypes.c_void_p(new_bytes(None, length))  # raises MemoryError where it fails
        try:
            status = self._lib.pulpie_rt_json_string_member(
                line, length, self.name, len(self.name), self._span, data(made), length,
                ctypes.byref(self._length))
            if status != self._done:
                return None
            resize(ctypes.byref(made), self._length.value)  # on failure: freed, and raises
            text = ctypes.cast(made, ctypes.py_object).value  # Python's reference, beside ours
        finally:
            if made.value:
                decref(made)
        return PageText(text), self._span[0], self._span[1]

    def _through_buffer(self, line: int, length: int) -> tuple[PageText, int, int] | None:
        """``__call__`` by a buffer kept for every line, the text copied out of it."""
        if len(self._buffer) < length:
            size = max(length, 2 * len(self._buffer))
            self._text = None  # releases the old buffer's export
            self._buffer = bytearray(size)
            self._text = (ctypes.c_char * size).from_buffer(self._buffer)
        status = self._lib.pulpie_rt_json_string_member(
            line, length, self.name, len(self.name), self._span, self._text,
            len(self._buffer), ctypes.byref(self._length))
        if status != self._done:
            return None
        text = PageText(bytes(memoryview(self._buffer)[:self._length.value]))
        return text, self._span[0], self._span[1]


def _segmentation_flags(keep_hidden: bool, drop_noscript: bool) -> int:
    """The simplify flags' bits (``pulpie_rt_simplify_page_flags``' ``flags``,
    ``pulpie_rt_prepare_page``'s ``segmentation``)."""
    return ((_c("PULPIE_RT_SIMPLIFY_KEEP_HIDDEN") if keep_hidden else 0)
            | (_c("PULPIE_RT_SIMPLIFY_DROP_NOSCRIPT") if drop_noscript else 0))


def simplify_page(html: str, cutoff_length: int, keep_hidden: bool = False,
                  drop_noscript: bool = False,
                  via_serialization: bool = False) -> tuple[str, str]:
    """``(simplified_html, map_html)`` of the page ``html`` (``simplify.simplify``);
    ``keep_hidden``: without removing the elements the reference removes as hidden;
    ``drop_noscript``: without the ``noscript`` elements that hold no block;
    ``via_serialization``: the tree read through lexbor's serialization, not off lexbor's
    tree (the same outputs: for tests and benchmarks)."""
    lib = _library()
    out = new("pulpie_rt_simplify_output")
    flags = _segmentation_flags(keep_hidden, drop_noscript)
    if via_serialization:
        flags |= _c("PULPIE_RT_SIMPLIFY_VIA_SERIALIZATION")
    with _page_utf8(html) as (data, size):
        status = lib.pulpie_rt_simplify_page_flags(data, size, cutoff_length, flags,
                                                   ctypes.byref(out))
    _check(status, out.reason)
    simplified = _take(lib, out.simplified_ptr, out.simplified_len)
    map_html = _take(lib, out.map_ptr, out.map_len)
    return simplified, map_html


def decode_page(data: bytes, content_type: str | None) -> tuple[str, str, str]:
    """``(text, encoding, source)`` of page bytes (``stages.decode.decode``)."""
    lib = _library()
    header = None if content_type is None else content_type.encode("utf-8", "surrogateescape")
    out = new("pulpie_rt_decode_output")
    status = lib.pulpie_rt_decode(data, len(data), header, 0 if header is None else len(header),
                                  ctypes.byref(out))
    _check(status, out.reason)
    text = _take(lib, out.text_ptr, out.text_len)
    return text, out.encoding.decode("ascii"), out.source.decode("ascii")


def simplify_step(data: str | bytes, step: int) -> str:
    """One step of the stage on its own, for tests and benchmarks:

    - ``STEP_LEXBOR_HTML``: selectolax's ``LexborHTMLParser(data).html`` (bytes as they are,
      a str as selectolax encodes it);
    - ``STEP_LEXBOR_SERIALIZATION``: the specification's ``lexbor_serialization(page)`` (the
      raw page's rewrites, lexbor, the ``<?xml`` removal);
    - ``STEP_TREE``: ``serialize_html(parse_serialized(data))`` of a serialization;
    - ``STEP_TREE_SOURCE``: how simplify has that tree of the page ``data``: ``walk`` (off
      lexbor's tree) or ``serialization`` (the walk gave up);
    - ``STEP_FEATURES_TREE``: how the block features of the page ``data`` read ``map_html``'s
      tree: ``same`` (off the tree simplify wrote it from, every value bitwise that of
      ``map_html`` read back), ``map_html`` (read back) or where the two differ;
    - ``STEP_RECONSTRUCT_TREE``: how reconstruct reads ``map_html``'s tree: ``same`` (off the
      tree simplify wrote it from: the nodes libxml2 reads ``map_html`` as, and the same main
      HTML for several labellings), ``map_html`` (parsed) or where the two differ.
    """
    lib = _library()
    if isinstance(data, str):
        if step == _c("PULPIE_RT_STEP_LEXBOR_HTML"):
            data = data.encode("utf-8", "ignore")
        elif step in (_c("PULPIE_RT_STEP_LEXBOR_SERIALIZATION"), _c("PULPIE_RT_STEP_TREE_SOURCE"),
                      _c("PULPIE_RT_STEP_FEATURES_TREE"), _c("PULPIE_RT_STEP_RECONSTRUCT_TREE")):
            data = _page_bytes(data)
        else:
            data = data.encode("utf-8")
    out = new("pulpie_rt_text_output")
    status = lib.pulpie_rt_simplify_step(data, len(data), step, ctypes.byref(out))
    _check(status, out.reason)
    return _take(lib, out.ptr, out.len)


def _main_ids(labels: dict[str, str]) -> bytes:
    """The ids labelled main as the core takes them, each ended by a NUL. An id that is not a
    str, or holds a NUL or a lone surrogate, matches no _item_id value of libxml2's tree (it
    never holds those), so it is left out."""
    ids = []
    for item_id, label in labels.items():
        if label == "main" and isinstance(item_id, str) and "\0" not in item_id:
            try:
                ids.append(item_id.encode("utf-8") + b"\0")
            except UnicodeEncodeError:
                continue
    return b"".join(ids)


def extract_main_html(map_html: str, labels: dict[str, str]) -> str:
    """``reconstruct.extract_main_html`` of a non-empty ``map_html``."""
    lib = _library()
    stored = _str_storage(map_html)
    if stored is not None and stored[1]:
        # its code points, encoded by the core in the same call: no UTF-8 handed back and forth
        # and validated again (~3% of the stage); a surrogate is encoded below, which raises
        joined = _main_ids(labels)
        out = new("pulpie_rt_text_output")
        status = lib.pulpie_rt_reconstruct_code_points(stored[0], len(map_html), stored[1], joined,
                                                       len(joined), ctypes.byref(out))
        if status != _c("PULPIE_RT_FAILED"):
            _check(status, out.reason)
            return _take(lib, out.ptr, out.len)
    try:
        utf8 = _Utf8(map_html)
    except UnicodeEncodeError as exc:
        raise CoreError(f"map_html is not UTF-8-encodable ({exc.reason})") from exc
    joined = _main_ids(labels)
    out = new("pulpie_rt_text_output")
    with utf8 as (data, size):
        status = lib.pulpie_rt_reconstruct(data, size, joined, len(joined), ctypes.byref(out))
    _check(status, out.reason)
    return _take(lib, out.ptr, out.len)


# ---------------------------------------------------------------- tokenizer


class TokenizerLoadError(ValueError):
    """A ``tokenizer.json`` the core cannot load: unreadable, not JSON, or a configuration it
    does not support (the message names it)."""


class CoreTokenizer:
    """The compiled core's byte-level BPE tokenizer (``core/src/tokenizer``): the ids of
    ``tokenizers.Tokenizer.encode_batch_fast(texts, add_special_tokens=False)``.

    Immutable once loaded: threads may share one (each call releases the GIL)."""

    def __init__(self, path: str | Path, ensure_specials: tuple[str, ...] = ()) -> None:
        """From a ``tokenizer.json`` file; each of ``ensure_specials`` is added as a special
        token where the tokenizer has no token of that content."""
        lib = _library()
        self._lib = lib
        self._handle = None
        path_bytes = os.fsencode(path)
        specials = "\n".join(ensure_specials).encode("utf-8")
        out = new("pulpie_rt_tokenizer_load_output")
        status = lib.pulpie_rt_tokenizer_load(None, 0, path_bytes, len(path_bytes), specials,
                                              len(specials), ctypes.byref(out))
        if status != _c("PULPIE_RT_DONE"):
            message = _take(lib, out.error_ptr, out.error_len)
            raise TokenizerLoadError(f"{path}: {message}")
        self._handle = out.handle

    def __del__(self) -> None:
        if getattr(self, "_handle", None):
            self._lib.pulpie_rt_tokenizer_free(self._handle)
            self._handle = None

    def token_to_id(self, token: str) -> int | None:
        """The id of ``token`` (an added token's, else the vocabulary's), or None."""
        data = token.encode("utf-8")
        found = self._lib.pulpie_rt_tokenizer_token_to_id(self._handle, data, len(data))
        return None if found < 0 else found

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        """How many tokens there are, as ``tokenizers.Tokenizer.get_vocab_size`` counts them."""
        return self._lib.pulpie_rt_tokenizer_vocab_size(self._handle, with_added_tokens)

    def encode(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, no special tokens added, in one call.

        A text holding a lone surrogate cannot be UTF-8 and raises ``UnicodeEncodeError``,
        as ``tokenizers`` does (its Rust strings cannot hold one either)."""
        if not texts:
            return []
        encoded = [text.encode("utf-8") for text in texts]
        ends = (ctypes.c_uint64 * len(encoded))(*itertools.accumulate(map(len, encoded)))
        data = b"".join(encoded)
        out = new("pulpie_rt_token_ids_output")
        status = self._lib.pulpie_rt_tokenizer_encode(self._handle, data, len(data), ends,
                                                      len(encoded), ctypes.byref(out))
        if status != _c("PULPIE_RT_DONE"):
            reason = out.reason.decode("utf-8", "replace") if out.reason else ""
            raise RuntimeError(f"core tokenizer failed (status {status}): {reason}")
        try:
            # the buffer: each text's end, then all ids (see lib.rs, TokenIdsOutput)
            flat = memoryview((ctypes.c_uint32 * out.len).from_address(out.ptr))
            flat = flat.cast("B").cast("I")
            n = len(texts)
            ids, start = [], n
            for end in flat[:n].tolist():
                ids.append(flat[start:n + end].tolist())
                start = n + end
            return ids
        finally:
            flat = None  # no view may outlive the buffer
            self._lib.pulpie_rt_free_u32(out.ptr, out.len)
# ── Markdown and plain text ───────────────────────────────────────────────────────────────

# the exceptions the Markdown specification can raise (html.parser, int(), html2text asserts)
_SPEC_EXCEPTIONS = {"AssertionError": AssertionError, "ValueError": ValueError}


class SpecificationRaises(Exception):
    """The core's answer where the Python specification raises for an input: ``exception``
    is the exception it raises (same type and message)."""

    def __init__(self, exception: Exception) -> None:
        super().__init__(str(exception))
        self.exception = exception


def _text_call(name: str, html: str, *args: int) -> str:
    """``name``'s result for ``html`` (any str: lone surrogates travel as ``surrogatepass``
    writes them) and ``args``; ``SpecificationRaises`` where the specification raises,
    ``CoreError`` where the core failed (a caught panic)."""
    lib = _library()
    function = getattr(lib, name)
    out = new("pulpie_rt_text_output")
    with _page_utf8(html) as (data, size):
        status = function(data, size, *args, ctypes.byref(out))
    if status == _c("PULPIE_RT_DONE"):
        try:
            return _decode_utf8(out.ptr, out.len, b"surrogatepass") if out.len else ""
        finally:
            lib.pulpie_rt_free(out.ptr, out.len)
    if status == _c("PULPIE_RT_SPEC_RAISES"):
        kind, _, message = (out.reason or b"").decode("utf-8", "replace").partition(": ")
        raise SpecificationRaises(_SPEC_EXCEPTIONS.get(kind, RuntimeError)(message)
                                  if message else _SPEC_EXCEPTIONS.get(kind, RuntimeError)())
    why = out.reason.decode("utf-8", "replace") if out.reason else f"status {status}"
    raise CoreError(f"the compiled core failed on this input: {why}")


def markdown(html: str) -> str:
    """``markdown.to_markdown`` on the compiled core. Raises ``SpecificationRaises`` where the
    specification raises, ``CoreError`` where the core failed."""
    return _text_call("pulpie_rt_markdown", html)


def text(html: str) -> str:
    """``markdown.to_text`` on the compiled core; ``CoreError`` where the core failed."""
    return _text_call("pulpie_rt_text", html)


def prune(html: str, drop: int) -> str:
    """Main-content HTML without what ``drop`` (``PULPIE_RT_DROP_*`` bits) names
    (``core/src/prune.rs``); ``CoreError`` where the core failed."""
    return _text_call("pulpie_rt_prune", html, drop)


# ---------------------------------------------------------------- block features


def _encoded_id(item_id: str | None) -> bytes | None:
    """An id as the core takes it, or None for one that matches no ``_item_id`` of
    ``map_html``: not a str, holding a lone surrogate (no UTF-8 for it), or holding a NUL
    (lexbor, the specification's parser, never leaves one in an attribute value; libxml2's
    tree marks a valueless attribute with one, ``tree::VALUELESS``)."""
    if not isinstance(item_id, str) or "\0" in item_id:
        return None
    try:
        return item_id.encode("utf-8")
    except UnicodeEncodeError:
        return None


def _joined_ids(item_ids: list[str | None]) -> tuple[bytes, ctypes.Array]:
    """The ids as the core takes them: joined, and each one's byte length
    (``PULPIE_RT_NO_ID``)."""
    encoded = [_encoded_id(i) for i in item_ids]
    ids = b"".join(e for e in encoded if e is not None)
    no_id = _c("PULPIE_RT_NO_ID")
    lens = (ctypes.c_size_t * len(encoded))(*(no_id if e is None else len(e) for e in encoded))
    return ids, lens


def block_features(map_html: str, item_ids: list[str | None],
                   libxml2_tree: bool = False, extras: bool = False,
                   containers: bool = False, dialogs: bool = False,
                   rails: bool = False, teasers: bool = False) -> np.ndarray:
    """``features.block_features`` on the compiled core: one float32 row of
    ``features.FEATURE_NAMES`` per id (zeros for ids ``map_html`` does not hold, and for
    None), followed by ``features.EXTRA_NAMES`` when ``extras`` (layout ``blocks-v2``), by
    those and ``features.CONTAINER_NAMES`` when ``containers`` (layout ``blocks-v3``), by
    all those and ``features.DIALOG_NAMES`` when ``dialogs`` (layout ``blocks-v4``), and by all
    those and ``features.RAIL_NAMES`` when ``rails`` (layout ``blocks-v5``), and by all those
    and ``features.TEASER_NAMES`` when ``teasers`` (layout ``blocks-v6``).
    ``CoreError`` where the core fails on the page.

    ``libxml2_tree``: read libxml2's tree of ``map_html`` as it is, not as the HTML DOM sees
    it (template content, HTML-only void elements; see core/src/features): for measurements.
    """
    import numpy as np
    lib = _library()
    # lone surrogates (no UTF-8 for them) are dropped, as the specification's parser drops
    # them (selectolax encodes with errors="ignore")
    data = map_html.encode("utf-8", "ignore")
    ids, lens = _joined_ids(item_ids)
    out = new("pulpie_rt_features_output")
    status = lib.pulpie_rt_block_features(data, len(data), ids, len(ids), lens, len(lens),
                                          (_c("PULPIE_RT_FEATURES_LIBXML2_TREE") if libxml2_tree
                                           else 0)
                                          | (_c("PULPIE_RT_FEATURES_EXTRAS") if extras else 0)
                                          | (_c("PULPIE_RT_FEATURES_CONTAINERS") if containers
                                             else 0)
                                          | (_c("PULPIE_RT_FEATURES_DIALOGS") if dialogs else 0)
                                          | (_c("PULPIE_RT_FEATURES_RAILS") if rails else 0)
                                          | (_c("PULPIE_RT_FEATURES_TEASERS") if teasers
                                             else 0),
                                          ctypes.byref(out))
    _check(status, out.reason)
    return _take_into(lib, out.ptr, out.len, np.empty((out.rows, out.cols), np.float32))


def hidden_blocks(map_html: str, item_ids: list[str | None]) -> np.ndarray:
    """One uint8 per id (``core/src/simplify.rs``' ``hidden_blocks``): 1 when the element
    carrying the id in ``map_html`` (for a ``cc-alg-uc-text`` run wrapper: its parent) or one
    of its ancestors is one the reference's segmentation removes as hidden (inline
    ``display:none``, ``opacity:0`` …, a closed ``<details>``' content, a ``nav`` child of
    ``<body>``): a block that exists only when the page is segmented with
    ``keep_hidden``. 0 for ids ``map_html`` does not hold, and for None. ``CoreError`` where
    the core fails on the page."""
    import numpy as np
    lib = _library()
    data = map_html.encode("utf-8", "ignore")
    ids, lens = _joined_ids(item_ids)
    out = new("pulpie_rt_text_output")
    status = lib.pulpie_rt_hidden_blocks(data, len(data), ids, len(ids), lens, len(lens),
                                         ctypes.byref(out))
    _check(status, out.reason)
    return _take_into(lib, out.ptr, out.len, np.zeros(len(item_ids), np.uint8))


# ── batching, the block rescorer and label decoding (core/src/ort, core/src/engine) ───────
# The Python page flow runs these stages on the same core functions as the C library's engine:
# one implementation of each (specifications in tests/spec/).

ORT_LIBRARY_ENV = "PULPIE_RT_ORT_LIB"


def _message_call(function, *args) -> tuple[int, str]:
    """Call a core function that reports failures in a trailing ``pulpie_rt_message``: its
    status and message (empty when it succeeded)."""
    message = new("pulpie_rt_message")
    status = function(*args, ctypes.byref(message))
    if status == _c("PULPIE_RT_DONE"):
        return status, ""
    text = _take(_library(), message.ptr, message.len) if message.ptr else f"status {status}"
    return status, text


def _engine_call(function, *args) -> None:
    """Call a core function that reports failures in a trailing ``pulpie_rt_message``;
    ``CoreError`` with its message when it fails."""
    status, text = _message_call(function, *args)
    if status != _c("PULPIE_RT_DONE"):
        raise CoreError(text)


def _u64s(values) -> np.ndarray:
    import numpy as np
    return np.ascontiguousarray(values, dtype=np.uint64)


def _take_u64s(lib: ctypes.CDLL, ptr: int | None, length: int) -> np.ndarray:
    import numpy as np
    try:
        return _array(ptr, length, ctypes.c_uint64, np.uint64)
    finally:
        lib.pulpie_rt_ort_free_u64s(ptr, length)


def plan_batches(lengths: list[int], max_batch_tokens: int,
                 buckets: list[tuple[int, int | None]] | None,
                 max_batch_attention: int | None, padded: bool
                 ) -> list[tuple[np.ndarray, int, int | None]]:
    """The one batcher (``core/src/ort/batches.rs``, ``batches.make_batches``'s rules) over
    item lengths: per batch the item indices in row order, and its bucket as ``(max_length,
    max_rows)`` (``buckets`` None: the default ones)."""
    lib = _library()
    lengths_array = _u64s(lengths)
    bucket_lengths = _u64s([b for b, _ in buckets or []])
    bucket_rows = _u64s([r or 0 for _, r in buckets or []])
    out = new("pulpie_rt_batches")
    _engine_call(lib.pulpie_rt_ort_make_batches, lengths_array.ctypes.data, len(lengths_array),
                 max(int(max_batch_tokens), 0),
                 0 if max_batch_attention is None else max(int(max_batch_attention), 1),
                 1 if buckets is None else 0, bucket_lengths.ctypes.data,
                 bucket_rows.ctypes.data, len(bucket_lengths), 1 if padded else 0,
                 ctypes.byref(out))
    order = _take_u64s(lib, out.order_ptr, out.order_len)
    ends = _take_u64s(lib, out.ends_ptr, out.batches)
    sizes = _take_u64s(lib, out.bucket_lengths_ptr, out.batches)
    caps = _take_u64s(lib, out.bucket_rows_ptr, out.batches)
    plans, start = [], 0
    for end, size, cap in zip(ends.tolist(), sizes.tolist(), caps.tolist(), strict=True):
        plans.append((order[start:end], size, cap or None))
        start = end
    return plans


# ONNX Runtime's CPU library that the wheel ships beside the core (setup.py, from the release
# pinned in tools/ort_library.py); the distributions whose own library comes before it (a GPU
# build: `pip install 'pulpie-rt[gpu]'`) and after it (a source build without it).
VENDORED_ORT_LIBRARY = _HERE / "libonnxruntime.so.1"
PREFERRED_ORT_DISTRIBUTIONS = ("onnxruntime-gpu",)
FALLBACK_ORT_DISTRIBUTIONS = ("onnxruntime",)


def _has_distribution_folder(name: str) -> bool:
    """Whether a folder on ``sys.path`` holds a ``.dist-info`` or ``.egg-info`` folder of the
    distribution ``name`` (its name compared as PEP 503 normalizes it): the folders an
    installer writes and ``importlib.metadata`` finds a distribution by."""
    wanted = re.sub(r"[-_.]+", "_", name).lower()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # not a folder (a zip file), or gone
            continue
        for folder in names:
            stem, dot, suffix = folder.rpartition(".")
            if dot and suffix in ("dist-info", "egg-info") and \
                    re.sub(r"[-_.]+", "_", stem.partition("-")[0]).lower() == wanted:
                return True
    return False


def _distribution_ort_library(name: str) -> Path | None:
    """The C library an installed ONNX Runtime distribution holds, found from its file list
    (the package is never imported: importing it loads its own copy of ONNX Runtime). Where
    no ``onnxruntime`` package can be found (both distributions install it), or no folder on
    ``sys.path`` has the distribution's metadata, none is looked up: importing
    ``importlib.metadata`` alone costs a ``pulpie-rt`` process ~10 ms, and asking it for a
    distribution that is not installed ~15 ms more (an environment with the CPU
    ``onnxruntime``, none with ``onnxruntime-gpu``, paid both at every start)."""
    from importlib.util import find_spec

    if find_spec("onnxruntime") is None or not _has_distribution_folder(name):
        return None
    from importlib import metadata

    try:
        files = metadata.distribution(name).files or []
    except metadata.PackageNotFoundError:
        return None
    found = sorted(Path(str(file.locate())) for file in files
                   if re.fullmatch(r"onnxruntime/capi/libonnxruntime\.so(\.\d+)*", str(file)))
    found = [path for path in found if path.is_file()]
    return found[-1] if found else None


def ort_library_path() -> Path | None:
    """The ONNX Runtime C library the core loads: ``$PULPIE_RT_ORT_LIB``; else an installed
    onnxruntime-gpu's; else the CPU library shipped beside the core; else an installed
    onnxruntime's; None without any."""
    explicit = os.environ.get(ORT_LIBRARY_ENV)
    if explicit:
        return Path(explicit)
    for name in PREFERRED_ORT_DISTRIBUTIONS:
        found = _distribution_ort_library(name)
        if found is not None:
            return found
    if VENDORED_ORT_LIBRARY.is_file():
        return VENDORED_ORT_LIBRARY
    for name in FALLBACK_ORT_DISTRIBUTIONS:
        found = _distribution_ort_library(name)
        if found is not None:
            return found
    return None


_ORT_CACHE: list[int] = []  # the core's ONNX Runtime handle, loaded once per process


def _ort_handle() -> int:
    if _ORT_CACHE:
        return _ORT_CACHE[0]
    path = ort_library_path()
    if path is None:
        raise CoreError("no ONNX Runtime C library: none beside the core (reinstall pulpie-rt), "
                        "no onnxruntime-gpu or onnxruntime installed, and "
                        f"{ORT_LIBRARY_ENV} not set to a libonnxruntime.so")
    lib = _library()
    handle = ctypes.c_void_p()
    data = os.fsencode(path)
    _engine_call(lib.pulpie_rt_ort_load, data, len(data), ctypes.byref(handle))
    _ORT_CACHE.append(handle.value)
    return handle.value


def _trees(function, handle: int) -> str:
    """What runs a core rescorer's trees (``pulpie_rt_ort_*rescorer_trees``)."""
    lib = _library()
    message = new("pulpie_rt_message")
    status = function(handle, ctypes.byref(message))
    text = _take(lib, message.ptr, message.len) if message.ptr else ""
    if status != _c("PULPIE_RT_DONE"):
        raise CoreError(text or f"status {status}")
    return text


class CoreRescorer:
    """The core's block rescorer (``core/src/ort/rescorer.rs``) over one ``rescorer.onnx``:
    its trees on the tree kernel (``kernels/``) or, when the kernel cannot run them or
    ``PULPIE_RT_TREES=onnxruntime``, one ONNX Runtime session (CPU); shared by threads (each
    call releases the GIL)."""

    def __init__(self, onnx_path: str | Path, margin_weight: float) -> None:
        lib = _library()
        self._lib = lib
        self.handle = None
        data = os.fsencode(onnx_path)
        handle = ctypes.c_void_p()
        _engine_call(lib.pulpie_rt_ort_rescorer_open, _ort_handle(), data, len(data), 0,
                     float(margin_weight), ctypes.byref(handle))
        self.handle = handle.value

    @property
    def trees(self) -> str:
        """What runs the trees: ``"kernel"``, or ``"onnxruntime (why)"``."""
        return _trees(self._lib.pulpie_rt_ort_rescorer_trees, self.handle)

    def __del__(self) -> None:
        if getattr(self, "handle", None):
            self._lib.pulpie_rt_ort_rescorer_free(self.handle)
            self.handle = None

    def run(self, features: np.ndarray, margins: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(probabilities [rows, 2], log_odds, scores)`` of ``features`` ``[rows, columns]``
        and one margin per row."""
        import numpy as np
        features = np.ascontiguousarray(features, np.float32)
        rows = len(features)
        columns = features.shape[1] if features.ndim == 2 else 0
        margins = np.ascontiguousarray(margins, np.float32)
        if len(margins) != rows:
            raise CoreError(f"{len(margins)} margins for {rows} blocks")
        probabilities = np.empty((rows, 2), np.float32)
        log_odds = np.empty(rows, np.float32)
        scores = np.empty(rows, np.float32)
        _engine_call(self._lib.pulpie_rt_ort_rescorer_run, self.handle, features.ctypes.data,
                     rows, columns, margins.ctypes.data, probabilities.ctypes.data,
                     log_odds.ctypes.data, scores.ctypes.data)
        return probabilities, log_odds, scores


class CoreContextRescorer:
    """The core's rescorer over blocks in context (``core/src/ort/rescorer.rs``'
    ``ContextRescorer``, the C library's ``fast`` profile too): the context features, the
    first stage's file (when given), the stage features and the last stage's file, each
    stage's trees as ``CoreRescorer`` runs them; shared by threads."""

    def __init__(self, onnx_path: str | Path, first_stage: str | Path | None = None) -> None:
        lib = _library()
        self._lib = lib
        self.handle = None
        data = os.fsencode(onnx_path)
        first = b"" if first_stage is None else os.fsencode(first_stage)
        handle = ctypes.c_void_p()
        _engine_call(lib.pulpie_rt_ort_context_rescorer_open, _ort_handle(), data, len(data),
                     first or None, len(first), ctypes.byref(handle))
        self.handle = handle.value

    @property
    def trees(self) -> list[str]:
        """What runs each stage's trees, the first stage first: ``"kernel"``, or
        ``"onnxruntime (why)"``."""
        return _trees(self._lib.pulpie_rt_ort_context_rescorer_trees, self.handle).split("\n")

    def __del__(self) -> None:
        if getattr(self, "handle", None):
            self._lib.pulpie_rt_ort_context_rescorer_free(self.handle)
            self.handle = None

    def log_odds(self, features: np.ndarray) -> np.ndarray:
        """The log-odds of "main" (float32) per row of one page's ``blocks-v3`` rows, in
        block order. ``CoreError`` with the core's message when it fails (rows of another
        width: ``context_features``' message)."""
        import numpy as np
        rows = _rows(features)
        out = np.empty(len(rows), np.float32)
        _engine_call(self._lib.pulpie_rt_ort_context_rescorer_log_odds, self.handle,
                     rows.ctypes.data, rows.shape[0], rows.shape[1], out.ctypes.data)
        return out


class DecodeError(ValueError):
    """A page the label decoding failed on; the message is the page's ``"rescore: …"``."""


def decide_blocks(n_blocks: int, chunk_blocks: list[list[int]], chunk_outputs: list[np.ndarray],
                  *, rescorer: CoreRescorer | None = None, features: np.ndarray | None = None,
                  n_classified: int | None = None, **decoding) -> list[int]:
    """One page's block predictions from its chunks' SEP outputs
    (``core/src/engine/decode.rs``' ``decide_blocks``): ``chunk_outputs[c]`` holds chunk
    ``c``'s ``[n_sep, labels]`` logits, or (1-D) its margins; ``rescorer``'s scores over
    ``features`` when given; blocks past ``n_classified`` other.

    ``decoding``: the fields of ``pulpie_rt_decoding`` (``pulpie_rt_internal.h``, the bundle's
    decoding) by name, each left out off: ``margins`` (False: the argmax at each SEP; True: by
    margins), ``threshold`` (main above it; None: none), ``keep_best``, ``expected_f1`` (the
    blocks of the best expected word F1, weighing each by the ``words`` column of
    ``features``), ``container_prior`` (``(share, shift)``: the scores outside the page's
    dominant container lowered by ``shift``, from the container columns of ``features``),
    ``story_prior`` (``(share, shift)``: before it, the linked blocks outside the container of
    the page's expected main prose lowered by ``shift``, ``decode.rs``' ``story_prior``),
    ``short_story`` (``(words, shift, prose_shift)``: with the story prior, where the story's
    container expects fewer than ``words`` main prose words, the linked blocks outside it
    lowered by ``shift`` instead and the prose outside it by ``prose_shift``),
    ``continue_story`` (a main prose block's story goes on through the later prose blocks
    whose parent or grandparent is its parent). A name the header lacks is a ``TypeError``.
    ``DecodeError`` with the page's ``"rescore: …"`` message when it fails."""
    import numpy as np
    lib = _library()
    settings = new("pulpie_rt_decoding", **decoding)
    outputs = [np.asarray(o, dtype=np.float32) for o in chunk_outputs]
    kinds = {o.ndim for o in outputs}
    if len(kinds) > 1 or kinds - {1, 2}:
        raise CoreError("SEP outputs must be all 2-D logits or all 1-D margins")
    margins = kinds == {1}
    labels = 0 if margins else max((o.shape[1] for o in outputs), default=0)
    if not margins and any(o.shape[1] != labels for o in outputs if len(o)):
        raise CoreError("chunks give different numbers of labels")
    values = (np.concatenate([o.reshape(-1) for o in outputs]) if outputs
              else np.zeros(0, np.float32))
    value_ends = _u64s(np.cumsum([o.size for o in outputs], dtype=np.int64))
    blocks = _u64s([b for indices in chunk_blocks for b in indices])
    block_ends = _u64s(np.cumsum([len(indices) for indices in chunk_blocks], dtype=np.int64))
    if len(block_ends) != len(value_ends):
        raise CoreError(f"{len(chunk_blocks)} chunks of blocks, {len(outputs)} of SEP outputs")
    if features is not None:
        features = np.ascontiguousarray(features, np.float32)
        if features.ndim != 2 or len(features) != n_blocks:
            raise DecodeError(f"rescore: ValueError: {len(features)} rows of block features "
                              f"for {n_blocks} blocks")
    page = new("pulpie_rt_sep_outputs", n_blocks=n_blocks, block_indices=blocks.ctypes.data,
               block_ends=block_ends.ctypes.data, n_chunks=len(block_ends),
               kind=_c("PULPIE_RT_OUTPUTS_MARGINS" if margins else "PULPIE_RT_OUTPUTS_LOGITS"),
               values=values.ctypes.data, value_ends=value_ends.ctypes.data, labels=labels,
               features=None if features is None else features.ctypes.data,
               n_features=0 if features is None else features.shape[1],
               n_classified=n_blocks if n_classified is None else n_classified)
    out = np.zeros(n_blocks, np.uint64)
    status, text = _message_call(lib.pulpie_rt_decide_blocks,
                                 None if rescorer is None else rescorer.handle,
                                 ctypes.byref(settings), ctypes.byref(page), out.ctypes.data)
    if status != _c("PULPIE_RT_DONE"):
        if status == _c("PULPIE_RT_FAILED") and text.startswith("rescore: "):
            raise DecodeError(text)
        raise CoreError(text)
    return out.tolist()


def _input_call(function, *args) -> None:
    """``_engine_call`` for a function whose ``PULPIE_RT_FAILED`` refuses its input:
    ``ValueError`` with the core's message as it is (a panic: ``CoreError``)."""
    status, text = _message_call(function, *args)
    if status != _c("PULPIE_RT_DONE"):
        raise (ValueError if status == _c("PULPIE_RT_FAILED") else CoreError)(text)


def _rows(features: np.ndarray) -> np.ndarray:
    import numpy as np
    features = np.ascontiguousarray(features, np.float32)
    if features.ndim != 2:
        raise ValueError(f"block features must be 2-D rows, not of shape {features.shape}")
    return features


def context_features(features: np.ndarray, width: int) -> np.ndarray:
    """``rescore.context_features`` on the compiled core (``core/src/features/context.rs``):
    one page's ``blocks-v3`` rows (or ``blocks-v4``, ``blocks-v5``) in, one row of ``width``
    (``N_CONTEXT``, ``N_CONTEXT_V5`` or ``N_CONTEXT_V6``) float32 columns per block out.
    ``ValueError`` with
    the core's message for rows of another width."""
    import numpy as np
    lib = _library()
    rows = _rows(features)
    out = np.empty((len(rows), width), np.float32)
    _input_call(lib.pulpie_rt_context_features, rows.ctypes.data, rows.shape[0], rows.shape[1],
                out.ctypes.data, out.size)
    return out


def stage_features(probabilities: np.ndarray, features: np.ndarray, width: int) -> np.ndarray:
    """``rescore.stage_features`` on the compiled core: the first stage's probabilities of one
    page (float64, one per block) and its ``blocks-v3`` (``blocks-v4``, ``blocks-v5``) rows in,
    ``width`` (``N_STAGE``) float32 columns per block out. ``ValueError`` with the core's
    message for rows of another width or count."""
    import numpy as np
    lib = _library()
    p = np.ascontiguousarray(probabilities, np.float64).reshape(-1)
    rows = _rows(features)
    out = np.empty((len(p), width), np.float32)
    _input_call(lib.pulpie_rt_stage_features, p.ctypes.data, len(p), rows.ctypes.data,
                rows.shape[0], rows.shape[1], out.ctypes.data, out.size)
    return out


class PageFailed(ValueError):
    """A page the core's page flow failed on; the message is the page's
    ``"<stage>: <reason>"``."""


FinishError = PageFailed  # what finish_page raises


def finish_page(map_html: str, labels: dict[str, str], whole_text: bool
                ) -> tuple[str, str, int]:
    """One page's main content once its labels are known (``core/src/engine/mod.rs``'
    ``finish_main``, or ``whole_text`` for a page without blocks: its visible text, one
    paragraph a line): ``(main HTML, Markdown, why the Markdown is empty)``, the last a
    ``PULPIE_RT_EMPTY_*`` code (``EMPTY_*`` here). ``FinishError`` with the page's
    ``"<stage>: <reason>"`` when it fails."""
    lib = _library()
    if whole_text:
        data = map_html.encode("utf-8", "surrogatepass")
    else:
        try:
            data = map_html.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise FinishError("reconstruct: ValueError: map_html is not UTF-8-encodable "
                              f"({exc.reason})") from exc
    joined = _main_ids(labels)
    any_main = "main" in labels.values()
    out = new("pulpie_rt_finish_output")
    status, text = _message_call(lib.pulpie_rt_finish_page, data, len(data), joined,
                                 len(joined), whole_text, any_main, ctypes.byref(out))
    if status != _c("PULPIE_RT_DONE"):
        raise (FinishError if status == _c("PULPIE_RT_FAILED") else CoreError)(text)
    html = _take(lib, out.html_ptr, out.html_len)
    markdown = _take(lib, out.markdown_ptr, out.markdown_len)
    return html, markdown, out.empty_reason


def _array(ptr: int | None, length: int, ctype, dtype) -> np.ndarray:
    """A copy of ``length`` values at ``ptr``."""
    import numpy as np
    if not length:
        return np.zeros(0, dtype)
    return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctype)), (length,)).copy()


class PreparedCore:
    """What ``prepare_page`` gives: the blocks' ids, each chunk's token ids and block indices,
    ``map_html``, the block features (None unless asked for), what the limits cut (None:
    nothing) and how many blocks the chunks hold."""

    __slots__ = ("item_ids", "chunk_token_ids", "chunk_blocks", "map_html", "features",
                 "truncated", "n_classified")

    def __init__(self, item_ids, chunk_token_ids, chunk_blocks, map_html, features, truncated,
                 n_classified):
        self.item_ids: list[str | None] = item_ids
        self.chunk_token_ids: list[list[int]] = chunk_token_ids
        self.chunk_blocks: list[list[int]] = chunk_blocks
        self.map_html: str = map_html
        self.features: np.ndarray | None = features
        self.truncated: str | None = truncated
        self.n_classified: int = n_classified


def prepare_page(tokenizer: CoreTokenizer | None, html: str, max_input_bytes: int | None,
                 max_page_tokens: int | None, cutoff_length: int, max_tokens: int,
                 sep_id: int, bos_id: int | None, eos_id: int | None,
                 with_features: bool, keep_hidden: bool = False, extras: bool = False,
                 containers: bool = False, drop_noscript: bool = False,
                 dialogs: bool = False, rails: bool = False,
                 teasers: bool = False) -> PreparedCore:
    """``Preparer.prepare`` of a page's text on the compiled core
    (``core/src/engine/mod.rs``' ``prepare_text``, the C library's): cut to
    ``max_input_bytes``, simplified, split into blocks, tokenized with ``tokenizer`` (None: no
    tokens, no chunks), packed into chunks of ``max_tokens`` cut to ``max_page_tokens``, block
    features when ``with_features`` (with the extras, layout ``blocks-v2``, when ``extras``;
    with the extras and the containers, ``blocks-v3``, when ``containers``; with those and the
    dialog columns, ``blocks-v4``, when ``dialogs``; with those and the rail columns,
    ``blocks-v5``, when ``rails``; with those and the teaser columns, ``blocks-v6``, when
    ``teasers``);
    ``keep_hidden``, ``drop_noscript``: segmented without removing hidden elements, without
    the ``noscript`` elements that hold no block (``simplify_page``; the core takes both as one
    bitmask). A lone surrogate in ``html`` travels as ``surrogatepass`` writes it (the
    simplify stage ignores it, as the specification's parser does).
    ``PageFailed`` with the page's ``"<stage>: <reason>"`` when it fails."""
    import numpy as np
    lib = _library()
    options = new("pulpie_rt_prepare_options",
                  max_input_bytes=-1 if max_input_bytes is None else max(int(max_input_bytes), 0),
                  max_page_tokens=-1 if max_page_tokens is None else max(int(max_page_tokens), 0),
                  cutoff_length=cutoff_length, max_tokens=max_tokens, sep_id=sep_id,
                  bos_id=-1 if bos_id is None else bos_id,
                  eos_id=-1 if eos_id is None else eos_id,
                  features=_c("PULPIE_RT_LAYOUT_BLOCKS_V6" if teasers
                              else "PULPIE_RT_LAYOUT_BLOCKS_V5" if rails
                              else "PULPIE_RT_LAYOUT_BLOCKS_V4" if dialogs
                              else "PULPIE_RT_LAYOUT_BLOCKS_V3" if containers
                              else "PULPIE_RT_LAYOUT_BLOCKS_V2" if extras
                              else "PULPIE_RT_LAYOUT_BLOCKS_V1") if with_features
                  else _c("PULPIE_RT_LAYOUT_NONE"),
                  segmentation=_segmentation_flags(keep_hidden, drop_noscript))
    out = new("pulpie_rt_prepare_output")
    with _page_utf8(html) as (data, size):
        status, text = _message_call(lib.pulpie_rt_prepare_page,
                                     None if tokenizer is None else tokenizer._handle, data,
                                     size, ctypes.byref(options), ctypes.byref(out))
    if status != _c("PULPIE_RT_DONE"):
        raise (PageFailed if status == _c("PULPIE_RT_FAILED") else CoreError)(text)
    try:
        ids = ctypes.string_at(out.ids_ptr, out.ids_len) if out.ids_len else b""
        item_ids: list[str | None] = []
        start = 0
        no_id = _c("PULPIE_RT_NO_ID")
        for length in _array(out.id_lens_ptr, out.n_blocks, ctypes.c_uint64, np.uint64).tolist():
            if length == no_id:
                item_ids.append(None)
            else:
                item_ids.append(ids[start:start + length].decode("utf-8"))
                start += length
        token_ids = _array(out.token_ids_ptr, out.token_ids_len, ctypes.c_int64, np.int64)
        token_ends = _array(out.token_ends_ptr, out.n_chunks, ctypes.c_uint64, np.uint64)
        blocks = _array(out.block_indices_ptr, out.block_indices_len, ctypes.c_uint64, np.uint64)
        block_ends = _array(out.block_ends_ptr, out.n_chunks, ctypes.c_uint64, np.uint64)
        chunk_token_ids, chunk_blocks = [], []
        token_start = block_start = 0
        for token_end, block_end in zip(token_ends.tolist(), block_ends.tolist(), strict=True):
            chunk_token_ids.append(token_ids[token_start:token_end].tolist())
            chunk_blocks.append(blocks[block_start:block_end].tolist())
            token_start, block_start = token_end, block_end
        map_html = _decode_utf8(out.map_ptr, out.map_len, None) if out.map_len else ""
        features = None
        if out.features_ptr:
            features = _array(out.features_ptr, out.features_len, ctypes.c_float, np.float32)
            features = features.reshape(out.n_blocks, out.n_features)
        truncated = (ctypes.string_at(out.truncated_ptr, out.truncated_len).decode("utf-8")
                     if out.truncated_ptr else None)
        return PreparedCore(item_ids, chunk_token_ids, chunk_blocks, map_html, features,
                            truncated, out.n_classified)
    finally:
        lib.pulpie_rt_prepare_free(ctypes.byref(out))


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def extract_blocks(simplified_html: str) -> tuple[list[str], list[str | None]]:
    """``blocks.extract_blocks`` on the compiled core (``core/src/engine/prepare.rs``)."""
    lib = _library()
    try:
        data = simplified_html.encode("utf-8")
        core_data = data
    except UnicodeEncodeError:
        # lone surrogates: the core reads each as U+FFFD (3 bytes too, and like a surrogate
        # neither "<", whitespace nor a digit), the blocks are cut from the page as it is
        data = simplified_html.encode("utf-8", "surrogatepass")
        core_data = _SURROGATE_RE.sub("\ufffd", simplified_html).encode("utf-8")
    spans_ptr = ctypes.c_void_p()
    n_blocks = ctypes.c_size_t()
    _engine_call(lib.pulpie_rt_extract_blocks, core_data, len(core_data),
                 ctypes.byref(spans_ptr), ctypes.byref(n_blocks))
    spans = _take_u64s(lib, spans_ptr.value, 4 * n_blocks.value).tolist()
    blocks: list[str] = []
    item_ids: list[str | None] = []
    no_id = _c("PULPIE_RT_NO_ID")
    for index in range(0, len(spans), 4):
        start, end, id_start, id_end = spans[index:index + 4]
        blocks.append(data[start:end].decode("utf-8", "surrogatepass"))
        item_ids.append(None if id_start == no_id else data[id_start:id_end].decode("utf-8"))
    return blocks, item_ids


def pack_chunks(block_token_ids: list[list[int]], max_tokens: int, sep_id: int,
                bos_id: int | None, eos_id: int | None) -> tuple[list[list[int]], list[list[int]]]:
    """``chunks.pack_chunks`` on the compiled core (``core/src/engine/prepare.rs``): each
    chunk's token ids and block indices."""
    import numpy as np
    if max_tokens < 0:
        raise ValueError(f"max_tokens must not be negative, not {max_tokens}")
    lib = _library()
    lengths = np.fromiter((len(ids) for ids in block_token_ids), np.uint64,
                          len(block_token_ids))
    ends = np.cumsum(lengths, dtype=np.uint64)
    ids = (np.fromiter(itertools.chain.from_iterable(block_token_ids), np.int64,
                       int(ends[-1]) if len(ends) else 0))
    if len(ids) and (ids.min() < 0 or ids.max() > 0xFFFFFFFF):
        raise ValueError("token ids must be in [0, 2**32)")
    ids = ids.astype(np.uint32)
    out = new("pulpie_rt_prepare_output")
    _engine_call(lib.pulpie_rt_pack_chunks, ids.ctypes.data, ends.ctypes.data, len(ends),
                 max_tokens, sep_id, -1 if bos_id is None else bos_id,
                 -1 if eos_id is None else eos_id, ctypes.byref(out))
    try:
        token_ids = _array(out.token_ids_ptr, out.token_ids_len, ctypes.c_int64, np.int64)
        token_ends = _array(out.token_ends_ptr, out.n_chunks, ctypes.c_uint64, np.uint64)
        blocks = _array(out.block_indices_ptr, out.block_indices_len, ctypes.c_uint64, np.uint64)
        block_ends = _array(out.block_ends_ptr, out.n_chunks, ctypes.c_uint64, np.uint64)
    finally:
        lib.pulpie_rt_prepare_free(ctypes.byref(out))
    chunk_token_ids, chunk_blocks = [], []
    token_start = block_start = 0
    for token_end, block_end in zip(token_ends.tolist(), block_ends.tolist(), strict=True):
        chunk_token_ids.append(token_ids[token_start:token_end].tolist())
        chunk_blocks.append(blocks[block_start:block_end].tolist())
        token_start, block_start = token_end, block_end
    return chunk_token_ids, chunk_blocks


# ── the engine's C ABI (core/include/pulpie_rt.h, core/src/capi.rs) ───────────────────────
# Every door runs pages through the engine the C library opens (runtime/flow/engine.py); the
# Python doors use the public C ABI plus the internal ``pulpie_rt_py_*`` calls of capi.rs.


def engine_abi() -> ctypes.CDLL:
    """The core with its C ABI declared (the library the C programs link is the same code)."""
    return _library()


_DEFAULTS_CACHE: list[ctypes.Structure] = []  # the core's default options (a cache)


def engine_defaults() -> ctypes.Structure:
    """The core's defaults (``pulpie_rt_options_init``): limits, batch tokens, cutoff. The one
    definition of each lives in the core; Python reads them from here."""
    if not _DEFAULTS_CACHE:
        options = new("pulpie_rt_options")
        _library().pulpie_rt_options_init(ctypes.byref(options))
        _DEFAULTS_CACHE.append(options)
    return _DEFAULTS_CACHE[0]


def bundle_info(path: Path, profile: str | None) -> dict:
    """What the page flow reads from the bundle directory ``path`` with ``profile`` (None: its
    default), read by the engine's reader (``pulpie_rt_py_bundle_info``). ``PageFailed`` with
    the reader's message when the bundle cannot be read."""
    import json

    lib = _library()
    data = os.fsencode(path)
    name = None if profile is None else profile.encode("utf-8", "surrogateescape")
    out = new("pulpie_rt_message")
    status, text = _message_call(lib.pulpie_rt_py_bundle_info, data, len(data), name,
                                 0 if name is None else len(name), ctypes.byref(out))
    if status != _c("PULPIE_RT_DONE"):
        raise (PageFailed if status == _c("PULPIE_RT_FAILED") else CoreError)(text)
    return json.loads(_take(lib, out.ptr, out.len))


def page_bytes(html: str) -> bytes:
    """A ``str`` page as the core takes text (see ``_page_bytes``)."""
    return _page_bytes(html)


def utf8_at(pointer: int | None, length: int) -> str:
    """The ``length`` UTF-8 bytes at ``pointer`` as a ``str`` (one copy)."""
    return _decode_utf8(pointer, length, None) if length else ""


def seq_buckets() -> tuple[int, ...]:
    """The engine's sequence-length buckets: a batch is padded to the smallest that holds its
    longest chunk, and a TensorRT engine has one optimisation profile per bucket."""
    lib = engine_abi()
    count = lib.pulpie_rt_py_seq_buckets(None, 0)
    values = (ctypes.c_uint64 * count)()
    lib.pulpie_rt_py_seq_buckets(values, count)
    return tuple(int(v) for v in values)


def max_batch_attention() -> int:
    """The engine's cap on rows x length**2 per batch (ONNX Runtime's eager attention)."""
    return int(engine_abi().pulpie_rt_py_max_batch_attention())


def providers() -> tuple[tuple[str, str], ...]:
    """The execution providers the core knows, from their one definition (``core/src/ort/
    providers.rs``, ``pulpie_rt_provider_name`` / ``pulpie_rt_provider_device``): ``(backend,
    device syntax)`` pairs, e.g. ``("cpu", "cpu")``, ``("cuda", "cuda:N")``."""
    lib = engine_abi()
    found = []
    while (name := lib.pulpie_rt_provider_name(len(found))) is not None:
        found.append((name.decode(), lib.pulpie_rt_provider_device(len(found)).decode()))
    return tuple(found)
