"""``bench.losses``: a system's lost word F1 by reference length and comment markup, from a
``bench.quality --per-page`` result."""

from __future__ import annotations

import json

import pytest

import bench.losses as losses


def page_scores(f1: float, ref_words: int) -> dict:
    return {"precision": f1, "recall": f1, "f1": f1, "pred_words": ref_words,
            "ref_words": ref_words}


PAGES = {
    "a": '<div class="post-comments"><p>x</p></div>',  # comment container (class)
    "b": '<ol id="comment-12"><li>y</li></ol>',  # comment container (id)
    "c": "<p>Leave a comment below.</p>",  # the word in the text only
    "d": '<div data-comment="1" class="story">z</div>',  # another attribute
}


@pytest.fixture
def result_file(tmp_path, monkeypatch):
    monkeypatch.setattr(losses, "set_pages",
                        lambda name, args: [{"id": k, "html": v} for k, v in PAGES.items()])
    ours = {"a": page_scores(0.5, 100), "b": page_scores(1.0, 200), "c": page_scores(0.8, 700),
            "d": page_scores(0.9, 149)}
    theirs = {"a": page_scores(0.7, 100), "b": page_scores(0.6, 200),
              "c": page_scores(1.0, 700), "d": page_scores(0.5, 149)}
    result = {"sets": [
        {"page_set": "dragnet", "rows": [
            {"name": "ours (fast)", "scores": {"f1": 0.8, "per_page": ours}},
            {"name": "trafilatura", "scores": {"f1": 0.7, "per_page": theirs}},
            {"name": "whole page", "scores": {"f1": 0.5}}]},
        {"page_set": "readability", "rows": [{"name": "ours (fast)", "scores": {"f1": 0.9}}]}]}
    path = tmp_path / "quality.json"
    path.write_text(json.dumps(result))
    return path


def test_losses_by_reference_length_and_comment_markup(result_file, tmp_path, capsys):
    out = tmp_path / "losses.json"
    assert losses.main([str(result_file), "--out", str(out)]) == 0
    found = json.loads(out.read_text())["sets"]
    assert list(found) == ["dragnet"]
    # lost F1: a 0.5, b 0.0, c 0.2, d 0.1 = 0.8
    by_length = {r["group"]: r for r in found["dragnet"]["by_reference_length"]}
    assert by_length["0-149 words"] == {
        "group": "0-149 words", "pages": 2, "pages_share": 0.5, "f1": 0.7, "against_f1": 0.6,
        "lost_share": 0.75}
    assert by_length["150-299 words"]["pages"] == 1 and by_length["150-299 words"][
        "lost_share"] == 0.0
    assert by_length["300-599 words"] == {
        "group": "300-599 words", "pages": 0, "pages_share": 0.0, "f1": None,
        "against_f1": None, "lost_share": 0.0}
    assert by_length["600+ words"]["lost_share"] == 0.25
    by_markup = {r["group"]: r for r in found["dragnet"]["by_comment_markup"]}
    assert (by_markup["comment markup"]["pages"], by_markup["comment markup"]["f1"],
            by_markup["comment markup"]["lost_share"]) == (2, 0.75, 0.625)
    assert by_markup["no comment markup"]["pages"] == 2
    printed = capsys.readouterr().out
    assert ("losses: readability: no per-page scores for 'ours (fast)' and 'trafilatura' "
            "(bench.quality --per-page): skipped") in printed
    assert "== dragnet: 4 pages, ours (fast) against trafilatura" in printed


def test_a_scored_page_missing_from_the_set_is_named(result_file, monkeypatch):
    monkeypatch.setattr(losses, "set_pages", lambda name, args: [{"id": "a", "html": ""}])
    with pytest.raises(SystemExit, match=r"^losses: dragnet: 3 scored pages are not in the set "
                                         r"as built here \(first: b\)$"):
        losses.main([str(result_file)])
