"""Today's news pages (eval.modern_news): each page gets the extraction that is its own, the
judges' sites are left out and recorded, and no site is in both splits; the train corpus
joined with a built set (train.data.joined_corpus)."""

from __future__ import annotations

import gzip
import json

import pytest

from eval import article_sets, modern_news


def test_a_site_is_its_registrable_domain():
    assert modern_news.site_of("https://www.apnews.com/article/x") == "apnews.com"
    assert modern_news.site_of("https://edition.cnn.com/a?b=c") == "cnn.com"
    assert modern_news.site_of("https://www.theguardian.co.uk/x") == "theguardian.co.uk"
    assert modern_news.site_of("news.bbc.co.uk") == "bbc.co.uk"
    assert modern_news.site_of("https://www.smh.com.au/x") == "smh.com.au"
    assert modern_news.site_of("https://orf.at/stories/1/") == "orf.at"
    assert modern_news.site_of("https://www.sn.at/x") == "sn.at"
    assert modern_news.site_of(None) is None and modern_news.site_of("") is None


def _story(title: str, n: int) -> list[str]:
    return [f"{title} paragraph {i} tells what happened in {title.lower()} today, and why it "
            "matters to the readers of this town." for i in range(n)]


def _page(title: str, paragraphs: list[str], rail: str = "") -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return gzip.compress(f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
                         f"<article>{body}</article>{rail}</body></html>".encode())


def _fundus_case(folder, publisher: str, pages: list[tuple[str, str, str]], urls: dict) -> None:
    """A Fundus publisher's test case: ``pages`` (date, title, version) written as its pages,
    each version's extraction that page's story."""
    folder.mkdir(parents=True, exist_ok=True)
    versions = {}
    for date, title, version in pages:
        paragraphs = _story(title, 6)
        (folder / f"{publisher}_{date}.html.gz").write_bytes(_page(title, paragraphs))
        versions[version] = {"title": title, "body": {"summary": [], "sections": [
            {"headline": [], "paragraphs": paragraphs[:3]},
            {"headline": [f"{title} later"], "paragraphs": paragraphs[3:]}]}}
        urls[f"{publisher}_{date}.html.gz"] = {"url": f"https://www.{publisher.lower()}.com/{date}",
                                               "crawl_date": date}
    (folder / f"{publisher}.json").write_text(json.dumps(versions), encoding="utf-8")


@pytest.fixture()
def sources(tmp_path):
    data = tmp_path / "fundus" / modern_news.FUNDUS_TEST_DATA
    us, de = {}, {}
    # the V1 extraction is the later page's (as WAZ's): matched by words, not by name order
    _fundus_case(data / "us", "Gazette", [("2024_01_02", "Floods", "V2"),
                                          ("2025_03_04", "Elections", "V1")], us)
    _fundus_case(data / "us", "Judged", [("2024_05_06", "Markets", "V1")], us)
    _fundus_case(data / "us", "Herald", [("2024_07_08", "Harvest", "V1")], us)
    _fundus_case(data / "de", "Bote", [("2025_09_10", "Wahlen", "V1")], de)
    (data / "us" / "meta.info").write_text(json.dumps(us), encoding="utf-8")
    (data / "de" / "meta.info").write_text(json.dumps(de), encoding="utf-8")
    evaluation = tmp_path / "evaluation" / "dataset"
    (evaluation / "html").mkdir(parents=True)
    (evaluation / "html" / "Herald_0.html.gz").write_bytes(_page("Rain", _story("Rain", 4)))
    (evaluation / "ground_truth.json").write_text(json.dumps({"Herald_0.html.gz": {
        "body": _story("Rain", 4), "url": "https://herald.com/rain",
        "crawl_date": "2024-02-28"}}), encoding="utf-8")
    wcxb = tmp_path / "wcxb"
    wcxb.mkdir()
    (wcxb / "metadata.json").write_text(json.dumps({"files": {
        "0001": {"split": "dev", "domain": "gazette.com"},
        "0002": {"split": "test", "domain": "www.judged.com"}}}), encoding="utf-8")
    zyte = tmp_path / "zyte"
    zyte.mkdir()
    (zyte / "ground-truth.json").write_text(json.dumps({"abc": {
        "url": "https://news.example.org/x", "articleBody": "not read"}}), encoding="utf-8")
    return tmp_path


