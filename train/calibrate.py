"""Calibrate the default model's decoding on held-out pages.

Class-weighted training leaves the logit margin's zero point somewhere near, not at, the best
cut, and how much the transformer's margin should count beside the rescorer's log-odds is not
known from training either (the rescorer never sees the margin). ``choose_decoding`` picks the
rescorer's ``margin_weight`` and the threshold (``decoding.main_margin``) that give the best
mean word-F1 on the calibration pages: the dev corpus's mozilla/readability pages, whose
references are Readability.js's expected output. They share no page with the training corpus
or with the ground-truth pages the model is scored on.
"""

from __future__ import annotations

from pathlib import Path

from pulpie_rt.runtime.labels import labels_from_predictions, sep_margins

CALIBRATION_SOURCE = "mozilla/readability"
MARGIN_GRID = tuple(-0.25 * i + 0.0 for i in range(9))  # 0, -0.25 … -2 (+ 0.0: no "-0.00")
WEIGHT_GRID = (0.0, 0.25, 0.5, 1.0)  # margin_weight, with a rescorer


def calibration_pages() -> list[dict]:
    from pulpie_rt.corpus import load_pages

    return [p for p in load_pages("dev")
            if p["source"] == CALIBRATION_SOURCE and isinstance(p.get("reference"), str)]


def page_margins(bundle_dir: Path, pages: list[dict], threads: int | None = None) -> list:
    """Per page: the prepared page and each chunk's SEP margins, from the bundle on CPU."""
    from pulpie_rt.runtime.backends import create_backend
    from pulpie_rt.runtime.bundle import load_bundle
    from pulpie_rt.runtime.pages import Preparer, run_chunks

    bundle = load_bundle(bundle_dir)
    backend = create_backend(bundle, "onnxruntime", "cpu", threads=threads)
    preparer = Preparer.from_bundle(bundle)
    prepared = [preparer.prepare(page["html"]) for page in pages]
    margins, failed = run_chunks(backend, prepared, sep_margins, 16384)
    if failed:
        raise RuntimeError(f"calibration pages failed: {sorted(failed.items())[:3]}")
    return [(page, ready, [margins[(i, c)] for c in range(len(ready.chunks))])
            for i, (page, ready) in enumerate(zip(pages, prepared, strict=True))]


def decoded_texts(scored: list, threshold: float, rescorer=None) -> dict[str, str]:
    """Per page id of ``page_margins``' output: the main-content text under one decoding
    (``runtime.pages.decide_blocks`` with ``keep_best_block``)."""
    from pulpie_rt.runtime.markdown import to_text
    from pulpie_rt.runtime.pages import decide_blocks
    from pulpie_rt.runtime.reconstruct import extract_main_html

    texts = {}
    for page, prepared, margins in scored:
        preds = decide_blocks(prepared, margins, threshold, True, rescorer)
        labels = labels_from_predictions(prepared.item_ids, preds)
        texts[page["id"]] = to_text(extract_main_html(prepared.map_html, labels))
    return texts


def choose_decoding(bundle_dir: Path, threads: int | None = None, log=print
                    ) -> tuple[float | None, float, dict[str, float]]:
    """``(margin_weight, main_margin, every F1 tried)``: the best pair of ``WEIGHT_GRID`` x
    ``MARGIN_GRID`` (``margin_weight`` None and the margin grid alone when the bundle has no
    rescorer); ties go to the smaller weight, then the threshold nearest 0."""
    from pulpie_rt.bench.quality import score_pages
    from pulpie_rt.runtime.bundle import load_bundle

    bundle = load_bundle(bundle_dir)
    pages = calibration_pages()
    scored = page_margins(bundle_dir, pages, threads)
    references = {p["id"]: p["reference"] for p in pages}
    weights = WEIGHT_GRID if bundle.has_rescorer else (None,)
    f1: dict[str, float] = {}
    best: tuple[float | None, float, float] | None = None
    for weight in weights:
        rescorer = None if weight is None else bundle.load_rescorer(weight)
        for threshold in MARGIN_GRID:
            texts = decoded_texts(scored, threshold, rescorer)
            name = f"{threshold:+.2f}" if weight is None else f"w{weight:.2f} {threshold:+.2f}"
            f1[name] = round(score_pages(texts, references)["f1"], 4)
            log(f"calibration on {len(pages)} {CALIBRATION_SOURCE} pages: "
                + ("" if weight is None else f"margin_weight {weight:.2f}, ")
                + f"main_margin {threshold:+.2f} -> word F1 {f1[name]:.4f}")
            if best is None or f1[name] > best[2]:
                best = (weight, threshold, f1[name])
    return best[0], best[1], f1
