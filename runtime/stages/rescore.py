"""The bundle's block rescorer: block features and the transformer's margins -> one score per
block.

A bundle may carry a rescorer (``manifest.rescorer``, see ``runtime.bundle``): a
gradient-boosted tree ensemble over ``runtime.features.block_features`` saved as ONNX
(``ai.onnx.ml`` tree operators, run by onnxruntime like the model, so it needs no other
library). A block's score is the ensemble's log-odds plus ``margin_weight`` times the
transformer's margin at the block's SEP; the bundle's ``main_margin`` is then the threshold on
that score. Only the embedded default model has one; the Orange bundles decide by the
transformer alone, as the reference does.

A rescorer over the block features alone runs in the compiled core (``core/src/ort/
rescorer.rs``: ONNX Runtime's C API, the C library's rescorer too), and ``runtime.flow.pages``
decodes a page with it in the core (``native.decide_blocks``); ``tests/spec/rescore_spec.py``
is its specification, on onnxruntime's Python API.

A rescorer may also read its blocks in context (``manifest.rescorer.context``, the embedded
model's ``fast`` profile): ``context_features`` widens each block's row with its neighbours'
values, windowed means and page totals, derived from the page's feature rows in NumPy (one
definition, used by the training and here). With a ``first_stage`` file it runs twice: the
first ensemble's probabilities, read in context by ``stage_features`` (the neighbours' and the
page's), join the row the second ensemble scores, so a block is judged beside what was
decided around it. Only this runtime reads context (the C library runs the ``accurate``
profile): these scores are computed here, and the core decides the page from them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pulpie_rt.runtime import native
from pulpie_rt.runtime.stages.features import (
    CONTAINER_LEVELS,
    FEATURE_NAMES_V2,
    FEATURES_V3,
    FEATURES_VERSION,
    LAYOUTS,
    N_FEATURES,
    N_FEATURES_V2,
    N_FEATURES_V3,
)

CONTEXT_VERSION = "context-v3"
CONTEXT_FEATURES = FEATURES_V3  # the layout context_features reads
_COLUMN = {name: i for i, name in enumerate(FEATURE_NAMES_V2)}
# The block columns a row sees of its neighbours (shifted 1 and 2 each way), of the windows
# around it (means over +-3 and +-10 blocks) and relative to the page's mean.
CONTEXT_COLUMNS = tuple(_COLUMN[n] for n in (
    "words", "link_ratio", "punct_ratio", "sentences", "depth", "in_link", "stopword_ratio",
    "tag", "images", "in_candidate", "mean_word_length", "digit_ratio", "repeats"))
NO_NEIGHBOUR = -1.0  # the value of a neighbour past the page's first or last block
# The levels of a block's ancestor chain (1: its parent) whose blocks are read together: the
# container columns of blocks-v3 hold the chain's first CONTAINER_LEVELS ancestors
GROUP_LEVELS = (1, 2, 3, 4, 6, 8)
assert max(GROUP_LEVELS) <= CONTAINER_LEVELS
N_GROUP = 4  # container_features' columns per level
N_STAGE_GROUP = 4  # stage_features' columns per level
N_CONTEXT = N_FEATURES_V2 + 7 * len(CONTEXT_COLUMNS) + 2 + 4 + 4 + N_GROUP * len(GROUP_LEVELS)
N_STAGE = 16 + N_STAGE_GROUP * len(GROUP_LEVELS)


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


def context_features(features: np.ndarray) -> np.ndarray:
    """One page's ``block_features`` rows (layout ``blocks-v3``, in block order), each widened
    to ``N_CONTEXT`` columns: its own ``blocks-v2`` columns (the container columns are
    identifiers, read only to group blocks), then for ``CONTEXT_COLUMNS`` the previous two and
    next two blocks' values, the means over +-3 and +-10 blocks and the difference from the
    page's mean, then the depth steps to both neighbours, the share of the page's unlinked
    words before and after it, the page's unlinked words (log) and its share of linked words,
    then its words counting CJK characters (``words`` + ``cjk_chars`` / 2: a Chinese or
    Japanese phrase is one ``\\w+`` word), their share of the page's, their mean over +-3
    blocks and the page's share of CJK characters, and last ``container_features``."""
    features = np.asarray(features, np.float32)
    if features.ndim != 2 or features.shape[1] != N_FEATURES_V3:
        got = features.shape[-1] if features.ndim == 2 else features.shape
        raise ValueError(f"context features read {FEATURES_V3} rows ({N_FEATURES_V3} "
                         f"columns), not {got}")
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
    return np.concatenate(parts, 1).astype(np.float32)


def stage_features(probabilities: np.ndarray, features: np.ndarray) -> np.ndarray:
    """``N_STAGE`` columns per block from the first stage's probabilities of one page
    (``features``: its ``blocks-v3`` rows): its own, the three blocks before and after
    (``NO_NEIGHBOUR`` past the ends), the means over +-2, +-5 and +-15 blocks, the
    word-weighted mean over +-5, the page's mean, maximum and word-weighted mean, its rank on
    the page (0: the most likely), the lower of the highest probabilities before and after it
    (high inside the page's main region); then per level of ``GROUP_LEVELS``, over the blocks
    sharing its ancestor there: their word-weighted and plain mean probability, their
    expected main words as a share of the page's words, and its own probability less their
    word-weighted mean (a block is judged with its container; how many they are is a column
    of ``container_features``)."""
    p = np.asarray(probabilities, np.float64)
    n = len(p)
    if n == 0:
        return np.zeros((0, N_STAGE), np.float32)
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
    return np.stack(parts, 1).astype(np.float32)


