"""A trained fast bag cut to fewer members and rounds (``python -m train.truncate_bag``), scored
out of fold on its recipe's train pages as the training scores the whole bag, and the
threshold that training would choose for the cut:

    python -m train.cut_oof BAG --cuts 2x150 2x75 1x100/2x75 [--out FILE]

BAG is a bundle trained by ``python -m train`` (its ``results.json`` gives the recipe: the
seed, the bag, the rounds, the threshold chosen). A cut ``KxR`` keeps the first R trees of the
first K members of both stages (``K1xR1/K2xR2``: the first stage's, then the second's). The
folds are the training's: per fold, the recipe's bag is trained on the other folds (every
member of the first stage, whose mean feeds the second stage's rows as in training; the
second stage's first K members, each trained alone with its own seed, so the same as in the
whole bag), and the fold's pages are scored by the cut of those members, the first stage's
cut feeding the second stage's rows as it does in the runtime. Each cut's threshold is then
chosen as the training chooses it (``train.fast.calibrate_threshold``: the best mean word F1 on
the train pages of ``train.fast.THRESHOLD_GRID``). No dev page and no judge is read. The cut
``{bag}x{rounds}`` is the training's own scores (its ``calibration_f1`` again).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

Cut = tuple[tuple[int, int], tuple[int, int]]


def parse_cut(text: str, bag: int, rounds: int) -> Cut:
    """``KxR`` (both stages) or ``K1xR1/K2xR2``; a clear error for what the bag cannot give."""
    stages = text.split("/")
    try:
        if len(stages) not in (1, 2):
            raise ValueError
        pairs = [tuple(int(v) for v in stage.split("x")) for stage in stages]
        if any(len(pair) != 2 for pair in pairs):
            raise ValueError
    except ValueError:
        raise ValueError(f"cut {text!r}: give KxR (members x rounds, both stages) or "
                         "K1xR1/K2xR2 (the first stage's, then the second's)") from None
    for keep, kept_rounds in pairs:
        if not 1 <= keep <= bag or not 1 <= kept_rounds <= rounds:
            raise ValueError(f"cut {text!r}: the bag has {bag} members of {rounds} rounds "
                             f"(K 1 to {bag}, R 1 to {rounds})")
    first, second = (pairs[0], pairs[0]) if len(pairs) == 1 else pairs
    return first, second  # type: ignore[return-value]


def cut_name(cut: Cut) -> str:
    first, second = cut
    return (f"{first[0]}x{first[1]}" if first == second
            else f"{first[0]}x{first[1]}/{second[0]}x{second[1]}")


def _mean_raw(members: list, rows: np.ndarray, keep: int, rounds: int) -> np.ndarray:
    return np.mean([m.predict(rows, raw_score=True, num_iteration=rounds)
                    for m in members[:keep]], axis=0)


def _probability(raw: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-raw))


def cut_out_of_fold(recipe, cuts: list[Cut], log=print) -> tuple[object, dict[Cut, dict]]:
    """The training set (``train.fast.fast_training_set``) and, per cut, each page's
    out-of-fold log-odds (page id -> array)."""
    from pulpie_rt.runtime.stages.rescore import stage_features
    from train.fast import (
        average_boosters,
        context_names,
        fast_training_set,
        fit_members,
        fold_splits,
        log_odds,
        stage_names,
    )

    data = fast_training_set(recipe, log)
    rows, labels, features, fold_of = data.rows, data.labels, data.features, data.fold_of
    second_members = max(second[0] for _, second in cuts)
    first_cuts = sorted({first for first, _ in cuts})
    # first stage: the training's out-of-fold probabilities (the whole bag's mean, the second
    # stage's training rows) and each first-stage cut's
    whole: list[np.ndarray | None] = [None] * len(rows)
    first_cut: dict[tuple[int, int], list] = {c: [None] * len(rows) for c in first_cuts}
    for fold, train_rows, train_labels, held in fold_splits(rows, labels, fold_of,
                                                             recipe.fast_folds):
        members = fit_members(train_rows, train_labels, context_names(data.context), recipe)
        bag = members[0] if len(members) == 1 else average_boosters(members)
        for i in held:
            empty = len(rows[i]) == 0
            whole[i] = np.zeros(0) if empty else bag.predict(rows[i])
            for keep, rounds in first_cuts:
                first_cut[keep, rounds][i] = (np.zeros(0) if empty else _probability(
                    _mean_raw(members, rows[i], keep, rounds)))
        log(f"cut out of fold: first stage, fold {fold + 1}/{recipe.fast_folds}")
    stage_rows = [np.concatenate([r, stage_features(p, f)], 1)
                  for r, p, f in zip(rows, whole, features, strict=True)]
    scores: dict[Cut, dict] = {cut: {} for cut in cuts}
    for fold, train_rows, train_labels, held in fold_splits(stage_rows, labels, fold_of,
                                                             recipe.fast_folds):
        members = fit_members(train_rows, train_labels, stage_names(data.context), recipe,
                              second_members)
        for i in held:
            for cut in cuts:
                first, (keep, rounds) = cut
                if len(rows[i]) == 0:
                    scores[cut][data.ids[i]] = np.zeros(0)
                    continue
                cut_rows = np.concatenate([rows[i], stage_features(first_cut[first][i],
                                                                   features[i])], 1)
                raw = _mean_raw(members, cut_rows, keep, rounds)
                scores[cut][data.ids[i]] = log_odds(_probability(raw))
        log(f"cut out of fold: second stage, fold {fold + 1}/{recipe.fast_folds}")
    return data, scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m train.cut_oof",
        description="Cuts of a trained fast bag scored on its train pages out of fold, and the "
                    "threshold the training would choose for each.")
    parser.add_argument("bag", type=Path, help="a bundle trained by python -m train (its "
                        "results.json records the recipe and the bag)")
    parser.add_argument("--cuts", nargs="+", required=True,
                        help="KxR (first K members, first R rounds, both stages) or K1xR1/K2xR2")
    parser.add_argument("--out", type=Path, help="JSON file for the figures")
    parser.add_argument("--thresholds", type=float, nargs="+", default=None,
                        help="the thresholds tried (default: the training's, "
                             "train.fast.THRESHOLD_GRID); the bag's own is always tried")
    parser.add_argument("--workers", type=int, default=None, help="decoding processes")
    args = parser.parse_args(argv)
    from train.fast import THRESHOLD_GRID, calibrate_threshold
    from train.fit import Recipe

    results = json.loads((args.bag / "results.json").read_text(encoding="utf-8"))
    fast = results.get("fast") or {}
    if "truncated" in fast:
        parser.exit(2, f"error: {args.bag} is already cut ({fast['truncated']['kept']} of "
                       f"{fast['truncated']['from_bag']} members): give the trained bag\n")
    recipe = Recipe(**results["recipe"])
    try:
        cuts = [parse_cut(text, recipe.fast_bag, recipe.rescorer_rounds) for text in args.cuts]
    except ValueError as error:
        parser.exit(2, f"error: {error}\n")
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {message}", file=sys.stderr, flush=True)

    data, scores = cut_out_of_fold(recipe, cuts, log)
    expected_f1 = fast.get("decoding", {}).get("selection") == "expected_f1"
    trained = fast["decoding"]["main_margin"]
    thresholds = tuple(sorted({round(t, 2) + 0.0 for t in (args.thresholds or THRESHOLD_GRID)}
                              | {trained}))
    figures = {}
    for cut in cuts:
        threshold, f1 = calibrate_threshold(
            data.corpus, {pid: scores[cut][pid] for pid in data.calibrated},
            workers=args.workers, thresholds=thresholds, log=lambda *_: None,
            keep_hidden=data.keep_hidden, expected_f1=expected_f1,
            drop_noscript=data.drop_noscript)
        figures[cut_name(cut)] = {"threshold": threshold, "calibration_f1": f1,
                                  "f1_at_trained_threshold": f1[f"{trained:+.2f}"]}
        edge = " (the edge of the thresholds tried)" if threshold in (
            thresholds[0], thresholds[-1]) else ""
        print(f"{args.bag} {cut_name(cut)}: threshold {threshold:+.2f}{edge} (train "
              f"out-of-fold word F1 {f1[f'{threshold:+.2f}']:.4f}); at the bag's "
              f"{trained:+.2f}: {f1[f'{trained:+.2f}']:.4f}", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "bag": str(args.bag), "trained_threshold": fast["decoding"]["main_margin"],
            "trained_calibration_f1": fast.get("calibration_f1"),
            "command": "python -m train.cut_oof " + " ".join(argv or sys.argv[1:]),
            "cuts": figures}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
