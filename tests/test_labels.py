"""Label decoding in the core (``core/src/engine/decode.rs`` through ``native.decide_blocks``,
what ``runtime.flow.pages`` and the C library both run) against its specification
(``tests/spec/labels_spec.py``): the reference's SEP quirks, a bundle's threshold,
``keep_best_block`` and rescorer, on synthetic cases and on the real dev pages."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from rt_helpers import dev_subset
from spec import labels_spec
from spec.labels_spec import argmax_labels, block_predictions
from spec.rescore_spec import SpecRescorer

from eval.margins import SepLogitsSession, chunk_sep_logits
from pulpie_rt import Extractor
from pulpie_rt.runtime import native
from pulpie_rt.runtime.flow.pages import Preparer, decide_blocks
from pulpie_rt.runtime.stages.labels import labels_from_predictions


def _core(n_blocks, chunk_blocks, chunk_logits, margins, threshold, keep_best,
          rescorer=None, features=None, n_classified=None):
    return native.decide_blocks(n_blocks, chunk_blocks, chunk_logits, rescorer=rescorer,
                                features=features, n_classified=n_classified, margins=margins,
                                threshold=threshold, keep_best=keep_best)


def test_sep_quirks_as_the_reference():
    # more SEPs than blocks (a literal <|sep|> in text): extra predictions are dropped;
    # fewer SEPs than blocks: the rest stay 0 ("other"); ties take the first label
    logits = [np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 2.0]]), np.array([[0.5, 0.5]])]
    assert _core(5, [[0, 1], [2, 3, 4]], logits, False, None, False) == [1, 0, 0, 0, 0]
    logits = [np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 2.0]]), np.array([[0.1, 0.2]])]
    assert _core(5, [[0, 1], [2, 3, 4]], logits, False, None, False) == [1, 0, 1, 0, 0]
    assert _core(0, [], [], False, None, False) == []


def test_margins_threshold_and_keep_best_block():
    # margins -3, -0.5 | -2, -4: none above 0, keep_best makes block 1 main
    logits = [np.array([[3.0, 0.0], [0.5, 0.0]]), np.array([[2.0, 0.0], [4.0, 0.0]])]
    blocks = [[0, 1], [2, 3]]
    assert _core(4, blocks, logits, True, None, False) == [0, 0, 0, 0]
    assert _core(4, blocks, logits, True, None, True) == [0, 1, 0, 0]
    assert _core(4, blocks, logits, True, -2.5, True) == [0, 1, 1, 0]
    # a chunk that ran short of SEPs leaves its tail without a score: never kept
    assert _core(3, [[0, 1, 2]], [np.array([[1.0, 0.0]])], True, 5.0, True) == [1, 0, 0]
    # margins given directly (1-D), as eval and the calibration pass them
    page = type("Page", (), {"n_blocks": 2, "chunks": [type("C", (), {"block_indices": [0, 1]})],
                             "features": None, "n_classified": None})
    assert decide_blocks(page, [np.array([-1.0, 2.0], np.float32)], 1.5, False) == [0, 1]


def test_random_pages_decode_as_the_specification():
    rng = random.Random(5)
    nprng = np.random.default_rng(5)
    for _ in range(400):
        n_blocks = rng.randint(0, 30)
        chunk_blocks, start = [], 0
        while start < n_blocks:
            size = rng.randint(1, 8)
            chunk_blocks.append(list(range(start, min(start + size, n_blocks))))
            start += size
        logits = []
        for indices in chunk_blocks:
            n_sep = max(0, len(indices) + rng.choice([-2, -1, 0, 0, 0, 1, 2]))
            values = nprng.normal(size=(n_sep, 2)).astype(np.float32)
            if n_sep and rng.random() < 0.1:
                values[rng.randrange(n_sep)] = values[0, 0]  # a tie: the first label wins
            if n_sep and rng.random() < 0.05:
                values[rng.randrange(n_sep), rng.randrange(2)] = np.nan
            logits.append(values)
        margins = rng.random() < 0.7
        threshold = rng.choice([None, 0.0, -1.0, 0.7])
        keep_best = rng.random() < 0.5
        expected = labels_spec.predictions_of_page(n_blocks, chunk_blocks, logits, margins,
                                                   threshold, keep_best)
        assert _core(n_blocks, chunk_blocks, logits, margins, threshold, keep_best) == expected


@pytest.fixture(scope="module")
def default_extractor():
    return Extractor(profile="accurate")  # the transformer's logits and the rescorer


def test_default_model_decodes_dev_pages_as_the_specification(default_extractor):
    """Real pages, the default model's logits and block features: the core's decoding with
    the core's rescorer against the specification with onnxruntime's Python rescorer."""
    bundle = default_extractor.bundle
    preparer = Preparer.from_bundle(bundle)
    pages = [preparer.prepare(p["html"]) for p in dev_subset(6)]
    page_logits = chunk_sep_logits(SepLogitsSession(bundle), pages)
    spec_rescorer = SpecRescorer(bundle.rescorer_path, bundle.rescorer_spec["margin_weight"])
    blocks = mains = 0
    for index, page in enumerate(pages):
        chunk_logits = page_logits[index]
        chunk_blocks = [c.block_indices for c in page.chunks]
        expected = labels_spec.predictions_of_page(
            page.n_blocks, chunk_blocks, chunk_logits, True, bundle.main_margin,
            bundle.keep_best_block, spec_rescorer.scores, page.features, page.n_classified)
        ours = _core(page.n_blocks, chunk_blocks, chunk_logits, True, bundle.main_margin,
                     bundle.keep_best_block, bundle.rescorer.core, page.features,
                     page.n_classified)
        assert ours == expected, index
        # the reference's argmax decoding of the same logits
        assert _core(page.n_blocks, chunk_blocks, chunk_logits, False, None, False) == (
            labels_spec.predictions_of_page(page.n_blocks, chunk_blocks, chunk_logits, False,
                                            None, False))
        blocks += page.n_blocks
        mains += sum(ours)
    assert blocks > 2000 and 0 < mains < blocks


def _random_page(rng: np.random.Generator, mean_score: float) -> tuple[int, np.ndarray,
                                                                       np.ndarray]:
    """A page of up to 39 blocks: float32 scores around ``mean_score`` (a tenth NaN) and
    word counts (a fifth 0)."""
    n = int(rng.integers(0, 40))
    scores = rng.normal(mean_score, 2.5, n).astype(np.float32)
    scores[rng.random(n) < 0.1] = np.nan
    words = rng.integers(0, 300, n).astype(np.float32)
    words[rng.random(n) < 0.2] = 0
    return n, scores, words


def test_expected_f1_selection_decodes_as_the_specification():
    rng = np.random.default_rng(7)
    for case in range(300):
        n, scores, words = _random_page(rng, 0.0)
        features = np.zeros((n, 5), np.float32)
        features[:, 2] = words  # the words column
        threshold = float(rng.choice([-1.0, 0.0, 0.5]))
        keep = bool(case % 2)
        want = labels_spec.expected_f1_labels(scores, words, threshold)
        if keep:
            want = labels_spec.keep_best_block(want, scores)
        got = native.decide_blocks(n, [list(range(n))], [scores],
                                   margins=True, threshold=threshold, keep_best=keep,
                                   features=features, expected_f1=True)
        assert got == want, (case, scores.tolist(), words.tolist(), threshold)


def test_expected_f1_selection_needs_the_block_features():
    with pytest.raises(native.DecodeError, match="decoding.selection expected_f1 needs the block "
                                                 "features"):
        native.decide_blocks(2, [[0, 1]], [np.array([1.0, -1.0], np.float32)], margins=True,
                             threshold=0.0, keep_best=True, expected_f1=True)


def test_sep_quirks_as_reference():
    # more SEPs than blocks (a literal <|sep|> in text): extra predictions are dropped
    # fewer SEPs than blocks: the rest stay 0 ("other")
    preds = block_predictions(5, [[0, 1], [2, 3, 4]], [[1, 0, 1], [1]])
    assert preds == [1, 0, 1, 0, 0]
    labels = labels_from_predictions(["1", None, "2", "1", "3"], [1, 1, 0, 0, 1])
    assert labels == {"1": "other", "2": "other", "3": "main"}
    assert list(labels) == ["1", "2", "3"]
    assert argmax_labels(np.array([[0.5, 0.5], [0.1, 0.2]])) == [0, 1]  # ties: first


def _container_rows(words: list[float], chains: list[list[int]]) -> np.ndarray:
    """Block features of layout blocks-v3's width holding only what the container prior
    reads: the words column and each block's ancestor ids (nearest first)."""
    rows = np.zeros((len(words), 207), np.float32)
    rows[:, 2] = words
    rows[:, 199:207] = -1.0
    for i, chain in enumerate(chains):
        rows[i, 199:199 + len(chain)] = chain
    return rows


