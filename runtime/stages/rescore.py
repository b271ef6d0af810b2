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
values, windowed means and page totals, derived from the page's feature rows by the compiled
core (``core/src/features/context.rs``: one definition, used by the training and here;
``tests/spec/context_spec.py`` is its specification, in NumPy). With a ``first_stage`` file
it runs twice: the first ensemble's probabilities, read in context by ``stage_features`` (the
neighbours' and the page's), join the row the second ensemble scores, so a block is judged
beside what was decided around it. The core runs both stages too
(``native.CoreContextRescorer``, the C library's ``fast`` profile);
``tests/spec/context_spec.py`` holds the same two stages on onnxruntime's Python API as their
specification. The core then decides the page from these scores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pulpie_rt.runtime import native
from pulpie_rt.runtime.stages.features import (
    CONTAINER_LEVELS,
    DIALOG_NAMES,
    FEATURE_NAMES_V2,
    FEATURES_V3,
    FEATURES_V4,
    FEATURES_V5,
    FEATURES_V6,
    FEATURES_VERSION,
    LAYOUTS,
    N_FEATURES,
    N_FEATURES_V2,
    N_FEATURES_V3,
    N_FEATURES_V4,
    N_FEATURES_V5,
    N_FEATURES_V6,
    RAIL_NAMES,
    TEASER_NAMES,
)

CONTEXT_VERSION = "context-v4"
CONTEXT_FEATURES = FEATURES_V3  # the layout context_features reads
# context-v5: context-v4's columns of blocks-v4 rows' blocks-v3 part, then the row's own
# dialog columns (DIALOG_NAMES)
CONTEXT_V5 = "context-v5"
# context-v6: context-v4's columns of blocks-v5 rows' blocks-v3 part, then the row's own
# dialog and rail columns (DIALOG_NAMES, RAIL_NAMES)
CONTEXT_V6 = "context-v6"
# context-v7: context-v6's columns of blocks-v6 rows' blocks-v5 part, then the row's own
# teaser columns (TEASER_NAMES)
CONTEXT_V7 = "context-v7"
# the contexts this runtime reads blocks in, each with the layout it reads
CONTEXTS = {CONTEXT_VERSION: CONTEXT_FEATURES, CONTEXT_V5: FEATURES_V4, CONTEXT_V6: FEATURES_V5,
            CONTEXT_V7: FEATURES_V6}
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
# A block's copies: the blocks whose text the page holds more than once (repeats >= 2) with
# these columns equal (the rows hold no text, only its statistics)
COPY_COLUMNS = tuple(_COLUMN[n] for n in (
    "words", "chars", "punct", "links", "stopword_ratio", "digit_ratio", "mean_word_length",
    "repeats"))
COPY_APART = CONTAINER_LEVELS + 1  # the level of two copies that share no container column
NEAR_COPY_LEVEL = 3  # copies sharing an ancestor up to this level are near each other
N_COPY = 3  # context_features' copy columns
N_STAGE_COPY = 2  # stage_features' copy columns
N_CONTEXT = (N_FEATURES_V2 + 7 * len(CONTEXT_COLUMNS) + 2 + 4 + 4 + N_GROUP * len(GROUP_LEVELS)
             + N_COPY)
N_STAGE = 16 + N_STAGE_GROUP * len(GROUP_LEVELS) + N_STAGE_COPY
N_CONTEXT_V5 = N_CONTEXT + len(DIALOG_NAMES)
N_CONTEXT_V6 = N_CONTEXT_V5 + len(RAIL_NAMES)
N_CONTEXT_V7 = N_CONTEXT_V6 + len(TEASER_NAMES)
# context_features' columns for each layout it reads
CONTEXT_WIDTHS = {N_FEATURES_V3: N_CONTEXT, N_FEATURES_V4: N_CONTEXT_V5,
                  N_FEATURES_V5: N_CONTEXT_V6, N_FEATURES_V6: N_CONTEXT_V7}


def context_features(features: np.ndarray) -> np.ndarray:
    """One page's ``block_features`` rows (layout ``blocks-v3``, in block order), each widened
    to ``N_CONTEXT`` columns: its own ``blocks-v2`` columns (the container columns are
    identifiers, read only to group blocks), then for ``CONTEXT_COLUMNS`` the previous two and
    next two blocks' values, the means over +-3 and +-10 blocks and the difference from the
    page's mean, then the depth steps to both neighbours, the share of the page's unlinked
    words before and after it, the page's unlinked words (log) and its share of linked words,
    then its words counting CJK characters (``words`` + ``cjk_chars`` / 2: a Chinese or
    Japanese phrase is one ``\\w+`` word), their share of the page's, their mean over +-3
    blocks and the page's share of CJK characters, and last ``N_GROUP`` columns per level of
    ``GROUP_LEVELS``: over the blocks sharing the block's ancestor at that level, their mean
    words, their share of the page's words, how many they are (log) and their word-weighted
    link ratio (a run of one-word blocks, an advert's title cut into one ``<span>`` per word,
    or a container that holds most of the page's words is seen as a whole). A block with no
    ancestor at a level is a group of its own there. Last ``N_COPY`` columns from the block's
    copies (``COPY_COLUMNS``): 1 when it is a later copy (not the first on the page), the
    level of its nearest ancestor shared with the first copy (later copies; else 0), and the
    level of its nearest ancestor shared with any other copy (0 with none; ``COPY_APART``
    when they share no container column): a paragraph repeated inside the article shares a
    near container with its first copy, a teaser repeated in a related box does not.
    ``blocks-v4`` rows (``CONTEXT_V5``): those ``N_CONTEXT`` columns of their ``blocks-v3``
    part, then the row's own ``DIALOG_NAMES`` columns (``N_CONTEXT_V5`` in all); ``blocks-v5``
    rows (``CONTEXT_V6``): then its ``RAIL_NAMES`` columns too (``N_CONTEXT_V6``);
    ``blocks-v6`` rows (``CONTEXT_V7``): and its ``TEASER_NAMES`` columns (``N_CONTEXT_V7``).
    Computed by the compiled core
    (``native.context_features``); ``ValueError`` for rows of another layout."""
    features = np.asarray(features, np.float32)
    if features.ndim != 2:
        raise ValueError(f"context features read {FEATURES_V3} rows ({N_FEATURES_V3} "
                         f"columns), {FEATURES_V4} rows ({N_FEATURES_V4}), {FEATURES_V5} "
                         f"rows ({N_FEATURES_V5}) or {FEATURES_V6} rows ({N_FEATURES_V6}), "
                         f"not {features.shape}")
    width = CONTEXT_WIDTHS.get(features.shape[1], N_CONTEXT)
    return native.context_features(features, width)


def stage_features(probabilities: np.ndarray, features: np.ndarray) -> np.ndarray:
    """``N_STAGE`` columns per block from the first stage's probabilities of one page
    (``features``: its ``blocks-v3`` or ``blocks-v4`` rows, of which the ``blocks-v3`` columns
    are read): its own, the three blocks before and after
    (``NO_NEIGHBOUR`` past the ends), the means over +-2, +-5 and +-15 blocks, the
    word-weighted mean over +-5, the page's mean, maximum and word-weighted mean, its rank on
    the page (0: the most likely), the lower of the highest probabilities before and after it
    (high inside the page's main region); then per level of ``GROUP_LEVELS``, over the blocks
    sharing its ancestor there: their word-weighted and plain mean probability, their
    expected main words as a share of the page's words, and its own probability less their
    word-weighted mean (a block is judged with its container; how many they are is a column
    of ``context_features``); last ``N_STAGE_COPY`` columns from its copies: the first copy's
    probability (later copies; ``NO_NEIGHBOUR`` otherwise) and the highest probability of
    the other copies sharing an ancestor with it up to ``NEAR_COPY_LEVEL`` (``NO_NEIGHBOUR``
    with none). Computed by the compiled core (``native.stage_features``)."""
    p = np.asarray(probabilities, np.float64)
    if len(p) == 0:
        return np.zeros((0, N_STAGE), np.float32)
    return native.stage_features(p, features, N_STAGE)


class RescorerError(ValueError):
    """A rescorer that this runtime cannot run (unknown feature layout, bad file)."""


class BlockRescorer:
    """The ensemble(s) of a bundle's rescorer, run by the compiled core (ONNX Runtime's C
    API; CPU, one thread each way: the trees are small; threads may share them). Over the
    block features alone (``context`` None): one session (``core``). Reading blocks in
    context (``CONTEXTS``): the core's ``ContextRescorer`` (``in_context``: the
    context features, the first stage's file when it has one, the stage features, the last
    stage; the C library's ``fast`` profile runs the same), and ``core`` is None."""

    def __init__(self, onnx_path: str | Path, margin_weight: float, features: str,
                 context: str | None = None, first_stage: str | Path | None = None):
        if features not in LAYOUTS:
            raise RescorerError(f"{onnx_path}: rescorer reads features {features!r}, this "
                                f"runtime computes {', '.join(map(repr, LAYOUTS))}")
        if context is not None and context not in CONTEXTS:
            raise RescorerError(f"{onnx_path}: rescorer reads context {context!r}, this "
                                f"runtime computes {', '.join(map(repr, CONTEXTS))}")
        if context is not None and features != CONTEXTS[context]:
            raise RescorerError(f"{onnx_path}: context {context!r} reads features "
                                f"{CONTEXTS[context]!r}, not {features!r}")
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
        self.in_context = None
        self.first_stage = None if first_stage is None else Path(first_stage)
        try:
            if context is None:
                self.core = native.CoreRescorer(onnx_path, margin_weight)
            else:
                self.in_context = native.CoreContextRescorer(onnx_path, first_stage)
        except native.CoreError as exc:
            raise RescorerError(f"{onnx_path}: {exc}") from exc

    @property
    def trees(self) -> list[str]:
        """What runs the trees of each stage, the first stage first: ``"kernel"`` (the tree
        kernel, ``kernels/``) or ``"onnxruntime (why)"``; ``PULPIE_RT_TREES=onnxruntime``
        (read when the rescorer opens) chooses ONNX Runtime."""
        if self.core is not None:
            return [self.core.trees]
        return self.in_context.trees

    @property
    def width(self) -> int:
        """Columns of the rows the (last) ensemble reads."""
        if self.context is None:
            return N_FEATURES
        width = CONTEXT_WIDTHS[LAYOUTS[CONTEXTS[self.context]]]
        return width + (N_STAGE if self.first_stage is not None else 0)

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
        try:
            return self.in_context.log_odds(rows)
        except native.CoreError as exc:
            raise RescorerError(str(exc)) from exc

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
