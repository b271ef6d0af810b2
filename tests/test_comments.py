"""The train pages with reader-comment threads (``train.comments``,
``Recipe.fast_comment_threads``): which pages get one, where it goes, how it is labelled, and
the derived corpus file."""

from __future__ import annotations

import gzip
import json
import os
import re

import pytest
from rt_helpers import NOT_WCXB, WCXB_ARTICLES, WCXB_FORUM, write_corpus

from pulpie_rt.corpus import corpus_version, find_corpus, iter_pages
from train.comments import (
    MARKUPS,
    comment_thread_corpus,
    page_types,
    story_end,
    with_comment_threads,
)
from train.data import page_blocks


def test_page_types_are_wcxbs_for_every_wcxb_dev_page():
    types = page_types()
    dev = [p["id"] for p in iter_pages("dev") if p["id"].startswith("wcxb/")]
    assert len(dev) == 60 and all(pid in types for pid in dev)
    assert [types[pid] for pid in WCXB_ARTICLES] == ["article"] * 3
    assert types[WCXB_FORUM] == "forum"
    assert NOT_WCXB not in types


def test_story_end_follows_the_references_last_line_else_footer_else_body():
    story = "<p>First line of the story, long enough to be looked for.</p>"
    last = "<p>The story's very last line, which the thread must follow.</p>"
    page = f"<html><body><nav>menu</nav>{story}{last}<aside>more</aside></body></html>"
    reference = ("First line of the story, long enough to be looked for.\n"
                 "The story's very last line, which the thread must follow.")
    assert page[:story_end(page, reference)].endswith(last)
    footer = f"<html><body>{'x' * 100}<footer>f</footer></body></html>"
    assert footer[story_end(footer, "no such line in the page at all, not one")::].startswith(
        "<footer>")
    plain = "<html><body><p>short</p></body></html>"
    assert plain[story_end(plain, "no such line in the page at all, not one"):] == (
        "</body></html>")
    assert story_end("<p>x</p>", "nothing") == len("<p>x</p>")


def test_escaped_story_text_is_found():
    page = "<body><p>Fish &amp; chips, the nation's dish, served since 1860 or so.</p><div>x</div>"
    end = story_end(page, "Fish & chips, the nation's dish, served since 1860 or so.")
    assert page[:end].endswith("1860 or so.</p>")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_thread_adds_blocks_labelled_not_main_and_leaves_the_page_s_labels(derivation_pages,
                                                                            seed):
    for article in WCXB_ARTICLES:
        pages = [derivation_pages[article], derivation_pages[WCXB_FORUM]]
        out, threaded = with_comment_threads(pages, page_types(), 1.0, seed)
        assert threaded == [article] and out[1] is pages[1]
        assert out[0]["reference"] == pages[0]["reference"] and out[0]["id"] == article
        before = page_blocks(pages[0], True, True)
        after = page_blocks(out[0], True, True)
        added = len(after["blocks"]) - len(before["blocks"])
        assert added >= 3
        start = next(i for i, (a, b) in enumerate(zip(before["blocks"], after["blocks"],
                                                                      strict=False))
                     if a != b)
        # every block of the page keeps its label; the thread's are not main, but for one
        # at most whose few words the reference holds too (a WordPress heading repeating the
        # title, "N thoughts on “Title”", or a form's "Comment" label)
        assert before["labels"] == after["labels"][:start] + after["labels"][start + added:]
        main = [re.sub(r"<[^>]*>", " ", b).split()
                for b, y in zip(after["blocks"][start:start + added],
                                after["labels"][start:start + added], strict=True) if y]
        reference = set(re.findall(r"\w+", pages[0]["reference"].lower()))
        assert len(main) <= 1 and all(set(re.findall(r"\w+", " ".join(m).lower())) <= reference
                                      for m in main)


def test_only_wcxb_articles_get_threads_and_the_seed_decides(derivation_pages):
    pages = [derivation_pages[pid] for pid in (*WCXB_ARTICLES, WCXB_FORUM, NOT_WCXB)]
    out, threaded = with_comment_threads(pages, page_types(), 1.0, 0)
    assert threaded == list(WCXB_ARTICLES)
    assert out[3] is pages[3] and out[4] is pages[4]
    again, _ = with_comment_threads(pages, page_types(), 1.0, 0)
    other, _ = with_comment_threads(pages, page_types(), 1.0, 1)
    assert again == out and other[0]["html"] != out[0]["html"]
    none, threaded = with_comment_threads(pages, page_types(), 0.0, 0)
    assert threaded == [] and none == pages
    markups = {m.__name__ for m in MARKUPS}
    assert markups == {"wordpress_thread", "blogger_thread", "plain_thread",
                       "threaded_discussion"}


def test_the_derived_corpus_is_a_file_named_by_its_path(derivation_pages, tmp_path, monkeypatch):
    pages = [derivation_pages[pid] for pid in (*WCXB_ARTICLES, WCXB_FORUM)]
    write_corpus(tmp_path, "mini", pages)
    monkeypatch.setenv("PULPIE_RT_CORPUS", str(tmp_path))
    logged: list[str] = []
    path = comment_thread_corpus("mini", 1.0, 0, tmp_path / "cache", logged.append)
    assert path.endswith("-comments-1.0-0.jsonl.gz") and find_corpus(path) is not None
    stat = os.stat(path)
    assert corpus_version(path) == (f"{os.path.basename(path)[:-len('.jsonl.gz')]}-"
                                    f"{stat.st_size}-{int(stat.st_mtime)}")
    assert logged == [f"comment threads: 3 of 4 mini pages given one (WCXB article pages, "
                      f"share 1.0, seed 0) -> {path}"]
    expected, _ = with_comment_threads(pages, page_types(), 1.0, 0)
    assert list(iter_pages(path)) == expected
    written = os.stat(path).st_mtime_ns
    assert comment_thread_corpus("mini", 1.0, 0, tmp_path / "cache", logged.append) == path
    assert os.stat(path).st_mtime_ns == written  # written once, then read
    assert logged[1:] == [f"comment threads: mini pages (share 1.0, seed 0) from {path}"]
    source = os.stat(tmp_path / "mini.jsonl.gz")
    assert os.path.basename(path) == (f"mini-{source.st_size}-{int(source.st_mtime)}-"
                                      f"comments-1.0-0.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        assert [json.loads(line)["id"] for line in fh] == [p["id"] for p in pages]


def test_a_missing_corpus_path_is_named():
    with pytest.raises(FileNotFoundError, match=r"^corpus file /no/such\.jsonl\.gz not found$"):
        list(iter_pages("/no/such.jsonl.gz"))