def _random_chains(rng: np.random.Generator, n: int) -> list[list[int]]:
    """``n`` blocks' ancestor chains in a random tree of 12 elements: each climbs from one of
    them to the root (at most 8, nearest first)."""
    parent = {c: int(rng.integers(0, c)) if c else -1 for c in range(12)}
    chains = []
    for _ in range(n):
        chain, c = [], int(rng.integers(0, 12))
        while c >= 0 and len(chain) < 8:
            chain.append(c)
            c = parent[c]
        chains.append(chain)
    return chains


def test_container_prior_lowers_the_blocks_outside_the_dominant_container():
    # an article body (container 10: three paragraphs) and, beside it in the page (container
    # 1), a gallery of captions that score like prose (container 20)
    rows = _container_rows([120, 80, 100, 40, 40, 40],
                           [[10, 1], [10, 1], [10, 1], [20, 1], [20, 1], [20, 1]])
    scores = np.array([3.0, 2.5, 3.0, 1.0, 1.25, 0.75], np.float32)
    plain = native.decide_blocks(6, [list(range(6))], [scores],
                                 margins=True, threshold=0.0, keep_best=True,
                                 features=rows, expected_f1=True)
    assert plain == [1, 1, 1, 1, 1, 1]
    # the body holds about 76% of the expected main words: at share 0.75 it is the dominant
    # container and the captions fall by 2; at share 0.9 only the page (1) holds that much
    for share, want in ((0.75, [1, 1, 1, 0, 0, 0]), (0.9, plain)):
        got = native.decide_blocks(6, [list(range(6))], [scores],
                                   margins=True, threshold=0.0, keep_best=True,
                                   features=rows, expected_f1=True,
                                   container_prior=(share, 2.0))
        assert got == want, share
    shifted = labels_spec.container_prior(scores, rows, 0.75, 2.0)
    assert shifted.tolist() == [3.0, 2.5, 3.0, -1.0, -0.75, -1.25]
    # no expected main word, or no container: the scores as they are
    assert labels_spec.container_prior(scores, _container_rows([0] * 6, [[1]] * 6), 0.5,
                                       2.0).tolist() == scores.tolist()
    assert labels_spec.container_prior(scores, _container_rows([5] * 6, [[]] * 6), 0.5,
                                       2.0).tolist() == scores.tolist()


