"""The specification of label decoding, in Python: the compiled core
(``core/src/engine/decode.rs``' ``decide_blocks``), which the engine of every door and
``runtime.flow.pages.decide_blocks`` call, decodes blocks the same
way; ``tests/test_labels.py`` compares the two on the dev pages.

Exactly the reference's rules, quirks included:

- a chunk's predictions are the argmax of the logits at *every* SEP id in the chunk, in order
  (a literal ``<|sep|>`` inside page text is a SEP too and shifts the rest of the chunk);
- prediction ``j`` goes to the chunk's ``j``-th block; blocks left without one stay 0 (other);
- prediction 1 is "main", anything else "other"; blocks without an item id get no label, and a
  repeated item id keeps its first position in the dict with the last block's label.

``keep_best_block``, ``main_margin`` and the rescorer are not the reference's: a bundle opts in
to them (see ``runtime.model.bundle``); ``decide_blocks`` is their composition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pulpie_rt.runtime.stages.features import (
    FEATURE_NAMES_V2,
    N_FEATURES_V2,
    N_FEATURES_V3,
    TAGS,
)
from pulpie_rt.runtime.stages.labels import labels_from_predictions, sep_margins

__all__ = ["argmax_labels", "block_predictions", "sep_margins",
           "margin_labels", "block_margins", "keep_best_block", "labels_from_predictions",
           "predictions_of_page", "decide_blocks", "expected_f1_labels", "container_prior",
           "continue_story"]

# the block features' columns read here (layouts blocks-v3 and blocks-v4): the words, and each
# block's first ancestors (container ids, -1 where the chain is shorter)
WORDS = FEATURE_NAMES_V2.index("words")
LINK_RATIO = FEATURE_NAMES_V2.index("link_ratio")
CONTAINERS = slice(N_FEATURES_V2, N_FEATURES_V3)
PARENT = N_FEATURES_V2  # the first container column: the block's parent element
# a caption (continue_story passes over it): a figcaption block or element (the tag columns
# number a tag by its place in TAGS, from 1), or a block under a figure
TAG_COLUMNS = [FEATURE_NAMES_V2.index("tag"), FEATURE_NAMES_V2.index("own_tag")]
FIGCAPTION = TAGS.index("figcaption") + 1
ANCESTOR_FIGURE = FEATURE_NAMES_V2.index("ancestor_figure")
# a text the page holds this many times or more (the copies of the block's text, itself
# counted): continue_story passes over it
REPEATS = FEATURE_NAMES_V2.index("repeats")
STORY_COPIES = 3


def argmax_labels(sep_logits: np.ndarray) -> list[int]:
    """Class index per SEP row of logits (first maximum on ties, as torch)."""
    if len(sep_logits) == 0:
        return []
    return np.asarray(sep_logits).argmax(axis=-1).tolist()


def block_predictions(
    n_blocks: int, chunk_block_indices: Sequence[Sequence[int]], chunk_preds: Sequence[list[int]]
) -> list[int]:
    """One prediction per block from each chunk's SEP predictions (0 where a chunk ran short)."""
    predictions = [0] * n_blocks
    for block_indices, preds in zip(chunk_block_indices, chunk_preds, strict=True):
        for block_index, pred in zip(block_indices, preds, strict=False):
            predictions[block_index] = pred
    return predictions


def margin_labels(margins: np.ndarray, threshold: float) -> list[int]:
    """1 where the margin is above ``threshold`` (a bundle's ``main_margin``), else 0."""
    return (np.asarray(margins) > threshold).astype(int).tolist()


def block_margins(
    n_blocks: int, chunk_block_indices: Sequence[Sequence[int]],
    chunk_margins: Sequence[np.ndarray]
) -> np.ndarray:
    """One margin per block, mapped exactly as ``block_predictions`` maps predictions (NaN
    where a chunk ran short)."""
    margins = np.full(n_blocks, np.nan, dtype=np.float32)
    for block_indices, values in zip(chunk_block_indices, chunk_margins, strict=True):
        count = min(len(block_indices), len(values))
        margins[list(block_indices[:count])] = values[:count]
    return margins


def keep_best_block(predictions: list[int], scores: np.ndarray) -> list[int]:
    """``predictions`` with the block of the highest score made main when no block is.

    ``scores`` has one value per block (NaN: none); a page without any score is left alone.
    """
    if 1 in predictions or len(scores) == 0 or np.isnan(scores).all():
        return predictions
    kept = list(predictions)
    kept[int(np.nanargmax(scores))] = 1
    return kept


