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


def save_rescorer(booster, path: Path, check_features: np.ndarray, what: str = "",
                  max_off_share: float = 1 / 10_000) -> dict:
    """Write ``booster`` as ONNX to ``path`` and compare onnxruntime's probabilities with
    LightGBM's on ``check_features``.

    The ONNX tree operators hold thresholds in float32, LightGBM in float64: a feature value
    that falls between the two roundings of a threshold takes the other branch (3 of the
    186,119 training blocks for the shipped recipe). More than 1 row in 10,000 off by over
    1e-4 is a conversion error and raises.
    """
    import onnxmltools
    import onnxruntime as ort
    from onnxmltools.convert.common.data_types import FloatTensorType

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
    (probabilities,) = session.run(["probabilities"],
                                   {"features": check_features.astype(np.float32)})
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

