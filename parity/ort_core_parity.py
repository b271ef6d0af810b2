"""ONNX Runtime from the compiled core (``core/src/ort``: the C API, loaded with ``dlopen``)
against onnxruntime's Python API, on the real chunks and block features of the dev pages.

The engine's layer runs the model without Python; this command shows that it computes what
onnxruntime's Python API computes: for each bundle, every dev page is prepared
(``Preparer.from_bundle(bundle).prepare(html)``), its chunks go through the engine's batcher
(``parity.batches.make_batches``: the core's grouping, laid out flat), and each batch runs
through onnxruntime's Python session (``eval.margins.SepLogitsSession``) and through the core's
``TokenClassifier`` with the same thread count. Printed per bundle: max |Δlogit| over every
logit, whether the logits are bitwise equal, SEP labels (argmax) that differ, and the same for
the SEP logits the core picks itself (its own padding and ``sep_logits``); for a bundle with a
rescorer, the rescorer's probabilities, log-odds and scores on the pages' block features,
against its specification on onnxruntime's Python API (``tests/spec/rescore_spec.py``). The
core's ``make_batches`` through this surface is compared with ``parity.batches``' (which calls
it too) on the same chunk lengths.

    python -m parity.ort_core_parity --bundle default --bundle /tmp/tiny-bundle

``CoreOrt`` drives the layer through its entry points in ``pulpie_rt_internal.h`` (the
binding generated from the header). ``$PULPIE_RT_ORT_LIB`` names the ONNX Runtime library; by
default the one inside the installed ``onnxruntime`` wheel is used.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from parity.batches import (
    DEFAULT_MAX_BATCH_ATTENTION,
    DEFAULT_MAX_BATCH_TOKENS,
    Batch,
    Bucket,
)

ORT_LIBRARY_ENV = "PULPIE_RT_ORT_LIB"
PROVIDER_CODES = {"cpu": 0, "cuda": 1, "tensorrt": 2}


class CoreError(RuntimeError):
    """An error reported by the core's ONNX Runtime layer (its message, verbatim)."""


def ort_library_path() -> Path | None:
    """``$PULPIE_RT_ORT_LIB``, else the C library inside the installed onnxruntime wheel."""
    explicit = os.environ.get(ORT_LIBRARY_ENV)
    if explicit:
        return Path(explicit)
    try:
        import onnxruntime
    except ImportError:
        return None
    found = sorted((Path(onnxruntime.__file__).parent / "capi").glob("libonnxruntime.so*"))
    return found[0] if found else None


def _core_library() -> ctypes.CDLL:
    from pulpie_rt.runtime import native

    path = native.library_path()
    if path is None or not path.is_file():
        raise CoreError("the compiled core is not built (make core)")
    return native.engine_abi()


def _new(struct: str) -> ctypes.Structure:
    """A struct of the core's headers (``native.new``)."""
    from pulpie_rt.runtime import native

    return native.new(struct)


def _values(pointer: int | None, length: int, ctype) -> list:
    """The ``length`` values at ``pointer``."""
    if not length:
        return []
    return ctypes.cast(pointer, ctypes.POINTER(ctype))[:length]


def _ptr(array: np.ndarray) -> int:
    return array.ctypes.data


