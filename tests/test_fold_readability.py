"""The fast profile trained on the dev corpus's readability pages in folds
(``Recipe.fast_fold_readability``): they join the training pages, the threshold is still
chosen on the training corpus alone, and their figure is each page's out-of-fold decisions,
which ``bench.quality`` rebuilds into the same texts and scores."""

from __future__ import annotations

import pytest
from rt_helpers import train_small_fast_profile, write_corpus

from eval.metrics import score_pages
from eval.pages import CALIBRATION_SOURCE, calibration_pages, readability_kind
from pulpie_rt.corpus import corpus_available, iter_pages

pytestmark = pytest.mark.skipif(not corpus_available("train"),
                                reason="the training pages are not here (corpus/README.md)")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A corpus ``mini`` of four small train pages with ground truth and a ``dev`` of four
    small readability pages, three test cases and a saved article (with one ground-truth
    page, which must not be folded in)."""
    train = [p for p in iter_pages("train") if p.get("reference") and len(p["html"]) < 30_000][:4]
    by_size = sorted(calibration_pages(), key=lambda p: len(p["html"]))
    readability = (by_size[:3]
                   + [next(p for p in by_size if readability_kind(p) == "articles")])
    other = next(p for p in iter_pages("dev") if p["source"] != CALIBRATION_SOURCE
                 and p.get("reference_kind") == "groundtruth")
    path = tmp_path_factory.mktemp("corpus")
    write_corpus(path, "mini", train)
    write_corpus(path, "dev", readability + [other])
    return path


def test_readability_pages_are_trained_on_in_folds_and_scored_out_of_fold(folder, tmp_path,
                                                                          monkeypatch):
    from eval.systems import fold_texts

    fast, logged = train_small_fast_profile(tmp_path, monkeypatch, folder,
                                            fast_fold_readability=True, fast_comment_threads=0.0)
    pages = calibration_pages()
    assert len(pages) == 4
    assert any(line.startswith("fast rescorer: 8 pages, ") for line in logged)
    from train.fast import page_groups
    assert (f"fast rescorer: 4 {CALIBRATION_SOURCE} pages in {len(set(page_groups(pages)))} "
            "groups of one site or one text, each group in one fold") in logged
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
    # and by kind: the saved article and the three test cases, each scored apart
    assert list(folds["kinds"]) == ["articles", "test cases"]
    kinds_line = []
    for kind, n in (("articles", 1), ("test cases", 3)):
        ids = {p["id"] for p in pages if readability_kind(p) == kind}
        kind_scores = score_pages(texts, {p["id"]: p["reference"] for p in pages
                                          if p["id"] in ids})
        assert folds["kinds"][kind] == {"pages": n, **{k: round(kind_scores[k], 4)
                                                       for k in ("precision", "recall", "f1")}}
        kinds_line.append(f"{kind} ({n}): word P {kind_scores['precision']:.4f} R "
                          f"{kind_scores['recall']:.4f} F1 {kind_scores['f1']:.4f}")
    assert f"fast rescorer: by kind, {'; '.join(kinds_line)}" in logged


def test_readability_fixtures_that_copy_one_text_or_one_site_share_a_group():
    """The readability suite repeats texts across fixtures (lorem-ipsum cases, lazy-image-1 to
    3) and holds several pages of one site: spread over folds, they would score each other."""
    from train.fast import page_groups

    pages = calibration_pages()
    groups = dict(zip((p["id"].rsplit("/", 1)[-1] for p in pages), page_groups(pages),
                      strict=True))
    assert len(pages) == 126 and len(set(groups.values())) == 78
    for family in (["lazy-image-1", "lazy-image-2", "lazy-image-3"],
                   ["basic-tags-cleaning", "comment-inside-script-parsing", "remove-extra-brs",
                    "remove-extra-paragraphs"],
                   ["wikipedia", "wikipedia-2", "wikipedia-3", "wikipedia-4"],
                   ["nytimes-1", "nytimes-2", "nytimes-3", "nytimes-4", "nytimes-5"]):
        assert len({groups[name] for name in family}) == 1, family
    assert groups["lazy-image-2"] != groups["wikipedia-2"] != groups["nytimes-3"]
    assert groups["aclu"] not in {groups[n] for n in groups if n != "aclu"}


def test_groups_are_split_over_folds_whole_and_balanced():
    from train.fast import group_folds, page_groups

    pages = [{"id": "readability/a-1", "reference": "one two"},
             {"id": "readability/b", "reference": "three four five"},
             {"id": "readability/a-2", "reference": "six"},
             {"id": "readability/c", "reference": "three four five six"},
             {"id": "readability/d", "reference": ""}]
    # a-1 and a-2: one site; b and c: 3 of 4 words shared; d: no word, its own group
    assert page_groups(pages) == [0, 1, 0, 1, 2]
    # the largest group first, each into the fold holding the fewest pages (ties: lowest)
    assert group_folds([0, 0, 1, 2, 2, 2], 2) == [1, 1, 1, 0, 0, 0]
    assert group_folds([0, 1, 2, 3], 3) == [0, 1, 2, 0]
    folds = group_folds(page_groups(calibration_pages()), 3)
    assert sorted(folds.count(f) for f in range(3)) == [42, 42, 42]
