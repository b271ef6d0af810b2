"""The default model's block features: the compiled core against the Python specification
(``tests/spec/features_spec.py``), value by value, and the default model's labels with each.

    python -m parity.features_parity [--corpus dev|train] [--limit N] [--all-labels]

Every page goes through the default model's own preparation (its ``accurate`` profile's
``Preparer``: simplify -> blocks -> tokens -> chunks -> block features, on the core); then both
sides compute ``block_features(map_html, item_ids)`` again, back to back (alternating which
goes first), for the CPU seconds per page of each, side by side. Every value is compared: the
count and flag columns (``COUNT_COLUMNS``) must be equal, a ratio column's value is bitwise
equal, within ``RTOL`` or different; the table names every column with a value that is not
bitwise equal.

Labels: the default model's full decoding (``runtime.flow.pages.decide_blocks``: the rescorer's
log-odds over the features plus its margin weight times the transformer's margin, the bundle's
threshold and keep-best-block rule) with the Python features and with the core's, on the same
transformer margins (``eval.margins``: the transformer's SEP logits over the prepared pages,
batched as the engine batches). The decoding is a function of the features and the margins
alone, so a page whose two feature matrices are bitwise equal has the same labels on both
sides: by default the transformer runs only on pages whose matrices differ; ``--all-labels``
runs it on every page (dev: a few CPU minutes) to show it.

``--libxml2-tree`` reads the core's features from libxml2's tree of ``map_html`` as it is
(``<template>`` content and the elements HTML makes void read as libxml2 reads them; see
core/src/features/mod.rs): what the core's view of the tree changes.

Writes the figures to ``bench/results/features-parity-<corpus>-<time>.json`` (``--out``); exit
status 1 if any label differs.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from eval.report import REPO_ROOT, format_table, machine_info, write_result
from pulpie_rt.corpus import iter_pages
from pulpie_rt.runtime import native
from pulpie_rt.runtime.stages.features import (
    ANCESTOR_TAGS,
    FEATURE_NAMES,
    KEYWORDS,
    N_FEATURES,
)

SPEC_PATH = REPO_ROOT / "tests" / "spec" / "features_spec.py"
# Columns whose values are whole numbers (counts, codes, 0/1 flags): compared exactly.
COUNT_COLUMNS = frozenset(
    "tag own_tag words chars links images punct depth in_link sentences page_blocks "
    "page_words prev_words next_words window_words in_candidate repeats".split()
    + [f"own_kw_{w}" for w in KEYWORDS]
    + [f"ancestor_kw_{w}" for w in KEYWORDS]
    + [f"ancestor_{t}" for t in ANCESTOR_TAGS]
)
IS_COUNT = np.array([name in COUNT_COLUMNS for name in FEATURE_NAMES])
# Ratio columns: float32 values computed in the specification's order and precision, so
# normally bitwise equal; numpy's float32 sums may take another order on another CPU (its
# BLAS kernel), which this tolerance (a few float32 ulps) covers.
RTOL = 1e-6
LABEL_BATCH = 8  # pages per transformer call (eval.margins.chunk_sep_logits)


def load_spec(path: Path = SPEC_PATH) -> ModuleType:
    """``tests/spec/features_spec.py`` of this checkout (the specification is a test oracle,
    not part of the installed package)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: the features specification lives in the "
                                "repository's tests/spec (run from a checkout)")
    spec = importlib.util.spec_from_file_location("features_spec", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ValueTally:
    """Per column: values bitwise equal, within ``RTOL`` (ratio columns), different; and the
    pages where a column is not bitwise equal."""

    def __init__(self) -> None:
        self.equal = np.zeros(N_FEATURES, np.int64)
        self.close = np.zeros(N_FEATURES, np.int64)
        self.different = np.zeros(N_FEATURES, np.int64)
        self.pages: dict[str, list[str]] = defaultdict(list)

    def add(self, page_id: str, spec: np.ndarray, core: np.ndarray) -> bool:
        """Count one page's values; whether its two matrices are bitwise equal."""
        if spec.shape != core.shape:
            raise ValueError(f"{page_id}: shapes {spec.shape} (spec) and {core.shape} (core)")
        equal = spec.view(np.uint32) == core.view(np.uint32)  # bitwise (0.0 vs -0.0 differ)
        close = ~equal & np.isclose(core, spec, rtol=RTOL, atol=0) & ~IS_COUNT
        self.equal += equal.sum(0)
        self.close += close.sum(0)
        self.different += (~equal & ~close).sum(0)
        for column in np.flatnonzero(~equal.all(0)):
            self.pages[FEATURE_NAMES[column]].append(page_id)
        return bool(equal.all())

    def rows(self) -> list[list[Any]]:
        rows = []
        for column, name in enumerate(FEATURE_NAMES):
            if name in self.pages:
                pages = self.pages[name]
                rows.append([name, "count" if IS_COUNT[column] else "ratio",
                             int(self.equal[column]), int(self.close[column]),
                             int(self.different[column]),
                             f"{len(pages)}: {', '.join(pages[:3])}"
                             + (" …" if len(pages) > 3 else "")])
        return rows

    def summary(self) -> dict[str, Any]:
        count, ratio = IS_COUNT, ~IS_COUNT
        return {
            "count_columns": {"columns": int(count.sum()), "equal": int(self.equal[count].sum()),
                              "different": int(self.different[count].sum())},
            "ratio_columns": {"columns": int(ratio.sum()),
                              "bitwise_equal": int(self.equal[ratio].sum()),
                              "within_rtol": int(self.close[ratio].sum()),
                              "different": int(self.different[ratio].sum()), "rtol": RTOL},
            "columns_not_bitwise_equal": {
                name: {"within_rtol": int(self.close[FEATURE_NAMES.index(name)]),
                       "different": int(self.different[FEATURE_NAMES.index(name)]),
                       "pages": pages}
                for name, pages in self.pages.items()},
        }


def timed(fn, *args) -> tuple[float, Any]:
    """CPU seconds of ``fn(*args)`` and its value (garbage collected first, untimed)."""
    gc.collect()
    start = time.process_time()
    value = fn(*args)
    return time.process_time() - start, value


class LabelCheck:
    """The default model's labels with the specification's features and with the core's, on
    the same transformer margins, for the pages given to ``add`` (in batches)."""

    def __init__(self) -> None:
        from eval.margins import SepLogitsSession
        from pulpie_rt.runtime.flow.pages import Preparer
        from pulpie_rt.runtime.model.resolve import resolve_model

        self.bundle = resolve_model("default", profile="accurate").bundle
        self.preparer = Preparer.from_bundle(self.bundle)
        self.session = SepLogitsSession(self.bundle)
        self.rescorer = self.bundle.rescorer
        self.pending: list[tuple[str, Any, np.ndarray]] = []
        self.pages = self.blocks = 0
        self.different: dict[str, list[int]] = {}

    def add(self, page_id: str, prepared, spec_features: np.ndarray) -> None:
        self.pending.append((page_id, prepared, spec_features))
        if len(self.pending) >= LABEL_BATCH:
            self.flush()

    def flush(self) -> None:
        from eval.margins import chunk_sep_logits
        from pulpie_rt.runtime.flow.pages import decide_blocks
        from pulpie_rt.runtime.stages.labels import sep_margins

        if not self.pending:
            return
        pages = [prepared for _, prepared, _ in self.pending]
        page_logits = chunk_sep_logits(self.session, pages)
        for index, (page_id, prepared, spec_features) in enumerate(self.pending):
            margins = [sep_margins(logits) for logits in page_logits[index]]
            labels = {}
            for side, features in (("core", prepared.features), ("spec", spec_features)):
                labels[side] = decide_blocks(
                    replace(prepared, features=features), margins, self.bundle.main_margin,
                    self.bundle.keep_best_block, self.rescorer)
            differ = [i for i, (a, b) in enumerate(zip(labels["core"], labels["spec"],
                                                       strict=True)) if a != b]
            self.pages += 1
            self.blocks += prepared.n_blocks
            if differ:
                self.different[page_id] = differ
                print(f"LABELS DIFFER {page_id}: blocks {differ[:20]}", flush=True)
        self.pending.clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="dev", help="corpus file name (dev, train)")
    parser.add_argument("--limit", type=int, default=None, help="first N pages only")
    parser.add_argument("--all-labels", action="store_true",
                        help="run the transformer on every page, not only where the features "
                             "differ")
    parser.add_argument("--libxml2-tree", action="store_true",
                        help="the core reads libxml2's tree as it is (see the module doc)")
    parser.add_argument("--out", default=None, help="result JSON file or folder")
    args = parser.parse_args(argv)
    if not native.available():
        print("no compiled core in this environment (make core builds it)", file=sys.stderr)
        return 2
    spec = load_spec()
    labels = LabelCheck()
    preparer = labels.preparer

    def core_features(map_html: str, item_ids: list[str | None]) -> np.ndarray:
        return native.block_features(map_html, item_ids, libxml2_tree=args.libxml2_tree)

    tally = ValueTally()
    seconds = {"core": 0.0, "spec": 0.0}
    pages = blocks = 0
    for page in iter_pages(args.corpus):
        if args.limit is not None and pages >= args.limit:
            break
        prepared = preparer.prepare(page["html"])
        map_html, item_ids = prepared.map_html, prepared.item_ids
        outputs = {}
        order = ("core", "spec") if pages % 2 == 0 else ("spec", "core")
        for side in order:
            fn = core_features if side == "core" else spec.block_features
            cpu_s, outputs[side] = timed(fn, map_html, item_ids)
            seconds[side] += cpu_s
        if not args.libxml2_tree and not np.array_equal(prepared.features, outputs["core"]):
            raise RuntimeError(f"{page['id']}: the runtime's features are not the core's")
        pages += 1
        blocks += len(item_ids)
        same = tally.add(page["id"], outputs["spec"], outputs["core"])
        if args.all_labels or not same:
            labels.add(page["id"], replace(prepared, features=outputs["core"]), outputs["spec"])
    labels.flush()

    summary = tally.summary()
    counts, ratios = summary["count_columns"], summary["ratio_columns"]
    values = blocks * N_FEATURES
    tree = "libxml2's tree as it is" if args.libxml2_tree else "the HTML DOM's view"
    print(f"\nfeatures, core ({tree}) vs specification, {args.corpus}: {pages} pages, "
          f"{blocks:,} blocks, {values:,} values")
    print(f"  count and flag columns ({counts['columns']}): equal {counts['equal']:,}, "
          f"different {counts['different']:,}")
    print(f"  ratio columns ({ratios['columns']}): bitwise equal {ratios['bitwise_equal']:,}, "
          f"within rtol {RTOL:g} {ratios['within_rtol']:,}, different {ratios['different']:,}")
    rows = tally.rows()
    if rows:
        print(format_table(["column", "kind", "equal", "within rtol", "different",
                            "pages (first)"], rows))
    core_ms, spec_ms = (1000 * seconds[s] / max(pages, 1) for s in ("core", "spec"))
    print("\n" + format_table(
        ["block features, CPU per page", "core ms", "Python ms", "Python / core"],
        [[f"{pages} {args.corpus} pages", core_ms, spec_ms, spec_ms / max(core_ms, 1e-9)]]))
    scope = "every page" if args.all_labels else "the pages whose features differ"
    different = sum(len(v) for v in labels.different.values())
    print(f"\ndefault-model labels, spec vs core features ({scope}): {labels.pages} pages, "
          f"{labels.blocks:,} blocks, {different} labels different")
    payload = {
        "kind": "features-parity", "corpus": args.corpus, "pages": pages, "blocks": blocks,
        "values": values, "core_tree": "libxml2" if args.libxml2_tree else "html-dom",
        **summary,
        "cpu_ms_per_page": {"core": core_ms, "python": spec_ms},
        "labels": {"pages_decoded": labels.pages, "scope": scope, "blocks": labels.blocks,
                   "different": different, "pages_different": labels.different},
        "machine": machine_info(),
    }
    print(f"wrote {write_result(f'features-parity-{args.corpus}', payload, args.out)}")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