class CoreOrt:
    """The core's ONNX Runtime layer through its internal entry points (``pulpie_rt_ort_*``)."""

    def __init__(self, ort_library: str | Path | None = None):
        self.handle = ctypes.c_void_p()
        self.lib = _core_library()
        path = b"" if ort_library is None else str(ort_library).encode()
        handle = ctypes.c_void_p()
        error = _new("pulpie_rt_message")
        self._check(self.lib.pulpie_rt_ort_load(path, len(path), ctypes.byref(handle),
                                                ctypes.byref(error)), error)
        self.handle = handle

    def _check(self, status: int, error: ctypes.Structure) -> None:
        if status != 0:
            message = ctypes.string_at(error.ptr, error.len).decode("utf-8", "replace")
            self.lib.pulpie_rt_free(error.ptr, error.len)
            raise CoreError(message if status == 1 else f"panic in the core: {message}")

    def describe(self) -> tuple[str, str]:
        """(library path, ONNX Runtime version)."""
        out = _new("pulpie_rt_message")
        self._check(self.lib.pulpie_rt_ort_describe(self.handle, ctypes.byref(out)), out)
        text = ctypes.string_at(out.ptr, out.len).decode()
        self.lib.pulpie_rt_free(out.ptr, out.len)
        path, version = text.split("\n")
        return path, version

    def classifier(self, model: str | Path | bytes, intra_op_threads: int = 0,
                   inter_op_threads: int = 0, provider: str = "cpu",
                   device: int = 0) -> CoreClassifier:
        data, from_bytes = _model_arg(model)
        handle = ctypes.c_void_p()
        error = _new("pulpie_rt_message")
        self._check(self.lib.pulpie_rt_ort_classifier_open(
            self.handle, data, len(data), from_bytes, intra_op_threads, inter_op_threads,
            PROVIDER_CODES[provider], device, ctypes.byref(handle), ctypes.byref(error)), error)
        return CoreClassifier(self, handle)

    def rescorer(self, model: str | Path | bytes, margin_weight: float) -> CoreRescorer:
        data, from_bytes = _model_arg(model)
        handle = ctypes.c_void_p()
        error = _new("pulpie_rt_message")
        self._check(self.lib.pulpie_rt_ort_rescorer_open(
            self.handle, data, len(data), from_bytes, margin_weight, ctypes.byref(handle),
            ctypes.byref(error)), error)
        return CoreRescorer(self, handle)

    def make_batches(self, lengths: Sequence[int], max_batch_tokens: int,
                     buckets: Sequence[Bucket] | None,
                     max_batch_attention: int | None) -> list[tuple[list[int], Bucket]]:
        """The core's ``make_batches`` on item lengths: per batch its item indices and bucket."""
        lengths_array = np.asarray(lengths, dtype=np.uint64)
        bucket_lengths = np.asarray([b.max_length for b in buckets or []], dtype=np.uint64)
        bucket_rows = np.asarray([b.max_rows or 0 for b in buckets or []], dtype=np.uint64)
        out = _new("pulpie_rt_batches")
        error = _new("pulpie_rt_message")
        self._check(self.lib.pulpie_rt_ort_make_batches(
            _ptr(lengths_array), len(lengths_array), max_batch_tokens, max_batch_attention or 0,
            1 if buckets is None else 0, _ptr(bucket_lengths), _ptr(bucket_rows),
            len(bucket_lengths), 1, ctypes.byref(out), ctypes.byref(error)), error)
        order = _values(out.order_ptr, out.order_len, ctypes.c_uint64)
        ends = _values(out.ends_ptr, out.batches, ctypes.c_uint64)
        bucket_lengths = _values(out.bucket_lengths_ptr, out.batches, ctypes.c_uint64)
        bucket_rows = _values(out.bucket_rows_ptr, out.batches, ctypes.c_uint64)
        result, start = [], 0
        for index, end in enumerate(ends):
            rows = bucket_rows[index]
            result.append((order[start:end],
                           Bucket(int(bucket_lengths[index]), int(rows) if rows else None)))
            start = end
        for pointer, length in ((out.order_ptr, out.order_len), (out.ends_ptr, out.batches),
                                (out.bucket_lengths_ptr, out.batches),
                                (out.bucket_rows_ptr, out.batches)):
            self.lib.pulpie_rt_ort_free_u64s(pointer, length)
        return result

    def close(self) -> None:
        if self.handle:
            self.lib.pulpie_rt_ort_release(self.handle)
            self.handle = ctypes.c_void_p()

    def __del__(self) -> None:
        self.close()


def _model_arg(model: str | Path | bytes) -> tuple[bytes, int]:
    if isinstance(model, bytes):
        return model, 1
    return str(model).encode(), 0


