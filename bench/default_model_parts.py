"""What each part of the embedded default model contributes, on the dev pages with ground truth.

    python -m bench.default_model_parts [--model DIR] [--out PATH]

One pass of the bundle's transformer and feature extraction over the pages, then four
decodings of the same numbers, each scored as ``bench.quality`` scores ``ours``:

- ``transformer only``: margin > the threshold the transformer-only bundle was calibrated to
  (-1.5, ``calibration_f1`` of that run) — the model as shipped before the rescorer;
- ``rescorer only``: the rescorer's log-odds (margin_weight 0) at the threshold the
  calibration grid picked for weight 0, and at the shipped threshold;
- ``shipped``: the bundle's own ``margin_weight`` and ``main_margin``.

``keep_best_block`` applies in every row. The thresholds and weights come from the
readability calibration pages (``results.json``'s ``calibration_f1``), never from these pages.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

TRANSFORMER_ONLY_MARGIN = -1.5  # the transformer-only bundle's calibrated threshold


def run(model: Path, out: Path | None) -> dict:
    from eval.metrics import score_pages
    from eval.pages import groundtruth_pages
    from eval.systems import decoded_texts, page_margins
    from pulpie_rt.runtime.model.bundle import load_bundle

    bundle = load_bundle(model)
    shipped_weight = float(bundle.rescorer_spec["margin_weight"])
    shipped_margin = bundle.main_margin
    calibration = json.loads((model / "results.json").read_text(encoding="utf-8"))[
        "decoding"]["calibration_f1"]
    weight0 = {k: v for k, v in calibration.items() if k.startswith("w0.00 ")}
    weight0_margin = float(max(weight0, key=weight0.__getitem__).split()[1])
    pages = groundtruth_pages()
    references = {p["id"]: p["reference"] for p in pages}
    scored = page_margins(model, pages)
    rows = [
        ("transformer only", None, TRANSFORMER_ONLY_MARGIN),
        ("rescorer only (calibrated for weight 0)", 0.0, weight0_margin),
        ("rescorer only (shipped threshold)", 0.0, shipped_margin),
        ("shipped", shipped_weight, shipped_margin),
    ]
    results = {}
    for name, weight, threshold in rows:
        rescorer = None if weight is None else bundle.load_rescorer(weight)
        scores = score_pages(decoded_texts(scored, threshold, rescorer), references)
        results[name] = {"margin_weight": weight, "main_margin": threshold,
                         **{k: scores[k] for k in ("f1", "precision", "recall", "empty")}}
        print(f"{name:42s} weight {'-' if weight is None else f'{weight:.2f}':>4s} "
              f"threshold {threshold:+.2f}  word F1 {scores['f1']:.4f} "
              f"(P {scores['precision']:.4f}, R {scores['recall']:.4f}), "
              f"{scores['empty']} empty", flush=True)
    record = {"kind": "default_model_parts", "model": str(model), "pages": len(pages),
              "utc": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), "rows": results}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    return record


def main(argv: list[str] | None = None) -> int:
    from pulpie_rt.runtime.model.resolve import embedded_model_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=embedded_model_dir(),
                        help="a bundle with a rescorer and its results.json (default: embedded)")
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    run(args.model, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
