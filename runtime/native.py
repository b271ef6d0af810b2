"""The compiled core of ``simplify``, ``reconstruct`` and ``markdown`` (``core``, Rust, std
only), through ctypes.

Both stages spend most of their time in per-node Python work: ``simplify`` replays lexbor's
serialization as libxml2's tree, segments it and writes blocks back out; ``reconstruct``
walks the page's tree and writes the kept part as libxml2 does. The Rust crate in
``core`` does the same steps several times faster (``python -m
pulpie_rt.bench.cpu_stages``). The Python code (``dom.py``, ``simplify.py``,
``reconstruct.py``) stays the specification; ``tests/test_native.py`` and ``python -m
pulpie_rt.parity.native_core`` compare the two on real pages. Markdown is html2text ported
(its specification is html2text itself: ``tests/test_markdown.py``, ``python -m
pulpie_rt.parity.markdown_parity``).

The library is optional. ``pip install`` builds it where a Rust toolchain exists
(setuptools-rust, ``pyproject.toml``); without one, or with ``PULPIE_RT_PURE_PYTHON=1``, both
stages run the Python implementation, only slower. Pages the core does not handle (input
outside the regular shape it reads, which it refuses rather than guesses) and any failure
inside it also fall back to Python, page by page.
"""

from __future__ import annotations

import ctypes
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "LIBRARY_ENV", "PURE_PYTHON_ENV", "SpecificationRaises", "available", "extract_main_html",
    "RawPageScan", "library_path", "markdown", "scan_raw_page", "simplify_serialized", "text",
    "CoreTokenizer", "TokenizerLoadError", "CoreError", "block_features",
]

# an explicit library file (a build elsewhere); otherwise the one pip built into the package
# folder (`make core` rebuilds it after a change to core)
LIBRARY_ENV = "PULPIE_RT_NATIVE_LIB"
PURE_PYTHON_ENV = "PULPIE_RT_PURE_PYTHON"

FLAG_NON_XML_CHARS = 2
FLAG_NON_XML_UNKNOWN = 4

_HERE = Path(__file__).resolve().parent


class _RawScanOutput(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint32),
        ("starts_ptr", ctypes.POINTER(ctypes.c_uint64)),
        ("starts_len", ctypes.c_size_t),
    ]


_RAW_EMPTY_END_TAG = 1
_RAW_SLASH_GATE = 2


class _TextOutput(ctypes.Structure):
    _fields_ = [
        ("ptr", ctypes.c_void_p),
        ("len", ctypes.c_size_t),
        ("reason", ctypes.c_char_p),
    ]


class _FeaturesOutput(ctypes.Structure):
    _fields_ = [
        ("ptr", ctypes.c_void_p),
        ("len", ctypes.c_size_t),
        ("rows", ctypes.c_size_t),
        ("cols", ctypes.c_size_t),
        ("reason", ctypes.c_char_p),
    ]


_NO_ID = ctypes.c_size_t(-1).value  # lib.rs NO_ID: an absent id (None)
_FEATURES_LIBXML2_TREE = 1


class _Output(ctypes.Structure):
    _fields_ = [
        ("simplified_ptr", ctypes.c_void_p),
        ("simplified_len", ctypes.c_size_t),
        ("map_ptr", ctypes.c_void_p),
        ("map_len", ctypes.c_size_t),
        ("reason", ctypes.c_char_p),
    ]


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


# the loaded library, per process (a cache: empty until first use, then [CDLL or None])
_LIBRARY_CACHE: list = []


def _library() -> ctypes.CDLL | None:
    if not _LIBRARY_CACHE:
        lib = None
        path = library_path()
        if path is not None and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0"):
            lib = ctypes.CDLL(str(path))
            lib.pulpie_rt_simplify.argtypes = [
                ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_uint32,
                ctypes.POINTER(_Output),
            ]
            lib.pulpie_rt_simplify.restype = ctypes.c_int32
            lib.pulpie_rt_free.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            lib.pulpie_rt_free.restype = None
            lib.pulpie_rt_scan_raw_page.argtypes = [
                ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(_RawScanOutput),
            ]
            lib.pulpie_rt_scan_raw_page.restype = ctypes.c_int32
            lib.pulpie_rt_free_starts.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
            lib.pulpie_rt_free_starts.restype = None
            lib.pulpie_rt_reconstruct.argtypes = [
                ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t,
                ctypes.POINTER(_TextOutput),
            ]
            lib.pulpie_rt_reconstruct.restype = ctypes.c_int32
            _declare_tokenizer(lib)
            for name in ("pulpie_rt_markdown", "pulpie_rt_text"):
                function = getattr(lib, name, None)  # absent from a library built before them
                if function is not None:
                    function.argtypes = [ctypes.c_char_p, ctypes.c_size_t,
                                         ctypes.POINTER(_TextOutput)]
                    function.restype = ctypes.c_int32
            features = getattr(lib, "pulpie_rt_block_features", None)  # likewise
            if features is not None:
                features.argtypes = [
                    ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t,
                    ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t, ctypes.c_uint32,
                    ctypes.POINTER(_FeaturesOutput),
                ]
                features.restype = ctypes.c_int32
        _LIBRARY_CACHE.append(lib)
    return _LIBRARY_CACHE[0]


