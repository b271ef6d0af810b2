"""Train pages with reader-comment threads: a corpus derived from the train pages for the fast
profile (``Recipe.fast_comment_threads``).

Why: on WCXB's article pages the ground truth leaves reader comments out (7% of the words in
blocks under a ``comment`` container are main content there, against 57% on its forum pages),
but few of its modern article pages carry their comments in the HTML (81 of 530), so the
rescorer rarely sees a thread under a story to learn that. News and blog sets from before
comments were loaded by script show where that costs: on Dragnet's 1,380 pages the pages
whose markup names a comment container hold 92% of the fast profile's lost word F1.

What: a share of the WCXB article pages (by WCXB's own page type, ``corpus/wcxb-page-types
.json``; other pages and pages of other sources are left as they are) get a comment thread
inserted after their story's last line, in one of four common markups (WordPress's comment
list, Blogger's, a plain comments section, a threaded discussion with replies). Its text is
sentences of two other train pages' ground truth, so the words alone read like main content
and only the structure says otherwise. The page's reference is unchanged, so the rule labels
(``eval.labels``) make every block of the thread not main, and the rest of the page keeps its
labels. The same corpus, share and seed give the same pages, byte for byte.
"""

from __future__ import annotations

import html
import json
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from pulpie_rt.corpus import IN_REPO_DIR
from train.data import CACHE_DIR, derived_corpus

PAGE_TYPES = IN_REPO_DIR / "wcxb-page-types.json"
THREAD_PAGE_TYPE = "article"
COMMENTS = (3, 25)  # comments per thread, both ends included
SENTENCE_WORDS = (6, 40)  # the words of a sentence a comment may quote, both ends included
NAMES = ("Kathy Liz Becky Mark J. Peterson Sam anon Glenda Rob_1987 Maria Tom Hughes Dave "
         "Ana Chris P. Nadia Oliver Jen Marcus Priya Lee Sarah K. Bill Hana Omar").split()
MONTHS = ("January February March April May June July August September October November "
          "December").split()
_CLOSING_TAG = re.compile(r"</(p|div|section|article)>", re.I)
LINE_CHARS = 30  # a reference line this short or shorter is not looked for in the page
PROBE_CHARS = 40  # a line is looked for by its first characters (markup may break it later)


def page_types() -> dict[str, str]:
    """WCXB's page type (``article``, ``forum``, ``product`` …) of each WCXB page of the train
    and dev corpora, by page id (from WCXB's ``metadata.json``, CC BY 4.0)."""
    return json.loads(PAGE_TYPES.read_text(encoding="utf-8"))


def _posted(rng: random.Random) -> str:
    return (f"{rng.choice(MONTHS)} {rng.randint(1, 28)}, {rng.randint(2009, 2025)} at "
            f"{rng.randint(1, 12)}:{rng.randint(0, 59):02d} {rng.choice(['am', 'pm'])}")


def _said(rng: random.Random, sentences: list[str], most: int) -> str:
    return html.escape(" ".join(rng.choice(sentences) for _ in range(rng.randint(1, most))))


def _name(rng: random.Random) -> str:
    return html.escape(rng.choice(NAMES))


def wordpress_thread(rng: random.Random, sentences: list[str], title: str, n: int) -> str:
    """WordPress's comment list with its reply form."""
    items = "".join(
        f'<li class="comment even thread-even depth-1" id="comment-{rng.randint(1000, 99999)}">'
        f'<article class="comment-body"><footer class="comment-meta"><div class="comment-author '
        f'vcard"><img alt="" src="/avatar/{i}.png" class="avatar avatar-60 photo" height="60" '
        f'width="60"><b class="fn">{_name(rng)}</b> <span class="says">says:</span></div>'
        f'<div class="comment-metadata"><a href="#c{i}"><time>{_posted(rng)}</time></a></div>'
        f'</footer><div class="comment-content"><p>{_said(rng, sentences, 4)}</p></div>'
        f'<div class="reply"><a rel="nofollow" class="comment-reply-link" href="#respond">Reply'
        f'</a></div></article></li>' for i in range(n))
    return (f'<div id="comments" class="comments-area"><h2 class="comments-title">{n} thoughts '
            f'on &ldquo;{html.escape(title)}&rdquo;</h2><ol class="comment-list">{items}</ol>'
            f'<div id="respond" class="comment-respond"><h3 id="reply-title" '
            f'class="comment-reply-title">Leave a Reply</h3><form action="/wp-comments-post.php" '
            f'method="post" id="commentform"><p class="comment-notes">Your email address will '
            f'not be published.</p><p class="comment-form-comment"><label for="comment">Comment'
            f'</label><textarea id="comment" name="comment"></textarea></p><p class="form-submit">'
            f'<input name="submit" type="submit" value="Post Comment"></p></form></div></div>')


def blogger_thread(rng: random.Random, sentences: list[str], title: str, n: int) -> str:
    """Blogger's comments block: a definition list of authors and what they said."""
    items = "".join(
        f'<dt class="comment-author" id="c{rng.randint(1000, 99999)}"><a href="/profile/{i}">'
        f'{_name(rng)}</a> said...</dt><dd class="comment-body"><p>{_said(rng, sentences, 4)}'
        f'</p></dd><dd class="comment-footer"><span class="comment-timestamp"><a href="#c{i}">'
        f'{_posted(rng)}</a></span></dd>' for i in range(n))
    return (f'<div class="comments" id="comments"><a name="comments"></a><h4>{n} comments:</h4>'
            f'<div id="comments-block"><dl>{items}</dl></div><p class="comment-footer">'
            f'<a href="/comment.g?postID=1">Post a Comment</a></p></div>')


