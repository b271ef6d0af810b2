"""Train pages with longer stories: a corpus derived from the train pages for the fast profile
(``Recipe.fast_longer_stories``).

Why: the fast profile drops the later paragraphs of long articles. On the readability pages
its scores fall paragraph by paragraph down the story, inside the container whose first
paragraphs it keeps (lazy-image-2: 8,153 words, recall 0.44; wikipedia-2: 18,412 words,
0.51; toc-missing: 5,503 words, 0.67), while trafilatura keeps them all. Its train pages hold
few such stories: half the WCXB article pages' ground truths are under 1,510 words and 1% are
over 6,400, so a block that many words down a page has mostly been boilerplate.

What: a share of the WCXB article pages (by WCXB's own page type, as ``train.comments``
picks them) get their story lengthened from inside: paragraphs inserted after its own
paragraphs (the ``<p>`` elements holding its ground truth's lines), each in the markup of the
paragraph it follows (the same attributes, without an ``id``), but never after its last one,
so the story still ends where it ended and what follows it is unchanged. They are added until
the story has grown by half to three times its words (at least ``ADDED_WORDS[0]``, at most
``ADDED_WORDS[1]``). Their text is whole paragraphs of other train pages' ground truth; it is
added to the page's reference where it stands in the page (the reference is what the
threshold is chosen against, and ``train.comments`` finds the story's end by its last lines)
and listed as the page's ``added_main``, so the rule labels (``eval.labels``) make them main
and every other block of the page keeps its label (the added words make no other block
main). In some stories an advert placeholder (one of ``ADVERTS``, not in the reference)
follows some paragraphs, as news sites interleave them. The same corpus, share and seed give
the same pages, byte for byte.
"""

from __future__ import annotations

import html
import random
import re
from pathlib import Path

from train.comments import LINE_CHARS, THREAD_PAGE_TYPE, line_positions, page_types
from train.data import CACHE_DIR, derived_corpus

ADDED_WORDS = (1_500, 15_000)  # words added to a story, both ends included
GROWTH = (0.5, 3.0)  # words added as a share of the story's words, both ends included
PARAGRAPH_WORDS = (15, 200)  # the words of a paragraph taken from another page, both included
ADVERT_PAGES = 0.3  # the share of lengthened stories with advert placeholders
ADVERT_AFTER = 0.35  # in those, the chance that one follows a paragraph
ADVERTS = (
    '<div class="ad-slot"><span class="ad-label">Advertisement</span></div>',
    '<aside class="inline-ad"><p>Advertisement</p></aside>',
    '<div class="advert" aria-hidden="true">ADVERTISEMENT</div>',
    '<div class="ad-container"><div id="div-gpt-ad-1"></div><p class="ad-text">Advertisement'
    '</p></div>',
)
# a paragraph's first character: prose, not a Markdown heading, list item or table row
_PROSE_START = re.compile(r"^[\w\"'“‘(]")
_CLOSING_TAG = re.compile(r"</(p|div|section|article|li|td|h[1-6]|blockquote)>", re.I)
_P_OPENING = re.compile(r"<p\b[^>]*>", re.I)
_ID_ATTRIBUTE = re.compile(r"""\s+id\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""", re.I)


def _paragraphs(reference: str | None) -> list[str]:
    return [line.strip() for line in (reference or "").splitlines()
            if _PROSE_START.match(line.strip())
            and PARAGRAPH_WORDS[0] <= len(line.split()) <= PARAGRAPH_WORDS[1]]


