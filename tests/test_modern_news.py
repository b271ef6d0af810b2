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
    with pytest.raises(FileNotFoundError, match="python -m eval.modern_news"):
        article_sets.load_article_set("postlight-train", tmp_path)


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


EXTRACTOR_JS = """export const WwwHeraldComExtractor = {
  domain: 'www.herald.com',

  title: {
    selectors: ['h1'],
  },

  content: {
    selectors: [
      '.missing',  // matches nothing
      'div.twice',
      ['figure.lead', ".story"],
      '.story',
    ],

    transforms: {
      'figure .meta': $node => {
        const x = { a: 1 };
        return 'figcaption';
      },
    },

    clean: ['.ad', "aside.more-from"],
  },
};
"""

TEST_JS = """describe('WwwHeraldComExtractor', () => {
  describe('initial test case', () => {
    beforeAll(() => {
      url =
        'https://www.herald.com/2019/harvest';
      const html = fs.readFileSync('./fixtures/www.herald.com.html');
    });
    it('returns the title', async () => {
      assert.equal(title, 'Harvest \\u2019s end');
    });
    it('returns the content', async () => {
      assert.equal(
        first13,
        'The harvest paragraph 0 tells what happened'
      );
    });
  });
  describe('a page without a content test', () => {
    url = 'https://www.herald.com/other';
    const html = fs.readFileSync('./fixtures/www.herald.com--other.html');
  });
});
"""


def test_a_postlight_extractor_s_content_rule_and_test_cases():
    rule = modern_news.postlight_content_rule(EXTRACTOR_JS)
    assert rule == {"selectors": [".missing", "div.twice", ["figure.lead", ".story"], ".story"],
                    "clean": [".ad", "aside.more-from"]}
    with pytest.raises(ValueError, match="not a string array"):
        modern_news.postlight_content_rule("  content: {\n    selectors: [SELECTORS],\n  },\n")
    assert modern_news.postlight_cases(TEST_JS) == [
        {"fixture": "www.herald.com.html", "url": "https://www.herald.com/2019/harvest",
         "title": "Harvest \u2019s end",
         "excerpt": "The harvest paragraph 0 tells what happened"},
        {"fixture": "www.herald.com--other.html", "url": "https://www.herald.com/other"}]


def _herald_page(rail: str = "") -> str:
    story = "".join(f"<p>{p}</p>" for p in _story("Harvest", 3))
    links = "".join(f'<li><a href="/{i}">Other story number {i} of the week</a></li>'
                    for i in range(6))
    return ("<html><body><div class=twice>a</div><div class=twice>b</div>"
            "<figure class=lead><figcaption>The field at dawn</figcaption></figure>"
            f'<div class=story>{story}<div class=ad>Buy now</div><ul class="more">{links}</ul>'
            f"<p>Its last paragraph, with a <a href=/x>link</a> in it.</p></div>{rail}"
            "</body></html>")


def test_postlight_content_is_what_the_rule_selects_less_what_its_cleaners_drop():
    rule = modern_news.postlight_content_rule(EXTRACTOR_JS)
    # '.missing' matches nothing and 'div.twice' two elements: the list of selectors, each
    # matching, takes the figure and the story together, in page order
    text = modern_news.postlight_content(_herald_page(), rule)
    assert text.split("\n") == ["The field at dawn", *_story("Harvest", 3),
                                "Its last paragraph, with a link in it."]
    # without the figure the list does not match: '.story', one element, is the content
    alone = modern_news.postlight_content(_herald_page().replace("figure class=lead",
                                                                "figure"), rule)
    assert alone.split("\n")[0] == _story("Harvest", 1)[0]
    assert modern_news.postlight_content("<p>nothing here</p>", rule) is None


@pytest.fixture()
def postlight(sources):
    """A Postlight Parser checkout: extractors for herald.com (held apart by the Fundus
    evaluation set), gazette.com, judged.com (a judge's) and bote.de (a Dragnet site), and
    quiet.com, whose test asserts no content."""
    root = sources / "postlight"
    (root / "fixtures").mkdir(parents=True)
    for site in ("herald.com", "gazette.com", "judged.com", "bote.de", "quiet.com"):
        folder = root / modern_news.POSTLIGHT_EXTRACTORS / f"www.{site}"
        folder.mkdir(parents=True)
        (folder / "index.js").write_text(EXTRACTOR_JS, encoding="utf-8")
        test = TEST_JS.replace("herald.com", site)
        if site == "quiet.com":
            test = test.replace("first13", "lead_image_url")
        (folder / "index.test.js").write_text(test, encoding="utf-8")
        (root / "fixtures" / f"www.{site}.html").write_text(_herald_page(), encoding="utf-8")
    return root


