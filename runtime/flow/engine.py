"""The one engine behind every door: the compiled core's page flow, opened through the C ABI.

``Engine`` opens the engine the C library's ``pulpie_rt_engine_open`` opens (``core/src/engine``:
decode -> simplify -> blocks -> tokens -> chunks -> batches -> ONNX Runtime's C API -> labels ->
reconstruct -> Markdown) and hands it whole batches of pages. ``Extractor``, ``Pipeline``, the
CLI, the service and the Ray and datatrove steps all call ``Engine.extract_pages``; there is no
second page flow in Python.

One engine serves any number of threads at once: ctypes releases the GIL for the whole call,
so a process runs pages in parallel by threads on one engine, not by process pools.
"""

from __future__ import annotations

import array
import ctypes
import logging
import math
import os
from collections.abc import Sequence
from typing import Any

from pulpie_rt.runtime import native
from pulpie_rt.runtime.flow.pages import (
    DEFAULT_LIMITS,
    PageInput,
    PageLimits,
    PageResult,
    RunStats,
)
from pulpie_rt.runtime.flow.schema import RESULT_FIELDS
from pulpie_rt.runtime.model.devices import (
    AUTO,
    backend_names,
    gpu_backends,
    gpu_devices,
    gpu_index,
)
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL, ModelError, resolve_model

logger = logging.getLogger("pulpie_rt")

FALLBACK_ROW_BY_ROW = "a batch failed in the engine and ran row by row"


class BackendError(RuntimeError):
    """The engine cannot run where it was asked to (an unknown backend or device, a GPU
    provider that is missing or does not load); the message says why."""


class EngineError(RuntimeError):
    """The engine failed a whole call (not one page: a page's failure is its result's
    ``error``); the message is the core's."""


def _take_message(err: ctypes.c_char_p) -> str | None:
    """A message the core allocated, as text (released)."""
    if not err.value:
        return None
    message = err.value.decode("utf-8", "replace")
    native.engine_abi().pulpie_rt_string_free(ctypes.cast(err, ctypes.c_void_p))
    return message


def _check(status: int, err: ctypes.c_char_p, what: str) -> None:
    codes = native.declarations().constants  # pulpie_rt.h's status codes
    if status == codes["PULPIE_RT_OK"]:
        return
    message = _take_message(err) or f"status {status}"
    if status == codes["PULPIE_RT_ERR_MODEL"]:
        raise ModelError(message)
    if status in (codes["PULPIE_RT_ERR_RUNTIME"], codes["PULPIE_RT_ERR_ARGUMENT"]):
        raise BackendError(message)
    raise EngineError(f"{what}: {message}")


def _device_request(backend: str, device: str | None, uses_transformer: bool
                    ) -> tuple[str, int]:
    """``(provider, device_id)`` for the C options from the doors' ``backend`` (``auto`` or a
    provider the core names: ``cpu``, ``cuda``, ``tensorrt``) and ``device`` (``cpu``, ``cuda``
    or ``cuda:N``): ``auto`` with no device takes the first GPU when one is visible; what is
    asked for or found runs there or the engine does not open (a GPU host whose provider
    cannot load its libraries is an error, never a CPU run)."""
    names = backend_names()
    if backend not in names:
        raise BackendError(f"unknown backend {backend!r}: choose one of {', '.join(names)}")
    try:
        gpu = None if device is None else gpu_index(device)
    except ValueError as exc:
        raise BackendError(str(exc)) from None
    on_gpu = backend in gpu_backends()
    if device is None:
        if backend == AUTO and uses_transformer and gpu_devices():
            return "cuda", 0
        return (backend, 0) if on_gpu else ("cpu", 0)
    if gpu is None:
        if on_gpu:
            raise BackendError(f"backend '{backend}' runs on a GPU, not on device 'cpu'")
        return "cpu", 0
    if backend == "cpu":
        raise BackendError(f"backend 'cpu' does not run on device {device!r}")
    return ("cuda" if backend == AUTO else backend), gpu


def favor_settings() -> dict[str, int]:
    """The named shifts of the decision threshold a caller may favor (``PULPIE_RT_FAVOR_*`` of
    ``pulpie_rt.h``: precision keeps fewer blocks, recall more, balanced the bundle's own), by
    name."""
    prefix = "PULPIE_RT_FAVOR_"
    return {name.removeprefix(prefix).lower(): value
            for name, value in native.declarations().constants.items()
            if name.startswith(prefix)}