def expected_f1_labels(scores: np.ndarray, words: np.ndarray, threshold: float) -> list[int]:
    """The blocks whose selection maximises the page's expected word F1, block ``i`` main with
    probability ``p_i = sigmoid(scores[i] - threshold)`` and holding ``words[i]`` words: rank
    the blocks with words by ``p`` (stable), keep the prefix of ``k`` blocks with the highest
    ``2 Σ_{≤k} p w / (Σ_{≤k} w + Σ_all p w)`` (the first of equals); a block without words is
    main when ``p > 0.5``, a NaN score never."""
    scores = np.asarray(scores, np.float64)
    words = np.maximum(np.asarray(words, np.float64), 0.0)
    valid = ~np.isnan(scores)
    p = np.where(valid, 1.0 / (1.0 + np.exp(-(np.where(valid, scores, 0.0) - threshold))), 0.0)
    labels = [int(v and s > threshold) for v, s in zip(valid, np.nan_to_num(scores), strict=True)]
    ranked = sorted((i for i in range(len(scores)) if valid[i] and words[i] > 0),
                    key=lambda i: -p[i])
    expected_main = sum(p[i] * words[i] for i in ranked)
    best, best_k, hits, kept = 0.0, 0, 0.0, 0.0
    for k, i in enumerate(ranked):
        hits += p[i] * words[i]
        kept += words[i]
        f1 = 2 * hits / (kept + expected_main)
        if f1 > best:
            best, best_k = f1, k + 1
    for k, i in enumerate(ranked):
        labels[i] = int(k < best_k)
    return labels


def _dominant_container(scores: np.ndarray, features: np.ndarray, share: float,
                        counts: np.ndarray) -> float | None:
    """The container of fewest blocks (then lowest id) holding at least ``share`` of the
    page's expected main words, block ``i`` holding ``sigmoid(scores[i])`` (NaN: 0) of its
    ``words`` where ``counts[i]`` (else none); None when none does or none is expected."""
    p = [0.0 if np.isnan(s) else 1.0 / (1.0 + math.exp(-float(s))) for s in scores]
    mass = [p[i] * max(float(features[i, WORDS]), 0.0) if counts[i] else 0.0
            for i in range(len(scores))]
    total = sum(mass)
    if total <= 0.0:
        return None
    containers: dict[float, list] = {}  # id -> [expected main words, blocks]
    for i in range(len(scores)):
        for c in features[i, CONTAINERS]:
            if c >= 0:
                entry = containers.setdefault(float(c), [0.0, 0])
                entry[0] += mass[i]
                entry[1] += 1
    candidates = [(n, c) for c, (words, n) in containers.items() if words >= share * total]
    return min(candidates)[1] if candidates else None


def container_prior(scores: np.ndarray, features: np.ndarray, share: float,
                    shift: float) -> np.ndarray:
    """``scores`` (float32, NaN: none) lowered by ``shift`` outside the page's dominant
    container: block ``i`` is main with probability ``sigmoid(scores[i])`` (NaN: 0) and holds
    that share of its ``words``; each container (an id in the block's container columns)
    holds the expected main words of the blocks under it; the dominant one has the fewest
    blocks (then the lowest id) of those holding at least ``share`` of the page's. No
    container qualifies, or the page expects no main word: the scores as they are."""
    scores = np.asarray(scores, np.float32)
    dominant = _dominant_container(scores, features, share, np.ones(len(scores), bool))
    if dominant is None:
        return scores
    inside = (features[:, CONTAINERS] == dominant).any(axis=1)
    return np.where(inside, scores, scores - np.float32(shift)).astype(np.float32)


