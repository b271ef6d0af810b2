"""Train the default model's ``fast`` profile: a two-stage block rescorer with no transformer.

The ``accurate`` profile adds the transformer's margin to a rescorer that never saw it; the
``fast`` profile has only the rescorer, so it is trained and calibrated for that use:

1. each train page's block features (layout ``blocks-v3``: with the CJK characters, the
   distances to keyword containers and the container identifiers; ``blocks-v4``, with the
   distances to the nearest dialog and modal too, under ``Recipe.fast_dialog_columns``) read
   in context
   (``runtime.stages.rescore.context_features``: neighbours, windows, page totals, the blocks
   sharing each of its containers);
2. a first LightGBM ensemble over them (with ``Recipe.fast_word_weights`` each block weighted
   by the square root of its words; off in the shipped recipe), and its out-of-fold
   probabilities (``Recipe.fast_folds``
   folds of whole pages: a page's probabilities come from an ensemble that never saw it);
3. a second ensemble over the same rows plus those probabilities in context
   (``stage_features``), so a block is judged beside what was decided around it;
4. the blocks of each page are chosen to maximise its expected word F1 (``Recipe
   .fast_selection``, the decoding's ``selection``: a block is main with the second
   ensemble's probability, shifted by a threshold on the log-odds), and that threshold is the
   one with the best mean word F1 on the train pages, scored as ``bench.quality`` scores
   (reconstruct -> text against the page's ground truth), from the second stage's
   out-of-fold log-odds. No dev page is read: the dev
   ground-truth and readability pages stay out of training and calibration.

With ``Recipe.fast_fold_readability`` (off as shipped: measured, it costs the train and the
ground-truth pages more than it gains) the dev corpus's readability pages join steps 1-3,
appended to the train pages and spread over the folds by group (``page_groups``: the suite's
copies of one text, or one site's fixtures, in one fold); the threshold is still chosen on the
train pages, and each readability page's out-of-fold decisions (from the stages of the fold
that never saw it or a copy of it) and their word P/R/F1 are returned as ``readability_folds``, what
``bench.quality`` scores them by (``eval.systems.fold_texts``).

Both ensembles are saved as ONNX like ``train.rescorer``'s and checked against LightGBM.

With ``Recipe.fast_comment_threads`` steps 1-4 read the train pages with reader-comment
threads added under a share of their articles (``train.comments``; the threshold is chosen on
those pages too, as the stages were trained on them).

With ``Recipe.fast_longer_stories`` (off) a share of their articles' stories are lengthened
from inside (``train.stories``), and with ``Recipe.fast_hidden_dialogs`` (off) a share of the
pages hold a closed dialog of prose (``train.dialogs``), applied in that order after the
threads.

With ``Recipe.fast_keep_hidden`` (the shipped recipe) every step reads the pages segmented
without removing hidden elements (``stages.simplify``'s ``keep_hidden``), as the fast profile
then runs (its manifest entry says ``"keep_hidden": true``): main content that a page fades in
or folds away exists as blocks to learn from and to keep. With ``Recipe.fast_drop_noscript``
(also the shipped recipe) they are segmented without the ``noscript`` elements that hold no
block too (``"drop_noscript": true``): tracking pixels' markup there never becomes a block.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eval.pages import CALIBRATION_SOURCE
from pulpie_rt.corpus import iter_pages
from pulpie_rt.runtime.stages.features import (
    CATEGORICAL_COLUMNS,
    DIALOG_NAMES,
    FEATURE_NAMES_V2,
    FEATURE_NAMES_V6,
    LAYOUTS,
    RAIL_NAMES,
    TEASER_NAMES,
)
from pulpie_rt.runtime.stages.rescore import (
    CONTEXT_COLUMNS,
    CONTEXT_FEATURES,
    CONTEXT_V5,
    CONTEXT_V6,
    CONTEXT_V7,
    CONTEXT_VERSION,
    CONTEXTS,
    GROUP_LEVELS,
    context_features,
    stage_features,
)
from train.comments import comment_thread_corpus
from train.data import joined_corpus
from train.dialogs import hidden_dialog_corpus
from train.rescorer import lightgbm_params, save_rescorer, training_pages
from train.stories import longer_story_corpus

FAST_RESCORER_NAME = "rescorer-fast.onnx"
FAST_FIRST_STAGE_NAME = "rescorer-fast-first.onnx"
WORDS_COLUMN = FEATURE_NAMES_V2.index("words")
# the training label of a block no stage learns from (Recipe.fast_story_mask): weight 0
MASKED = -1
# the corpus holding the readability pages that Recipe.fast_fold_readability trains on in folds
READABILITY_CORPUS = "dev"
THRESHOLD_GRID = tuple(round(-2.0 + 0.25 * i, 2) + 0.0 for i in range(13))  # -2 … +1
# the container priors tried (Recipe.fast_container_prior): shares of the page's expected main
# words the dominant container must hold, and the shifts of the log-odds outside it
PRIOR_SHARES = (0.5, 0.6, 0.75, 0.9)
PRIOR_SHIFTS = (0.5, 1.0, 2.0)
# readability pages whose references share this much of their vocabulary (Jaccard of word
# sets) are copies of one text (the lorem-ipsum fixtures, lazy-image-1 to 3): one fold holds
# them all, as it holds every fixture of one site (FIXTURE_SITE_RE: wikipedia, wikipedia-2 ...)
SAME_TEXT_JACCARD = 0.5
FIXTURE_SITE_RE = re.compile(r"-\d+$")


def context_names(context: str = CONTEXT_VERSION) -> list[str]:
    """Column names of ``context_features``' rows in ``context`` (for LightGBM's feature
    names)."""
    own = [FEATURE_NAMES_V2[i] for i in CONTEXT_COLUMNS]
    names = list(FEATURE_NAMES_V2)
    for where in ("prev1", "prev2", "next1", "next2", "mean3", "mean10", "vs_page"):
        names += [f"{where}_{n}" for n in own]
    names += ["depth_step_prev", "depth_step_next", "unlinked_before", "unlinked_after",
              "page_unlinked_log", "page_linked_share", "words_cjk", "words_cjk_share",
              "mean3_words_cjk", "page_cjk_share"]
    for level in GROUP_LEVELS:
        names += [f"up{level}_{n}" for n in ("mean_words", "words_share", "blocks_log",
                                            "link_ratio")]
    names += ["later_copy", "copy_level_first", "copy_level_nearest"]
    return names + {CONTEXT_V5: DIALOG_NAMES, CONTEXT_V6: DIALOG_NAMES + RAIL_NAMES,
                     CONTEXT_V7: DIALOG_NAMES + RAIL_NAMES + TEASER_NAMES}.get(context, [])


def stage_names(context: str = CONTEXT_VERSION) -> list[str]:
    names = context_names(context) + [
        "p", "p_prev1", "p_prev2", "p_prev3", "p_next1", "p_next2", "p_next3", "p_mean2",
        "p_mean5", "p_mean15", "p_words_mean5", "p_page_mean", "p_page_max", "p_page_words_mean",
        "p_rank", "p_region"]
    for level in GROUP_LEVELS:
        names += [f"up{level}_{n}" for n in ("p_words_mean", "p_mean", "p_main_words_share",
                                            "p_less_mean")]
    return names + ["p_first_copy", "p_near_copy_max"]


def fit_stage(rows: np.ndarray, labels: np.ndarray, names: list[str], recipe):
    """A seeded, deterministic LightGBM ensemble (the ``rescorer_*`` settings, seeded by
    ``recipe.fast_seed`` or else ``recipe.seed``): with ``recipe.fast_bag`` > 1, that many
    ensembles of different seeds (their row and column samples differ) averaged into one
    (``average_boosters``)."""
    boosters = fit_members(rows, labels, names, recipe)
    return boosters[0] if len(boosters) == 1 else average_boosters(boosters)


def fit_members(rows: np.ndarray, labels: np.ndarray, names: list[str], recipe,
                members: int | None = None) -> list:
    """``fit_stage``'s bag members apart, the first ``members`` of them (all by default): each
    is trained alone with its own seed, so the first K are the same whatever the bag."""
    import lightgbm

    # word F1 counts words, not blocks: with fast_word_weights a long block weighs more (sqrt:
    # a 400-word block counts 20 one-word blocks, not 400)
    weights = (np.sqrt(1.0 + rows[:, WORDS_COLUMN].astype(np.float64))
               if recipe.fast_word_weights else None)
    masked = labels == MASKED
    if masked.any():
        # a masked block (fast_story_mask) teaches neither label: it weighs nothing
        weights = np.where(masked, 0.0, 1.0 if weights is None else weights)
        labels = np.where(masked, 0, labels)
    data = lightgbm.Dataset(rows, labels, weight=weights, feature_name=names,
                            categorical_feature=list(CATEGORICAL_COLUMNS), free_raw_data=False)
    seed = recipe.seed if recipe.fast_seed is None else recipe.fast_seed
    return [lightgbm.train(lightgbm_params(recipe, seed + 1000 * member), data,
                           num_boost_round=recipe.rescorer_rounds)
            for member in range(recipe.fast_bag if members is None else members)]


def average_boosters(boosters: list):
    """One LightGBM booster whose raw score is the mean of ``boosters``' (trained on the same
    data, so their headers agree): all their trees, each leaf value divided by their number.
    Written through LightGBM's text format, so the ONNX conversion and ``predict`` see one
    ordinary model."""
    import lightgbm

    texts = [b.model_to_string() for b in boosters]
    head = texts[0].partition("\nTree=0\n")[0]
    # the header's tree sizes are byte counts of the trees' text, which the division changes
    head = "\n".join(line for line in head.split("\n") if not line.startswith("tree_sizes="))
    tail = texts[0].partition("\nend of trees")[2]
    trees = []
    for text in texts:
        body = ("Tree=0\n" + text.partition("\nTree=0\n")[2]).partition("\nend of trees")[0]
        for tree in re.split(r"\n(?=Tree=\d+\n)", body.strip("\n")):
            lines = tree.split("\n")[1:]
            lines = [("leaf_value=" + " ".join(repr(float(v) / len(texts))
                                               for v in line[len("leaf_value="):].split()))
                     if line.startswith("leaf_value=") else line for line in lines]
            trees.append("\n".join([f"Tree={len(trees)}"] + lines))
    return lightgbm.Booster(model_str=head + "\n\n" + "\n\n".join(trees)
                            + "\n\n\nend of trees" + tail)


def out_of_fold(rows: list[np.ndarray], labels: list[np.ndarray], names: list[str], recipe,
                fold_of: np.ndarray, log=print) -> list[np.ndarray]:
    """Per page, the probabilities of an ensemble trained on the other ``fast_folds`` folds
    (page ``i`` in fold ``fold_of[i]``)."""
    out: list[np.ndarray | None] = [None] * len(rows)
    for fold, train_rows, train_labels, held in fold_splits(rows, labels, fold_of,
                                                             recipe.fast_folds):
        booster = fit_stage(train_rows, train_labels, names, recipe)
        for i in held:
            out[i] = booster.predict(rows[i]) if len(rows[i]) else np.zeros(0)
        log(f"fast rescorer: fold {fold + 1}/{recipe.fast_folds}")
    return out  # type: ignore[return-value]


def fold_splits(rows: list[np.ndarray], labels: list[np.ndarray], fold_of: np.ndarray,
                folds: int) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """Per fold: the fold, the rows and labels of every page of the other folds (what a
    stage is trained on) and the indices of the fold's own pages (what it then scores) --
    the one split under every out-of-fold loop (this module's and ``train.cut_oof``'s)."""
    for fold in range(folds):
        train = np.flatnonzero(fold_of != fold)
        yield (fold, np.concatenate([rows[i] for i in train]),
               np.concatenate([labels[i] for i in train]), np.flatnonzero(fold_of == fold))


def continued_story_labels(labels: np.ndarray, features: np.ndarray) -> np.ndarray:
    """A page's rule labels with each story continued as ``decode.rs``' ``continue_story``
    continues a selection (the labels as the selection, every block scored)."""
    from pulpie_rt.runtime import native

    if len(labels) == 0:
        return labels
    scores = np.where(np.asarray(labels) == 1, 1.0, -1.0).astype(np.float32)
    out = native.decide_blocks(len(labels), [list(range(len(labels)))], [scores],
                               features=features, margins=True, threshold=0.0,
                               continue_story=True)
    return np.asarray(out, dtype=np.asarray(labels).dtype)


def masked_story_labels(labels: np.ndarray, features: np.ndarray) -> np.ndarray:
    """A page's rule labels with the blocks that ``continued_story_labels`` would make main
    marked ``MASKED``: the stages learn neither label from a story's tail."""
    labels = np.asarray(labels)
    continued = continued_story_labels(labels, features)
    return np.where((continued == 1) & (labels != 1), MASKED, labels).astype(labels.dtype)


