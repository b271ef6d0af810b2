"""The quality benchmark: exact metric values on hand-made strings, and the rule-label ceiling
on real ground-truth pages."""

from __future__ import annotations

import json
import re

import pytest
from rt_helpers import default_model_copy

from bench import quality
from eval.metrics import rouge_n, score_pages, snippet_rate, word_prf

# ---------------------------------------------------------------- word P/R/F1


def test_word_prf_multiset_overlap_with_case_folding_and_punctuation():
    # pred: the×2 cat dog; ref: the×2 cat×2 -> overlap the 2 + cat 1 = 3 of 4 and 4
    assert word_prf("the cat the dog", "The cat, the CAT!") == (0.75, 0.75, 0.75)


def test_word_prf_repeated_words_count_once_per_occurrence():
    p, r, f1 = word_prf("a a a", "a")
    assert (p, r) == (pytest.approx(1 / 3), 1.0)
    assert f1 == pytest.approx(0.5)
    assert word_prf("a", "a a a b") == (1.0, 0.25, pytest.approx(0.4))


def test_word_prf_tokens_are_unicode_word_runs():
    assert quality.words("Café_1 déjà-vu, 42!") == ["café_1", "déjà", "vu", "42"]
    assert word_prf("DÉJÀ vu", "déjà-vu") == (1.0, 1.0, 1.0)
    assert word_prf("it’s", "it's") == (1.0, 1.0, 1.0)


def test_word_prf_empty_cases():
    assert word_prf("", "") == (1.0, 1.0, 1.0)
    assert word_prf(" ... !", "--") == (1.0, 1.0, 1.0)  # no tokens on either side
    assert word_prf("words", "") == (0.0, 0.0, 0.0)
    assert word_prf("", "words") == (0.0, 0.0, 0.0)
    assert word_prf("—", "words") == (0.0, 0.0, 0.0)
    assert word_prf("x y", "a b") == (0.0, 0.0, 0.0)


# ---------------------------------------------------------------- ROUGE-N


def test_rouge5_exact_and_partial():
    assert rouge_n("a b c d e f", "A b, c d e f.") == (1.0, 1.0, 1.0)
    # pred 5-grams abcde bcdef; ref abcde bcdex -> 1 of 2 each
    assert rouge_n("a b c d e f", "a b c d e x") == (0.5, 0.5, 0.5)
    # word order matters, unlike word F1
    assert rouge_n("e d c b a", "a b c d e") == (0.0, 0.0, 0.0)
    assert word_prf("e d c b a", "a b c d e") == (1.0, 1.0, 1.0)


def test_rouge5_multiset_of_ngrams():
    # pred 5-grams: abcde bcdea cdeab deabc eabcd abcde (6); ref abcde (1) -> overlap 1
    p, r, f1 = rouge_n("a b c d e a b c d e", "a b c d e")
    assert (p, r) == (pytest.approx(1 / 6), 1.0)
    assert f1 == pytest.approx(2 / 7)
    p, r, f1 = rouge_n("a b c d e", "a b c d e a b c d e")
    assert (p, r) == (1.0, pytest.approx(1 / 6))


def test_rouge5_short_texts():
    # a reference under 5 tokens lowers n to its length
    assert rouge_n("x y z", "X, y z") == (1.0, 1.0, 1.0)
    assert rouge_n("x y z w", "x y z") == (0.5, 1.0, pytest.approx(2 / 3))
    assert rouge_n("z y x", "x y z") == (0.0, 0.0, 0.0)
    # a prediction shorter than n has no n-grams: 0
    assert rouge_n("a b c d", "a b c d e f") == (0.0, 0.0, 0.0)
    assert rouge_n("", "") == (1.0, 1.0, 1.0)
    assert rouge_n("a b", "") == (0.0, 0.0, 0.0)
    assert rouge_n("", "a b c d e") == (0.0, 0.0, 0.0)


def test_rouge1_is_word_f1():
    assert rouge_n("the cat the dog", "The cat, the CAT!", n=1) == (0.75, 0.75, 0.75)
    with pytest.raises(ValueError):
        rouge_n("a", "a", n=0)


# ---------------------------------------------------------------- pages


def test_snippet_rate_matches_token_sequences():
    text = "It’s helped me write code.\nThen ChatAPI.unsubscribe(friendID);"
    assert snippet_rate(text, ["it's helped me", "chatAPI. unsubscribe ( friendID )"]) == 1.0
    assert snippet_rate(text, ["helped write", "elped me"]) == 0.0
    assert snippet_rate(text, []) is None


