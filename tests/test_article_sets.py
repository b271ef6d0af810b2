"""The public article sets held apart from training: their references read exactly as their
sources define them."""

from __future__ import annotations

import gzip
import json

import pytest

from eval import article_sets

L3S_PAGE = """<html><head><title>x</title></head><body>
<div><span class="x-nc-sel0">Home</span> <a href="/"><span class="x-nc-sel0">Sports</span></a></div>
<h1><span class="x-nc-sel1">Striker   moves</span></h1>
<p><span class="x-nc-sel2">The striker signed on </span><a href="/t"><span class="x-nc-sel2">Monday\
</span></a><span class="x-nc-sel2">, the club said.</span></p>
<p class="x-nc-invisible"><span class="x-nc-sel2">hidden text</span></p>
<p><span class="x-nc-sel3">Photo: the striker.</span></p>
<ul><li><span class="x-nc-sel4">Related: another story</span></li></ul>
<div><span class="x-nc-sel5">Great signing! -- a reader</span></div>
<script>var s = "<span class='x-nc-sel2'>no</span>";</script>
</body></html>"""


def test_l3s_reference_is_headline_full_text_and_supplemental_in_page_order():
    assert article_sets.l3s_reference(L3S_PAGE) == (
        "Striker moves\nThe striker signed on Monday, the club said.\nPhoto: the striker.")


def test_sets_are_built_from_their_sources_and_read_back(tmp_path):
    l3s = tmp_path / "page-signal" / article_sets.L3S_DIR
    (l3s / "annotated").mkdir(parents=True)
    (l3s / "original").mkdir()
    page_id = "0000-aaaa"
    (l3s / "annotated" / f"{page_id}.html").write_text(L3S_PAGE, encoding="utf-8")
    original = L3S_PAGE.replace('class="x-nc-sel2"', "").encode("latin-1", errors="replace")
    (l3s / "original" / f"{page_id}.html").write_bytes(original)
    (l3s / "url-mapping.txt").write_text(f"<urn:uuid:{page_id}>\thttp://example.com/a\n",
                                         encoding="utf-8")
    dragnet = tmp_path / "merged" / "dragnet_data"
    (dragnet / "input").mkdir(parents=True)
    (dragnet / "GoldStandard").mkdir()
    body = "<p>" + "Story text. " * 60 + "</p>"
    (dragnet / "input" / "7.html").write_text(f"<html><body>{body}</body></html>")
    (dragnet / "GoldStandard" / "7.txt").write_text(
        f"Story text.\n{article_sets.DRAGNET_COMMENTS}\nFirst comment")
    (dragnet / "input" / "8.html").write_text(f"<html><body>{body}</body></html>")
    (dragnet / "GoldStandard" / "8.txt").write_text(f"{article_sets.DRAGNET_COMMENTS} only")
    out = tmp_path / "sets"
    assert article_sets.main(["--page-signal", str(tmp_path / "page-signal"),
                              "--merged", str(tmp_path / "merged"), "--out", str(out)]) == 0
    (page,) = article_sets.load_article_set("l3s-gn1", out)
    assert page["id"] == f"l3s-gn1/{page_id}" and page["url"] == "http://example.com/a"
    assert page["reference"].startswith("Striker moves\n")
    assert page["reference_kind"] == "groundtruth" and "<h1>" in page["html"]
    (page,) = article_sets.load_article_set("dragnet", out)  # 8: no article text, left out
    assert page["id"] == "dragnet/7" and page["reference"] == "Story text."
    with gzip.open(out / "dragnet.jsonl.gz", "rt") as fh:
        assert [json.loads(line)["id"] for line in fh] == ["dragnet/7"]


def test_an_unbuilt_set_names_the_command_that_builds_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m eval.article_sets"):
        article_sets.load_article_set("dragnet", tmp_path)