def story_paragraphs(page_html: str, reference: str) -> list[tuple[int, str, int]]:
    """The story's paragraphs in page order: for each line of the reference of over
    ``LINE_CHARS`` characters found in ``page_html`` outside ``<script>`` elements
    (``comments.line_positions``, its first position) directly in a ``<p>`` (the
    nearest closing tag after it is ``</p>``), where that ``<p>`` ends, its opening tag
    without an ``id`` (copies must not repeat one) and the line's index in the reference."""
    found: dict[int, tuple[str, int]] = {}
    for index, line in enumerate(reference.splitlines()):
        line = line.strip()
        if len(line) <= LINE_CHARS:
            continue
        at = next(line_positions(page_html, line, outside_scripts=True), -1)
        if at < 0:
            continue
        closing = _CLOSING_TAG.search(page_html, at)
        opening = _opening_p(page_html, at)
        if closing and closing.group(1).lower() == "p" and opening:
            found[closing.end()] = (_ID_ATTRIBUTE.sub("", opening), index)
    return [(end, opening, index) for end, (opening, index) in sorted(found.items())]


def _opening_p(page_html: str, at: int) -> str | None:
    """The last ``<p …>`` opening tag before offset ``at``."""
    start = page_html.rfind("<p", 0, at)
    while start >= 0:
        opening = _P_OPENING.match(page_html, start)
        if opening:
            return opening.group(0)
        start = page_html.rfind("<p", 0, start)
    return None


def with_longer_stories(pages: list[dict], types: dict[str, str], share: float, seed: int
                        ) -> tuple[list[dict], list[str]]:
    """``pages`` with the story lengthened in about ``share`` of those ``types`` calls
    articles (and that have a reference with two paragraphs found in the HTML at least), and
    the ids of the pages lengthened; the rest unchanged."""
    paragraphs = {p["id"]: _paragraphs(p.get("reference")) for p in pages}
    donors = [pid for pid in paragraphs if paragraphs[pid]]
    rng = random.Random(seed)
    out, lengthened = [], []
    for page in pages:
        if not (types.get(page["id"]) == THREAD_PAGE_TYPE and page.get("reference")
                and rng.random() < share):
            out.append(page)
            continue
        # after any of the story's paragraphs but its last: the story ends where it ended
        points = story_paragraphs(page["html"], page["reference"])[:-1]
        others = [pid for pid in donors if pid != page["id"]]
        if not points or not others:
            out.append(page)
            continue
        story_words = len(page["reference"].split())
        target = min(max(round(story_words * rng.uniform(*GROWTH)), ADDED_WORDS[0]),
                     ADDED_WORDS[1])
        adverts = rng.random() < ADVERT_PAGES
        added: list[str] = []
        inserted: dict[int, list[str]] = {}  # page offset -> markup
        after_line: dict[int, list[str]] = {}  # reference line -> added texts
        words = 0
        while words < target:
            text = rng.choice(paragraphs[rng.choice(others)])
            end, opening, line = rng.choice(points)
            added.append(text)
            after_line.setdefault(line, []).append(text)
            words += len(text.split())
            markup = inserted.setdefault(end, [])
            markup.append(f"{opening}{html.escape(text, quote=False)}</p>")
            if adverts and rng.random() < ADVERT_AFTER:
                markup.append(rng.choice(ADVERTS))
        pieces, last = [], 0
        for end in sorted(inserted):
            pieces += [page["html"][last:end], *inserted[end]]
            last = end
        # the reference in page order: each text after the line of the paragraph it follows
        reference = []
        for index, line in enumerate(page["reference"].splitlines()):
            reference.append(line)
            for text in after_line.get(index, ()):
                reference += ["", text]
        page = {**page, "html": "".join(pieces) + page["html"][last:],
                "reference": "\n".join(reference), "added_main": added}
        lengthened.append(page["id"])
        out.append(page)
    return out, lengthened


def longer_story_corpus(corpus: str, share: float, seed: int, cache_dir: Path = CACHE_DIR,
                        log=print) -> str:
    """The path (a corpus name, ``pulpie_rt.corpus``) of ``corpus``'s pages with longer
    stories (``with_longer_stories``), written under ``cache_dir`` once (keyed by
    ``corpus_version``, the share and the seed) and read from there after."""
    return derived_corpus(
        corpus, "stories", share, seed,
        lambda pages: with_longer_stories(pages, page_types(), share, seed),
        "longer stories", "lengthened", f"WCXB {THREAD_PAGE_TYPE} pages", cache_dir, log)