def test_container_prior_decodes_as_the_specification():
    rng = np.random.default_rng(11)
    for case in range(300):
        n, scores, words = _random_page(rng, 0.5)
        chains = [chain[: int(rng.integers(0, len(chain) + 1))]
                  for chain in _random_chains(rng, n)]
        rows = _container_rows(words.tolist(), chains)
        share, shift = float(rng.choice([0.5, 0.75, 0.9])), float(rng.choice([0.5, 1.0, 4.0]))
        threshold = float(rng.choice([-1.0, 0.0, 0.5]))
        shifted = labels_spec.container_prior(scores, rows, share, shift)
        want = labels_spec.keep_best_block(
            labels_spec.expected_f1_labels(shifted, words, threshold), shifted)
        got = native.decide_blocks(n, [list(range(n))], [scores],
                                   margins=True, threshold=threshold, keep_best=True,
                                   features=rows, expected_f1=True,
                                   container_prior=(share, shift))
        assert got == want, (case, scores.tolist(), chains, share, shift)


def test_story_prior_decodes_as_the_specification_before_the_container_prior():
    """The story prior (the linked blocks outside the container of the page's expected main
    prose lowered) and then the container prior, as the core decides: 300 random pages."""
    rng = np.random.default_rng(12)
    lowered = 0
    for case in range(300):
        n, scores, words = _random_page(rng, 0.5)
        chains = _random_chains(rng, n)
        rows = _container_rows(words.tolist(), chains)
        rows[:, 4] = rng.choice([0.0, 0.1, 0.25, 0.6, 1.0], n)  # link_ratio
        story = float(rng.choice([0.5, 0.75])), float(rng.choice([1.0, 3.0]))
        prior = None if case % 2 else (0.6, 0.5)
        threshold = float(rng.choice([-1.0, 0.0, 0.5]))
        shifted = labels_spec.story_prior(scores, rows, *story)
        lowered += int((shifted < scores).any())
        if prior is not None:
            shifted = labels_spec.container_prior(shifted, rows, *prior)
        want = labels_spec.keep_best_block(
            labels_spec.expected_f1_labels(shifted, words, threshold), shifted)
        got = native.decide_blocks(n, [list(range(n))], [scores], margins=True,
                                   threshold=threshold, keep_best=True, features=rows,
                                   expected_f1=True, container_prior=prior, story_prior=story)
        assert got == want, (case, scores.tolist(), chains, story, prior)
    assert lowered > 100