def test_postlight_pages_are_learnt_from_apart_from_the_judges_and_the_measured_sets(
        sources, postlight, monkeypatch):
    import eval.pages

    out = sources / "sets"
    out.mkdir()
    for name, url in (("l3s-gn1", "https://www.other.org/a"), ("dragnet", None)):
        with gzip.open(article_sets.article_set_path(name, out), "wt", encoding="utf-8") as fh:
            html = '<link rel="canonical" href="https://bote.de/x"><p>x</p>' if url is None \
                else "<p>x</p>"
            fh.write(json.dumps({"id": f"{name}/1", "url": url, "html": html,
                                 "reference": "x"}) + "\n")
    monkeypatch.setattr(eval.pages, "calibration_pages", lambda: [])
    monkeypatch.setattr(modern_news, "held_apart_bucket", lambda site: False)
    lines: list[str] = []
    record = modern_news.build(sources / "fundus", sources / "evaluation", sources / "wcxb",
                               sources / "zyte", out, log=lines.append, postlight=postlight)
    pages = article_sets.load_article_set(article_sets.POSTLIGHT_TRAIN, out)
    assert [(p["id"], p["site"], p["source"]) for p in pages] == [
        ("postlight/www.gazette.com", "gazette.com", "postlight/parser")]
    assert pages[0]["reference"].split("\n")[:3] == [
        "Harvest \u2019s end", "The field at dawn", _story("Harvest", 1)[0]]
    assert record["splits"][article_sets.POSTLIGHT_TRAIN] == {"pages": 1, "sites": 1}
    assert record["dropped_sites"]["judged.com"]["pages"] == ["fundus/us/Judged_2024_05_06",
                                                              "postlight/www.judged.com"]
    assert record["sites_measured_on"] == {
        "bote.de": {"sets": ["dragnet"], "pages": ["postlight/www.bote.de"]},
        "herald.com": {"sets": ["modern-news-heldout"], "pages": ["postlight/www.herald.com"]}}
    # each site's second case (no fixture, no excerpt) and quiet.com's first (no excerpt)
    assert ("Postlight fixtures left out: 6 no fixture or no asserted content excerpt"
            in lines)


def _git(root, *args: str) -> str:
    import os
    import subprocess

    who = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True, env={**os.environ, **who}).stdout.strip()


def test_fundus_s_earlier_pages_are_learnt_from_with_the_extraction_they_had(
        sources, monkeypatch):
    import shutil

    import eval.pages

    fundus = sources / "fundus"
    data = fundus / modern_news.FUNDUS_TEST_DATA
    shutil.copytree(data, sources / "now")
    # earlier: Gazette's parser had one version, for a 2023 page; OldPaper (its site held
    # apart, no page of it now); Courier's case as the oldest were, a title and no body
    urls = json.loads((data / "us" / "meta.info").read_text(encoding="utf-8"))
    for page in (data / "us").glob("Gazette*"):
        page.unlink()
    _fundus_case(data / "us", "Gazette", [("2023_05_06", "Storms", "V1")], urls)
    _fundus_case(data / "us", "OldPaper", [("2023_07_08", "Fires", "V1")], urls)
    (data / "us" / "meta.info").write_text(json.dumps(urls), encoding="utf-8")
    (data / "uk").mkdir()
    (data / "uk" / "Courier.html.gz").write_bytes(_page("Tides", _story("Tides", 5)))
    (data / "uk" / "Courier.json").write_text(json.dumps({"title": "Tides", "authors": []}),
                                              encoding="utf-8")
    _git(fundus, "init", "-q")
    _git(fundus, "add", "-A")
    _git(fundus, "commit", "-qm", "earlier")
    earlier = _git(fundus, "rev-parse", "HEAD")[:8]
    shutil.rmtree(data)
    shutil.copytree(sources / "now", data)
    _git(fundus, "add", "-A")
    _git(fundus, "commit", "-qm", "now")

    out = sources / "sets"
    out.mkdir()
    for name in ("l3s-gn1", "dragnet"):
        with gzip.open(article_sets.article_set_path(name, out), "wt", encoding="utf-8") as fh:
            fh.write(json.dumps({"id": f"{name}/1", "url": "https://www.other.org/a",
                                 "html": "<p>x</p>", "reference": "x"}) + "\n")
    monkeypatch.setattr(eval.pages, "calibration_pages", lambda: [])
    monkeypatch.setattr(modern_news, "held_apart_bucket", lambda site: site == "oldpaper.com")
    lines: list[str] = []
    record = modern_news.build(fundus, sources / "evaluation", sources / "wcxb",
                               sources / "zyte", out, log=lines.append, fundus_history=True)
    pages = article_sets.load_article_set(article_sets.FUNDUS_HISTORY_TRAIN, out)
    assert [(p["id"], p["site"], p["url"]) for p in pages] == [
        (f"fundus-history/us/Gazette_2023_05_06@{earlier}", "gazette.com",
         "https://www.gazette.com/2023_05_06")]
    assert pages[0]["reference"].split("\n")[:2] == ["Storms", _story("Storms", 1)[0]]
    assert "Storms later" in pages[0]["reference"].split("\n")
    assert record["sites_measured_on"] == {"oldpaper.com": {
        "sets": ["held-apart share"],
        "pages": [f"fundus-history/us/OldPaper_2023_07_08@{earlier}"]}}
    assert ("Fundus's earlier pages left out: 0 no test case, 1 no article body, 0 pages and "
            "parser versions not matched") in lines
    # the splits are those a build without the history makes
    assert sorted(p["id"] for p in article_sets.load_article_set("modern-news-train", out)) == [
        "fundus/de/Bote_2025_09_10", "fundus/us/Gazette_2024_01_02",
        "fundus/us/Gazette_2025_03_04"]


def test_fundus_s_history_needs_a_git_clone(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a git clone of Fundus"):
        list(modern_news.iter_fundus_history(tmp_path))