def log_odds(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, np.float64), 1e-7, 1 - 1e-7)
    return np.log(p / (1 - p))


def _decode_page(job: tuple) -> tuple[str, list[tuple[str, str]]]:
    """One page's decisions and main-content text under each of the job's decodings,
    ``(threshold, container_prior)`` pairs, ``(threshold, container_prior,
    continue_story)`` triples, ``(threshold, container_prior, continue_story,
    story_prior)`` quadruples or those and a ``short_story`` (the runtime's decoding
    of a rescorer-only profile: the compiled core's ``decide_blocks`` over one "chunk" holding
    every block, with ``keep_best_block``; ``container_prior`` ``(share, shift)`` or None),
    the page segmented with the job's ``keep_hidden``
    and ``drop_noscript``, its blocks selected by expected F1 when the job's ``expected_f1``
    says so (then the threshold is the shift of the log-odds). The decisions are one
    character per block, ``1`` main, ``0`` not; a page that fails is ``("", "")``, scored as
    an empty output as ``bench.quality`` scores a failed page."""
    from pulpie_rt.runtime import native
    from pulpie_rt.runtime.stages.blocks import extract_blocks
    from pulpie_rt.runtime.stages.features import block_features
    from pulpie_rt.runtime.stages.labels import labels_from_predictions
    from pulpie_rt.runtime.stages.markdown import to_text
    from pulpie_rt.runtime.stages.reconstruct import extract_main_html
    from pulpie_rt.runtime.stages.simplify import simplify

    page, scores, decodings, keep_hidden, drop_noscript, expected_f1 = job
    simplified, map_html = simplify(page["html"], keep_hidden=keep_hidden,
                                    drop_noscript=drop_noscript)
    _, item_ids = extract_blocks(simplified)
    scores = np.asarray(scores, np.float32)
    # the priors and continue_story read the container columns (the rescorer's layout,
    # blocks-v3)
    prior = any(d[1] is not None or any(d[2:]) for d in decodings)
    features = (block_features(map_html, item_ids, CONTEXTS[CONTEXT_VERSION]) if prior
                else block_features(map_html, item_ids) if expected_f1 else None)
    decoded = []
    for threshold, container_prior, *story in decodings:
        try:
            predictions = native.decide_blocks(len(scores), [list(range(len(scores)))],
                                               [scores], features=features, margins=True,
                                               threshold=threshold, keep_best=True,
                                               expected_f1=expected_f1,
                                               container_prior=container_prior,
                                               continue_story=bool(story and story[0]),
                                               story_prior=story[1] if len(story) > 1
                                               else None,
                                               short_story=story[2] if len(story) > 2
                                               else None)
            text = to_text(extract_main_html(map_html,
                                             labels_from_predictions(item_ids, predictions)))
            decoded.append(("".join("1" if p else "0" for p in predictions), text))
        except Exception:
            decoded.append(("", ""))
    return page["id"], decoded