def test_a_short_story_lowers_what_sits_beside_it_as_the_specification():
    """``short_story``: on a page whose story's container expects fewer main prose words than
    its ``words``, the story prior lowers the linked blocks outside it by the short story's
    shift and the prose outside it by its ``prose_shift``, as the core decides (300 random
    pages, some short, some not); without a short story the pages decode as before."""
    rng = np.random.default_rng(13)
    short_pages, changed = 0, 0
    for case in range(300):
        n, scores, words = _random_page(rng, 0.5)
        chains = _random_chains(rng, n)
        rows = _container_rows(words.tolist(), chains)
        rows[:, 4] = rng.choice([0.0, 0.1, 0.25, 0.6, 1.0], n)  # link_ratio
        story = float(rng.choice([0.5, 0.75])), 1.0
        short = float(rng.choice([20.0, 80.0, 400.0])), float(rng.choice([2.0, 3.0])), 0.5
        threshold = float(rng.choice([-1.0, 0.0, 0.5]))
        plain = labels_spec.story_prior(scores, rows, *story)
        shifted = labels_spec.story_prior(scores, rows, *story, short)
        short_pages += int((shifted != plain).any())
        shifted = labels_spec.container_prior(shifted, rows, 0.6, 0.5)
        want = labels_spec.keep_best_block(
            labels_spec.expected_f1_labels(shifted, words, threshold), shifted)
        got = native.decide_blocks(n, [list(range(n))], [scores], margins=True,
                                   threshold=threshold, keep_best=True, features=rows,
                                   expected_f1=True, container_prior=(0.6, 0.5),
                                   story_prior=story, short_story=short)
        assert got == want, (case, scores.tolist(), chains, story, short)
        before = native.decide_blocks(n, [list(range(n))], [scores], margins=True,
                                      threshold=threshold, keep_best=True, features=rows,
                                      expected_f1=True, container_prior=(0.6, 0.5),
                                      story_prior=story)
        changed += int(got != before)
    assert short_pages > 50 and changed > 10, (short_pages, changed)