def story_prior(scores: np.ndarray, features: np.ndarray, share: float,
                shift: float, short_story: tuple[float, float, float] | None = None
                ) -> np.ndarray:
    """The story's container first: ``container_prior``'s dominant container counting only
    the prose blocks' expected main words (under a quarter of their words linked); the linked
    blocks (a quarter or more) outside it lowered by ``shift``, the others as they are. With
    ``short_story`` ``(words, short_shift, prose_shift)``, where the prose inside the story's
    container expects fewer than ``words`` main words (``sigmoid(score) × words``, NaN: 0),
    the linked blocks outside it are lowered by ``short_shift`` instead and the others
    outside it by ``prose_shift``. No container qualifies, or no prose is expected: the
    scores as they are."""
    scores = np.asarray(scores, np.float32)
    linked = features[:, LINK_RATIO] >= 0.25
    story = _dominant_container(scores, features, share, ~linked)
    if story is None:
        return scores
    inside = (features[:, CONTAINERS] == story).any(axis=1)
    prose_shift = 0.0
    if short_story is not None:
        p = [0.0 if np.isnan(x) else 1.0 / (1.0 + math.exp(-float(x))) for x in scores]
        story_words = sum(p[i] * max(float(features[i, WORDS]), 0.0)
                          for i in range(len(scores)) if inside[i] and not linked[i])
        if story_words < short_story[0]:
            shift, prose_shift = short_story[1], short_story[2]
    lowered = np.where(linked, scores - np.float32(shift), scores - np.float32(prose_shift))
    return np.where(inside, scores, lowered).astype(np.float32)


def decide_blocks(n_blocks: int, chunk_blocks: Sequence[Sequence[int]],
                  chunk_margins: Sequence[np.ndarray], threshold: float | None,
                  keep_best: bool, rescorer=None, features: np.ndarray | None = None,
                  n_classified: int | None = None) -> list[int]:
    """A bundle's own decoding of one page: per-block scores (the margins, or the rescorer's
    scores when the bundle has one: ``rescorer(features, margins)``) above ``threshold``
    (None: 0) are main, and with ``keep_best`` a page without any main block keeps its
    best-scoring one."""
    scores = block_margins(n_blocks, chunk_blocks, chunk_margins)
    if rescorer is not None:
        if features is None:
            raise ValueError("the bundle has a rescorer but the page has no block features "
                             "(prepared without Preparer.from_bundle?)")
        scores = rescorer(features, scores)
        if n_classified is not None:
            # blocks the limits cut are "other", whatever the rescorer makes of their features
            scores[n_classified:] = np.nan
    predictions = margin_labels(np.nan_to_num(scores, nan=-np.inf),
                                0.0 if threshold is None else threshold)
    return keep_best_block(predictions, scores) if keep_best else predictions


def predictions_of_page(n_blocks: int, chunk_blocks: Sequence[Sequence[int]],
                        chunk_logits: Sequence[np.ndarray], margins: bool,
                        threshold: float | None, keep_best: bool, rescorer=None,
                        features: np.ndarray | None = None,
                        n_classified: int | None = None) -> list[int]:
    """The engine's decoding of one page from its chunks' SEP logits: the argmax at each
    SEP, or (``margins``) ``decide_blocks`` on their margins."""
    if not margins:
        return block_predictions(n_blocks, chunk_blocks,
                                 [argmax_labels(logits) for logits in chunk_logits])
    return decide_blocks(n_blocks, chunk_blocks, [sep_margins(x) for x in chunk_logits],
                         threshold, keep_best, rescorer, features, n_classified)


def continue_story(labels: Sequence[int], scores: np.ndarray, features: np.ndarray
                   ) -> list[int]:
    """The selection's story run on to its end, over the prose blocks in page order (10 words
    or more, under a quarter of them linked, not a caption: a ``figcaption`` or a block under a
    ``figure``, nor a text the page holds ``STORY_COPIES`` times or more; the others are
    passed over): one left other joins the story when the story's element is its parent or
    grandparent and its score is not NaN; a main one outside the story starts a story under
    its own parent (none for a parent id of -1); one under the story without a score (NaN)
    ends it; prose elsewhere neither joins nor ends it."""
    labels = list(labels)
    story = None
    for i in range(len(labels)):
        if not (features[i, WORDS] >= 10 and features[i, LINK_RATIO] < 0.25):
            continue
        if FIGCAPTION in features[i, TAG_COLUMNS] or features[i, ANCESTOR_FIGURE] > 0:
            continue
        if features[i, REPEATS] >= STORY_COPIES:
            continue
        parent, grandparent = float(features[i, PARENT]), float(features[i, PARENT + 1])
        under_story = story is not None and story in (parent, grandparent)
        if labels[i] == 0 and under_story and not np.isnan(scores[i]):
            labels[i] = 1
        elif labels[i] == 1 and not under_story:
            story = parent if parent >= 0 else None
        elif labels[i] == 0 and under_story:
            story = None
    return labels