def _page_texts(job: tuple) -> tuple[str, list[str]]:
    """``_decode_page``'s texts alone."""
    page_id, decoded = _decode_page(job)
    return page_id, [text for _, text in decoded]


def hold_columns(features: list[np.ndarray], names: list[str] | tuple[str, ...],
                 layout: str) -> list[int]:
    """``Recipe.fast_held_columns``: the ``names``d columns of every page's ``layout`` rows set
    to 0 in place (each layout's columns begin with the one before's, so a layout's names are
    the first of ``FEATURE_NAMES_V6``); their indices. A ``ValueError`` names a column the
    layout does not hold."""
    held = FEATURE_NAMES_V6[:LAYOUTS[layout]]
    unknown = [name for name in names if name not in held]
    if unknown:
        raise ValueError(f"fast_held_columns: {', '.join(unknown)} not a column of layout "
                         f"{layout} (features.FEATURE_NAMES_V6, the first {len(held)})")
    columns = [held.index(name) for name in names]
    for rows in features:
        rows[:, columns] = 0.0
    return columns


def readability_pages(keep_hidden: bool, drop_noscript: bool, layout: str = CONTEXT_FEATURES
                      ) -> tuple[list[str], list[np.ndarray], list[np.ndarray], list[int]]:
    """The dev corpus's ``CALIBRATION_SOURCE`` pages (``eval.pages.calibration_pages``), as
    ``training_pages`` gives them: ids, ``layout`` rows and rule labels (from
    Readability.js's expected output), and each page's ``page_groups`` group."""
    from eval.pages import calibration_pages

    pages = {p["id"]: p for p in calibration_pages()}
    ids, features, labels = training_pages(READABILITY_CORPUS, keep_hidden=keep_hidden,
                                           layout=layout, drop_noscript=drop_noscript)
    keep = [i for i, pid in enumerate(ids) if pid in pages]
    return ([ids[i] for i in keep], [features[i] for i in keep], [labels[i] for i in keep],
            page_groups([pages[ids[i]] for i in keep]))


