"""The systems a quality measurement compares, each run over the same pages: our extractor, our
decoding of precomputed margins (calibration), trafilatura, and the two rule rows (the
training labels' ceiling and the whole page)."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import resource
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pulpie_rt.runtime.stages.labels import labels_from_predictions, sep_margins


def rule_texts(pages: Sequence[dict]) -> tuple[dict[str, str], dict[str, str],
                                                 dict[str, int]]:
    """Texts of the rule-label ceiling and of the whole page, and each page's block count.

    A page that fails in simplify / reconstruct gets "" (and block count 0 when simplify
    failed).
    """
    from eval.labels import label_blocks
    from pulpie_rt.runtime.stages.blocks import extract_blocks
    from pulpie_rt.runtime.stages.labels import labels_from_predictions
    from pulpie_rt.runtime.stages.markdown import to_text
    from pulpie_rt.runtime.stages.reconstruct import extract_main_html
    from pulpie_rt.runtime.stages.simplify import simplify

    ceiling: dict[str, str] = {}
    whole: dict[str, str] = {}
    n_blocks: dict[str, int] = {}
    for page in pages:
        pid = page["id"]
        ceiling[pid] = whole[pid] = ""
        try:
            simplified, map_html = simplify(page["html"])
            blocks, item_ids = extract_blocks(simplified)
        except Exception:  # counted as an empty output, not fatal
            n_blocks[pid] = 0
            continue
        n_blocks[pid] = sum(1 for i in item_ids if i is not None)
        for target, preds in ((ceiling, label_blocks(blocks, page["reference"])),
                              (whole, [1] * len(blocks))):
            try:
                labels = labels_from_predictions(item_ids, preds)
                target[pid] = to_text(extract_main_html(map_html, labels))
            except Exception:
                pass
    return ceiling, whole, n_blocks


def _tree_cpu_s() -> float:
    """User + system seconds of this process and of its reaped children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _child_main(run: Callable[..., dict], args: tuple, path: str) -> None:
    result = run(*args)
    with open(path, "wb") as fh:
        pickle.dump(result, fh)


def run_in_child(run: Callable[..., dict], *args) -> dict[str, Any]:
    """``run(*args)`` in a forked process; its result with ``tree_cpu_s``: the user + system
    seconds of that process and every process it started (worker processes and ONNX Runtime's
    threads count), less what it spent before its timed part (``setup_cpu_s``, which ``run``
    reports: imports, model load). A run that fails raises ``RuntimeError``."""
    context = multiprocessing.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-quality-") as folder:
        path = os.path.join(folder, "result.pkl")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        child = context.Process(target=_child_main, args=(run, args, path))
        child.start()
        child.join()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if child.exitcode != 0 or not os.path.exists(path):
            raise RuntimeError(f"{getattr(run, '__name__', run)} failed in its process "
                               f"(exit code {child.exitcode})")
        with open(path, "rb") as fh:
            result = pickle.load(fh)
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result["tree_cpu_s"] = total - result.get("setup_cpu_s", 0.0)
    return result


def run_ours(pages: Sequence[dict], model: str, threads: int | None = None,
             batch_pages: int = 32, profile: str | None = None,
             favor: str = "balanced") -> dict[str, Any]:
    """Our extractor over ``pages`` (``favor``: the decision's named shift): texts, errors,
    block counts, load and extraction time (``setup_cpu_s``: CPU seconds of this process
    before the timed loop)."""
    from pulpie_rt import Extractor

    t0 = time.perf_counter()
    extractor = Extractor(model, threads=threads, profile=profile, favor=favor)
    load_s = time.perf_counter() - t0
    setup_cpu_s = _tree_cpu_s()
    texts: dict[str, str] = {}
    errors: dict[str, str] = {}
    n_blocks: dict[str, int] = {}
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for start in range(0, len(pages), batch_pages):
        batch = pages[start:start + batch_pages]
        results = extractor.extract_batch([p["html"] for p in batch])
        for page, result in zip(batch, results, strict=True):
            texts[page["id"]] = result.text
            n_blocks[page["id"]] = result.n_blocks
            if result.error is not None:
                errors[page["id"]] = result.error
    wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"texts": texts, "errors": errors, "n_blocks": n_blocks, "load_s": load_s,
            "wall_s": wall_s, "cpu_s": cpu_s, "timed_pages": len(pages),
            "device": extractor.device, "profile": extractor.bundle.profile,
            "bundle": str(extractor.bundle.path), "keep_hidden": extractor.bundle.keep_hidden,
            "drop_noscript": extractor.bundle.drop_noscript, "setup_cpu_s": setup_cpu_s}