def test_the_sets_are_built_apart_from_the_judges_sites(sources, monkeypatch):
    # every site held apart but the evaluation set's: Gazette and Bote train
    monkeypatch.setattr(modern_news, "held_apart_bucket", lambda site: False)
    out = sources / "sets"
    assert modern_news.main(["--fundus", str(sources / "fundus"), "--fundus-evaluation",
                             str(sources / "evaluation"), "--wcxb", str(sources / "wcxb"),
                             "--zyte", str(sources / "zyte"), "--out", str(out)]) == 0
    train = {p["id"]: p for p in article_sets.load_article_set("modern-news-train", out)}
    held = {p["id"]: p for p in article_sets.load_article_set("modern-news-heldout", out)}
    assert sorted(train) == ["fundus/de/Bote_2025_09_10", "fundus/us/Gazette_2024_01_02",
                             "fundus/us/Gazette_2025_03_04"]
    # the evaluation page and the Fundus page of its site (herald.com) are held apart
    assert sorted(held) == ["fundus-evaluation/Herald_0", "fundus/us/Herald_2024_07_08"]
    floods = train["fundus/us/Gazette_2024_01_02"]
    assert floods["reference"].split("\n")[:2] == ["Floods", _story("Floods", 1)[0]]
    assert "Floods later" in floods["reference"].split("\n")
    assert "Floods" in floods["html"] and floods["site"] == "gazette.com"
    assert train["fundus/us/Gazette_2025_03_04"]["reference"].startswith("Elections\n")
    assert held["fundus-evaluation/Herald_0"]["reference"] == "\n".join(_story("Rain", 4))
    assert {p["site"] for p in train.values()}.isdisjoint(p["site"] for p in held.values())
    record = json.loads((out / modern_news.DROPPED_NAME).read_text(encoding="utf-8"))
    assert record["dropped_sites"] == {"judged.com": {"judges": ["wcxb-test"],
                                                      "pages": ["fundus/us/Judged_2024_05_06"]}}
    assert record["splits"] == {"modern-news-train": {"pages": 3, "sites": 2},
                                "modern-news-heldout": {"pages": 2, "sites": 1}}


def test_without_the_judges_folders_nothing_is_built(sources):
    with pytest.raises(SystemExit):
        modern_news.main(["--fundus", str(sources / "fundus"), "--fundus-evaluation",
                          str(sources / "evaluation"), "--out", str(sources / "sets")])
    assert not (sources / "sets").exists()


def test_an_unbuilt_modern_set_names_its_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m eval.modern_news"):
        article_sets.load_article_set("modern-news-train", tmp_path)


def test_the_train_corpus_joined_with_a_built_set(sources, monkeypatch, tmp_path):
    from pulpie_rt.corpus import iter_pages
    from train.data import joined_corpus

    monkeypatch.setattr(modern_news, "held_apart_bucket", lambda site: False)
    out = sources / "sets"
    modern_news.build(sources / "fundus", sources / "evaluation", sources / "wcxb",
                      sources / "zyte", out, log=lambda _: None)
    monkeypatch.setattr(article_sets, "ARTICLE_SETS_DIR", out)
    monkeypatch.setattr(article_sets.load_article_set_path, "__defaults__", (out,))
    base = tmp_path / "base.jsonl.gz"
    with gzip.open(base, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "wcxb/dev/0001", "html": "<p>x</p>", "reference": "x"}) + "\n")
    lines: list[str] = []
    path = joined_corpus(str(base), ["modern-news-train"], tmp_path / "cache", log=lines.append)
    assert [p["id"] for p in iter_pages(path)] == [
        "wcxb/dev/0001", "fundus/de/Bote_2025_09_10", "fundus/us/Gazette_2024_01_02",
        "fundus/us/Gazette_2025_03_04"]
    assert joined_corpus(str(base), ["modern-news-train"], tmp_path / "cache",
                         log=lines.append) == path
    assert "1 " in lines[0] and "3 pages of modern-news-train" in lines[0]
    assert lines[1].startswith("joined corpus: ")


def test_an_added_set_s_pages_share_a_fold_with_their_site(sources, monkeypatch):
    import numpy as np

    from train.fast import extra_set_folds

    monkeypatch.setattr(modern_news, "held_apart_bucket", lambda site: False)
    out = sources / "sets"
    modern_news.build(sources / "fundus", sources / "evaluation", sources / "wcxb",
                      sources / "zyte", out, log=lambda _: None)
    monkeypatch.setattr(article_sets.load_article_set, "__defaults__", (out,))
    ids = ["wcxb/dev/1", "wcxb/dev/2", "wcxb/dev/3", "fundus/us/Gazette_2024_01_02",
           "fundus/de/Bote_2025_09_10", "fundus/us/Gazette_2025_03_04"]
    folds = extra_set_folds(ids, np.arange(6) % 3, ["modern-news-train"], 3)
    # the train pages keep theirs; gazette.com's two pages one fold (the larger group first)
    assert folds.tolist() == [0, 1, 2, 0, 1, 0]
