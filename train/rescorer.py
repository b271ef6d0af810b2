"""Train the default model's block rescorer (``runtime.rescore``) and save it as ONNX.

The rescorer is a LightGBM tree ensemble over ``runtime.features.block_features``, trained on
the same train pages and rule labels as the transformer (``train.data``). It learns what a
1,024-token window cannot see: link density, the class/id words of a block's ancestors, which
container holds the page's prose. It is saved with onnxmltools as ``ai.onnx.ml`` tree
operators, so the runtime runs it with onnxruntime and needs neither LightGBM nor
onnxmltools; ``save_rescorer`` checks the ONNX file against LightGBM before it returns.

How the ensemble's log-odds and the transformer's margin are combined (``margin_weight``) and
where the cut lies (``main_margin``) is chosen on held-out pages by ``train.calibrate``.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from pulpie_rt.corpus import corpus_version, iter_pages
from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.features import (
    CATEGORICAL_COLUMNS,
    FEATURE_NAMES,
    FEATURES_VERSION,
    block_features,
)
from pulpie_rt.runtime.stages.simplify import simplify
from train.data import CACHE_DIR, prepare_pages, segmentation_key

RESCORER_NAME = "rescorer.onnx"
ONNX_ML_OPSET = 15  # the highest main opset onnxmltools 1.16's LightGBM converter writes


def page_features(page: dict, keep_hidden: bool = False, layout: str = FEATURES_VERSION,
                  drop_noscript: bool = False) -> tuple[str, np.ndarray]:
    """A corpus page's id and its blocks' features in ``layout`` (segmented with
    ``keep_hidden`` and ``drop_noscript``)."""
    simplified, map_html = simplify(page["html"], keep_hidden=keep_hidden,
                                    drop_noscript=drop_noscript)
    _, item_ids = extract_blocks(simplified)
    return page["id"], block_features(map_html, item_ids, layout)


def training_pages(corpus: str = "train", workers: int | None = None,
                   cache_dir: Path = CACHE_DIR, keep_hidden: bool = False,
                   layout: str = FEATURES_VERSION, drop_noscript: bool = False
                   ) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    """Per labelled page of ``corpus`` (in corpus order): its id, its blocks' features in
    ``layout`` and their rule labels (cached), the pages segmented with ``keep_hidden`` and
    ``drop_noscript``."""
    records = prepare_pages(corpus, workers, cache_dir, keep_hidden, drop_noscript)
    cache = Path(cache_dir) / (f"features-{corpus_version(corpus)}-{layout}"
                               f"{segmentation_key(keep_hidden, drop_noscript)}.npz")
    if not cache.is_file():
        with ProcessPoolExecutor(workers or os.cpu_count() or 1) as pool:
            by_id = dict(pool.map(functools.partial(page_features, keep_hidden=keep_hidden,
                                                    layout=layout, drop_noscript=drop_noscript),
                                  iter_pages(corpus), chunksize=4))
        unfinished = cache.with_suffix(f".tmp-{os.getpid()}.npz")
        np.savez_compressed(unfinished,
                            **{f"p{i}": by_id[r["id"]] for i, r in enumerate(records)})
        unfinished.rename(cache)
    with np.load(cache) as saved:
        per_page = [saved[f"p{i}"] for i in range(len(records))]
    ids, features, labels = [], [], []
    for record, page in zip(records, per_page, strict=True):
        if record["labels"] is None:
            continue
        if len(page) != len(record["labels"]):
            raise ValueError(f"{record['id']}: {len(page)} feature rows for "
                             f"{len(record['labels'])} labelled blocks")
        ids.append(record["id"])
        features.append(page)
        labels.append(np.asarray(record["labels"], dtype=np.int8))
    return ids, features, labels


def training_features(corpus: str = "train", workers: int | None = None,
                      cache_dir: Path = CACHE_DIR) -> tuple[np.ndarray, np.ndarray]:
    """Every labelled block of ``corpus``: its features and its rule label (cached)."""
    _, features, labels = training_pages(corpus, workers, cache_dir)
    return np.concatenate(features), np.concatenate(labels)


def lightgbm_params(recipe, seed: int) -> dict:
    """The seeded, deterministic LightGBM settings of every rescorer ensemble
    (``recipe.rescorer_*``; the fast profile's stages draw one ``seed`` per bag member)."""
    return {
        "objective": "binary",
        "learning_rate": recipe.rescorer_learning_rate,
        "num_leaves": recipe.rescorer_leaves,
        "min_data_in_leaf": recipe.rescorer_min_leaf,
        "feature_fraction": 0.8,
        "bagging_fraction": 0.8,
        "bagging_freq": 1,
        "num_threads": recipe.threads,
        "deterministic": True,
        "force_row_wise": True,
        "seed": seed,
        "verbose": -1,
    }


def fit_rescorer(features: np.ndarray, labels: np.ndarray, recipe):
    """A seeded, deterministic LightGBM binary classifier (``recipe.rescorer_*``)."""
    import lightgbm

    data = lightgbm.Dataset(features, labels, feature_name=list(FEATURE_NAMES),
                            categorical_feature=list(CATEGORICAL_COLUMNS))
    return lightgbm.train(lightgbm_params(recipe, recipe.seed), data,
                          num_boost_round=recipe.rescorer_rounds)


def _float32_at_or_below(value: float) -> float:
    """The largest float32 at or below ``value`` (as a float)."""
    rounded = np.float32(value)
    if float(rounded) > value:
        rounded = np.nextafter(rounded, np.float32(-np.inf))
    return float(rounded)


def float32_splits(booster):
    """``booster`` with each numerical split's threshold lowered to the largest float32 at or
    below it (categorical splits as they are).

    LightGBM splits at the midpoint of two feature values, in float64, and sends a value
    ``x <= threshold`` left; the ONNX tree operators hold each threshold rounded to the
    nearest float32, so a float32 feature value equal to the rounded-up threshold took the
    other branch there (with the two bag members the cut keeps, 4 of the 20,000 rows the fast
    profile's check reads moved by 0.086 in probability: `python -m train --fast-only --recipe
    '{"fast_seed": 1, "fast_bag": 2}'`). For a float32 ``x``, ``x <= threshold`` exactly when
    ``x`` is at most the float32 at or below it: the booster decides every float32 row as
    before, and its ONNX form, whose thresholds are now float32 values, decides as it does.
    The engine's features are float32."""
    import lightgbm

    trees = []
    for block in booster.model_to_string().split("\n\n"):
        # the header's tree sizes are byte counts of the trees' text, which this changes
        lines = [line for line in block.split("\n") if not line.startswith("tree_sizes=")]
        index = {line.split("=", 1)[0]: i for i, line in enumerate(lines) if "=" in line}
        if block.lstrip("\n").startswith("Tree=") and "threshold" in index:
            kinds = lines[index["decision_type"]].split("=", 1)[1].split()
            values = lines[index["threshold"]].split("=", 1)[1].split()
            # decision_type bit 0: a categorical split, whose "threshold" indexes its categories
            lines[index["threshold"]] = "threshold=" + " ".join(
                value if int(kind) & 1 else repr(_float32_at_or_below(float(value)))
                for value, kind in zip(values, kinds, strict=True))
        trees.append("\n".join(lines))
    return lightgbm.Booster(model_str="\n\n".join(trees))


def save_rescorer(booster, path: Path, check_features: np.ndarray, what: str = "",
                  max_off_share: float = 1 / 10_000) -> dict:
    """Write ``booster`` as ONNX to ``path`` and compare onnxruntime's probabilities with
    LightGBM's on ``check_features``, both read as float32 (as the engine computes them).

    The thresholds are written as float32 values at or below LightGBM's (``float32_splits``),
    so on float32 rows both decide alike: what is left to differ is the float32 sum of the
    leaves against LightGBM's float64 one. More than 1 row in 10,000 off by over 1e-4, or one
    by over 0.05, is a conversion error and raises; so is a booster whose float32 splits
    decide a check row otherwise than its own.
    """
    import onnxmltools
    import onnxruntime as ort
    from onnxmltools.convert.common.data_types import FloatTensorType

    check_features = np.asarray(check_features, np.float32)
    splits = float32_splits(booster)
    moved = np.abs(splits.predict(check_features) - booster.predict(check_features))
    if moved.max(initial=0.0) > 1e-9:
        raise ValueError(f"{path}: float32 thresholds move {int((moved > 1e-9).sum())} of "
                         f"{len(moved)} rows (max {moved.max():.2e})")
    booster = splits
    model = onnxmltools.convert_lightgbm(
        booster, initial_types=[("features", FloatTensorType([None, check_features.shape[1]]))],
        target_opset=ONNX_ML_OPSET, zipmap=False)
    model.doc_string = f"pulpie-rt block rescorer over {FEATURES_VERSION} features{what}"
    model.graph.name = "pulpie_rt_block_rescorer"  # onnxmltools names it by a random uuid
    # onnxmltools lists the opsets in a set's order, which changes with Python's string hashing
    # from one process to the next: sorted, the same model gives the same bytes
    opsets = sorted(model.opset_import, key=lambda opset: opset.domain)
    del model.opset_import[:]
    model.opset_import.extend(opsets)
    path.write_bytes(model.SerializeToString())
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (probabilities,) = session.run(["probabilities"], {"features": check_features})
    difference = np.abs(probabilities[:, 1] - booster.predict(check_features))
    off = int((difference > 1e-4).sum())
    if off > len(difference) * max_off_share or difference.max() > 0.05:
        raise ValueError(f"{path}: ONNX rescorer differs from LightGBM by over 1e-4 on {off} "
                         f"of {len(difference)} rows (max {difference.max():.2e})")
    return {"rows": len(difference), "rows_off_by_over_1e-4": off,
            "max_abs_probability_difference": float(difference.max())}


def write_rescorer(bundle: Path, recipe, log=print) -> dict:
    """Train the rescorer on the recipe's corpus into ``bundle/rescorer.onnx``; returns what
    the training measured (for results.json)."""
    features, labels = training_features(recipe.corpus)
    log(f"rescorer: {len(labels)} blocks x {features.shape[1]} features ({FEATURES_VERSION})")
    booster = fit_rescorer(features, labels, recipe)
    check = save_rescorer(booster, bundle / RESCORER_NAME, features)
    size = (bundle / RESCORER_NAME).stat().st_size
    log(f"rescorer: {recipe.rescorer_rounds} trees -> {RESCORER_NAME} ({size / 1e6:.2f} MB); "
        f"ONNX vs LightGBM on the training blocks: max |dp| "
        f"{check['max_abs_probability_difference']:.1e}, {check['rows_off_by_over_1e-4']} rows "
        f"off by over 1e-4")
    return {"blocks": int(len(labels)), "features": FEATURES_VERSION,
            "trees": recipe.rescorer_rounds, "onnx_bytes": size, "onnx_check": check}

