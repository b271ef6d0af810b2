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

from eval.pages import CALIBRATION_SOURCE, calibration_pages
from eval.systems import decoded_texts, page_margins

MARGIN_GRID = tuple(-0.25 * i + 0.0 for i in range(9))  # 0, -0.25 … -2 (+ 0.0: no "-0.00")
WEIGHT_GRID = (0.0, 0.25, 0.5, 1.0)  # margin_weight, with a rescorer


def choose_decoding(bundle_dir: Path, threads: int | None = None, log=print
                    ) -> tuple[float | None, float, dict[str, float]]:
    """``(margin_weight, main_margin, every F1 tried)``: the best pair of ``WEIGHT_GRID`` x
    ``MARGIN_GRID`` (``margin_weight`` None and the margin grid alone when the bundle has no
    rescorer); ties go to the smaller weight, then the threshold nearest 0."""
    from eval.metrics import score_pages
    from pulpie_rt.runtime.model.bundle import load_bundle

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