def favor_value(favor: str) -> int:
    """The ``PULPIE_RT_FAVOR_*`` value of a favor's name; ``ValueError`` naming the choices."""
    settings = favor_settings()
    if favor not in settings:
        raise ValueError(f"favor {favor!r} is not one of {', '.join(settings)}")
    return settings[favor]


DEFAULT_FAVOR = "balanced"
# what --favor does, as every command that runs a model says it
FAVOR_HELP = ("precision keeps fewer blocks (the decision threshold raised), recall more "
              "(lowered); default balanced, the bundle's own")


class Engine:
    """An open model: the compiled engine over one bundle and profile, on one device.

    ``model``: hub name, checkpoint directory, bundle directory or ``default`` (see
    ``runtime.model.resolve``). ``profile``: the bundle's speed/quality profile (None: its
    default). ``backend``: ``auto`` or an execution provider (``cpu``, ``cuda``, ``tensorrt``:
    ``native.providers``); ``device``: ``cpu``, ``cuda`` or ``cuda:N`` (None: a GPU when one
    is visible and the profile runs a model, else the CPU). The device asked for, or the GPU
    ``auto`` found, is used or the engine does not open (``BackendError`` says why): a GPU
    host never runs on the CPU unasked. ``threads``: ONNX Runtime's intra-op threads (None:
    its default, one per core). ``limits`` bounds what one page may cost; ``max_batch_tokens``
    and ``cutoff_length`` default to the core's. ``favor``: ``precision`` (fewer blocks kept),
    ``balanced`` (the bundle's own decision) or ``recall`` (more), a named shift of the
    bundle's decision threshold (``favor_settings``). ``metadata``: read each page's metadata
    (``schema.METADATA_FIELDS``; False: those fields stay empty, for a caller that has no use
    for them).

    ``extract_pages`` may be called from any number of threads at once.
    """

    def __init__(
        self,
        model: str | os.PathLike = DEFAULT_MODEL,
        profile: str | None = None,
        backend: str = "auto",
        device: str | None = None,
        threads: int | None = None,
        limits: PageLimits = DEFAULT_LIMITS,
        max_batch_tokens: int | None = None,
        cutoff_length: int | None = None,
        stats: RunStats | None = None,
        favor: str = DEFAULT_FAVOR,
        metadata: bool = True,
    ):
        favor_code = favor_value(favor)
        self.favor = favor
        self.stats = stats if stats is not None else RunStats()
        resolved = resolve_model(model, profile=profile)
        self.bundle = resolved.bundle
        self.profile = self.bundle.profile
        self.uses_transformer = self.bundle.uses_transformer
        provider, device_id = _device_request(backend, device, self.uses_transformer)
        defaults = native.engine_defaults()
        self._options = native.new("pulpie_rt_options")
        native.engine_abi().pulpie_rt_options_init(ctypes.byref(self._options))
        self._keep: list[bytes] = []  # the option strings, alive while the engine opens
        o = self._options
        o.model = self._c(os.fsdecode(self.bundle.path))
        o.profile = self._c(self.profile) if self.profile is not None else None
        o.device_id = device_id
        o.threads = threads or 0
        ort_library = native.ort_library_path()
        o.ort_library = self._c(os.fsdecode(ort_library)) if ort_library else None
        o.max_input_bytes = -1 if limits.max_input_bytes is None else limits.max_input_bytes
        o.max_page_tokens = -1 if limits.max_page_tokens is None else limits.max_page_tokens
        o.max_batch_tokens = (defaults.max_batch_tokens if max_batch_tokens is None
                              else max_batch_tokens)
        o.cutoff_length = defaults.cutoff_length if cutoff_length is None else cutoff_length
        o.favor = favor_code
        o.metadata = 1 if metadata else 0
        if isinstance(o.cutoff_length, bool) or not isinstance(o.cutoff_length, int) or \
                o.cutoff_length < 0:
            raise ValueError(f"cutoff_length must be a non-negative int, not {cutoff_length!r}")
        self.limits = limits
        self.cutoff_length: int = o.cutoff_length  # simplify's cut of long inline runs
        self._handle = None
        self._open(provider)
        lib = native.engine_abi()
        self.provider = lib.pulpie_rt_engine_provider(self._handle).decode()
        # what the engine says about where it runs (a GPU asked for a profile that runs no
        # model; TensorRT engines built or loaded): said once, kept for /info
        notice = lib.pulpie_rt_engine_notice(self._handle)
        self.notice = None
        if notice:
            self.notice = ctypes.string_at(notice).decode("utf-8", "replace")
            lib.pulpie_rt_string_free(notice)
            logger.warning("pulpie-rt: %s", self.notice)
        # the device the model runs on; a profile without a model runs on the CPU
        self.device = ("cpu" if self.provider in ("cpu", "none")
                       else f"cuda:{device_id}")
        self._fallbacks_seen = 0

    def _c(self, text: str) -> bytes:
        data = text.encode("utf-8", "surrogateescape")
        self._keep.append(data)
        return data

    def _open(self, provider: str) -> None:
        self._options.backend = self._c(provider)
        lib = native.engine_abi()
        handle = ctypes.c_void_p()
        err = ctypes.c_char_p()
        status = lib.pulpie_rt_engine_open(ctypes.byref(self._options), ctypes.byref(handle),
                                           ctypes.byref(err))
        _check(status, err, "open")
        self._handle = handle

    def close(self) -> None:
        """Release the engine (no call may be running on it)."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            native.engine_abi().pulpie_rt_engine_close(handle)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def info(self) -> dict[str, Any]:
        """What runs: the bundle's name, its profile, the provider and device."""
        return {"model": self.bundle.path.name, "profile": self.profile, "favor": self.favor,
                "provider": self.provider, "device": self.device,
                "transformer": self.uses_transformer, "notice": self.notice}

    def extract_pages(self, pages: Sequence[PageInput]) -> list[PageResult]:
        """One result per page, in order (``page_id`` and ``metadata`` echoed). The pages'
        chunks share the model's batches; a page that fails gets ``error``
        (``"<stage>: <reason>"``) and empty content, the others are not affected. A page's
        ``favor`` decides its blocks in place of the engine's (the same model's work: pages
        of any favors share its batches). Releases the GIL for the engine's work."""
        n = len(pages)
        results: list[PageResult | None] = [None] * n
        sent: list[int] = []
        data: list[bytes] = []
        types: list[bytes | None] = []
        text_flags: list[int] = []
        favors: list[int] = []
        engine_favor = native.declarations().constants["PULPIE_RT_ENGINE_FAVOR"]
        for index, page in enumerate(pages):
            try:
                favors_next = engine_favor if page.favor is None else favor_value(page.favor)
            except ValueError as exc:
                results[index] = PageResult(page.page_id, metadata=page.metadata,
                                            error=f"input: {exc}")
                continue
            html = page.html
            if isinstance(html, native.PageText):  # text, already as the core takes it
                data.append(html.data)
                text_flags.append(1)
            elif isinstance(html, str):
                data.append(native.page_bytes(html))
                text_flags.append(1)
            elif isinstance(html, (bytes, bytearray, memoryview)):
                data.append(bytes(html))
                text_flags.append(0)
            else:
                results[index] = PageResult(page.page_id, metadata=page.metadata, error=(
                    f"input: html must be str or bytes, not {type(html).__name__}"))
                continue
            content_type = page.content_type
            types.append(None if content_type is None or isinstance(html, (str, native.PageText))
                         else content_type.encode("utf-8", "surrogateescape").replace(b"\0", b" "))
            favors.append(favors_next)
            sent.append(index)
        if sent:
            page_favors = None if all(f == engine_favor for f in favors) else favors
            for index, result in zip(sent, self._run(data, types, text_flags, page_favors),
                                     strict=True):
                page = pages[index]
                result.page_id, result.metadata = page.page_id, page.metadata
                results[index] = result
        self._count_fallbacks()
        return results  # type: ignore[return-value]

    def _run(self, data: list[bytes], types: list[bytes | None], text_flags: list[int],
             page_favors: list[int] | None = None) -> list[PageResult]:
        lib = native.engine_abi()
        n = len(data)
        if self._handle is None:
            raise EngineError("the engine is closed")
        html = (ctypes.c_char_p * n)(*data)
        lengths = (ctypes.c_size_t * n)(*(len(d) for d in data))
        content_types = (ctypes.c_char_p * n)(*types)
        is_text = (ctypes.c_uint8 * n)(*text_flags)
        out = (ctypes.c_void_p * n)()
        err = ctypes.c_char_p()
        options = None
        if page_favors is not None:  # each page's favor (PULPIE_RT_ENGINE_FAVOR: the engine's)
            options = native.new("pulpie_rt_extract_options")
            lib.pulpie_rt_extract_options_init(ctypes.byref(options))
            favor_values = (ctypes.c_int32 * n)(*page_favors)
            options.page_favor = ctypes.addressof(favor_values)  # alive until the call ends
        status = lib.pulpie_rt_py_extract(self._handle, html, lengths, content_types, is_text,
                                          n, None if options is None else ctypes.byref(options),
                                          out, ctypes.byref(err))
        if status != native.declarations().constants["PULPIE_RT_OK"]:
            message = _take_message(err) or f"status {status}"
            return [PageResult(error=f"engine: {message}") for _ in range(n)]
        results = []
        view = native.new("pulpie_rt_py_result_view")
        try:
            for pointer in out:
                lib.pulpie_rt_py_result_view(pointer, ctypes.byref(view))
                results.append(_result_of(view))
        finally:
            for pointer in out:
                lib.pulpie_rt_result_free(pointer)
        return results

    def counters(self) -> dict[str, int]:
        """What the model computed since the engine opened: ``model_calls`` (batches run),
        ``real_tokens`` (their rows' tokens), ``computed_tokens`` (with the padding: rows x
        the longest row) and ``row_by_row_fallbacks`` (batches that failed and ran row by
        row)."""
        values = (ctypes.c_uint64 * 4)()
        if self._handle is not None:
            native.engine_abi().pulpie_rt_py_engine_counters(self._handle, values)
        return dict(zip(("row_by_row_fallbacks", "model_calls", "real_tokens",
                         "computed_tokens"), (int(v) for v in values), strict=True))

    def _count_fallbacks(self) -> None:
        """Report the batches the engine ran row by row since the last call."""
        total = self.counters()["row_by_row_fallbacks"]
        new = total - self._fallbacks_seen
        if new > 0:
            self._fallbacks_seen = total
            self.stats.fell_back(FALLBACK_ROW_BY_ROW, new)