def available() -> bool:
    """Whether ``simplify`` and ``reconstruct`` run on the compiled core in this process."""
    return _library() is not None


# str straight from the library's UTF-8 buffer (ctypes.string_at would copy it to bytes first)
_decode_utf8 = ctypes.pythonapi.PyUnicode_DecodeUTF8
_decode_utf8.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_char_p]
_decode_utf8.restype = ctypes.py_object


def _take(lib: ctypes.CDLL, ptr: int | None, size: int) -> str:
    try:
        return _decode_utf8(ptr, size, None) if size else ""
    finally:
        lib.pulpie_rt_free(ptr, size)


@dataclass(frozen=True)
class RawPageScan:
    """What ``dom.lexbor_serialization`` asks of a raw page, from one call into the core."""

    data: bytes  # the page as UTF-8 (lexbor parses these bytes: no second encoding)
    has_empty_end_tag: bool  # "</>" is in the page
    has_slash_after_space: bool  # " /", "\n/", "\t/" or "\r/" is in the page
    slash_tag_starts: list[int]  # where dom._SLASH_TAG_RE matches (when the above holds)


def scan_raw_page(html: str) -> RawPageScan | None:
    """``RawPageScan`` of ``html``, or None where the core is absent or the page is not
    UTF-8-encodable (lone surrogates): the caller then searches the string itself."""
    lib = _library()
    if lib is None:
        return None
    try:
        data = html.encode("utf-8")
    except UnicodeEncodeError:
        return None
    out = _RawScanOutput()
    if lib.pulpie_rt_scan_raw_page(data, len(data), ctypes.byref(out)) != 0:
        return None
    try:
        starts = out.starts_ptr[: out.starts_len] if out.starts_len else []
    finally:
        lib.pulpie_rt_free_starts(out.starts_ptr, out.starts_len)
    return RawPageScan(data, bool(out.flags & _RAW_EMPTY_END_TAG),
                       bool(out.flags & _RAW_SLASH_GATE), starts)


def _simplify(serialized: str, cutoff_length: int, flags: int) -> tuple[int, _Output]:
    """The core's status and output for lexbor's serialization of a page."""
    data = serialized.encode("utf-8")
    out = _Output()
    status = _library().pulpie_rt_simplify(data, len(data), cutoff_length, flags,
                                           ctypes.byref(out))
    return status, out


def simplify_serialized(
    serialized: str, cutoff_length: int, has_non_xml_chars: Callable[[], bool]
) -> tuple[str, str] | None:
    """``(simplified_html, map_html)`` of lexbor's serialization of a page, or None where the
    core is absent or does not handle this page (the caller then runs the Python code).

    ``has_non_xml_chars`` answers whether the raw page holds characters XML does not allow.
    It is asked only when the serialization holds such characters itself, the one case where
    the answer changes the output: scanning every raw page for them costs more than the rest
    of the core's work. (The raw page's other flag, whether it has raw-text elements, the core
    reads off the tree itself.)"""
    lib = _library()
    if lib is None:
        return None
    try:
        status, out = _simplify(serialized, cutoff_length, FLAG_NON_XML_UNKNOWN)
        if status == 3:
            flags = FLAG_NON_XML_CHARS if has_non_xml_chars() else 0
            status, out = _simplify(serialized, cutoff_length, flags)
    except UnicodeEncodeError:  # lone surrogates: only the Python path handles them
        return None
    if status != 0:
        return None
    simplified = _take(lib, out.simplified_ptr, out.simplified_len)
    map_html = _take(lib, out.map_ptr, out.map_len)
    return simplified, map_html