def fold_decisions(bundle: str | Path) -> dict[str, Any] | None:
    """The fast profile's out-of-fold decisions on the readability pages it was trained on
    (``results.json`` ``fast.readability_folds``, written by ``train.fast`` with
    ``Recipe.fast_fold_readability``): ``pages``, ``precision``/``recall``/``f1`` as training
    measured them and ``labels`` (page id -> one character per block, ``1`` main); None for
    a bundle that was not trained on them."""
    import json

    path = Path(bundle) / "results.json"
    if not path.is_file():
        return None
    folds = json.loads(path.read_text(encoding="utf-8")).get("fast", {}).get("readability_folds")
    return folds if folds and folds.get("labels") else None


def fold_texts(pages: Sequence[dict], labels: dict[str, str], keep_hidden: bool,
               drop_noscript: bool) -> dict[str, str]:
    """Each page's text from its out-of-fold decisions (``fold_decisions``' ``labels``): the
    page segmented as the profile segments it, its blocks labelled so, reconstructed and
    rendered as the extractor renders ``.text``. A page without decisions, or whose block
    count differs from them, raises ``ValueError`` naming it: its figure would not be the
    fold's."""
    from pulpie_rt.runtime.stages.blocks import extract_blocks
    from pulpie_rt.runtime.stages.markdown import to_text
    from pulpie_rt.runtime.stages.reconstruct import extract_main_html
    from pulpie_rt.runtime.stages.simplify import simplify

    texts: dict[str, str] = {}
    for page in pages:
        decided = labels.get(page["id"])
        if decided is None:
            raise ValueError(f"{page['id']}: no out-of-fold decisions in the model's "
                             f"results.json")
        if not decided:  # its decoding failed in training: scored empty, as it was there
            texts[page["id"]] = ""
            continue
        simplified, map_html = simplify(page["html"], keep_hidden=keep_hidden,
                                        drop_noscript=drop_noscript)
        _, item_ids = extract_blocks(simplified)
        if len(decided) != len(item_ids):
            raise ValueError(f"{page['id']}: {len(decided)} out-of-fold decisions for "
                             f"{len(item_ids)} blocks (segmented otherwise than in training)")
        texts[page["id"]] = to_text(extract_main_html(
            map_html, labels_from_predictions(item_ids, [int(c) for c in decided])))
    return texts


def run_trafilatura(pages: Sequence[dict]) -> dict[str, Any]:
    """``trafilatura.extract`` (defaults) over ``pages``; raises ImportError without it."""
    import trafilatura

    trafilatura.extract("<html><body><p>warm-up</p></body></html>")  # lazy imports, untimed
    setup_cpu_s = _tree_cpu_s()
    texts: dict[str, str] = {}
    errors: dict[str, str] = {}
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for page in pages:
        try:
            texts[page["id"]] = trafilatura.extract(page["html"]) or ""
        except Exception as exc:  # a page that fails is scored empty, not fatal
            texts[page["id"]] = ""
            errors[page["id"]] = f"{type(exc).__name__}: {exc}"
    wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    return {"texts": texts, "errors": errors, "wall_s": wall_s, "cpu_s": cpu_s,
            "timed_pages": len(pages), "version": getattr(trafilatura, "__version__", None),
            "setup_cpu_s": setup_cpu_s}


def page_margins(bundle_dir: Path, pages: list[dict], threads: int | None = None) -> list:
    """Per page: the prepared page and each chunk's SEP margins, from the bundle on CPU
    (``eval.margins``: the transformer through onnxruntime's Python API)."""
    from eval.margins import SepLogitsSession, chunk_sep_logits
    from pulpie_rt.runtime.flow.pages import Preparer
    from pulpie_rt.runtime.model.bundle import load_bundle

    bundle = load_bundle(bundle_dir)
    preparer = Preparer.from_bundle(bundle)
    prepared = [preparer.prepare(page["html"]) for page in pages]
    logits = chunk_sep_logits(SepLogitsSession(bundle, threads), prepared)
    return [(page, ready, [sep_margins(chunk) for chunk in page_logits])
            for page, ready, page_logits in zip(pages, prepared, logits, strict=True)]


def decoded_texts(scored: list, threshold: float, rescorer=None) -> dict[str, str]:
    """Per page id of ``page_margins``' output: the main-content text under one decoding
    (``runtime.pages.decide_blocks`` with ``keep_best_block``)."""
    from pulpie_rt.runtime.flow.pages import decide_blocks
    from pulpie_rt.runtime.stages.markdown import to_text
    from pulpie_rt.runtime.stages.reconstruct import extract_main_html

    texts = {}
    for page, prepared, margins in scored:
        preds = decide_blocks(prepared, margins, threshold, True, rescorer)
        labels = labels_from_predictions(prepared.item_ids, preds)
        texts[page["id"]] = to_text(extract_main_html(prepared.map_html, labels))
    return texts