def _text(pointer: int | None, length: int) -> str:
    return native.utf8_at(pointer, length) if length else ""


def _optional(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace")


# a block's label by its byte in ``label_main`` (0 or 1)
_LABEL_OF = ("other", "main")


def _result_of(view: ctypes.Structure) -> PageResult:
    """A ``PageResult`` from a result's view (``pulpie_rt_py_result_view``; copied: the
    result is freed next)."""
    labels: dict[str, str] = {}
    scores: dict[str, float] = {}
    if view.n_labels:
        ids = ctypes.string_at(view.label_ids, view.label_ids_len).decode(
            "utf-8", "surrogatepass").split("\0")
        mains = ctypes.string_at(view.label_main, view.n_labels)
        labels = dict(zip(ids, map(_LABEL_OF.__getitem__, mains), strict=False))
        # the float32 scores read at once (a ctypes array read item by item was half this
        # function's time on the dev pages)
        values = array.array("f", ctypes.string_at(
            view.label_scores, ctypes.sizeof(ctypes.c_float) * view.n_labels))
        scores = dict(zip(ids, values.tolist(), strict=False))
    authors = (ctypes.string_at(view.authors, view.authors_len).decode("utf-8", "replace")
               .split("\0")[:-1] if view.authors_len else [])
    return PageResult(
        html=_text(view.html, view.html_len),
        markdown=_text(view.markdown, view.markdown_len),
        labels=labels,
        scores=scores,
        threshold=None if math.isnan(view.threshold) else view.threshold,
        authors=authors,
        # the record's fields the view holds (error, truncated, title, ...), by their names
        **{f.name: _optional(getattr(view, f.name)) if f.type == "string"
           else getattr(view, f.name) for f in RESULT_FIELDS
           if hasattr(type(view), f.name) and f.type != "strings"},
    )