def _reconstruct(map_html: str, labels: dict[str, str]) -> tuple[int, _TextOutput]:
    """The core's status and output for ``map_html`` and ``labels``; status -1 where the
    input cannot travel (not UTF-8-encodable, ids that are not strings or hold a newline)."""
    out = _TextOutput()
    try:
        data = map_html.encode("utf-8")
        main_ids = [i for i, label in labels.items() if label == "main"]
        if any("\n" in i for i in main_ids):
            return -1, out  # the ids travel one per line
        ids = "\n".join(main_ids).encode("utf-8")
    except (UnicodeEncodeError, AttributeError, TypeError):
        return -1, out
    status = _library().pulpie_rt_reconstruct(data, len(data), ids, len(ids), ctypes.byref(out))
    return status, out


def extract_main_html(map_html: str, labels: dict[str, str]) -> str | None:
    """``reconstruct.extract_main_html`` on the compiled core, or None where the core is
    absent or does not handle this page (the caller then runs the Python code)."""
    lib = _library()
    if lib is None:
        return None
    status, out = _reconstruct(map_html, labels)
    return _take(lib, out.ptr, out.len) if status == 0 else None


def _reason(lib: ctypes.CDLL, status: int, out: _Output | _TextOutput) -> str | None:
    """Why the core refused (None after a success, whose buffers are released here)."""
    if status == 0:
        if isinstance(out, _Output):
            lib.pulpie_rt_free(out.simplified_ptr, out.simplified_len)
            lib.pulpie_rt_free(out.map_ptr, out.map_len)
        else:
            lib.pulpie_rt_free(out.ptr, out.len)
        return None
    if status == -1:
        return "input that cannot be passed to the core"
    return out.reason.decode("utf-8", "replace") if out.reason else f"status {status}"


def reconstruct_reason(map_html: str, labels: dict[str, str]) -> str | None:
    """Why the core refuses to reconstruct this page (None if it handles it)."""
    lib = _library()
    if lib is None:
        return "no compiled core"
    return _reason(lib, *_reconstruct(map_html, labels))


def simplify_reason(serialized: str) -> str | None:
    """Why the core refuses this serialization (None if it handles it): for tests and
    reports of the fallback rate."""
    lib = _library()
    if lib is None:
        return "no compiled core"
    return _reason(lib, *_simplify(serialized, 500, 0))


# ---------------------------------------------------------------- tokenizer


class _TokenizerLoadOutput(ctypes.Structure):
    _fields_ = [
        ("handle", ctypes.c_void_p),
        ("error_ptr", ctypes.c_void_p),
        ("error_len", ctypes.c_size_t),
    ]


class _TokenIdsOutput(ctypes.Structure):
    _fields_ = [
        ("ptr", ctypes.c_void_p),
        ("len", ctypes.c_size_t),
        ("reason", ctypes.c_char_p),
    ]


def _declare_tokenizer(lib: ctypes.CDLL) -> None:
    lib.pulpie_rt_tokenizer_load.argtypes = [
        ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t,
        ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(_TokenizerLoadOutput),
    ]
    lib.pulpie_rt_tokenizer_load.restype = ctypes.c_int32
    lib.pulpie_rt_tokenizer_free.argtypes = [ctypes.c_void_p]
    lib.pulpie_rt_tokenizer_free.restype = None
    lib.pulpie_rt_tokenizer_token_to_id.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
    ]
    lib.pulpie_rt_tokenizer_token_to_id.restype = ctypes.c_int64
    lib.pulpie_rt_tokenizer_vocab_size.argtypes = [ctypes.c_void_p, ctypes.c_uint8]
    lib.pulpie_rt_tokenizer_vocab_size.restype = ctypes.c_uint64
    lib.pulpie_rt_tokenizer_encode.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint64),
        ctypes.c_size_t, ctypes.POINTER(_TokenIdsOutput),
    ]
    lib.pulpie_rt_tokenizer_encode.restype = ctypes.c_int32
    lib.pulpie_rt_free_u32.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.pulpie_rt_free_u32.restype = None


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
        if lib is None:
            raise RuntimeError("the compiled core is not available")
        self._lib = lib
        self._handle = None
        path_bytes = os.fsencode(path)
        specials = "\n".join(ensure_specials).encode("utf-8")
        out = _TokenizerLoadOutput()
        status = lib.pulpie_rt_tokenizer_load(None, 0, path_bytes, len(path_bytes), specials,
                                              len(specials), ctypes.byref(out))
        if status != 0:
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
        out = _TokenIdsOutput()
        status = self._lib.pulpie_rt_tokenizer_encode(self._handle, data, len(data), ends,
                                                      len(encoded), ctypes.byref(out))
        if status != 0:
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