@pytest.mark.parametrize("option,asked", [("container_prior", (0.5, 1.0)),
                                          ("story_prior", (0.5, 3.0)),
                                          ("continue_story", True)])
def test_container_options_need_the_container_columns(option, asked):
    message = (f"decoding.{option} needs the block features' container columns "
               "(layout blocks-v3 to blocks-v6)")
    rows = np.zeros((2, 5), np.float32)
    with pytest.raises(native.DecodeError, match=re.escape(message)):
        native.decide_blocks(2, [[0, 1]], [np.array([1.0, -1.0], np.float32)], margins=True,
                             threshold=0.0, keep_best=True, features=rows, expected_f1=True,
                             **{option: asked})


def _continued(rows: np.ndarray, scores: np.ndarray) -> list[int]:
    """The core's labels of one chunk's page at threshold 0 with the expected-F1 selection,
    keep_best and ``continue_story``."""
    return native.decide_blocks(len(scores), [list(range(len(scores)))], [scores],
                                margins=True, threshold=0.0, keep_best=True,
                                features=rows, expected_f1=True, continue_story=True)


def test_continue_story_runs_the_story_on_under_its_parent():
    # a story (parent 10) whose later paragraphs score under the cut, a list inside it (11,
    # under 10), a linked paragraph inside it, then a related box (parent 20) of prose
    rows = _container_rows([120, 80, 90, 60, 100, 40, 40],
                           [[10, 1], [10, 1], [10, 1], [11, 10], [10, 1], [20, 1], [20, 1]])
    rows[2, 4] = 0.5  # 90 words, half of them linked: passed over
    scores = np.array([3.0, -1.5, -1.0, -1.0, -2.0, -1.0, -1.0], np.float32)
    plain = native.decide_blocks(7, [list(range(7))], [scores],
                                 margins=True, threshold=0.0, keep_best=True,
                                 features=rows, expected_f1=True)
    assert plain == [1, 0, 0, 0, 0, 0, 0]
    got = _continued(rows, scores)
    assert got == [1, 1, 0, 1, 1, 0, 0]
    assert labels_spec.continue_story(plain, scores, rows) == got


def test_continue_story_passes_over_the_captions_of_its_figures():
    # a story (parent 10): a paragraph, a <figcaption> of 30 words, a paragraph, a block of
    # 20 words under a <figure> (a caption in a <p>), a paragraph, each after the first
    # scoring under the cut; every caption is left other and none ends the story
    from pulpie_rt.runtime.stages.features import FEATURE_NAMES_V2, TAGS

    rows = _container_rows([120, 30, 80, 20, 90], [[10, 1]] * 5)
    figcaption = TAGS.index("figcaption") + 1
    rows[1, FEATURE_NAMES_V2.index("tag")] = figcaption
    rows[3, FEATURE_NAMES_V2.index("ancestor_figure")] = 1.0
    scores = np.array([3.0, -1.0, -1.5, -0.5, -2.0], np.float32)
    got = _continued(rows, scores)
    assert got == [1, 0, 1, 0, 1]
    assert labels_spec.continue_story([1, 0, 0, 0, 0], scores, rows) == got
    # the same figcaption as the element of a block of another tag (own_tag), likewise
    rows[1, FEATURE_NAMES_V2.index("tag")] = TAGS.index("div") + 1
    rows[1, FEATURE_NAMES_V2.index("own_tag")] = figcaption
    assert _continued(rows, scores) == [1, 0, 1, 0, 1]
    # without the caption columns the story keeps them
    rows[1, FEATURE_NAMES_V2.index("own_tag")] = 0.0
    rows[3, FEATURE_NAMES_V2.index("ancestor_figure")] = 0.0
    assert _continued(rows, scores) == [1, 1, 1, 1, 1]