class RescorerError(ValueError):
    """A rescorer that this runtime cannot run (unknown feature layout, bad file)."""


class BlockRescorer:
    """The ensemble(s) of a bundle's rescorer. Over the block features alone (``context``
    None): one ONNX Runtime session in the core (``core``; CPU, one thread each way: the trees
    are small; threads may share it). Reading blocks in context (``CONTEXT_VERSION``):
    onnxruntime sessions here, over the first stage's file too when it has one (``core`` is
    None)."""

    def __init__(self, onnx_path: str | Path, margin_weight: float, features: str,
                 context: str | None = None, first_stage: str | Path | None = None):
        if features not in LAYOUTS:
            raise RescorerError(f"{onnx_path}: rescorer reads features {features!r}, this "
                                f"runtime computes {', '.join(map(repr, LAYOUTS))}")
        if context not in (None, CONTEXT_VERSION):
            raise RescorerError(f"{onnx_path}: rescorer reads context {context!r}, this "
                                f"runtime computes {CONTEXT_VERSION!r}")
        if context is not None and features != CONTEXT_FEATURES:
            raise RescorerError(f"{onnx_path}: context {context!r} reads features "
                                f"{CONTEXT_FEATURES!r}, not {features!r}")
        if context is None and features != FEATURES_VERSION:
            raise RescorerError(f"{onnx_path}: a rescorer without context reads features "
                                f"{FEATURES_VERSION!r}, not {features!r}")
        self.features = features
        self.n_features = LAYOUTS[features]
        if first_stage is not None and context is None:
            raise RescorerError(f"{onnx_path}: a first stage needs the context features")
        self.context = context
        self.margin_weight = float(margin_weight)
        self.core = None
        self.first_stage = None
        if context is None:
            try:
                self.core = native.CoreRescorer(onnx_path, margin_weight)
            except native.CoreError as exc:
                raise RescorerError(f"{onnx_path}: {exc}") from exc
        else:
            self.session, self.input_name = _session(onnx_path)
            self.first_stage = None if first_stage is None else _session(first_stage)

    @property
    def width(self) -> int:
        """Columns of the rows the (last) ensemble reads."""
        if self.context is None:
            return N_FEATURES
        return N_CONTEXT + (N_STAGE if self.first_stage is not None else 0)

    def _core_run(self, features: np.ndarray, margins: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        try:
            return self.core.run(features, margins)
        except native.CoreError as exc:
            raise RescorerError(str(exc)) from exc

    def log_odds(self, features: np.ndarray) -> np.ndarray:
        """The ensemble's log-odds of "main" per row of ``features`` (one page's blocks, in
        order, when the rescorer reads context)."""
        if len(features) == 0:
            return np.zeros(0, dtype=np.float32)
        if features.shape[1] != self.n_features:
            raise RescorerError(f"features have {features.shape[1]} columns, the rescorer "
                                f"reads {self.n_features}")
        rows = np.ascontiguousarray(features, np.float32)
        if self.core is not None:
            return self._core_run(rows, np.zeros(len(rows), np.float32))[1]
        rows = context_features(rows)
        if self.first_stage is not None:
            session, name = self.first_stage
            first = _probabilities(session, name, rows)
            rows = np.ascontiguousarray(np.concatenate([rows, stage_features(first, features)],
                                                       1))
        p = np.clip(_probabilities(self.session, self.input_name, rows), 1e-7, 1 - 1e-7)
        return np.log(p / (1 - p)).astype(np.float32)

    def scores(self, features: np.ndarray, margins: np.ndarray) -> np.ndarray:
        """Per block: log-odds + ``margin_weight`` x margin (a block without a margin, NaN,
        is scored by the ensemble alone)."""
        if self.core is not None and len(features):
            if features.shape[1] != N_FEATURES:
                raise RescorerError(f"features have {features.shape[1]} columns, the rescorer "
                                    f"reads {N_FEATURES}")
            return self._core_run(np.ascontiguousarray(features, np.float32),
                                  np.asarray(margins, np.float32))[2]
        return self.log_odds(features) + self.margin_weight * np.nan_to_num(margins, nan=0.0)


def _session(onnx_path: str | Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    if "probabilities" not in outputs:
        raise RescorerError(f"{onnx_path}: no 'probabilities' output (has {outputs})")
    return session, session.get_inputs()[0].name


def _probabilities(session, input_name: str, rows: np.ndarray) -> np.ndarray:
    (probabilities,) = session.run(["probabilities"], {input_name: rows})
    return probabilities[:, 1].astype(np.float64)


_RESCORER_CACHE: dict[tuple, BlockRescorer] = {}  # one session per file


def load_rescorer(onnx_path: str | Path, margin_weight: float, features: str,
                  context: str | None = None, first_stage: str | Path | None = None
                  ) -> BlockRescorer:
    """The (cached) rescorer of a bundle."""
    key = (str(onnx_path), float(margin_weight), features, context,
           None if first_stage is None else str(first_stage))
    if key not in _RESCORER_CACHE:
        _RESCORER_CACHE[key] = BlockRescorer(onnx_path, margin_weight, features, context,
                                             first_stage)
    return _RESCORER_CACHE[key]
