"""The fast profile trained on the dev corpus's readability pages in folds
(``Recipe.fast_fold_readability``): they join the training pages, the threshold is still
chosen on the training corpus alone, and their figure is each page's out-of-fold decisions,
which ``bench.quality`` rebuilds into the same texts and scores."""

from __future__ import annotations

from dataclasses import replace

import pytest
from rt_helpers import write_corpus

from pulpie_rt.corpus import corpus_available, iter_pages
from pulpie_rt.eval.metrics import score_pages
from pulpie_rt.eval.pages import CALIBRATION_SOURCE, calibration_pages

pytestmark = pytest.mark.skipif(not corpus_available("train"),
                                reason="the training pages are not here (corpus/README.md)")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A corpus ``mini`` of four small train pages with ground truth and a ``dev`` of four
    small readability pages (with one ground-truth page, which must not be folded in)."""
    train = [p for p in iter_pages("train") if p.get("reference") and len(p["html"]) < 30_000][:4]
    readability = sorted(calibration_pages(), key=lambda p: len(p["html"]))[:4]
    other = next(p for p in iter_pages("dev") if p["source"] != CALIBRATION_SOURCE
                 and p.get("reference_kind") == "groundtruth")
    path = tmp_path_factory.mktemp("corpus")
    write_corpus(path, "mini", train)
    write_corpus(path, "dev", readability + [other])
    return path


def test_readability_pages_are_trained_on_in_folds_and_scored_out_of_fold(folder, tmp_path,
                                                                          monkeypatch):
    from pulpie_rt.eval.systems import fold_texts
    from pulpie_rt.train.fast import write_fast_rescorer
    from pulpie_rt.train.fit import Recipe

    monkeypatch.setenv("PULPIE_RT_CORPUS", str(folder))
    monkeypatch.chdir(tmp_path)  # the training caches go to build/train-data here
    recipe = replace(Recipe(), corpus="mini", fast_folds=2, rescorer_rounds=5,
                     rescorer_min_leaf=5, threads=1, fast_bag=1, fast_fold_readability=True,
                     fast_comment_threads=0.0)
    bundle = tmp_path / "work" / "bundle"
    bundle.mkdir(parents=True)
    logged: list[str] = []
    fast = write_fast_rescorer(bundle, recipe, log=logged.append)
    pages = calibration_pages()
    assert len(pages) == 4
    assert any(line.startswith("fast rescorer: 8 pages, ") for line in logged)
    # the threshold is chosen on the four train pages alone
    calibration = [line for line in logged if "(out of fold)" in line]
    assert calibration and all(line.endswith(" on 4 mini pages (out of fold)")
                               for line in calibration)
    folds = fast["readability_folds"]
    assert (folds["pages"], folds["folds"]) == (4, 2)
    assert set(folds["labels"]) == {p["id"] for p in pages}
    assert any(set(labels) == {"0", "1"} for labels in folds["labels"].values())
    # bench.quality rebuilds the same texts from the decisions, so scores them the same
    texts = fold_texts(pages, folds["labels"], keep_hidden=True, drop_noscript=True)
    scores = score_pages(texts, {p["id"]: p["reference"] for p in pages})
    for key in ("precision", "recall", "f1"):
        assert folds[key] == round(scores[key], 4)
    line = next(line for line in logged if f"{CALIBRATION_SOURCE} pages in 2 folds" in line)
    assert line.endswith(f"F1 {scores['f1']:.4f}")