def test_continue_story_passes_over_a_text_the_page_holds_three_times():
    # a story (parent 10): a paragraph, a placeholder of 37 words the page holds 7 times
    # (one under each embed), a paragraph, the same placeholder, a paragraph the page holds
    # twice, a paragraph; each after the first scoring under the cut. The placeholders are
    # left other and neither ends the story; the paragraph held twice joins it.
    from pulpie_rt.runtime.stages.features import FEATURE_NAMES_V2

    repeats = FEATURE_NAMES_V2.index("repeats")
    rows = _container_rows([120, 37, 80, 37, 60, 90], [[10, 1]] * 6)
    rows[:, repeats] = [1, 7, 1, 7, 2, 1]
    scores = np.array([3.0, -0.5, -1.5, -1.1, -0.8, -2.0], np.float32)
    got = _continued(rows, scores)
    assert got == [1, 0, 1, 0, 1, 1]
    assert labels_spec.continue_story([1, 0, 0, 0, 0, 0], scores, rows) == got
    # held three times, the same; twice, the placeholder joins the story as a paragraph would
    for copies, want in ((3, [1, 0, 1, 0, 1, 1]), (2, [1, 1, 1, 1, 1, 1])):
        rows[[1, 3], repeats] = copies
        assert _continued(rows, scores) == want


def test_continue_story_decodes_as_the_specification():
    rng = np.random.default_rng(12)
    for case in range(300):
        n, scores, words = _random_page(rng, 0.0)
        # a parent and a grandparent among 6 elements (a parent of one block may be the
        # grandparent of another), or (a tenth) no ancestor
        parents = rng.integers(0, 6, n)
        grandparents = (parents + 1 + rng.integers(0, 5, n)) % 6
        chains = [[int(p), int(g)] if rng.random() < 0.9 else []
                  for p, g in zip(parents, grandparents, strict=True)]
        rows = _container_rows(words.tolist(), chains)
        rows[:, 4] = rng.choice([0.0, 0.1, 0.3, 1.0], n)
        # a tenth of the blocks captions: a figcaption (its tag or its element's) or under a
        # figure (labels_spec: TAG_COLUMNS, ANCESTOR_FIGURE)
        captions = rng.random(n) < 0.1
        rows[captions, rng.choice(labels_spec.TAG_COLUMNS)] = labels_spec.FIGCAPTION
        rows[rng.random(n) < 0.05, labels_spec.ANCESTOR_FIGURE] = 1.0
        rows[rng.random(n) < 0.1, labels_spec.TAG_COLUMNS[0]] = rng.integers(1, 40)
        # the copies of each block's text on the page (labels_spec: REPEATS, STORY_COPIES)
        rows[:, labels_spec.REPEATS] = rng.choice([1.0, 1.0, 1.0, 2.0, 3.0, 6.0], n)
        threshold = float(rng.choice([-1.0, 0.0, 0.5]))
        want = labels_spec.continue_story(labels_spec.keep_best_block(
            labels_spec.expected_f1_labels(scores, words, threshold), scores), scores, rows)
        got = native.decide_blocks(n, [list(range(n))], [scores],
                                   margins=True, threshold=threshold, keep_best=True,
                                   features=rows, expected_f1=True, continue_story=True)
        assert got == want, (case, scores.tolist(), chains)


def test_the_shipped_fast_profile_continues_stories_and_its_card_says_so():
    """The recipe and the embedded model's manifest carry ``continue_story``; the model card
    describes it, with the train pages' out-of-fold figures, only when the decoding has it."""
    import json

    from pulpie_rt.runtime.model.bundle import load_bundle
    from pulpie_rt.runtime.model.resolve import embedded_model_dir
    from train.card import model_card
    from train.fit import Recipe

    assert Recipe().fast_continue_story is True
    folder = embedded_model_dir()
    assert load_bundle(folder, "fast").continue_story
    assert not load_bundle(folder, "accurate").continue_story
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    story_f1 = results["fast"]["continue_story_f1"]
    card = model_card(results, manifest, 1)
    assert "a story goes on to its end (manifest `decoding.continue_story`)" in card
    assert (f"({story_f1['with']:.4f} with it against {story_f1['without']:.4f}\n"
            "  without, out of fold)") in card
    results["fast"]["decoding"].pop("continue_story")
    assert "a story goes on to its end" not in model_card(results, manifest, 1)