class CoreClassifier:
    """``TokenClassifier`` in the core: ``run`` and ``predict`` may be called from several
    threads at once (ctypes releases the GIL during the call)."""

    def __init__(self, ort: CoreOrt, handle: ctypes.c_void_p):
        self.ort, self.lib, self.handle = ort, ort.lib, handle

    def _take(self, out: ctypes.Structure) -> np.ndarray:
        values = (np.ctypeslib.as_array(ctypes.cast(out.ptr, ctypes.POINTER(ctypes.c_float)),
                                        shape=(out.len,)).copy() if out.len
                  else np.zeros(0, dtype=np.float32))
        self.lib.pulpie_rt_ort_free_floats(out.ptr, out.len)
        return values

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """Logits ``[rows, length, labels]`` for ``[rows, length]`` ids and mask (the core
        checks that both hold rows x length values)."""
        ids = np.ascontiguousarray(input_ids, dtype=np.int64)
        mask = np.ascontiguousarray(attention_mask, dtype=np.int64)
        rows, length = ids.shape
        out, error = _new("pulpie_rt_floats"), _new("pulpie_rt_message")
        self.ort._check(self.lib.pulpie_rt_ort_classifier_run(
            self.handle, _ptr(ids), ids.size, _ptr(mask), mask.size, rows, length,
            ctypes.byref(out), ctypes.byref(error)), error)
        labels = out.labels
        return self._take(out).reshape(rows, length, labels)

    def predict(self, batch: Batch, pad_id: int, sep_id: int) -> list[np.ndarray]:
        """Per row, the ``[n_sep, labels]`` logits at its SEP tokens (the core pads and picks)."""
        ids = np.ascontiguousarray(batch.input_ids, dtype=np.int64)
        cumulative = np.ascontiguousarray(batch.cumulative_seq_lengths, dtype=np.uint64)
        counts = np.zeros(batch.rows, dtype=np.uint64)
        out, error = _new("pulpie_rt_floats"), _new("pulpie_rt_message")
        self.ort._check(self.lib.pulpie_rt_ort_classifier_predict(
            self.handle, _ptr(ids), len(ids), _ptr(cumulative), batch.rows, pad_id, sep_id,
            ctypes.byref(out), _ptr(counts), ctypes.byref(error)), error)
        labels = out.labels
        flat = self._take(out)
        rows, start = [], 0
        for count in counts:
            end = start + int(count) * labels
            rows.append(flat[start:end].reshape(int(count), labels))
            start = end
        return rows

    def close(self) -> None:
        if self.handle:
            self.lib.pulpie_rt_ort_classifier_free(self.handle)
            self.handle = ctypes.c_void_p()

    def __del__(self) -> None:
        self.close()


