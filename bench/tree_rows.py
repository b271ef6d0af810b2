"""The rows the embedded default model's two ``fast`` stages read on real pages, written for the
tree kernel's page benchmark (``kernels/src/trees.rs``, ``tree_pages``):

    python -m bench.tree_rows FILE [--corpus dev] [--pages N]
    PULPIE_RT_TREE_ROWS=FILE cargo test -p pulpie_rt_kernels --release tree_pages -- \
        --ignored --nocapture

Per page with blocks, in corpus order: the first stage's rows (the page's feature rows in
context, ``native.context_features``), then the last stage's (those rows with the first
stage's probabilities read in context, ``native.stage_features``, appended), as the core's
``ContextRescorer`` builds them; each as ``u32`` rows, ``u32`` columns (little-endian) and the
float32 values row-major.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from eval.rows import fast_layout, page_rows
from pulpie_rt.corpus import load_pages

if TYPE_CHECKING:
    from pulpie_rt.runtime.native import CoreRescorer


def stage_rows(html: str, layout: str, first_stage: CoreRescorer
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """One page's first- and last-stage rows (None: a page without blocks)."""
    from pulpie_rt.runtime import native
    from pulpie_rt.runtime.stages.rescore import CONTEXT_WIDTHS, N_STAGE

    try:
        rows, _ = page_rows(html, layout)
    except Exception:  # noqa: BLE001 - a page the pipeline refuses has no blocks
        return None
    if not len(rows):
        return None
    context = native.context_features(rows, CONTEXT_WIDTHS[rows.shape[1]])
    probabilities, _, _ = first_stage.run(context, np.zeros(len(context), np.float32))
    stage = native.stage_features(probabilities[:, 1].astype(np.float64), rows, N_STAGE)
    return context, np.ascontiguousarray(np.hstack([context, stage]), np.float32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tree_rows",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--corpus", default="dev")
    parser.add_argument("--pages", type=int, default=None, help="the first N pages (default: all)")
    args = parser.parse_args(argv)
    from pulpie_rt.runtime import native
    from pulpie_rt.runtime.model.resolve import embedded_model_dir

    first_stage = native.CoreRescorer(embedded_model_dir() / "rescorer-fast-first.onnx", 0.0)
    layout = fast_layout()
    pages = rows = 0
    with open(args.out, "wb") as fh:
        for page in load_pages(args.corpus, args.pages):
            stages = stage_rows(page["html"], layout, first_stage)
            if stages is None:
                continue
            for values in stages:
                fh.write(struct.pack("<II", *values.shape))
                fh.write(np.ascontiguousarray(values, np.float32).tobytes())
            pages += 1
            rows += len(stages[0])
    print(f"{args.out}: {pages} pages, {rows} rows a stage")
    return 0


if __name__ == "__main__":
    sys.exit(main())