def test_story_labels_continue_each_story_of_the_rule_labels():
    """``Recipe.fast_story_labels``: a page's rule labels with each story continued as
    ``continue_story`` continues a selection (the tail of a story under the same element)."""
    from train.fast import continued_story_labels

    rows = _container_rows([120, 80, 90, 40], [[10, 1], [10, 1], [10, 1], [20, 1]])
    labels = np.array([1, 0, 0, 0], np.int8)
    got = continued_story_labels(labels, rows)
    assert got.tolist() == [1, 1, 1, 0] and got.dtype == np.int8
    assert continued_story_labels(np.zeros(0, np.int8), rows[:0]).tolist() == []


def test_story_mask_marks_the_tails_the_story_labels_would_make_main():
    """``Recipe.fast_story_mask``: the blocks ``continued_story_labels`` would relabel main are
    ``MASKED`` (no stage learns from them; ``fit_stage`` weighs them 0), the rest keep their
    rule label."""
    from train.fast import MASKED, masked_story_labels

    rows = _container_rows([120, 80, 90, 40, 60], [[10, 1], [10, 1], [10, 1], [20, 1], [10, 1]])
    labels = np.array([1, 0, 1, 0, 0], np.int8)
    got = masked_story_labels(labels, rows)
    assert got.tolist() == [1, MASKED, 1, 0, MASKED] and got.dtype == np.int8


def test_the_shipped_container_prior_is_the_recipes_and_a_bad_one_is_refused():
    """``Recipe.fast_container_prior``: a ``[share, shift]`` pair is written into the
    manifest as given (the embedded model's); the card says where it was chosen, with the
    train pages' figures; a malformed one is refused before any training, naming the
    value."""
    import json

    from pulpie_rt.runtime.model.bundle import load_bundle
    from pulpie_rt.runtime.model.resolve import embedded_model_dir
    from train.card import model_card
    from train.fast import given_container_prior
    from train.fit import Recipe

    folder = embedded_model_dir()
    assert load_bundle(folder, "fast").container_prior == Recipe().fast_container_prior
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    prior_f1 = results["fast"]["container_prior_f1"]
    assert set(prior_f1) == {"none", "0.6/0.5"}
    card = model_card(results, manifest, 1)
    assert "holding 0.6 of the page's expected main words" in card
    assert "log-odds lowered by 0.5 (manifest `decoding.container_prior`)" in card
    assert (f"apart:\n  {prior_f1['0.6/0.5']:.4f} with it against {prior_f1['none']:.4f} "
            "without, out of fold), and measured on\n  the held-apart article sets") in card
    assert "chosen on the dev pages" in card
    results["recipe"]["fast_container_prior"] = True
    assert "chosen on the train pages out of fold" in model_card(results, manifest, 1)
    assert given_container_prior([0.6, 0.5]) == (0.6, 0.5)
    for bad, why in (("0.6/0.5", "give true"), ([0.6], "give true"),
                     ([0, 1], "the share is a fraction"), ([0.5, -1], "the share is a fraction")):
        with pytest.raises(ValueError, match=f"^fast_container_prior {re.escape(repr(bad))}: "
                                             f"{why}"):
            given_container_prior(bad)
    assert given_container_prior([0.5, 3], "fast_story_prior") == (0.5, 3.0)
    for bad, why in (("0.5/3", "give a \\[share, shift\\] pair"),
                     ([1.5, 3], "the share is a fraction")):
        with pytest.raises(ValueError, match=f"^fast_story_prior {re.escape(repr(bad))}: {why}"):
            given_container_prior(bad, "fast_story_prior")