class CoreRescorer:
    """``BlockRescorer`` in the core."""

    def __init__(self, ort: CoreOrt, handle: ctypes.c_void_p):
        self.ort, self.lib, self.handle = ort, ort.lib, handle

    def run(self, features: np.ndarray,
            margins: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(probabilities ``[rows, 2]``, log-odds, scores) for ``[rows, columns]`` features."""
        features = np.ascontiguousarray(features, dtype=np.float32)
        margins = np.ascontiguousarray(margins, dtype=np.float32)
        rows, columns = features.shape
        probabilities = np.zeros((rows, 2), dtype=np.float32)
        log_odds = np.zeros(rows, dtype=np.float32)
        scores = np.zeros(rows, dtype=np.float32)
        error = _new("pulpie_rt_message")
        self.ort._check(self.lib.pulpie_rt_ort_rescorer_run(
            self.handle, _ptr(features), rows, columns, _ptr(margins), _ptr(probabilities),
            _ptr(log_odds), _ptr(scores), ctypes.byref(error)), error)
        return probabilities, log_odds, scores

    def close(self) -> None:
        if self.handle:
            self.lib.pulpie_rt_ort_rescorer_free(self.handle)
            self.handle = ctypes.c_void_p()

    def __del__(self) -> None:
        self.close()


# ---------------------------------------------------------------------------- comparison


def _bundle(name: str):
    from pulpie_rt.runtime.model.bundle import load_bundle

    if name == "default":
        from pulpie_rt.runtime.model.resolve import embedded_model_dir

        return load_bundle(embedded_model_dir())
    return load_bundle(Path(name))


def batching_configs() -> list[tuple[str, int, list[Bucket] | None, int | None]]:
    """The batcher settings compared: ONNX Runtime's (default buckets, attention budget),
    no attention budget, a tight token budget, and TensorRT-like buckets with row caps."""
    engine_like = [Bucket(8192, 2), Bucket(512, 32), Bucket(2048, 8), Bucket(128, 128)]
    return [
        ("onnxruntime", DEFAULT_MAX_BATCH_TOKENS, None, DEFAULT_MAX_BATCH_ATTENTION),
        ("no attention budget", DEFAULT_MAX_BATCH_TOKENS, None, None),
        ("4096 tokens", 4096, None, DEFAULT_MAX_BATCH_ATTENTION),
        ("row-capped buckets", 65536, engine_like, None),
        ("one bucket of 1024", DEFAULT_MAX_BATCH_TOKENS, [Bucket(1024)], None),
    ]


def compare_batching(core: CoreOrt, items: list[tuple]) -> dict:
    """Python's ``make_batches`` vs the core's on ``items`` for every ``batching_configs``."""
    from parity.batches import make_batches

    lengths = [len(tokens) for _, tokens in items]
    index_of = {key: i for i, (key, _) in enumerate(items)}
    results = {}
    for name, tokens, buckets, attention in batching_configs():
        python = [([index_of[k] for k in b.keys], b.bucket)
                  for b in make_batches(items, tokens, buckets, attention)]
        ours = core.make_batches(lengths, tokens, buckets, attention)
        results[name] = {"batches": len(python), "identical": python == ours}
    return results


def _spec(name: str):
    """A specification module of ``tests/spec`` (this checkout's)."""
    import importlib

    tests = Path(__file__).resolve().parent.parent / "tests"
    if not (tests / "spec" / "__init__.py").is_file():
        raise SystemExit(f"no specification at {tests / 'spec'}: run from a checkout")
    if str(tests) not in sys.path:
        sys.path.insert(0, str(tests))
    return importlib.import_module(f"spec.{name}")


def compare_bundle(core: CoreOrt, bundle_name: str, pages: list[dict], threads: int) -> dict:
    from eval.margins import SepLogitsSession
    from parity.batches import make_batches, sep_logits
    from pulpie_rt.runtime.flow.pages import PageError, Preparer
    from pulpie_rt.runtime.stages.labels import sep_margins

    block_margins = _spec("labels_spec").block_margins

    bundle = _bundle(bundle_name)
    preparer = Preparer.from_bundle(bundle)
    started = time.perf_counter()
    prepared = []
    for page in pages:
        try:
            prepared.append(preparer.prepare(page["html"]))
        except PageError:
            prepared.append(None)
    seconds_prepare = time.perf_counter() - started
    items = [((p, c), chunk.token_ids) for p, page in enumerate(prepared) if page is not None
             for c, chunk in enumerate(page.chunks)]
    python_backend = SepLogitsSession(bundle, threads)
    classifier = core.classifier(bundle.onnx_path, intra_op_threads=threads)
    max_delta = max_sep_delta = 0.0
    bitwise_batches = sep_bitwise_rows = tokens = sep_positions = label_flips = 0
    predict_flips = 0
    chunk_margins: dict = {}
    seconds = {"python": 0.0, "core": 0.0}
    batches = make_batches(items, DEFAULT_MAX_BATCH_TOKENS, None, DEFAULT_MAX_BATCH_ATTENTION)
    for batch in batches:
        input_ids, attention_mask = batch.padded(bundle.pad_id)
        feed = {"input_ids": input_ids, "attention_mask": attention_mask}
        feed = {name: feed[name].astype(dtype) for name, dtype in python_backend.inputs.items()}
        started = time.perf_counter()
        (python_logits,) = python_backend.session.run([python_backend.output], feed)
        seconds["python"] += time.perf_counter() - started
        started = time.perf_counter()
        core_logits = classifier.run(input_ids, attention_mask)
        seconds["core"] += time.perf_counter() - started
        python_logits = np.asarray(python_logits, dtype=np.float32)
        mask = attention_mask.astype(bool)
        tokens += int(mask.sum())
        delta = np.abs(python_logits - core_logits)[mask]
        max_delta = max(max_delta, float(delta.max(initial=0.0)))
        bitwise_batches += int(np.array_equal(python_logits.view(np.uint32),
                                              core_logits.view(np.uint32)))
        python_sep = sep_logits(python_logits, input_ids, batch.lengths, bundle.sep_id)
        core_sep = classifier.predict(batch, bundle.pad_id, bundle.sep_id)
        core_sep_from_run = sep_logits(core_logits, input_ids, batch.lengths, bundle.sep_id)
        for key, ours, theirs, ours_run in zip(batch.keys, core_sep, python_sep,
                                               core_sep_from_run, strict=True):
            sep_positions += len(theirs)
            label_flips += int((ours_run.argmax(-1) != theirs.argmax(-1)).sum())
            predict_flips += int((ours.argmax(-1) != theirs.argmax(-1)).sum())
            if len(theirs):
                max_sep_delta = max(max_sep_delta, float(np.abs(ours - theirs).max()))
            sep_bitwise_rows += int(np.array_equal(ours, theirs))
            chunk_margins[key] = sep_margins(theirs)
    result = {
        "bundle": bundle_name, "pages": len(pages),
        "pages_prepared": sum(p is not None for p in prepared), "chunks": len(items),
        "batches": len(batches), "tokens": tokens, "threads": threads,
        "max_abs_logit_diff": max_delta, "batches_bitwise_equal": bitwise_batches,
        "sep_positions": sep_positions, "sep_label_flips": label_flips,
        "predict_sep_label_flips": predict_flips, "predict_max_abs_sep_logit_diff": max_sep_delta,
        "predict_rows_bitwise_equal": sep_bitwise_rows, "rows": len(items),
        "seconds_prepare": round(seconds_prepare, 2),
        "seconds_python_run": round(seconds["python"], 2),
        "seconds_core_run": round(seconds["core"], 2),
        "batching": compare_batching(core, items),
    }
    if bundle.has_rescorer:
        result["rescorer"] = compare_rescorer(core, bundle, prepared, chunk_margins,
                                              block_margins)
    classifier.close()
    return result


def compare_rescorer(core: CoreOrt, bundle, prepared, chunk_margins, block_margins) -> dict:
    """The rescorer on every page's block features and (Python's) margins, both sides."""
    spec = bundle.rescorer_spec
    # onnxruntime's Python API (the specification; the runtime's BlockRescorer is the core's)
    python_rescorer = _spec("rescore_spec").SpecRescorer(bundle.rescorer_path,
                                                         spec["margin_weight"])
    ours = core.rescorer(bundle.rescorer_path, spec["margin_weight"])
    threshold = bundle.main_margin if bundle.main_margin is not None else 0.0
    max_prob = 0.0
    blocks = prob_equal = odds_equal = score_equal = decision_flips = 0
    max_score = 0.0
    for p, page in enumerate(prepared):
        if page is None or page.features is None or page.n_blocks == 0:
            continue
        margins = block_margins(page.n_blocks, [c.block_indices for c in page.chunks],
                                [chunk_margins[(p, c)] for c in range(len(page.chunks))])
        features = np.ascontiguousarray(page.features, np.float32)
        python_probs = python_rescorer.probabilities(features)
        python_odds = python_rescorer.log_odds(features)
        python_scores = python_rescorer.scores(features, margins)
        probs, odds, scores = ours.run(features, margins)
        blocks += len(features)
        max_prob = max(max_prob, float(np.abs(python_probs - probs).max()))
        prob_equal += int((python_probs.view(np.uint32) == probs.view(np.uint32)).all(1).sum())
        odds_equal += int((python_odds.view(np.uint32) == odds.view(np.uint32)).sum())
        score_equal += int((python_scores.view(np.uint32) == scores.view(np.uint32)).sum())
        max_score = max(max_score, float(np.abs(python_scores - scores).max()))
        decision_flips += int(((python_scores > threshold) != (scores > threshold)).sum())
    ours.close()
    return {"blocks": blocks, "max_abs_probability_diff": max_prob,
            "probability_rows_bitwise_equal": prob_equal, "log_odds_bitwise_equal": odds_equal,
            "scores_bitwise_equal": score_equal, "max_abs_score_diff": max_score,
            "main_decisions_that_differ": decision_flips, "threshold": threshold}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", action="append",
                        help="'default' (the embedded model) or a bundle directory; repeatable "
                             "(default: default and /tmp/tiny-bundle)")
    parser.add_argument("--threads", type=int, action="append",
                        help="intra-op threads, the same on both sides; repeatable (default 1)")
    parser.add_argument("--pages", type=int, default=None, help="first N dev pages (default all)")
    parser.add_argument("--out", type=Path, default=None, help="also write the results as JSON")
    args = parser.parse_args(argv)
    from pulpie_rt.corpus import load_pages

    library = ort_library_path()
    if library is None:
        print(f"no ONNX Runtime library: set {ORT_LIBRARY_ENV}", file=sys.stderr)
        return 2
    core = CoreOrt(library)
    path, version = core.describe()
    print(f"ONNX Runtime {version} through the core: {path}")
    import onnxruntime

    print(f"onnxruntime (Python) {onnxruntime.__version__}")
    pages = load_pages("dev", args.pages)
    results = []
    for bundle_name in args.bundle or ["default", "/tmp/tiny-bundle"]:
        for threads in args.threads or [1]:
            result = compare_bundle(core, bundle_name, pages, threads)
            results.append(result)
            print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"onnxruntime": version, "library": path,
                                        "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
