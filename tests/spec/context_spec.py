"""The specification of the ``fast`` profile's blocks in context (context ``context-v4``,
``context-v5``: the same columns of ``blocks-v4`` rows' ``blocks-v3`` part, then the rows'
own dialog columns, ``context-v6``: of ``blocks-v5`` rows, then their own dialog and rail
columns, and ``context-v7``: of ``blocks-v6`` rows, then their dialog, rail and teaser
columns), in NumPy: the compiled core (``core/src/features/context.rs``), which
``runtime.stages.rescore.context_features`` and ``stage_features`` call (and with them the
training, ``train/fast.py``), computes the same columns; ``tests/test_context_features.py``
compares the two on real pages.

``context_features`` widens each of a page's ``blocks-v3`` rows with its neighbours' values,
windowed means, page totals and the blocks sharing its DOM containers; ``stage_features``
reads the first stage's probabilities the same way. The column layout and the constants are
``runtime.stages.rescore``'s; this module is how each value is computed (float64, then
float32). NumPy's order of operations is part of it: ``np.cumsum`` adds in row order, a 1-D
``.sum()`` / ``.mean()`` (and ``own.mean(0)``, ``own`` being Fortran-ordered after fancy
indexing) adds pairwise, ``np.bincount`` block by block, and ``argsort(kind="stable")`` keeps
ties in block order.

``SpecContextRescorer`` is the specification of the rescorer over blocks in context
(``runtime.stages.rescore.BlockRescorer`` with a ``context``, which runs in the core:
``native.CoreContextRescorer``): these columns, the first stage's probabilities and the last
stage's log-odds, on onnxruntime's Python API.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pulpie_rt.runtime.stages.features import (
    FEATURES_V3,
    FEATURES_V4,
    FEATURES_V5,
    FEATURES_V6,
    N_FEATURES_V2,
    N_FEATURES_V3,
    N_FEATURES_V4,
    N_FEATURES_V5,
    N_FEATURES_V6,
)
from pulpie_rt.runtime.stages.rescore import (
    _COLUMN,
    CONTEXT_COLUMNS,
    COPY_APART,
    COPY_COLUMNS,
    GROUP_LEVELS,
    N_CONTEXT,
    N_STAGE,
    NEAR_COPY_LEVEL,
    NO_NEIGHBOUR,
)


def _shift(values: np.ndarray, by: int, fill: float = NO_NEIGHBOUR) -> np.ndarray:
    """``values`` moved ``by`` rows down (negative: up), ``fill`` where nothing moved in."""
    out = np.full_like(values, fill)
    if by > 0:
        out[by:] = values[:-by]
    elif by < 0:
        out[:by] = values[-by:]
    else:
        out[:] = values
    return out


def _window_mean(values: np.ndarray, radius: int) -> np.ndarray:
    """Per row, the mean of the rows within ``radius`` of it (fewer at the page's ends)."""
    n = len(values)
    sums = np.concatenate([np.zeros((1,) + values.shape[1:]), np.cumsum(values, 0)])
    low = np.clip(np.arange(n) - radius, 0, n)
    high = np.clip(np.arange(n) + radius + 1, 0, n)
    counts = (high - low).astype(np.float64)
    return (sums[high] - sums[low]) / (counts[:, None] if values.ndim == 2 else counts)


def container_groups(features: np.ndarray) -> list[np.ndarray]:
    """Per level of ``GROUP_LEVELS``, each block's group: the blocks of one page that share
    that ancestor get the same number (0, 1, … in no meaningful order); a block whose chain is
    shorter is a group of its own. Read off the container columns of ``blocks-v3`` rows."""
    ids = np.asarray(features, np.float64)[:, N_FEATURES_V2:]
    n = len(ids)
    groups = []
    for level in GROUP_LEVELS:
        key = ids[:, level - 1]
        # a block with no ancestor at this level (-1): a group of its own, keyed past any id
        key = np.where(key < 0, key.max(initial=0.0) + 1.0 + np.arange(n), key)
        groups.append(np.unique(key, return_inverse=True)[1].reshape(-1))
    return groups


def _group_mean(values: np.ndarray, weights: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per block, the ``weights``-weighted mean of ``values`` over its group."""
    total = np.bincount(group, weights)
    return np.bincount(group, values * weights)[group] / np.maximum(total[group], 1e-12)


def container_features(features: np.ndarray) -> np.ndarray:
    """``N_GROUP`` columns per level of ``GROUP_LEVELS`` for one page's ``blocks-v3`` rows:
    over the blocks sharing the block's ancestor at that level, their mean words, their share
    of the page's words, how many they are (log) and their word-weighted link ratio. A run of
    one-word blocks (an advert's title cut into one ``<span>`` per word) or a container that
    holds most of the page's words is seen as a whole."""
    rows = np.asarray(features, np.float64)
    words = rows[:, _COLUMN["words"]]
    link_ratio = rows[:, _COLUMN["link_ratio"]]
    total = max(words.sum(), 1.0)
    ones = np.ones(len(rows))
    parts = []
    for group in container_groups(features):
        count = np.bincount(group)[group].astype(np.float64)
        parts += [_group_mean(words, ones, group), np.bincount(group, words)[group] / total,
                  np.log1p(count), _group_mean(link_ratio, words + 1.0, group)]
    return np.stack(parts, 1)


def copy_groups(features: np.ndarray) -> list[list[int]]:
    """The blocks of one page that are copies of each other, each group in block order: the
    blocks whose text the page holds more than once (``repeats`` >= 2) with equal
    ``COPY_COLUMNS`` (the text's statistics; the rows hold no text), groups of two or more,
    in order of their first block."""
    rows = np.asarray(features, np.float32)
    members: dict[tuple, list[int]] = {}
    for i in np.flatnonzero(rows[:, _COLUMN["repeats"]] >= 2):
        members.setdefault(tuple(float(v) for v in rows[i, list(COPY_COLUMNS)]), []).append(int(i))
    return [group for group in members.values() if len(group) >= 2]


def _common_level(ids: np.ndarray, i: int, j: int) -> int:
    """The level of the nearest ancestor blocks ``i`` and ``j`` share (1: the parent), from
    the container columns; ``COPY_APART`` when they share none of them."""
    for level in range(1, ids.shape[1] + 1):
        if ids[i, level - 1] == ids[j, level - 1] and ids[i, level - 1] >= 0:
            return level
    return COPY_APART


def copy_features(features: np.ndarray) -> np.ndarray:
    """Three columns per block from its copies (``copy_groups``): 1 when it is a later copy
    (not its group's first block), the level of its nearest ancestor shared with the first
    copy (later copies; 0 otherwise), and the level of its nearest ancestor shared with any
    other copy (0 with no copy); ``COPY_APART`` where two share no container column. A
    paragraph repeated inside the article shares a near container with its first copy, a
    teaser repeated in a related box or a footer does not."""
    ids = np.asarray(features, np.float64)[:, N_FEATURES_V2:]
    out = np.zeros((len(ids), 3))
    for group in copy_groups(features):
        for i in group:
            out[i, 2] = min(_common_level(ids, i, j) for j in group if j != i)
            if i != group[0]:
                out[i, 0], out[i, 1] = 1.0, _common_level(ids, i, group[0])
    return out


def context_features(features: np.ndarray) -> np.ndarray:
    """One page's ``block_features`` rows (layout ``blocks-v3``, in block order), each widened
    to ``N_CONTEXT`` columns: its own ``blocks-v2`` columns (the container columns are
    identifiers, read only to group blocks), then for ``CONTEXT_COLUMNS`` the previous two and
    next two blocks' values, the means over +-3 and +-10 blocks and the difference from the
    page's mean, then the depth steps to both neighbours, the share of the page's unlinked
    words before and after it, the page's unlinked words (log) and its share of linked words,
    then its words counting CJK characters (``words`` + ``cjk_chars`` / 2: a Chinese or
    Japanese phrase is one ``\\w+`` word), their share of the page's, their mean over +-3
    blocks and the page's share of CJK characters, then ``container_features`` and last
    ``copy_features``. ``blocks-v4`` rows (``context-v5``), ``blocks-v5`` rows
    (``context-v6``) and ``blocks-v6`` rows (``context-v7``): those columns of their
    ``blocks-v3`` part, then their own columns after it (the dialog columns; the dialog and
    rail columns; and the teaser columns)."""
    features = np.asarray(features, np.float32)
    if features.ndim != 2 or features.shape[1] not in (N_FEATURES_V3, N_FEATURES_V4,
                                                       N_FEATURES_V5, N_FEATURES_V6):
        got = features.shape[-1] if features.ndim == 2 else features.shape
        raise ValueError(f"context features read {FEATURES_V3} rows ({N_FEATURES_V3} "
                         f"columns), {FEATURES_V4} rows ({N_FEATURES_V4}), {FEATURES_V5} "
                         f"rows ({N_FEATURES_V5}) or {FEATURES_V6} rows ({N_FEATURES_V6}), "
                         f"not {got}")
    if features.shape[1] != N_FEATURES_V3:
        return np.concatenate([context_features(features[:, :N_FEATURES_V3]),
                               features[:, N_FEATURES_V3:]], 1)
    if len(features) == 0:
        return np.zeros((0, N_CONTEXT), np.float32)
    rows = features[:, :N_FEATURES_V2]
    own = rows[:, CONTEXT_COLUMNS].astype(np.float64)
    parts = [rows.astype(np.float64)]
    parts += [_shift(own, by) for by in (1, 2, -1, -2)]
    parts += [_window_mean(own, 3), _window_mean(own, 10), own - own.mean(0, keepdims=True)]
    depth = rows[:, _COLUMN["depth"]].astype(np.float64)
    parts.append(np.stack([depth - _shift(depth, 1, 0.0), depth - _shift(depth, -1, 0.0)], 1))
    words = rows[:, _COLUMN["words"]].astype(np.float64)
    link_ratio = rows[:, _COLUMN["link_ratio"]].astype(np.float64)
    unlinked = np.cumsum(words * (1 - link_ratio))
    total = unlinked[-1] + 1e-6
    parts.append(np.stack([unlinked / total, (total - unlinked) / total,
                           np.full(len(rows), np.log1p(total)),
                           np.full(len(rows), (words * link_ratio).sum() / (words.sum() + 1e-6))],
                          1))
    cjk = rows[:, _COLUMN["cjk_chars"]].astype(np.float64)
    words_cjk = words + cjk / 2.0
    parts.append(np.stack([words_cjk, words_cjk / max(words_cjk.sum(), 1.0),
                           _window_mean(words_cjk, 3),
                           np.full(len(rows), cjk.sum() / max(cjk.sum() + words.sum(), 1.0))], 1))
    parts.append(container_features(features))
    parts.append(copy_features(features))
    return np.concatenate(parts, 1).astype(np.float32)


def stage_features(probabilities: np.ndarray, features: np.ndarray) -> np.ndarray:
    """``N_STAGE`` columns per block from the first stage's probabilities of one page
    (``features``: its ``blocks-v3`` rows, or the ``blocks-v3`` part of its ``blocks-v4``
    rows): its own, the three blocks before and after
    (``NO_NEIGHBOUR`` past the ends), the means over +-2, +-5 and +-15 blocks, the
    word-weighted mean over +-5, the page's mean, maximum and word-weighted mean, its rank on
    the page (0: the most likely), the lower of the highest probabilities before and after it
    (high inside the page's main region); then per level of ``GROUP_LEVELS``, over the blocks
    sharing its ancestor there: their word-weighted and plain mean probability, their
    expected main words as a share of the page's words, and its own probability less their
    word-weighted mean (a block is judged with its container; how many they are is a column
    of ``container_features``); last, from its copies (``copy_groups``), the first copy's
    probability (later copies; ``NO_NEIGHBOUR`` otherwise) and the highest probability of
    the copies sharing an ancestor with it up to ``NEAR_COPY_LEVEL`` (``NO_NEIGHBOUR`` with
    none)."""
    p = np.asarray(probabilities, np.float64)
    n = len(p)
    if n == 0:
        return np.zeros((0, N_STAGE), np.float32)
    features = np.asarray(features)[:, :N_FEATURES_V3]
    words = np.asarray(features, np.float64)[:, _COLUMN["words"]]
    weight = np.log1p(words)
    parts = [p] + [_shift(p, by) for by in (1, 2, 3, -1, -2, -3)]
    parts += [_window_mean(p, r) for r in (2, 5, 15)]
    parts.append(_window_mean(p * weight, 5) / (_window_mean(weight, 5) + 1e-6))
    parts += [np.full(n, p.mean()), np.full(n, p.max()),
              np.full(n, (p * weight).sum() / (weight.sum() + 1e-6))]
    parts.append(np.argsort(np.argsort(-p, kind="stable"), kind="stable") / n)
    parts.append(np.minimum(np.maximum.accumulate(p), np.maximum.accumulate(p[::-1])[::-1]))
    total = max(words.sum(), 1.0)
    ones = np.ones(n)
    for group in container_groups(features):
        weighted = _group_mean(p, words + 1.0, group)
        parts += [weighted, _group_mean(p, ones, group),
                  np.bincount(group, p * words)[group] / total, p - weighted]
    ids = np.asarray(features, np.float64)[:, N_FEATURES_V2:]
    first_copy, near_copy = np.full(n, NO_NEIGHBOUR), np.full(n, NO_NEIGHBOUR)
    for group in copy_groups(features):
        for i in group:
            if i != group[0]:
                first_copy[i] = p[group[0]]
            near = [p[j] for j in group
                    if j != i and _common_level(ids, i, j) <= NEAR_COPY_LEVEL]
            if near:
                near_copy[i] = max(near)
    parts += [first_copy, near_copy]
    return np.stack(parts, 1).astype(np.float32)


class SpecContextRescorer:
    """A rescorer over blocks in context: onnxruntime sessions (CPU, one thread each way) over
    the last stage's file and, when given, the first stage's."""

    def __init__(self, onnx_path: str | Path, first_stage: str | Path | None = None):
        self.session = _session(onnx_path)
        self.first_stage = None if first_stage is None else _session(first_stage)

    def log_odds(self, features: np.ndarray) -> np.ndarray:
        """The log-odds of "main" per row of one page's ``blocks-v3`` (``blocks-v4``) rows
        (float32, from the
        float32 probability clipped to [1e-7, 1 - 1e-7] in float64)."""
        if len(features) == 0:
            return np.zeros(0, dtype=np.float32)
        rows = context_features(np.ascontiguousarray(features, np.float32))
        if self.first_stage is not None:
            first = probabilities(self.first_stage, rows)
            rows = np.ascontiguousarray(np.concatenate([rows, stage_features(first, features)],
                                                       1))
        p = np.clip(probabilities(self.session, rows), 1e-7, 1 - 1e-7)
        return np.log(p / (1 - p)).astype(np.float32)


def _session(onnx_path: str | Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    return session, session.get_inputs()[0].name


def probabilities(session, rows: np.ndarray) -> np.ndarray:
    """P(main) per row (float64) of an ensemble's ``probabilities`` output."""
    session, input_name = session
    (probabilities,) = session.run(["probabilities"], {input_name: rows})
    return probabilities[:, 1].astype(np.float64)