def test_score_pages_means_micro_and_missing_pages():
    refs = {"a": "one two three four", "b": "x y", "c": "word"}
    texts = {"a": "one two three four", "b": "x z z z"}  # c missing: scored empty
    scores = score_pages(texts, refs, per_page=True)
    assert scores["pages"] == 3
    assert scores["empty"] == 1
    assert scores["per_page"]["c"]["f1"] == 0.0 and scores["per_page"]["c"]["empty"]
    # b: overlap 1, P 1/4, R 1/2, F1 1/3
    assert scores["per_page"]["b"]["f1"] == pytest.approx(1 / 3)
    assert scores["f1"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert scores["precision"] == pytest.approx((1 + 1 / 4 + 0) / 3)
    micro = scores["micro"]
    assert (micro["overlap_words"], micro["pred_words"], micro["ref_words"]) == (5, 8, 7)
    assert micro["precision"] == pytest.approx(5 / 8)
    assert micro["recall"] == pytest.approx(5 / 7)


@pytest.fixture(scope="module")
def gt_pages() -> list[dict]:
    return quality.groundtruth_pages(5)


def test_rule_label_ceiling_on_ground_truth_pages(gt_pages):
    refs = {p["id"]: p["reference"] for p in gt_pages}
    ceiling, whole, n_blocks = quality.rule_texts(gt_pages)
    scores = score_pages(ceiling, refs)
    assert scores["pages"] == 5
    assert scores["f1"] > 0.85
    assert scores["empty"] == 0
    floor = score_pages(whole, refs)
    assert floor["recall"] > 0.95 and floor["precision"] < scores["precision"]
    assert all(n > 0 for n in n_blocks.values())


def test_cli_writes_rows_without_a_model(tmp_path, capsys):
    out = tmp_path / "q.json"
    rc = quality.main(["--limit", "2", "--skip", "ours", "trafilatura", "--out", str(out)])
    assert rc == 0
    report = json.loads(out.read_text())
    (one,) = report["sets"]
    assert one["page_set"] == "groundtruth"
    assert [row["system"] for row in one["rows"]] == ["ceiling", "whole-page"]
    assert one["scored_pages"] == 2
    assert "rule labels (ceiling)" in capsys.readouterr().out


def test_the_readability_rows_are_scored_by_kind_too(tmp_path, capsys):
    """Each row of the readability set holds its scores on the saved articles and on the test
    cases, each the mean over that kind's pages, and the run prints them in a table."""
    out = tmp_path / "q.json"
    assert quality.main(["--sets", "readability", "--limit", "16", "--skip", "ours",
                         "trafilatura", "--per-page", "--out", str(out)]) == 0
    (one,) = json.loads(out.read_text())["sets"]
    assert "by kind of page" in capsys.readouterr().out
    from eval.pages import calibration_pages, is_readability_fixture

    fixture = {p["id"]: is_readability_fixture(p) for p in calibration_pages()}
    for row in one["rows"]:
        per_page = row["scores"]["per_page"]
        kinds = row["kinds"]
        assert kinds["articles"]["pages"] + kinds["test cases"]["pages"] == 16
        assert kinds["articles"]["pages"] and kinds["test cases"]["pages"]
        for kind, scores in kinds.items():
            pages = [pid for pid in per_page if fixture[pid] == (kind == "test cases")]
            assert len(pages) == scores["pages"]
            assert scores["f1"] == pytest.approx(sum(per_page[p]["f1"] for p in pages)
                                                 / len(pages))


def test_trafilatura_row():
    pytest.importorskip("trafilatura")
    body = " ".join(f"Sentence number {i} of the article says something useful." for i in range(30))
    html = (f"<html><body><nav><a href='/'>Home</a></nav><article><h1>Title</h1><p>{body}</p>"
            "</article><footer>Copyright</footer></body></html>")
    out = quality.run_trafilatura([{"id": "p", "html": html}])
    assert out["errors"] == {}
    assert word_prf(out["texts"]["p"], body)[1] == 1.0


def test_seed_rows_are_means_with_their_standard_deviation():
    runs = [{"precision": p, "recall": 0.9, "f1": f, "rouge5_p": 0.5, "rouge5_r": 0.5,
             "rouge5_f1": 0.5, "empty": e, "pages": 3}
            for p, f, e in ((0.8, 0.84, 0), (0.9, 0.86, 1), (1.0, 0.88, 0))]
    scores = quality._spread_scores(runs)
    assert scores["f1"] == pytest.approx(0.86) and scores["f1_sd"] == pytest.approx(0.02)
    assert scores["precision"] == pytest.approx(0.9)
    assert scores["precision_sd"] == pytest.approx(0.1)
    assert (scores["f1_min"], scores["f1_max"]) == (0.84, 0.88)
    assert scores["seed_f1"] == [0.84, 0.86, 0.88] and scores["empty"] == 1
    assert quality._spread_scores(runs[:1]) == runs[0]  # one model: its own scores
    table = quality.set_table([{"name": "ours (fast)", "scores": scores,
                                "pages_per_cpu_s": 40.0}])
    assert "0.860 ± 0.020" in table and "0.840-0.880" in table


def test_margin_table_gives_each_seed_its_own_margin_over_trafilatura():
    fast = {"f1": 0.82, "precision": 0.78, "seed_f1": [0.81, 0.82, 0.83]}
    sets = [{"page_set": "dragnet", "scored_pages": 1380, "rows": [
                {"system": "ours", "name": "ours (fast)", "scores": fast},
                {"system": "trafilatura", "name": "trafilatura",
                 "scores": {"f1": 0.815, "precision": 0.79}},
                {"system": "ceiling", "name": "rule labels (ceiling)",
                 "scores": {"f1": 0.99, "precision": 0.99}}]},
            {"page_set": "readability", "scored_pages": 126, "rows": [  # no trafilatura row
                {"system": "ours", "name": "ours (fast)", "scores": fast}]}]
    table = quality.margin_table(sets)
    row = next(line for line in table.splitlines() if line.startswith("dragnet"))
    assert row.split() == ["dragnet", "1380", "ours", "(fast)", "3", "+0.005", "-0.005", "to",
                           "+0.015", "-0.010"]
    assert "readability" not in table and "ceiling" not in table


def test_the_readability_pages_are_saved_articles_and_hand_written_test_cases():
    from eval.pages import calibration_pages, is_readability_fixture

    pages = {p["id"].removeprefix("readability/"): p for p in calibration_pages()}
    fixtures = {name for name, p in pages.items() if is_readability_fixture(p)}
    assert (len(pages) - len(fixtures), len(fixtures)) == (93, 33)
    # a lorem-ipsum case under 5,000 characters, one beside a data-URL image (65,841), and
    # two without lorem ipsum (a two-line reference, a paragraph on quarks)
    assert {"basic-tags-cleaning", "data-url-image", "lazy-image-3",
            "reordering-paragraphs"} <= fixtures
    # the smallest saved page, and saved pages of the same sites as fixtures
    assert not {"daringfireball-1", "lazy-image-1", "lazy-image-2", "nytimes-1",
                "wikipedia"} & fixtures
    kinds = quality.page_kinds("readability", list(pages.values()))
    assert list(kinds) == ["articles", "test cases"]
    assert set(kinds["test cases"]) == {f"readability/{name}" for name in fixtures}
    assert quality.page_kinds("groundtruth", list(pages.values())) == {}


def test_the_held_apart_news_is_scored_by_its_references_convention():
    from eval.modern_news import EVALUATION_SOURCE, FUNDUS_SOURCE

    pages = [{"id": "fundus-evaluation/APNews_0", "source": EVALUATION_SOURCE,
              "reference": "no title"},
             {"id": "fundus/us/APNews_2023_04_28", "source": FUNDUS_SOURCE,
              "reference": "Title first"},
             {"id": "fundus/de/MDR_2026_07_08", "source": FUNDUS_SOURCE, "reference": "Titel"}]
    kinds = quality.page_kinds("modern-news-heldout", pages)
    assert kinds == {"Fundus test pages, title first": {
        "fundus/us/APNews_2023_04_28": "Title first", "fundus/de/MDR_2026_07_08": "Titel"},
        "Fundus evaluation, no title": {"fundus-evaluation/APNews_0": "no title"}}
    assert list(quality.page_kinds("modern-news-heldout", pages[:1])) == [
        "Fundus evaluation, no title"]
    assert quality.page_kinds("l3s-gn1", pages) == {}
    stray = {"id": "postlight/x", "source": "postlight/parser", "reference": ""}
    with pytest.raises(ValueError, match=re.escape(
            "postlight/x: source 'postlight/parser' is none of the held-apart split's "
            "(flairNLP/fundus, dobbersc/fundus-evaluation)")):
        quality.page_kinds("modern-news-heldout", [stray])


def test_kinds_table_scores_each_kind_against_trafilatura_s_on_the_same_pages():
    def scores(f1: float, seeds: list[float] | None = None) -> dict:
        return {"pages": 2, "precision": f1, "recall": 0.95, "f1": f1,
                **({"seed_f1": seeds, "f1_sd": 0.01} if seeds else {})}

    sets = [{"page_set": "readability", "scored_pages": 4, "rows": [
                {"system": "ours", "name": "ours (fast)", "kinds": {
                    "articles": scores(0.90, [0.89, 0.90, 0.91]),
                    "test cases": scores(0.95, [0.94, 0.95, 0.96])}},
                {"system": "trafilatura", "name": "trafilatura", "kinds": {
                    "articles": scores(0.93), "test cases": scores(0.88)}}]},
            {"page_set": "dragnet", "scored_pages": 9, "rows": [  # not scored by kind
                {"system": "ours", "name": "ours (fast)", "scores": scores(0.8)}]}]
    lines = quality.kinds_table(sets).splitlines()
    ours_articles = next(line for line in lines if "articles" in line and "ours" in line)
    assert ours_articles.split() == ["readability", "articles", "2", "ours", "(fast)", "3",
                                     "0.900", "0.950", "0.900", "±", "0.010", "-0.030",
                                     "-0.040", "to", "-0.020"]
    ours_cases = next(line for line in lines if "test cases" in line and "ours" in line)
    assert "+0.070" in ours_cases and "+0.060 to +0.080" in ours_cases
    assert not any("dragnet" in line for line in lines)


def test_every_set_is_scored_by_reference_length_too():
    def page(pid: str, n: int) -> dict:
        return {"id": pid, "reference": " ".join(["word"] * n)}

    pages = [page("a", 3), page("b", 149), page("c", 150), page("d", 799), page("e", 800)]
    assert quality.page_lengths(pages) == {
        "< 150 words": {"a": pages[0]["reference"], "b": pages[1]["reference"]},
        "150-400 words": {"c": pages[2]["reference"]},
        "> 800 words": {"e": pages[4]["reference"]},
        "400-800 words": {"d": pages[3]["reference"]}}
    assert list(quality.page_lengths(pages)) == ["< 150 words", "150-400 words",
                                                 "400-800 words", "> 800 words"]
    assert quality.length_bin(" ".join(["w"] * 400)) == "400-800 words"
    sets = [{"page_set": "modern-news-heldout", "scored_pages": 3, "rows": [
                {"system": "ours", "name": "ours (fast)", "lengths": {
                    "< 150 words": {"pages": 1, "precision": 0.5, "recall": 1.0, "f1": 0.6,
                                    "seed_f1": [0.5, 0.6, 0.7], "f1_sd": 0.1}}},
                {"system": "trafilatura", "name": "trafilatura", "lengths": {
                    "< 150 words": {"pages": 1, "precision": 0.9, "recall": 0.9,
                                    "f1": 0.9}}}]}]
    line = next(line for line in quality.kinds_table(sets, "lengths", "reference").splitlines()
                if "ours" in line)
    assert "< 150 words" in line and "-0.300" in line and "-0.400 to -0.200" in line


def test_page_sets_all_names_the_unbuilt_article_sets(monkeypatch, tmp_path, capsys):
    from eval import article_sets

    monkeypatch.setattr(article_sets, "ARTICLE_SETS_DIR", tmp_path)
    (tmp_path / "dragnet.jsonl.gz").write_bytes(b"")
    for learnt_from in ("postlight-train", "fundus-history-train"):  # never in 'all'
        (tmp_path / f"{learnt_from}.jsonl.gz").write_bytes(b"")
    monkeypatch.setattr(article_sets, "article_set_path",
                        lambda name, folder=tmp_path: tmp_path / f"{name}.jsonl.gz")
    args = quality.argparse.Namespace(sets=["all"], articles=False)
    assert quality.page_sets(args) == ["groundtruth", "readability", "dragnet"]
    assert "l3s-gn1 not built" in capsys.readouterr().out
    args = quality.argparse.Namespace(sets=None, articles=True)
    assert quality.page_sets(args) == ["readability"]
    args = quality.argparse.Namespace(sets=["postlight-train", "fundus-history-train"],
                                      articles=False)
    assert quality.page_sets(args) == ["postlight-train", "fundus-history-train"]
    with pytest.raises(SystemExit, match="unknown page set 'news'"):
        quality.page_sets(quality.argparse.Namespace(sets=["news"], articles=False))


# ---------------------------------------------------------------- readability pages in folds


@pytest.fixture(scope="module")
def fast_decisions() -> tuple[list[dict], dict[str, str], dict[str, str]]:
    """Four readability pages, the shipped fast profile's decisions on them (one character
    per block of the fast profile's segmentation, as train.fast writes them) and its texts."""
    from eval.pages import calibration_pages, spread
    from pulpie_rt import Extractor
    from pulpie_rt.runtime.stages.blocks import extract_blocks
    from pulpie_rt.runtime.stages.simplify import simplify

    pages = spread(calibration_pages(), 4)
    extractor = Extractor(profile="fast")
    results = extractor.extract_batch([p["html"] for p in pages])
    decisions, texts = {}, {}
    for page, result in zip(pages, results, strict=True):
        simplified, _ = simplify(page["html"], keep_hidden=True, drop_noscript=True)
        _, item_ids = extract_blocks(simplified)
        decisions[page["id"]] = "".join("1" if result.labels.get(i) == "main" else "0"
                                        for i in item_ids)
        texts[page["id"]] = result.text
    return pages, decisions, texts


def test_fold_texts_rebuild_the_fast_profile_s_text_from_its_decisions(fast_decisions):
    from eval.systems import fold_texts

    pages, decisions, texts = fast_decisions
    assert fold_texts(pages, decisions, True, True) == texts
    assert all(texts.values())
    # other decisions, other texts: the decisions are read, not the page
    flipped = {pid: d.replace("0", "x").replace("1", "0").replace("x", "1")
               for pid, d in decisions.items()}
    assert all(fold_texts(pages, flipped, True, True)[pid] != texts[pid] for pid in texts)


def test_fold_texts_name_the_page_whose_decisions_do_not_fit(fast_decisions):
    from eval.systems import fold_texts

    pages, decisions, _ = fast_decisions
    page = pages[0]
    n = len(decisions[page["id"]])
    with pytest.raises(ValueError) as caught:
        fold_texts([page], {page["id"]: "1"}, True, True)
    assert str(caught.value) == (f"{page['id']}: 1 out-of-fold decisions for {n} blocks "
                                 f"(segmented otherwise than in training)")
    with pytest.raises(ValueError, match=f"^{page['id']}: no out-of-fold decisions in the "
                                         f"model's results.json$"):
        fold_texts([page], {}, True, True)
    assert fold_texts([page], {page["id"]: ""}, True, True) == {page["id"]: ""}


def _bundle_with_folds(folder, decisions: dict[str, str] | None):
    """The embedded default model in ``folder / "bundle"`` (``default_model_copy``), its
    ``results.json`` a file of its own saying the fast profile's readability ``decisions``
    (None: none)."""
    bundle = default_model_copy(folder)
    results_path = bundle / "results.json"
    results = json.loads(results_path.read_text())
    results["fast"].pop("readability_folds", None)
    if decisions is not None:
        results["fast"]["readability_folds"] = {"pages": len(decisions), "folds": 3,
                                                "labels": decisions}
    results_path.unlink()  # a link to the shipped file: never written through
    results_path.write_text(json.dumps(results))
    return bundle


def test_a_model_trained_on_the_readability_pages_is_scored_by_its_folds(
        fast_decisions, tmp_path, capsys):
    """bench.quality scores a bundle trained on the readability pages in folds by the texts
    of its out-of-fold decisions (here the shipped model's own, so they must score as its
    live texts do), names the row k-fold, and refuses a row mixing such a bundle with one that
    was not."""
    pages, decisions, texts = fast_decisions
    folded = _bundle_with_folds(tmp_path / "folded", decisions)
    out = tmp_path / "q.json"
    rc = quality.main(["--sets", "readability", "--limit", "4", "--model", str(folded),
                       "--profiles", "fast", "--skip", "trafilatura", "ceiling", "whole-page",
                       "--out", str(out)])
    assert rc == 0
    (row,) = json.loads(out.read_text())["sets"][0]["rows"]
    assert row["name"] == "ours (fast), 3-fold"
    refs = {p["id"]: p["reference"] for p in pages}
    assert row["scores"]["f1"] == pytest.approx(score_pages(texts, refs)["f1"])
    assert "trained on these pages in 3 folds" in capsys.readouterr().out
    plain = _bundle_with_folds(tmp_path / "plain", None)
    rc = quality.main(["--sets", "readability", "--limit", "4", "--model", str(folded),
                       "--seed-models", str(plain), "--profiles", "fast", "--skip",
                       "trafilatura", "ceiling", "whole-page", "--out", str(out)])
    assert rc == 1
    assert ("some of the models were trained on the readability pages in folds and some were "
            f"not: {folded} (folds), {plain} (not trained on them)") in capsys.readouterr().out
