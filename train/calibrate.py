"""Calibrate the default model's decision threshold on held-out pages.

Class-weighted training leaves the logit margin's zero point somewhere near, not at, the best
cut. ``choose_main_margin`` picks the margin threshold (``decoding.main_margin`` in the bundle)
that gives the best mean word-F1 on the calibration pages: the dev corpus's
mozilla/readability pages, whose references are Readability.js's expected output. They share no
page with the training corpus or with the ground-truth pages the model is scored on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pulpie_rt.runtime.labels import (
    block_predictions,
    keep_best_block,
    labels_from_predictions,
    margin_labels,
    sep_margins,
)

CALIBRATION_SOURCE = "mozilla/readability"
MARGIN_GRID = tuple(-0.25 * i + 0.0 for i in range(9))  # 0, -0.25 … -2 (+ 0.0: no "-0.00")


def calibration_pages() -> list[dict]:
    from pulpie_rt.corpus import load_pages

    return [p for p in load_pages("dev")
            if p["source"] == CALIBRATION_SOURCE and isinstance(p.get("reference"), str)]


def page_margins(bundle_dir: Path, pages: list[dict], threads: int | None = None) -> list:
    """Per page: the prepared page and each chunk's SEP margins, from the bundle on CPU."""
    from pulpie_rt.runtime.backends import create_backend
    from pulpie_rt.runtime.batches import make_batches
    from pulpie_rt.runtime.bundle import load_bundle
    from pulpie_rt.runtime.pages import Preparer

    bundle = load_bundle(bundle_dir)
    backend = create_backend(bundle, "onnxruntime", "cpu", threads=threads)
    preparer = Preparer.from_bundle(bundle)
    out = []
    for page in pages:
        prepared = preparer.prepare(page["html"])
        items = [(i, chunk.token_ids) for i, chunk in enumerate(prepared.chunks)]
        margins: dict[int, np.ndarray] = {}
        for batch in make_batches(items, 16384, backend.buckets()):
            for key, logits in zip(batch.keys, backend.predict(batch), strict=True):
                margins[key] = sep_margins(logits)
        out.append((page, prepared, [margins[i] for i in range(len(prepared.chunks))]))
    return out


def choose_main_margin(bundle_dir: Path, threads: int | None = None, log=print
                       ) -> tuple[float, dict[float, float]]:
    """The best threshold of ``MARGIN_GRID`` (ties: the one nearest 0) and every F1 tried."""
    from pulpie_rt.bench.quality import score_pages
    from pulpie_rt.runtime.markdown import to_text
    from pulpie_rt.runtime.reconstruct import extract_main_html

    pages = calibration_pages()
    scored = page_margins(bundle_dir, pages, threads)
    references = {p["id"]: p["reference"] for p in pages}
    f1: dict[float, float] = {}
    for threshold in MARGIN_GRID:
        texts = {}
        for page, prepared, margins in scored:
            blocks = [c.block_indices for c in prepared.chunks]
            preds = block_predictions(prepared.n_blocks, blocks,
                                      [margin_labels(m, threshold) for m in margins])
            preds = keep_best_block(preds, blocks, margins)
            labels = labels_from_predictions(prepared.item_ids, preds)
            texts[page["id"]] = to_text(extract_main_html(prepared.map_html, labels))
        f1[threshold] = score_pages(texts, references)["f1"]
        log(f"calibration on {len(pages)} {CALIBRATION_SOURCE} pages: main_margin "
            f"{threshold:+.2f} -> word F1 {f1[threshold]:.4f}")
    best = max(MARGIN_GRID, key=lambda t: (round(f1[t], 4), t))
    return best, f1
