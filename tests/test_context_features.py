"""The fast profile's blocks in context: the compiled core's ``context_features`` and
``stage_features`` (``core/src/features/context.rs``, what ``runtime.stages.rescore`` and the
training call) against their NumPy specification (``tests/spec/context_spec.py``) on real
pages, the exact errors for rows of another layout, and the core's two-stage rescorer
(``BlockRescorer`` in context, the C library's ``fast`` profile) against the specification's
on onnxruntime's Python API."""

from __future__ import annotations

import numpy as np
import pytest
from spec import context_spec

from pulpie_rt.runtime.model.resolve import embedded_model_dir
from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.features import (
    FEATURE_NAMES_V2,
    FEATURES_V4,
    FEATURES_V5,
    FEATURES_V6,
    LAYOUTS,
    N_FEATURES_V2,
    N_FEATURES_V3,
    N_FEATURES_V4,
    N_FEATURES_V5,
    N_FEATURES_V6,
    NO_DISTANCE,
    block_features,
)
from pulpie_rt.runtime.stages.rescore import (
    CONTEXT_V6,
    N_CONTEXT,
    N_CONTEXT_V5,
    N_CONTEXT_V6,
    N_CONTEXT_V7,
    N_STAGE,
    BlockRescorer,
    RescorerError,
    context_features,
    stage_features,
)
from pulpie_rt.runtime.stages.simplify import simplify

# floats computed in float64 in the specification's order and rounded to float32: equal on
# this machine save an ulp where NumPy's log1p is not the C library's; never asserted bitwise
TOLERANCE = {"rtol": 1e-6, "atol": 1e-6}


@pytest.fixture(scope="module")
def page_rows_v5(dev_pages) -> list[tuple[str, np.ndarray]]:
    """Every 3rd dev page's blocks-v5 rows (the shipped fast profile's layout), segmented as
    the fast profile segments them."""
    pages = []
    for page in dev_pages[::3]:
        simplified, map_html = simplify(page["html"], keep_hidden=True, drop_noscript=True)
        _, item_ids = extract_blocks(simplified)
        pages.append((page["id"], block_features(map_html, item_ids, FEATURES_V5)))
    return pages


@pytest.fixture(scope="module")
def page_rows(page_rows_v5) -> list[tuple[str, np.ndarray]]:
    """The same pages' blocks-v3 rows: the first columns of their blocks-v5 rows."""
    return [(page_id, np.ascontiguousarray(rows[:, :N_FEATURES_V3]))
            for page_id, rows in page_rows_v5]


FAST_LAST = "rescorer-fast.onnx"
FAST_FIRST = "rescorer-fast-first.onnx"


@pytest.fixture(scope="module")
def first_stage():
    """The embedded model's fast first stage (onnxruntime's Python API)."""
    return context_spec._session(embedded_model_dir() / FAST_FIRST)


def test_context_features_are_the_specifications_on_dev_pages(page_rows):
    assert len(page_rows) == 85 and sum(len(rows) for _, rows in page_rows) > 10_000
    # the pages repeat texts: later copies, and copies within three levels of another
    copies = np.concatenate([context_spec.copy_features(rows) for _, rows in page_rows
                             if len(rows)])
    near = (copies[:, 2] > 0) & (copies[:, 2] <= 3)
    assert (copies[:, 0] == 1).sum() > 1_000 and near.sum() > 500
    for page_id, rows in page_rows:
        got, want = context_features(rows), context_spec.context_features(rows)
        assert got.shape == want.shape == (len(rows), N_CONTEXT) and got.dtype == np.float32
        np.testing.assert_allclose(got, want, **TOLERANCE, err_msg=page_id)
        # the block's own columns are copied, not computed
        np.testing.assert_array_equal(got[:, :N_FEATURES_V2], rows[:, :N_FEATURES_V2])


def test_stage_features_are_the_specifications_on_dev_pages(page_rows_v5, first_stage):
    rng = np.random.default_rng(0)
    for page_id, rows in page_rows_v5:
        if not len(rows):
            continue
        real = context_spec.probabilities(first_stage, context_features(rows))
        # ties (equal probabilities) and extremes rank and accumulate in block order
        synthetic = rng.choice([0.0, 0.25, 0.5, 1.0], size=len(rows))
        for p in (real, synthetic):
            got, want = stage_features(p, rows), context_spec.stage_features(p, rows)
            assert got.shape == want.shape == (len(rows), N_STAGE)
            np.testing.assert_allclose(got, want, **TOLERANCE, err_msg=page_id)
            assert got[:, 14].tolist() == want[:, 14].tolist()  # ranks are exact


def test_a_page_without_blocks_has_no_rows():
    empty = np.zeros((0, N_FEATURES_V3), np.float32)
    assert context_features(empty).shape == (0, N_CONTEXT)
    assert context_features(empty).dtype == np.float32
    assert stage_features(np.zeros(0), empty).shape == (0, N_STAGE)


