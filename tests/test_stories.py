"""The train pages with longer stories (``train.stories``, ``Recipe.fast_longer_stories``):
which pages are lengthened, where the paragraphs go, how they are labelled, and the derived
corpus file."""

from __future__ import annotations

import html
import os
import re

import pytest
from rt_helpers import NOT_WCXB, WCXB_ARTICLES, WCXB_FORUM, train_small_fast_profile, write_corpus

from eval.labels import label_blocks
from eval.metrics import words
from pulpie_rt.corpus import find_corpus, iter_pages
from train.comments import page_types
from train.data import page_blocks
from train.stories import (
    ADDED_WORDS,
    ADVERTS,
    GROWTH,
    PARAGRAPH_WORDS,
    longer_story_corpus,
    story_paragraphs,
    with_longer_stories,
)


def test_story_paragraphs_are_the_references_lines_in_p_outside_scripts_without_ids():
    first = "The story's first line, long enough to be looked for in the page."
    middle = "Fish & chips, the nation's dish, served since 1860 or thereabouts."
    last = "The story's very last line, which nothing may be inserted after."
    page = (f'<html><body><nav><a href="/">A navigation link of over thirty characters</a>'
            f'</nav><p id="p1" class="body">{first}</p><div>Short.</div>'
            f'<p>{html.escape(middle, quote=False)}</p><div class="x">{last}</div>'
            f'<footer>f</footer>'
            f'<script type="application/ld+json">{{"articleBody": "{first}"}}</script>'
            f'</body></html>')
    reference = f"{first}\nShort.\n{middle}\n{last}\nA navigation link of over thirty characters"
    found = story_paragraphs(page, reference)
    # the first line is found in its <p>, not in the JSON-LD after it; the last line and the
    # link are not directly in a <p>
    assert [(page[:end][-30:], opening, line) for end, opening, line in found] == [
        (f"{first[-26:]}</p>", '<p class="body">', 0),
        (f"{html.escape(middle, quote=False)[-26:]}</p>", "<p>", 2)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_added_paragraphs_are_main_inside_the_story_and_the_page_keeps_its_labels(
        derivation_pages, seed):
    pages = [derivation_pages[pid] for pid in (*WCXB_ARTICLES, WCXB_FORUM)]
    out, lengthened = with_longer_stories(pages, page_types(), 1.0, seed)
    assert lengthened == list(WCXB_ARTICLES) and out[3] is pages[3]
    for before_page, after_page in zip(pages[:3], out[:3], strict=True):
        added = after_page["added_main"]
        points = story_paragraphs(before_page["html"], before_page["reference"])
        original = next(p for p in pages if p["id"] == after_page["id"])
        # the added paragraphs, each in the markup of a story paragraph, and the adverts are
        # all the page gained; the story's last paragraph and all after it are as they were
        openings = {opening for _, opening, _ in points}
        rest = re.sub("|".join(map(re.escape, ADVERTS)), "", after_page["html"])
        for text in added:
            markups = [f"{o}{html.escape(text, quote=False)}</p>" for o in openings]
            at = min(rest.find(m) for m in markups if m in rest)
            rest = rest[:at] + rest[at:].replace(
                next(m for m in markups if rest.startswith(m, at)), "", 1)
        assert rest == original["html"]
        last_end = points[-1][0]
        assert after_page["html"].endswith(original["html"][last_end - 200:])
        # the reference gains exactly the added paragraphs' text, each after the line of a
        # story paragraph but the last, in page order
        lines = after_page["reference"].split("\n")
        texts = [line for line in lines if line in added]
        assert sorted(texts) == sorted(added)
        stripped: list[str] = []
        for line in lines:
            if line in added:
                assert stripped.pop() == ""  # each added text is its own paragraph
            else:
                stripped.append(line)
        assert stripped == original["reference"].split("\n")
        # in page order (a text added twice: by where it first stands)
        in_page = sorted(set(added), key=lambda text: after_page["html"].index(
            html.escape(text, quote=False)))
        assert list(dict.fromkeys(texts)) == in_page
        last_line = original["reference"].split("\n")[points[-1][2]]
        assert lines.index(last_line) > max(lines.index(text) for text in added)
        grown = sum(len(text.split()) for text in added)
        story = len(original["reference"].split())
        low = min(max(round(story * GROWTH[0]), ADDED_WORDS[0]), ADDED_WORDS[1])
        assert low <= grown < ADDED_WORDS[1] + PARAGRAPH_WORDS[1]
        before = page_blocks(original, True, True)
        after = page_blocks(after_page, True, True)
        # every block of the page keeps its label, in order; every added paragraph is a block
        # labelled main; an advert placeholder is not main
        kept, new = [], []
        added_words = [words(text) for text in added]
        advert_words = [words(re.sub(r"<[^>]*>", " ", markup)) for markup in ADVERTS]
        for block, label in zip(after["blocks"], after["labels"], strict=True):
            text = words(re.sub(r"<[^>]*>", " ", block))
            if any(a[:len(text) - 1] == text[:-1] and len(text) >= 10 for a in added_words):
                new.append(label)
            elif text in advert_words:
                assert label == 0
            else:
                kept.append(label)
        assert kept == before["labels"] and new == [1] * len(added)


def test_adverts_are_in_no_reference():
    advert_words = {w for markup in ADVERTS for w in words(re.sub(r"<[^>]*>", " ", markup))}
    assert advert_words == {"advertisement"}


def test_only_wcxb_articles_are_lengthened_and_the_seed_decides(derivation_pages):
    pages = [derivation_pages[pid] for pid in (*WCXB_ARTICLES, WCXB_FORUM, NOT_WCXB)]
    out, lengthened = with_longer_stories(pages, page_types(), 1.0, 0)
    assert lengthened == list(WCXB_ARTICLES) and out[3] is pages[3] and out[4] is pages[4]
    again, _ = with_longer_stories(pages, page_types(), 1.0, 0)
    other, _ = with_longer_stories(pages, page_types(), 1.0, 1)
    assert again == out and other[0]["html"] != out[0]["html"]
    none, lengthened = with_longer_stories(pages, page_types(), 0.0, 0)
    assert lengthened == [] and none == pages


def test_the_derived_corpus_is_written_once(derivation_pages, tmp_path, monkeypatch):
    pages = [derivation_pages[pid] for pid in (*WCXB_ARTICLES, WCXB_FORUM)]
    write_corpus(tmp_path, "mini", pages)
    monkeypatch.setenv("PULPIE_RT_CORPUS", str(tmp_path))
    logged: list[str] = []
    path = longer_story_corpus("mini", 1.0, 0, tmp_path / "cache", logged.append)
    source = os.stat(tmp_path / "mini.jsonl.gz")
    assert os.path.basename(path) == (f"mini-{source.st_size}-{int(source.st_mtime)}-"
                                      f"stories-1.0-0.jsonl.gz") and find_corpus(path)
    assert logged == [f"longer stories: 3 of 4 mini pages lengthened (WCXB article pages, "
                      f"share 1.0, seed 0) -> {path}"]
    expected, _ = with_longer_stories(pages, page_types(), 1.0, 0)
    assert list(iter_pages(path)) == expected
    written = os.stat(path).st_mtime_ns
    assert longer_story_corpus("mini", 1.0, 0, tmp_path / "cache", logged.append) == path
    assert os.stat(path).st_mtime_ns == written
    assert logged[1:] == [f"longer stories: mini pages (share 1.0, seed 0) from {path}"]


def test_added_text_is_main_whole_or_cut_short_and_its_words_make_no_other_block_main():
    added = ("Several palms make great indoor plants for low light, and many of these plants "
             "are unrelated to each other at all.")
    reference = "Home news.\n\n" + added
    blocks = ["<p>Home news</p>", "<p>plants are great</p>", "<p>The</p>", f"<p>{added}</p>",
              "<p>Several palms make great indoor plants for low light, and many of th...</p>"]
    # without added_main the rule reads the added words as the page's: a block of common
    # words made of them is main
    assert label_blocks(blocks, reference) == [1, 1, 0, 1, 0]
    # with it, the added text is main where it stands, whole or cut short (its last word
    # too), once per time it was added; a one-word block beginning it is not
    assert label_blocks(blocks, reference, added_main=[added]) == [1, 0, 0, 1, 0]
    assert label_blocks(blocks[:3] + blocks[4:], reference, added_main=[added]) == [
        1, 0, 0, 1]
    assert label_blocks(blocks, reference + "\n\n" + added,
                        added_main=[added, added]) == [1, 0, 0, 1, 1]


def test_the_fast_profile_reads_the_threads_then_the_longer_stories(derivation_pages, tmp_path,
                                                                    monkeypatch):
    from train.fit import Recipe

    assert Recipe().fast_longer_stories == 0.0  # measured, not shipped
    pages = [derivation_pages[pid] for pid in (*WCXB_ARTICLES, WCXB_FORUM)]
    write_corpus(tmp_path, "mini", pages)
    fast, logged = train_small_fast_profile(tmp_path, monkeypatch, tmp_path,
                                            fast_comment_threads=1.0, fast_longer_stories=1.0)
    threads = next(line for line in logged if line.startswith("comment threads: "))
    stories = next(line for line in logged if line.startswith("longer stories: "))
    assert logged.index(threads) < logged.index(stories)
    threaded = threads.rpartition(" -> ")[2]
    assert stories.startswith(f"longer stories: 3 of 4 {threaded} pages lengthened (WCXB "
                              f"article pages, share 1.0, seed 0) -> ")
    corpus = stories.rpartition(" -> ")[2]
    # the stages read the pages with both, and the threshold is chosen on them
    assert any(line.endswith(f" on 4 {corpus} pages (out of fold)") for line in logged)
    lengthened = list(iter_pages(corpus))
    assert [bool(p.get("added_main")) for p in lengthened] == [True, True, True, False]
    assert fast["pages"] == 4
    blocks = sum(len(page_blocks(p, True, True)["blocks"]) for p in lengthened)
    assert fast["blocks"] == blocks