def plain_thread(rng: random.Random, sentences: list[str], title: str, n: int) -> str:
    """A plain comments section: one box per comment, its author, date and permalink."""
    items = "".join(
        f'<div class="comment" id="comment_{i}"><div class="comment-header"><span class="user">'
        f'{_name(rng)}</span> <span class="date">Posted {_posted(rng)}</span> | <a '
        f'href="#comment_{i}">Permalink</a></div><div class="comment-text">'
        f'{_said(rng, sentences, 5)}</div></div>' for i in range(n))
    return (f'<section class="user-comments"><h3>Comments ({n})</h3>{items}<div '
            f'class="add-comment"><h3>Add your comment</h3><textarea name="text"></textarea>'
            f'<button>Submit</button></div></section>')


def threaded_discussion(rng: random.Random, sentences: list[str], title: str, n: int) -> str:
    """A discussion whose comments carry replies, two levels deep at most."""
    def comment(i: int, depth: int) -> str:
        replies = ("".join(comment(i * 10 + k, depth + 1) for k in range(rng.randint(0, 2)))
                   if depth < 2 and rng.random() < 0.3 else "")
        return (f'<li class="reply-item depth-{depth}"><div class="reply-author"><a '
                f'href="/u/{i}">{_name(rng)}</a> <time>{_posted(rng)}</time></div><p>'
                f'{_said(rng, sentences, 3)}</p><div class="reply-actions"><a href="#">Like</a> '
                f'<a href="#">Reply</a> <a href="#">Report</a></div>'
                + (f'<ul class="replies">{replies}</ul>' if replies else "") + "</li>")
    return (f'<div class="discussion" id="discussion"><div class="discussion-header">Join the '
            f'discussion: {n} responses</div><ul class="reply-list">'
            f'{"".join(comment(i, 0) for i in range(n))}</ul></div>')


MARKUPS: tuple[Callable[[random.Random, list[str], str, int], str], ...] = (
    wordpress_thread, blogger_thread, plain_thread, threaded_discussion)


def line_positions(page_html: str, line: str, outside_scripts: bool = False) -> Iterator[int]:
    """Where a reference line stands in ``page_html``: the last occurrence of its first
    ``PROBE_CHARS`` characters as written, then as escaped (``&``, ``<`` and ``>``), each only
    where found (with ``outside_scripts``, the last one outside ``<script>`` elements: JSON-LD
    repeats a story's text)."""
    for probe in (line[:PROBE_CHARS], html.escape(line[:PROBE_CHARS], quote=False)):
        at = page_html.rfind(probe)
        while outside_scripts and at >= 0 and _in_script(page_html, at):
            at = page_html.rfind(probe, 0, at)
        if at >= 0:
            yield at


def _in_script(page_html: str, at: int) -> bool:
    """Whether offset ``at`` lies inside a ``<script>`` element."""
    return page_html.rfind("<script", 0, at) > page_html.rfind("</script", 0, at)


def story_end(page_html: str, reference: str) -> int:
    """Where a comment thread goes: after the element that holds one of the reference's last
    three lines of over ``LINE_CHARS`` characters (``line_positions``); else before a
    ``<footer>`` in the page's second half; else before ``</body>``; else at the end."""
    lines = [line.strip() for line in reference.splitlines() if len(line.strip()) > LINE_CHARS]
    for line in reversed(lines[-3:]):
        for at in line_positions(page_html, line):
            closing = _CLOSING_TAG.search(page_html, at)
            if closing:
                return closing.end()
    footer = re.search(r"<footer[\s>]", page_html, re.I)
    if footer and footer.start() > len(page_html) // 2:
        return footer.start()
    body_end = re.search(r"</body>", page_html, re.I)
    return body_end.start() if body_end else len(page_html)


def _sentences(reference: str | None) -> list[str]:
    return [s.strip() + "." for s in re.split(r"(?<=[.!?])\s+", reference or "")
            if SENTENCE_WORDS[0] <= len(s.split()) <= SENTENCE_WORDS[1]]


def with_comment_threads(pages: list[dict], types: dict[str, str], share: float,
                         seed: int) -> tuple[list[dict], list[str]]:
    """``pages`` with a comment thread in about ``share`` of those ``types`` calls articles
    (and that have a reference), and the ids of the pages given one; the rest unchanged."""
    sentences = {p["id"]: _sentences(p.get("reference")) for p in pages}
    rng = random.Random(seed)
    out, threaded = [], []
    for page in pages:
        if (types.get(page["id"]) == THREAD_PAGE_TYPE and page.get("reference")
                and rng.random() < share):
            others = [pid for pid in sentences if pid != page["id"] and sentences[pid]]
            quoted = sentences[rng.choice(others)] + sentences[rng.choice(others)]
            title = (page["reference"].strip().splitlines() or ["this post"])[0][:80]
            thread = rng.choice(MARKUPS)(rng, quoted, title, rng.randint(*COMMENTS))
            at = story_end(page["html"], page["reference"])
            page = {**page, "html": page["html"][:at] + thread + page["html"][at:]}
            threaded.append(page["id"])
        out.append(page)
    return out, threaded


def comment_thread_corpus(corpus: str, share: float, seed: int, cache_dir: Path = CACHE_DIR,
                          log=print) -> str:
    """The path (a corpus name, ``pulpie_rt.corpus``) of ``corpus``'s pages with comment
    threads (``with_comment_threads``), written under ``cache_dir`` once (keyed by
    ``corpus_version``, the share and the seed) and read from there after."""
    return derived_corpus(
        corpus, "comments", share, seed,
        lambda pages: with_comment_threads(pages, page_types(), share, seed),
        "comment threads", "given one", f"WCXB {THREAD_PAGE_TYPE} pages", cache_dir, log)