def test_rows_of_another_layout_are_refused_with_the_same_message():
    with pytest.raises(ValueError) as error:
        context_features(np.zeros((3, N_FEATURES_V2), np.float32))
    assert str(error.value) == ("context features read blocks-v3 rows (207 columns), "
                                "blocks-v4 rows (209), blocks-v5 rows (216) or blocks-v6 "
                                "rows (227), not 199")
    with pytest.raises(ValueError) as error:
        context_features(np.zeros((0, N_FEATURES_V2), np.float32))
    assert str(error.value) == ("context features read blocks-v3 rows (207 columns), "
                                "blocks-v4 rows (209), blocks-v5 rows (216) or blocks-v6 "
                                "rows (227), not 199")
    with pytest.raises(ValueError) as error:
        context_features(np.zeros(N_FEATURES_V3, np.float32))
    assert str(error.value) == ("context features read blocks-v3 rows (207 columns), blocks-v4 "
                                "rows (209), blocks-v5 rows (216) or blocks-v6 rows (227), "
                                "not (207,)")
    with pytest.raises(ValueError) as error:
        stage_features(np.zeros(2), np.zeros((3, N_FEATURES_V3), np.float32))
    assert str(error.value) == "stage features: 2 probabilities for 3 blocks"
    with pytest.raises(ValueError) as error:
        stage_features(np.zeros(2), np.zeros((2, N_FEATURES_V2), np.float32))
    assert str(error.value) == ("stage features read blocks-v3 rows (207 columns), "
                                "blocks-v4 rows (209), blocks-v5 rows (216) or blocks-v6 "
                                "rows (227), not 199")


@pytest.mark.parametrize("layout, width, step", [(FEATURES_V4, N_CONTEXT_V5, 3),
                                                  (FEATURES_V5, N_CONTEXT_V6, 6),
                                                  (FEATURES_V6, N_CONTEXT_V7, 6)])
def test_context_v5_v6_and_v7_read_the_blocks_v3_part_and_append_their_own_columns(
        dev_pages, layout, width, step):
    """blocks-v4 (blocks-v5, blocks-v6) rows: context-v4's columns of their blocks-v3 part,
    then their own dialog columns (and rail columns, and teaser columns), as the
    specification has them; the stage features read the blocks-v3 part."""
    seen = 0
    for page in dev_pages[::step]:
        simplified, map_html = simplify(page["html"], keep_hidden=True, drop_noscript=True)
        _, item_ids = extract_blocks(simplified)
        rows = block_features(map_html, item_ids, layout)
        got = context_features(rows)
        assert got.shape == (len(rows), width) and got.dtype == np.float32
        np.testing.assert_array_equal(got[:, :N_CONTEXT],
                                      context_features(rows[:, :N_FEATURES_V3]),
                                      err_msg=page["id"])
        np.testing.assert_array_equal(got[:, N_CONTEXT:], rows[:, N_FEATURES_V3:])
        np.testing.assert_allclose(got, context_spec.context_features(rows), **TOLERANCE,
                                   err_msg=page["id"])
        p = np.random.default_rng(1).random(len(rows))
        np.testing.assert_array_equal(stage_features(p, rows),
                                      stage_features(p, rows[:, :N_FEATURES_V3]))
        # a dialog or modal; a run of alike items
        seen += int((rows[:, N_FEATURES_V3:N_FEATURES_V4] < NO_DISTANCE).any()
                    if layout == FEATURES_V4 else (rows[:, N_FEATURES_V4] > 0).any())
    assert seen >= 5
    assert context_features(np.zeros((0, LAYOUTS[layout]), np.float32)).shape == (0, width)
    assert N_FEATURES_V6 == N_FEATURES_V5 + 11 and N_CONTEXT_V7 == N_CONTEXT_V6 + 11


def test_groups_follow_the_container_columns_not_their_numbers():
    """Two pages whose container identifiers differ only in their numbering give the same
    columns (identifiers are not values); -0.0 is 0.0 (as np.unique has it)."""
    rows = np.zeros((4, N_FEATURES_V3), np.float32)
    rows[:, FEATURE_NAMES_V2.index("words")] = [3, 5, 7, 11]
    rows[:, N_FEATURES_V2:] = -1
    rows[:, N_FEATURES_V2] = [0.0, -0.0, 12, 12]
    renamed = rows.copy()
    renamed[:, N_FEATURES_V2] = [900, 900, 5, 5]
    p = np.array([0.1, 0.7, 0.7, 0.3])
    for got_rows in (rows, renamed):
        np.testing.assert_allclose(context_features(got_rows), context_spec.context_features(rows),
                                   **TOLERANCE)
        np.testing.assert_allclose(stage_features(p, got_rows),
                                   context_spec.stage_features(p, rows), **TOLERANCE)


def test_the_cores_two_stages_are_the_specifications_on_dev_pages(page_rows_v5):
    folder = embedded_model_dir()
    core = BlockRescorer(folder / FAST_LAST, 0.0, FEATURES_V5, CONTEXT_V6,
                         folder / FAST_FIRST)
    assert core.core is None and core.width == N_CONTEXT_V6 + N_STAGE
    spec = context_spec.SpecContextRescorer(folder / FAST_LAST, folder / FAST_FIRST)
    equal = total = 0
    for page_id, rows in page_rows_v5:
        got, want = core.log_odds(rows), spec.log_odds(rows)
        assert got.dtype == np.float32 and got.shape == (len(rows),)
        np.testing.assert_allclose(got, want, **TOLERANCE, err_msg=page_id)
        equal, total = equal + int((got == want).sum()), total + len(rows)
    assert equal >= 0.99 * total  # the same ONNX Runtime over the same rows
    with pytest.raises(RescorerError) as error:
        core.log_odds(np.zeros((2, N_FEATURES_V2), np.float32))
    assert str(error.value) == (f"features have {N_FEATURES_V2} columns, the rescorer reads "
                                f"{N_FEATURES_V5}")