_STATUS_SPEC_RAISES = 4
# the exceptions the Markdown specification can raise (html.parser, int(), html2text asserts)
_SPEC_EXCEPTIONS = {"AssertionError": AssertionError, "ValueError": ValueError}


class SpecificationRaises(Exception):
    """The core's answer where the Python specification raises for an input: ``exception``
    is the exception it raises (same type and message)."""

    def __init__(self, exception: Exception) -> None:
        super().__init__(str(exception))
        self.exception = exception


def _text_call(name: str, html: str) -> str | None:
    """``name``'s result for ``html`` (any str: lone surrogates travel as ``surrogatepass``
    writes them), None where the library lacks it or fails; ``SpecificationRaises`` where
    the specification raises."""
    lib = _library()
    function = getattr(lib, name, None) if lib is not None else None
    if function is None:
        return None
    data = html.encode("utf-8", "surrogatepass")
    out = _TextOutput()
    status = function(data, len(data), ctypes.byref(out))
    if status == 0:
        try:
            return _decode_utf8(out.ptr, out.len, b"surrogatepass") if out.len else ""
        finally:
            lib.pulpie_rt_free(out.ptr, out.len)
    if status == _STATUS_SPEC_RAISES:
        kind, _, message = (out.reason or b"").decode("utf-8", "replace").partition(": ")
        raise SpecificationRaises(_SPEC_EXCEPTIONS.get(kind, RuntimeError)(message)
                                  if message else _SPEC_EXCEPTIONS.get(kind, RuntimeError)())
    return None


def markdown(html: str) -> str | None:
    """``markdown.to_markdown`` on the compiled core, or None where the core is absent or
    failed (the caller then runs the Python specification). Raises ``SpecificationRaises``
    where the specification raises."""
    return _text_call("pulpie_rt_markdown", html)


def text(html: str) -> str | None:
    """``markdown.to_text`` on the compiled core, or None where the core is absent or
    failed."""
    return _text_call("pulpie_rt_text", html)


# ---------------------------------------------------------------- block features


class CoreError(RuntimeError):
    """The compiled core refused an input or failed on it (the message says why)."""


def _encoded_id(item_id: str | None) -> bytes | None:
    if not isinstance(item_id, str):
        return None
    try:
        return item_id.encode("utf-8")
    except UnicodeEncodeError:
        return None


def block_features(map_html: str, item_ids: list[str | None],
                   libxml2_tree: bool = False) -> np.ndarray:
    """``features.block_features`` on the compiled core: one float32 row of
    ``features.FEATURE_NAMES`` per id (zeros for ids ``map_html`` does not hold, and for
    None). ``CoreError`` where the core is absent, refuses the page or fails.

    ``libxml2_tree``: read libxml2's tree of ``map_html`` as it is, not as the HTML DOM sees
    it (template content, HTML-only void elements; see core/src/features): for measurements.
    """
    lib = _library()
    if lib is None:
        raise CoreError("no compiled core (make core builds it)")
    if getattr(lib, "pulpie_rt_block_features", None) is None:
        raise CoreError(f"{library_path()} has no block features: rebuild it (make core)")
    # lone surrogates (no UTF-8 for them) are dropped, as the specification's parser drops
    # them (selectolax encodes with errors="ignore"); an id holding one, or one that is not a
    # string, matches no element there, as here
    data = map_html.encode("utf-8", "ignore")
    encoded = [_encoded_id(i) for i in item_ids]
    ids = b"".join(e for e in encoded if e is not None)
    lens = (ctypes.c_size_t * len(encoded))(*(_NO_ID if e is None else len(e) for e in encoded))
    out = _FeaturesOutput()
    status = lib.pulpie_rt_block_features(data, len(data), ids, len(ids), lens, len(encoded),
                                          _FEATURES_LIBXML2_TREE if libxml2_tree else 0,
                                          ctypes.byref(out))
    if status != 0:
        reason = out.reason.decode("utf-8", "replace") if out.reason else f"status {status}"
        raise CoreError(f"block features: {reason}")
    features = np.empty((out.rows, out.cols), np.float32)
    try:
        if out.len:
            ctypes.memmove(features.ctypes.data, out.ptr, out.len)
    finally:
        lib.pulpie_rt_free(out.ptr, out.len)
    return features