def page_groups(pages: list[dict]) -> list[int]:
    """A group number per page (numbered by first page): pages of one fixture site (their ids'
    last part less a ``-N`` suffix) or whose references share ``SAME_TEXT_JACCARD`` of their
    word sets are one group, and so are the pages linked through them. Folds split by group,
    so that no page is scored by stages trained on a copy of its text."""
    from eval.metrics import words

    parent = list(range(len(pages)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_of_site: dict[str, int] = {}
    vocabularies = [set(words(p["reference"])) for p in pages]
    for i, page in enumerate(pages):
        site = FIXTURE_SITE_RE.sub("", page["id"].rsplit("/", 1)[-1])
        parent[root(i)] = root(first_of_site.setdefault(site, i))
        for j in range(i):
            shared = len(vocabularies[i] & vocabularies[j])
            union = len(vocabularies[i] | vocabularies[j])
            if union and shared >= SAME_TEXT_JACCARD * union:
                parent[root(i)] = root(j)
    numbers: dict[int, int] = {}
    return [numbers.setdefault(root(i), len(numbers)) for i in range(len(pages))]


def group_folds(groups: list[int], folds: int) -> list[int]:
    """A fold per page such that each group sits in one fold: the largest groups first, each
    into the fold holding the fewest pages so far (ties: the lowest fold)."""
    sizes = Counter(groups)
    held = [0] * folds
    fold_of_group: dict[int, int] = {}
    for group in sorted(sizes, key=lambda g: (-sizes[g], g)):
        fold = min(range(folds), key=lambda f: (held[f], f))
        fold_of_group[group] = fold
        held[fold] += sizes[group]
    return [fold_of_group[group] for group in groups]


def extra_set_folds(ids: list[str], fold_of: np.ndarray, sets: tuple[str, ...] | list[str],
                    folds: int) -> np.ndarray:
    """``fold_of`` with the pages of the added article sets ``sets`` (those with a ``site``)
    spread over the folds by site (``group_folds``): a site's pages share its templates and
    rails, and stages trained on one of them would score the others as if seen."""
    from eval.article_sets import load_article_set

    site_of = {p["id"]: p["site"] for name in sets for p in load_article_set(name)
               if p.get("site")}
    rows = [i for i, pid in enumerate(ids) if pid in site_of]
    if not rows:
        return fold_of
    numbers: dict[str, int] = {}
    groups = [numbers.setdefault(site_of[ids[i]], len(numbers)) for i in rows]
    out = np.array(fold_of, copy=True)
    out[rows] = group_folds(groups, folds)
    return out


def extra_sets_record(sets: tuple[str, ...] | list[str]) -> dict:
    """For the record and the card: each added set's pages, sites and sources, and the sites
    its build left out for independence (``eval.modern_news``' record beside the sets, where
    there is one)."""
    import json

    from eval.article_sets import ARTICLE_SETS_DIR, load_article_set
    from eval.modern_news import DROPPED_NAME

    record: dict = {}
    for name in sets:
        pages = load_article_set(name)
        record[name] = {"pages": len(pages),
                        "sites": len({p.get("site") for p in pages if p.get("site")}),
                        "sources": dict(sorted(Counter(p["source"] for p in pages).items()))}
    dropped = ARTICLE_SETS_DIR / DROPPED_NAME
    if dropped.is_file():
        record["dropped_sites"] = sorted(
            json.loads(dropped.read_text(encoding="utf-8"))["dropped_sites"])
    return record


def out_of_fold_scores(corpus: str, scores: dict[str, np.ndarray], threshold: float,
                       keep_hidden: bool, expected_f1: bool, drop_noscript: bool, folds: int,
                       workers: int | None = None,
                       container_prior: tuple[float, float] | None = None) -> dict:
    """Word P/R/F1 (means over pages) of ``scores``' pages of ``corpus`` decoded at
    ``threshold`` (and ``container_prior``) as ``calibrate_threshold`` decodes them, the same
    by kind of readability page
    (``kinds``: the saved articles and the hand-written test cases, ``eval.pages
    .readability_kind``), and each page's decisions (``labels``: one character per block,
    ``1`` main), from which ``bench.quality`` rebuilds and scores their texts."""
    from eval.metrics import score_pages
    from eval.pages import references_by_kind

    pages = [p for p in iter_pages(corpus) if p["id"] in scores]
    jobs = ((p, scores[p["id"]], ((threshold, container_prior),), keep_hidden, drop_noscript,
             expected_f1) for p in pages)
    with ProcessPoolExecutor(workers or os.cpu_count() or 1) as pool:
        decoded = {pid: d[0] for pid, d in pool.map(_decode_page, jobs, chunksize=4)}
    texts = {pid: text for pid, (_, text) in decoded.items()}

    def scored(references: dict[str, str]) -> dict:
        result = score_pages(texts, references)
        return {"pages": result["pages"],
                **{k: round(result[k], 4) for k in ("precision", "recall", "f1")}}

    kinds = references_by_kind(pages)
    return {**scored({p["id"]: p["reference"] for p in pages}), "folds": folds,
            "kinds": {kind: scored(references) for kind, references in kinds.items()
                      if references},
            "labels": {pid: labels for pid, (labels, _) in decoded.items()}}


def decodings_f1(corpus: str, scores: dict[str, np.ndarray],
                 decodings: list[tuple], keep_hidden: bool,
                 expected_f1: bool, drop_noscript: bool, workers: int | None = None
                 ) -> tuple[int, list[float]]:
    """The number of pages of ``corpus`` in ``scores`` and their mean word F1 under each of
    ``decodings`` (``_decode_page``'s pairs or triples)."""
    from eval.metrics import score_pages

    pages = [p for p in iter_pages(corpus) if p["id"] in scores]
    references = {p["id"]: p["reference"] for p in pages}
    jobs = ((p, scores[p["id"]], decodings, keep_hidden, drop_noscript, expected_f1)
            for p in pages)
    with ProcessPoolExecutor(workers or os.cpu_count() or 1) as pool:
        texts = dict(pool.map(_page_texts, jobs, chunksize=4))
    return len(pages), [score_pages({pid: t[index] for pid, t in texts.items()},
                                    references)["f1"] for index in range(len(decodings))]


def calibrate_threshold(corpus: str, scores: dict[str, np.ndarray], workers: int | None = None,
                        thresholds: tuple[float, ...] = THRESHOLD_GRID, log=print,
                        keep_hidden: bool = True, expected_f1: bool = False,
                        drop_noscript: bool = True) -> tuple[float, dict[str, float]]:
    """The threshold of ``thresholds`` with the best mean word F1 over the pages of ``corpus``
    in ``scores`` (ties: the one nearest 0), and every F1 tried; the pages segmented with
    ``keep_hidden`` and ``drop_noscript`` (the segmentation ``scores`` were computed on), their
    blocks selected by
    expected F1 when ``expected_f1`` (the threshold shifting the log-odds)."""
    n_pages, values = decodings_f1(corpus, scores, [(t, None) for t in thresholds],
                                   keep_hidden, expected_f1, drop_noscript, workers)
    f1: dict[str, float] = {}
    best: tuple[float, float] | None = None
    for threshold, value in zip(thresholds, values, strict=True):
        f1[f"{threshold:+.2f}"] = round(value, 4)
        log(f"fast rescorer: threshold {threshold:+.2f} -> word F1 {value:.4f} on "
            f"{n_pages} {corpus} pages (out of fold)")
        if best is None or value > best[1] + 1e-12 or (
                abs(value - best[1]) <= 1e-12 and abs(threshold) < abs(best[0])):
            best = (threshold, value)
    assert best is not None
    return best[0], f1


def calibrate_container_prior(corpus: str, scores: dict[str, np.ndarray], threshold: float,
                              keep_hidden: bool, expected_f1: bool, drop_noscript: bool,
                              workers: int | None = None, log=print
                              ) -> tuple[tuple[float, float] | None, dict[str, float]]:
    """The container prior (``decode.rs``' ``container_prior``: ``(share, shift)`` of
    ``PRIOR_SHARES`` x ``PRIOR_SHIFTS``, or None) with the best mean word F1 over the pages of
    ``corpus`` in ``scores`` decoded at ``threshold`` (ties: None, then the grid's first), and
    every F1 tried, keyed ``"none"`` or ``"share/shift"``."""
    priors: list[tuple[float, float] | None] = [None] + [
        (share, shift) for share in PRIOR_SHARES for shift in PRIOR_SHIFTS]
    n_pages, values = decodings_f1(corpus, scores, [(threshold, prior) for prior in priors],
                                   keep_hidden, expected_f1, drop_noscript, workers)
    f1: dict[str, float] = {}
    best: tuple[tuple[float, float] | None, float] | None = None
    for prior, value in zip(priors, values, strict=True):
        key = prior_name(prior)
        f1[key] = round(value, 4)
        log(f"fast rescorer: container prior {key} (share/shift) -> word F1 {value:.4f} on "
            f"{n_pages} {corpus} pages (out of fold, threshold {threshold:+.2f})")
        if best is None or value > best[1] + 1e-12:
            best = (prior, value)
    assert best is not None
    return best[0], f1


def prior_name(prior: tuple[float, float] | None) -> str:
    """A container prior's key in ``container_prior_f1`` and in the logs: ``"share/shift"``,
    or ``"none"``."""
    return "none" if prior is None else f"{prior[0]:g}/{prior[1]:g}"


def given_container_prior(prior, setting: str = "fast_container_prior"
                          ) -> tuple[float, float]:
    """A recipe's ``fast_container_prior`` (or ``setting``'s: ``fast_story_prior``) pair as
    ``(share, shift)``; a clear error for another value (a share outside (0, 1], a negative
    shift, not two numbers)."""
    either = ("give true (chosen on the train pages) or a [share, shift] pair of numbers"
              if setting == "fast_container_prior" else "give a [share, shift] pair of numbers")
    try:
        share, shift = (float(v) for v in prior)
    except (TypeError, ValueError):
        raise ValueError(f"{setting} {prior!r}: {either}") from None
    if not 0.0 < share <= 1.0 or not shift >= 0.0:
        raise ValueError(f"{setting} {prior!r}: the share is a fraction of the "
                         "page's expected main words (above 0, at most 1) and the shift a "
                         "log-odds (0 or more)")
    return share, shift


@dataclass
class FastTrainingSet:
    """What both fast stages are trained on: per page (the recipe's corpus, then any folded
    readability pages) its id, block features, labels and context rows, its fold, and the
    settings the rows were read with."""

    corpus: str
    context: str
    keep_hidden: bool
    drop_noscript: bool
    given_prior: tuple[float, float] | None
    ids: list[str]
    features: list[np.ndarray]
    labels: list[np.ndarray]
    rows: list[np.ndarray]
    fold_of: np.ndarray
    calibrated: list[str]  # the pages the threshold is chosen on
    folded: list[str]  # the readability pages folded in (fast_fold_readability)


def fast_training_set(recipe, log=print) -> FastTrainingSet:
    """The recipe's fast training pages, read as ``write_fast_rescorer`` trains on them (also
    what ``train.cut_oof`` scores a cut bag on, out of fold)."""
    keep_hidden = recipe.fast_keep_hidden
    drop_noscript = recipe.fast_drop_noscript
    corpus = recipe.corpus
    # a [share, shift] pair the recipe gives (refused now, not after training), else None
    given_prior = (None if recipe.fast_container_prior in (True, False, None)
                   else given_container_prior(recipe.fast_container_prior))
    if recipe.fast_story_prior:
        given_container_prior(recipe.fast_story_prior, "fast_story_prior")  # refused now
    if recipe.fast_story_labels and recipe.fast_story_mask:
        raise ValueError("fast_story_labels and fast_story_mask: a story's tail is either "
                         "labelled main or masked, not both")
    if recipe.fast_comment_threads:
        corpus = comment_thread_corpus(corpus, recipe.fast_comment_threads,
                                       recipe.fast_comment_seed, log=log)
    # after the threads, which follow the story's end: the stories grow before it
    if recipe.fast_longer_stories:
        corpus = longer_story_corpus(corpus, recipe.fast_longer_stories,
                                     recipe.fast_story_seed, log=log)
    # last: the dialogs go before </body> (a banner after <body>), outside the story
    if recipe.fast_hidden_dialogs:
        corpus = hidden_dialog_corpus(corpus, recipe.fast_hidden_dialogs,
                                      recipe.fast_dialog_seed, log=log)
    # other sets' pages as they are, after the train pages (which keep their folds)
    if recipe.fast_extra_sets:
        corpus = joined_corpus(corpus, recipe.fast_extra_sets, log=log)
    # the context the stages read their blocks in, and the feature layout it reads
    context = (CONTEXT_V7 if recipe.fast_teaser_columns
               else CONTEXT_V6 if recipe.fast_rail_columns
               else CONTEXT_V5 if recipe.fast_dialog_columns else CONTEXT_VERSION)
    layout = CONTEXTS[context]
    ids, features, labels = training_pages(corpus, keep_hidden=keep_hidden,
                                           layout=layout, drop_noscript=drop_noscript)
    calibrated = list(ids)  # the threshold is chosen on the recipe's corpus alone
    if recipe.fast_story_labels:
        labels = [continued_story_labels(y, f) for y, f in zip(labels, features, strict=True)]
        log(f"fast rescorer: story labels, {sum(int(y.sum()) for y in labels)} main blocks")
    elif recipe.fast_story_mask:
        labels = [masked_story_labels(y, f) for y, f in zip(labels, features, strict=True)]
        log(f"fast rescorer: story tails masked, "
            f"{sum(int((y == MASKED).sum()) for y in labels)} blocks")
    folded: list[str] = []
    # train page i sits in fold i % fast_folds; an added set's pages one fold per site
    fold_of = np.arange(len(ids)) % recipe.fast_folds
    if recipe.fast_extra_sets:
        fold_of = extra_set_folds(ids, fold_of, recipe.fast_extra_sets, recipe.fast_folds)
    if recipe.fast_fold_readability:
        folded_ids, folded_features, folded_labels, groups = readability_pages(keep_hidden,
                                                                               drop_noscript,
                                                                               layout)
        # appended after the train pages, which keep their folds; the readability pages are
        # spread over the folds by group: fixtures that copy one text (the lorem-ipsum ones,
        # lazy-image-1 to 3) or one site's pages, in different folds, would score each other
        fold_of = np.concatenate([fold_of, group_folds(groups, recipe.fast_folds)])
        log(f"fast rescorer: {len(folded_ids)} {CALIBRATION_SOURCE} pages in {len(set(groups))} "
            f"groups of one site or one text, each group in one fold")
        ids, features, labels = (ids + folded_ids, features + folded_features,
                                 labels + folded_labels)
        folded = folded_ids
    if recipe.fast_held_columns:
        hold_columns(features, recipe.fast_held_columns, layout)
        log(f"fast rescorer: {', '.join(recipe.fast_held_columns)} held at 0 (no tree reads "
            f"them)")
    rows = [context_features(f) for f in features]
    log(f"fast rescorer: {len(ids)} pages, {sum(len(y) for y in labels)} blocks x "
        f"{rows[0].shape[1]} columns ({context}), hidden elements "
        f"{'kept' if keep_hidden else 'removed'}, noscript elements "
        f"{'dropped' if drop_noscript else 'kept'}")
    return FastTrainingSet(corpus, context, keep_hidden, drop_noscript, given_prior, ids,
                           features, labels, rows, fold_of, calibrated, folded)


def write_fast_rescorer(bundle: Path, recipe, log=print) -> dict:
    """Train both stages on the recipe's corpus into ``bundle`` (``FAST_FIRST_STAGE_NAME``,
    ``FAST_RESCORER_NAME``) and calibrate the threshold; returns what was measured, with the
    manifest's ``rescorer``, ``decoding``, ``keep_hidden`` and ``drop_noscript`` entries of the
    fast profile."""
    data = fast_training_set(recipe, log)
    all_labels = np.concatenate(data.labels)
    first_oof = out_of_fold(data.rows, data.labels, context_names(data.context), recipe,
                            data.fold_of, log)
    first = fit_stage(np.concatenate(data.rows), all_labels, context_names(data.context), recipe)
    stage_rows = [np.concatenate([r, stage_features(p, f)], 1)
                  for r, p, f in zip(data.rows, first_oof, data.features, strict=True)]
    second_oof = out_of_fold(stage_rows, data.labels, stage_names(data.context), recipe,
                             data.fold_of, log)
    second = fit_stage(np.concatenate(stage_rows), all_labels, stage_names(data.context), recipe)
    check_rows = slice(0, 20_000)  # the ONNX check on the first train blocks
    checks = {
        "first": save_rescorer(first, bundle / FAST_FIRST_STAGE_NAME,
                               np.concatenate(data.rows)[check_rows],
                               f" in context ({data.context}), first stage"),
        "second": save_rescorer(second, bundle / FAST_RESCORER_NAME,
                                np.concatenate(stage_rows)[check_rows],
                                f" in context ({data.context}), second stage"),
    }
    # the out-of-fold scores beside the bundle (WORK/fast-oof.npz), for decoding experiments
    np.savez_compressed(bundle.parent / "fast-oof.npz", ids=np.asarray(data.ids),
                        **{f"p{i}": log_odds(p) for i, p in enumerate(second_oof)})
    expected_f1 = recipe.fast_selection == "expected_f1"
    oof = {pid: log_odds(p) for pid, p in zip(data.ids, second_oof, strict=True)}
    threshold, f1 = calibrate_threshold(
        data.corpus, {pid: oof[pid] for pid in data.calibrated},
        log=log, keep_hidden=data.keep_hidden, expected_f1=expected_f1,
        drop_noscript=data.drop_noscript)
    log(f"fast rescorer: threshold {threshold:+.2f} (train out-of-fold word F1 "
        f"{f1[f'{threshold:+.2f}']:.4f})")
    container_prior, prior_f1 = None, None
    if data.given_prior is not None:
        # chosen on the dev pages (fit.py): measured here, for the record and the card
        container_prior = data.given_prior
        key = prior_name(container_prior)
        _, values = decodings_f1(data.corpus, {pid: oof[pid] for pid in data.calibrated},
                                 [(threshold, None), (threshold, container_prior)],
                                 data.keep_hidden, expected_f1, data.drop_noscript)
        prior_f1 = {prior_name(None): round(values[0], 4), key: round(values[1], 4)}
        log(f"fast rescorer: container prior {key} (share/shift, given) on the train pages out "
            f"of fold: word F1 {values[1]:.4f} against {values[0]:.4f} without")
    elif recipe.fast_container_prior is True:
        container_prior, prior_f1 = calibrate_container_prior(
            data.corpus, {pid: oof[pid] for pid in data.calibrated}, threshold,
            data.keep_hidden, expected_f1, data.drop_noscript, log=log)
        log(f"fast rescorer: container prior {prior_name(container_prior)} (share/shift)")
    story_f1 = None
    if recipe.fast_continue_story:
        # not chosen here (the train pages' references often stop before a long story's end):
        # measured, for the record and the model card
        _, values = decodings_f1(data.corpus, {pid: oof[pid] for pid in data.calibrated},
                                 [(threshold, container_prior, False),
                                  (threshold, container_prior, True)],
                                 data.keep_hidden, expected_f1, data.drop_noscript)
        story_f1 = {"without": round(values[0], 4), "with": round(values[1], 4)}
        log(f"fast rescorer: continue_story on the train pages out of fold: word F1 "
            f"{values[1]:.4f} against {values[0]:.4f} without")
    story_prior, story_prior_f1 = None, None
    if recipe.fast_story_prior:
        # chosen on the held-apart modern news and the dev pages (fit.py): measured here, for
        # the record and the card
        story_prior = given_container_prior(recipe.fast_story_prior, "fast_story_prior")
        last = (threshold, container_prior, recipe.fast_continue_story)
        _, values = decodings_f1(data.corpus, {pid: oof[pid] for pid in data.calibrated},
                                 [last, (*last, story_prior)], data.keep_hidden, expected_f1,
                                 data.drop_noscript)
        story_prior_f1 = {"without": round(values[0], 4), "with": round(values[1], 4)}
        log(f"fast rescorer: story prior {prior_name(story_prior)} (share/shift) on the train "
            f"pages out of fold: word F1 {values[1]:.4f} against {values[0]:.4f} without")
    folds_scores = None
    if data.folded:
        folds_scores = out_of_fold_scores(
            READABILITY_CORPUS, {pid: oof[pid] for pid in data.folded}, threshold,
            data.keep_hidden, expected_f1, data.drop_noscript, recipe.fast_folds,
            container_prior=container_prior)
        log(f"fast rescorer: {len(data.folded)} {CALIBRATION_SOURCE} pages in "
            f"{recipe.fast_folds} folds (each scored by the stages that never saw it, at the "
            f"threshold above): word "
            f"P {folds_scores['precision']:.4f} R {folds_scores['recall']:.4f} "
            f"F1 {folds_scores['f1']:.4f}")
        log("fast rescorer: by kind, " + "; ".join(
            f"{kind} ({s['pages']}): word P {s['precision']:.4f} R {s['recall']:.4f} "
            f"F1 {s['f1']:.4f}" for kind, s in folds_scores["kinds"].items()))
    return {
        **({"extra_sets": extra_sets_record(recipe.fast_extra_sets)}
           if recipe.fast_extra_sets else {}),
        "rescorer": {"file": FAST_RESCORER_NAME, "features": CONTEXTS[data.context],
                     "context": data.context, "first_stage": FAST_FIRST_STAGE_NAME,
                     "margin_weight": 0.0},
        "decoding": {"keep_best_block": True, "main_margin": threshold,
                     **({"selection": "expected_f1"} if expected_f1 else {}),
                     **({"container_prior": {"share": container_prior[0],
                                             "shift": container_prior[1]}}
                        if container_prior else {}),
                     **({"story_prior": {"share": story_prior[0], "shift": story_prior[1]}}
                        if story_prior else {}),
                     **({"continue_story": True} if recipe.fast_continue_story else {})},
        "keep_hidden": data.keep_hidden,
        "drop_noscript": data.drop_noscript,
        "blocks": int(len(all_labels)), "pages": len(data.ids), "folds": recipe.fast_folds,
        "trees_per_stage": recipe.rescorer_rounds, "bag": recipe.fast_bag,
        "onnx_bytes": {name: (bundle / name).stat().st_size
                       for name in (FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME)},
        "onnx_check": checks, "calibration_f1": f1,
        **({"container_prior_f1": prior_f1} if prior_f1 else {}),
        **({"continue_story_f1": story_f1} if story_f1 else {}),
        **({"story_prior_f1": story_prior_f1} if story_prior_f1 else {}),
        **({"readability_folds": folds_scores} if folds_scores else {}),
    }
