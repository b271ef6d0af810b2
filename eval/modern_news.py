"""Today's news pages, to learn from and to choose on: Fundus's parser test pages and the
Fundus evaluation set, rebuilt into the corpus record format (``pulpie_rt.corpus``), with a
train split and a held-apart split of other sites.

    python -m eval.modern_news --fundus DIR --fundus-evaluation DIR \\
        --wcxb DIR --zyte DIR [--postlight DIR] [--fundus-history] [--out DIR]

Sources (each page's ``reference`` is its article text, ``reference_kind`` ``"groundtruth"``):

- Fundus's parser test pages (https://github.com/flairNLP/fundus,
  ``tests/resources/parser/test_data/<country>/``; **MIT**, © 2023 Max Dallabetta, Conrad
  Dobberstein, Aaron Wey): one to four saved article pages per publisher (about 180 publishers
  in 41 countries, crawled 2023-2026), each with what Fundus's hand-written per-publisher
  parser extracts (``<Publisher>.json``, one entry per parser version ``V1``, ``V2`` …, one
  page each, matched by the words they share; the page's URL in ``meta.info``). Reference:
  the title, the summary, then each section's headline and paragraphs, one per line: the
  story's full body, without image captions, related links, comments or widgets.
- The Fundus evaluation set (https://github.com/dobbersc/fundus-evaluation, ``dataset/``;
  **MIT**, © 2024 Conrad Dobberstein): 80 article pages of 16 English-language publishers,
  crawled from their feeds in February 2024, with the article text extracted **by hand**
  (``ground_truth.json``). Reference: its paragraphs, one per line (no title: the set has
  none).
- With ``--postlight``, Postlight Parser's fixtures (https://github.com/postlight/parser,
  ``fixtures/`` and ``src/extractors/custom/<host>/``; **MIT or Apache-2.0**, © 2019
  Postlight): one or two saved pages per site (about 140 sites, news and blogs in English and
  Japanese, saved 2016-2022), each with the site's hand-written custom extractor and its test
  (``index.test.js``: the page's URL, its fixture, and the title and the first words of the
  content the extractor must return). Reference: the asserted title and dek, then the text of
  what the extractor's ``content`` selectors pick, as the parser picks it, less its ``clean``
  selectors' matches and the link lists and empty boxes the parser's content cleaner drops
  (``postlight_content``); a page is kept only where that text holds the test's content
  excerpt (``POSTLIGHT_EXCERPT_SHARE``), so the rule is the one the test checks. Into
  ``postlight-train`` (``POSTLIGHT_TRAIN``), to learn from only.
- With ``--fundus-history`` (``--fundus`` a git clone), Fundus's earlier test pages: the
  pages its test data held at an earlier commit and has replaced since (a parser rewritten
  for a site's new layout gets a new page), 2023-2025, each with the extraction of its
  publisher's test case at the last commit that held it (``iter_fundus_history``). Into
  ``fundus-history-train`` (``FUNDUS_HISTORY_TRAIN``), to learn from only.

Splits (files in ``--out``, by default ``build/article-sets/``, where ``bench.quality`` finds
its sets):

- ``modern-news-heldout``: every Fundus evaluation page, the Fundus test pages of the same
  16 sites, and the Fundus test pages of the sites whose name falls in the held-apart share
  (``HELDOUT_BUCKETS`` of ``BUCKETS`` by the sha1 of the site): for choosing and measuring;
  never trained or calibrated on.
- ``modern-news-train``: the other Fundus test pages (no site in both splits).

Independence from the project's judges: the sites (registrable domains, ``site_of``) of the
WCXB test split (``metadata.json``: the ``domain`` of each ``test`` file) and of Zyte's
article-extraction benchmark (``ground-truth.json``: each entry's ``url``) are read, nothing
else of either set, and every page of those sites is left out of both splits; the sites left
out are written to ``modern-news-dropped.json`` beside the sets and printed. The judges'
folders are required: the sets cannot be built without checking against them. Postlight's
pages and Fundus's earlier pages are also left out where their site is one of a set this
project chooses or measures on (the held-apart modern news, the readability pages, L3S-GN1,
Dragnet: ``page_site``, ``measured_sets_sites``; recorded under ``sites_measured_on``), and
Fundus's earlier pages where their site falls in the held-apart share.

Pages are decoded as the runtime decodes bytes (``runtime.stages.decode``); a page whose
reference has no word, whose HTML is under 500 bytes (``eval.article_sets.MIN_HTML_BYTES``),
or whose HTML repeats one already kept (sha1) is left out (counted in the log).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import itertools
import json
import re
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

from eval.article_sets import (
    ARTICLE_SETS_DIR,
    FUNDUS_HISTORY_TRAIN,
    INLINE_TAGS,
    MIN_HTML_BYTES,
    MODERN_NEWS_HELDOUT,
    MODERN_NEWS_TRAIN,
    POSTLIGHT_TRAIN,
    article_set_path,
)
from eval.pages import references_of_kinds

DROPPED_NAME = "modern-news-dropped.json"
FUNDUS_SOURCE = "flairNLP/fundus"
EVALUATION_SOURCE = "dobbersc/fundus-evaluation"
# the held-apart split's pages by their references' convention: a Fundus test page's opens
# with the story's title (its publisher's parser extracts it), the evaluation set's, made by
# hand, leaves the title out (as trafilatura's text does)
HELDOUT_KINDS = {FUNDUS_SOURCE: "Fundus test pages, title first",
                 EVALUATION_SOURCE: "Fundus evaluation, no title"}
FUNDUS_TEST_DATA = Path("tests") / "resources" / "parser" / "test_data"
# a site is held apart when the sha1 of its name falls in the first HELDOUT_BUCKETS of BUCKETS
BUCKETS = 5
HELDOUT_BUCKETS = 1
# second-level labels under which a registrable domain has three labels (news.bbc.co.uk ->
# bbc.co.uk, www.smh.com.au -> smh.com.au): the country suffixes the sets' sites use
SECOND_LEVEL = frozenset("co com net org gov ac edu ne or go gob nic mil".split())
FUNDUS_HTML_RE = re.compile(r"^(?P<publisher>.+)_(?P<date>\d{4}_\d{2}_\d{2})\.html\.gz$")


def heldout_kind(page: dict) -> str:
    """A held-apart page's kind of ``HELDOUT_KINDS``, by its source."""
    kind = HELDOUT_KINDS.get(page["source"])
    if kind is None:
        raise ValueError(f"{page['id']}: source {page['source']!r} is none of the held-apart "
                         f"split's ({', '.join(HELDOUT_KINDS)})")
    return kind


def references_by_kind(pages: list[dict]) -> dict[str, dict[str, str]]:
    """The references of the held-apart split's ``pages`` (by id) under each of
    ``HELDOUT_KINDS``, in its order (a kind without pages left out)."""
    kinds = references_of_kinds(pages, tuple(HELDOUT_KINDS.values()), heldout_kind)
    return {kind: references for kind, references in kinds.items() if references}


def site_of(url: str | None) -> str | None:
    """The site of a URL or host name: its registrable domain, lowercased (``www.`` and other
    subdomains dropped; three labels under a country's second level such as ``co.uk``)."""
    if not url:
        return None
    host = (urlsplit(url).hostname if "//" in url else url.split("/")[0]) or ""
    labels = host.lower().strip(".").split(".")
    if len(labels) < 2:
        return host.lower() or None
    keep = 3 if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in SECOND_LEVEL else 2
    return ".".join(labels[-keep:])


def judge_sites(wcxb: Path, zyte: Path) -> dict[str, set[str]]:
    """The sites of the two independent judges: WCXB's test split (its ``metadata.json``'s
    ``domain`` of each test file) and Zyte's article-extraction benchmark (its
    ``ground-truth.json``'s ``url`` of each page). Only those fields are read."""
    metadata = json.loads((wcxb / "metadata.json").read_text(encoding="utf-8"))
    wcxb_sites = {site_of(entry.get("domain")) for entry in metadata["files"].values()
                  if entry.get("split") == "test"}
    truth = json.loads((zyte / "ground-truth.json").read_text(encoding="utf-8"))
    zyte_sites = {site_of(entry.get("url")) for entry in truth.values()}
    for name, sites in (("WCXB test split", wcxb_sites), ("Zyte's benchmark", zyte_sites)):
        sites.discard(None)
        if not sites:
            raise ValueError(f"{name}: no site found: is this the right folder?")
    return {"wcxb-test": wcxb_sites, "zyte": zyte_sites}  # type: ignore[dict-item]


def _decode(raw: bytes) -> str:
    from pulpie_rt.runtime.stages.decode import decode_input

    return decode_input(raw)[0]


def fundus_reference(extraction: dict) -> str:
    """A Fundus test case's article text: title, summary, then each section's headline and
    paragraphs, one per line."""
    body = extraction.get("body") or {}
    lines = [extraction.get("title") or "", *body.get("summary", [])]
    for section in body.get("sections", []):
        lines += [*section.get("headline", []), *section.get("paragraphs", [])]
    return "\n".join(" ".join(line.split()) for line in lines if line and line.strip())


def coverage(html: str, reference: str) -> float:
    """The share of a reference's words (``eval.metrics.words``) found among the page's."""
    from eval.metrics import words

    reference_words = words(reference)
    page_words = set(words(html))
    return sum(w in page_words for w in reference_words) / max(len(reference_words), 1)


def matched_extractions(htmls: list[str], extractions: list[str]) -> list[int]:
    """For each of a publisher's pages (``htmls``), the index of its extraction: the
    assignment of the publisher's parser versions to its pages (as many of each) under which
    the most reference words are found in their pages (the version names do not follow the
    crawl dates everywhere: WAZ's ``V1`` is its 2025 page)."""
    covered = [[coverage(h, r) for r in extractions] for h in htmls]
    return list(max(itertools.permutations(range(len(extractions))),
                    key=lambda order: sum(covered[i][j] for i, j in enumerate(order))))


def iter_fundus(root: Path) -> Iterator[dict]:
    """Fundus's test pages, each with the parser version's extraction that matches it
    (``matched_extractions``)."""
    base = root / FUNDUS_TEST_DATA
    if not base.is_dir():
        raise FileNotFoundError(f"{base}: not a Fundus checkout (no {FUNDUS_TEST_DATA})")
    for country in sorted(p for p in base.iterdir() if p.is_dir()):
        meta_path = country / "meta.info"
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        for case in sorted(country.glob("*.json")):
            versions = json.loads(case.read_text(encoding="utf-8"))
            files = sorted(p for p in country.glob(f"{case.stem}_*.html.gz")
                           if (m := FUNDUS_HTML_RE.match(p.name)) and m["publisher"] == case.stem)
            if len(files) != len(versions):
                raise ValueError(f"{case}: {len(versions)} parser versions for {len(files)} "
                                 "pages: cannot match them")
            htmls = [_decode(gzip.decompress(f.read_bytes())) for f in files]
            references = [fundus_reference(v) for v in versions.values()]
            best = matched_extractions(htmls, references)
            for page, html, version in zip(files, htmls, best, strict=True):
                url = (meta.get(page.name) or {}).get("url")
                yield {"id": f"fundus/{country.name}/{page.name.removesuffix('.html.gz')}",
                       "source": FUNDUS_SOURCE, "url": url, "html": html,
                       "reference": references[version],
                       "reference_kind": "groundtruth", "snippets": None}


def _git(root: Path, *args: str) -> bytes:
    import subprocess

    return subprocess.run(["git", "-C", str(root), *args], check=True,
                          capture_output=True).stdout


def _git_tree(root: Path, commit: str, folder: Path) -> dict[str, str]:
    """Path -> blob of every file under ``folder`` at ``commit``."""
    tree = {}
    for line in _git(root, "ls-tree", "-r", commit, "--", folder.as_posix()).decode().splitlines():
        info, path = line.split("\t", 1)
        tree[path] = info.split()[2]
    return tree


def _has_story(extraction: object) -> bool:
    """Whether a Fundus extraction holds an article body (the oldest test cases hold only the
    title and authors)."""
    body = extraction.get("body") if isinstance(extraction, dict) else None
    return any(section.get("paragraphs") for section in (body or {}).get("sections", []))


def iter_fundus_history(root: Path, log=print) -> Iterator[dict]:
    """Fundus's earlier test pages: every page its test data held at some commit of the
    checkout's history (``root`` is a git clone) and no longer holds at ``HEAD`` (a parser's
    test page is replaced when the parser is rewritten for the site's new layout), each with
    the extraction its publisher's test case held at the last commit that had the page
    (``matched_extractions``; test cases that hold no article body, as the oldest do, are
    skipped). Ids ``fundus-history/<country>/<file>@<commit>``. The URL is the one
    ``meta.info`` recorded at that commit, else the page's canonical link or ``og:url``."""
    if not (root / ".git").exists() and not (root / "HEAD").is_file():
        raise FileNotFoundError(f"{root}: not a git clone of Fundus (its history is read)")
    current = set(_git_tree(root, "HEAD", FUNDUS_TEST_DATA).values())
    last_holder: dict[str, tuple[str, str]] = {}  # blob -> (commit, path): newest commit first
    trees: dict[str, dict[str, str]] = {}  # the test data of each commit in last_holder
    commits = _git(root, "log", "--format=%H", "--", FUNDUS_TEST_DATA.as_posix()).split()
    for commit in (c.decode() for c in commits):
        tree = _git_tree(root, commit, FUNDUS_TEST_DATA)
        for path, blob in tree.items():
            if path.endswith(".html.gz") and blob not in current and blob not in last_holder:
                last_holder[blob] = (commit, path)
                trees[commit] = tree
    cases: dict[tuple[str, str, str], list[str]] = {}
    for commit, path in last_holder.values():
        name = path.rsplit("/", 1)[-1]
        m = FUNDUS_HTML_RE.match(name)
        publisher = m["publisher"] if m else name.removesuffix(".html.gz")
        cases.setdefault((commit, path.rsplit("/", 1)[0], publisher), []).append(path)
    skipped = {"no test case": 0, "no article body": 0,
               "pages and parser versions not matched": 0}
    for (commit, folder, publisher), wanted in sorted(cases.items()):
        tree = trees[commit]
        if f"{folder}/{publisher}.json" not in tree:
            skipped["no test case"] += len(wanted)
            continue
        case = json.loads(_git(root, "show", f"{commit}:{folder}/{publisher}.json"))
        if not all(isinstance(v, dict) for v in case.values()):
            case = {"V1": case}  # the oldest test cases: one extraction, not per version
        extractions = [fundus_reference(v) for v in case.values() if _has_story(v)]
        files = sorted(p for p in tree if p.rpartition("/")[0] == folder
                       and ((name := p.rpartition("/")[2]) == f"{publisher}.html.gz"
                            or ((m := FUNDUS_HTML_RE.match(name)) and m["publisher"] == publisher)))
        if not extractions:
            skipped["no article body"] += len(wanted)
            continue
        if len(files) not in (1, len(extractions)):
            skipped["pages and parser versions not matched"] += len(wanted)
            continue
        htmls = [_decode(gzip.decompress(_git(root, "show", f"{commit}:{p}"))) for p in files]
        if len(files) == len(extractions):
            best = matched_extractions(htmls, extractions)
        else:  # versions of one page: the one whose words it holds most
            best = [max(range(len(extractions)),
                        key=lambda j: (coverage(htmls[0], extractions[j]), j))]
        meta_path = f"{folder}/meta.info"
        meta = json.loads(_git(root, "show", f"{commit}:{meta_path}")) if meta_path in tree else {}
        for path, html, index in zip(files, htmls, best, strict=True):
            if path not in wanted:
                continue
            name = path.rsplit("/", 1)[-1]
            url = (meta.get(name) or {}).get("url")
            if not url and (m := _PAGE_URL_RE.search(html)):
                url = m[1] or m[2]
            yield {"id": f"fundus-history/{folder.rsplit('/', 1)[-1]}/"
                         f"{name.removesuffix('.html.gz')}@{commit[:8]}",
                   "source": FUNDUS_SOURCE, "url": url, "html": html,
                   "reference": extractions[index], "reference_kind": "groundtruth",
                   "snippets": None}
    log("Fundus's earlier pages left out: " + ", ".join(f"{n} {why}"
                                                       for why, n in skipped.items()))


def iter_fundus_evaluation(root: Path) -> Iterator[dict]:
    """The Fundus evaluation set's 80 pages with their hand-extracted text."""
    base = root / "dataset"
    truth = json.loads((base / "ground_truth.json").read_text(encoding="utf-8"))
    for name in sorted(truth):
        entry = truth[name]
        yield {"id": f"fundus-evaluation/{name.removesuffix('.html.gz')}",
               "source": EVALUATION_SOURCE, "url": entry.get("url"),
               "html": _decode(gzip.decompress((base / "html" / name).read_bytes())),
               "reference": "\n".join(" ".join(p.split()) for p in entry["body"]),
               "reference_kind": "groundtruth", "snippets": None}


# -- Postlight Parser's fixtures ------------------------------------------------------------

POSTLIGHT_SOURCE = "postlight/parser"
POSTLIGHT_EXTRACTORS = Path("src") / "extractors" / "custom"
# a reference is kept only where it holds this share of the words the site's test expects the
# parser's content to begin with (its ``first13``-style excerpt)
POSTLIGHT_EXCERPT_SHARE = 0.8
# the keys of an extractor's ``content`` (prettier's layout: four spaces in) read here
_JS_KEY_RE = re.compile(r"^ {4}(selectors|clean):\s*\[", re.M)
_JS_STRING_RE = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`[^`$\\]*`""")
_JS_ESCAPE_RE = re.compile(r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)")
_TEST_CASE_RE = re.compile(r"\bdescribe\(")
_TEST_URL_RE = re.compile(r"\burl\s*=\s*(" + _JS_STRING_RE.pattern + ")", re.S)
_TEST_FIXTURE_RE = re.compile(r"readFileSync\(\s*['\"]\./fixtures/([^'\"]+)['\"]")
_TEST_ASSERT_RE = re.compile(r"assert\.equal\(\s*(title|dek|first\d+)\s*,\s*("
                             + _JS_STRING_RE.pattern + ")", re.S)
_DROPPED_TAGS = frozenset("script style noscript template iframe svg button select".split())
_VOID_TAGS = frozenset("area base br col embed hr img input link meta param source track "
                       "wbr".split())
_CLEAN_MARK = "data-modern-news-clean"
# the elements Postlight Parser's content cleaner may drop (``CLEAN_CONDITIONALLY_TAGS``)
POSTLIGHT_CONDITIONAL_TAGS = ("ul", "ol", "table", "div", "button", "form")


def _js_string(literal: str) -> str:
    """The value of a JavaScript string literal (quotes and escapes as in the extractors)."""
    def unescape(m: re.Match) -> str:
        code = m[1]
        if code[0] in "ux" and len(code) > 1:
            return chr(int(code[1:], 16))
        return {"n": "\n", "t": "\t"}.get(code, code)

    return _JS_ESCAPE_RE.sub(unescape, literal[1:-1])


def js_array(text: str, start: int) -> tuple[list, int]:
    """The array literal of strings (and arrays of strings) opening at ``text[start]``, and
    the offset after it; a ``ValueError`` for anything else (a variable, a function)."""
    if text[start] != "[":
        raise ValueError(f"no array at {start}")
    items: list = []
    i = start + 1
    while i < len(text):
        if text[i].isspace() or text[i] == ",":
            i += 1
        elif text.startswith("//", i):
            i = text.find("\n", i) % (len(text) + 1)
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
        elif text[i] == "]":
            return items, i + 1
        elif text[i] == "[":
            inner, i = js_array(text, i)
            items.append(inner)
        elif m := _JS_STRING_RE.match(text, i):
            items.append(_js_string(m[0]))
            i = m.end()
        else:
            raise ValueError(f"not a string array: {text[i:i + 30]!r}")
    raise ValueError("unclosed array")


def postlight_content_rule(extractor_js: str) -> dict[str, list]:
    """A custom extractor's ``content`` selectors and clean selectors (``index.js``)."""
    content = re.search(r"^ {2}content:\s*\{", extractor_js, re.M)
    if content is None:
        raise ValueError("no content rule")
    end = re.compile(r"^ {2}\S|^\S", re.M).search(extractor_js, content.end())
    block = extractor_js[content.end():end.start() if end else len(extractor_js)]
    rule: dict[str, list] = {"selectors": [], "clean": []}
    for key in _JS_KEY_RE.finditer(block):
        rule[key[1]] = js_array(block, key.end() - 1)[0]
    if not rule["selectors"]:
        raise ValueError("no content selectors")
    return rule


def postlight_cases(test_js: str) -> list[dict]:
    """A custom extractor's test cases (``index.test.js``): each ``describe`` block that reads
    a fixture, with its page URL, its fixture's name and the asserted title, dek and content
    excerpt (``first13``) where asserted."""
    cases = []
    starts = [m.start() for m in _TEST_CASE_RE.finditer(test_js)] + [len(test_js)]
    for begin, end in itertools.pairwise(starts):
        part = test_js[begin:end]
        fixture = _TEST_FIXTURE_RE.search(part)
        url = _TEST_URL_RE.search(part)
        if fixture is None or url is None:
            continue
        asserted = {("excerpt" if k.startswith("first") else k): _js_string(v)
                    for k, v in _TEST_ASSERT_RE.findall(part)}
        cases.append({"fixture": fixture[1], "url": _js_string(url[1]), **asserted})
    return cases


class _BlockLines(HTMLParser):
    """An element's text, a line per block (inline elements do not end a line), without
    script-like elements and without the subtrees marked ``_CLEAN_MARK``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = [""]
        self.skip: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in _VOID_TAGS:
            if tag not in INLINE_TAGS:
                self.lines.append("")
            return
        if self.skip or tag in _DROPPED_TAGS or any(k == _CLEAN_MARK for k, _ in attrs):
            self.skip.append(tag)
        elif tag not in INLINE_TAGS:
            self.lines.append("")

    def handle_endtag(self, tag):
        if tag in _VOID_TAGS:
            return
        if self.skip:
            if self.skip[-1] == tag:
                self.skip.pop()
        elif tag not in INLINE_TAGS:
            self.lines.append("")

    def handle_data(self, data):
        if not self.skip:
            self.lines[-1] += data


def block_lines(fragment: str) -> str:
    parser = _BlockLines()
    parser.feed(fragment)
    parser.close()
    return "\n".join(" ".join(line.split()) for line in parser.lines if line.strip())


def _css(tree, selector: str) -> list:
    try:
        return tree.css(selector)
    except Exception:  # noqa: BLE001 -- a selector lexbor cannot read matches nothing
        return []


def _link_block(element) -> bool:
    """Whether Postlight Parser's content cleaner drops an element as a link list or an empty
    box (``cleanTags``' rules for an element of its low weight: under 10 commas, and a linked
    share of its characters over 0.2 and over 75 characters, or under 25 characters and no
    image)."""
    text = " ".join(element.text().split())
    if text.count(",") >= 10:
        return False
    if len(text) < 25:
        return not element.css_first("img")
    linked = sum(len(" ".join(a.text().split())) for a in element.css("a"))
    return len(text) > 75 and linked > 0.2 * len(text)


def postlight_content(html: str, rule: dict[str, list]) -> str | None:
    """The text of what the extractor's content rule selects on a page, as Postlight Parser
    picks it (``findMatchingSelector``: the first selector matching exactly one element with
    text, or the first list of selectors each matching an element, whose matches are taken
    together), less what its clean selectors match and the link lists and empty boxes its
    content cleaner drops (``_link_block``); None when no selector matches."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    chosen = None
    for selector in rule["selectors"]:
        if isinstance(selector, list):
            if selector and all(_css(tree, s) for s in selector):
                chosen = _css(tree, ", ".join(selector))
                break
        elif len(found := _css(tree, selector)) == 1 and found[0].text().strip():
            chosen = found
            break
    if not chosen:
        return None
    for selector in rule["clean"]:
        for node in _css(tree, selector):
            node.attrs[_CLEAN_MARK] = ""
    ids = {node.mem_id for node in chosen}
    for node in chosen:
        for element in node.css(", ".join(POSTLIGHT_CONDITIONAL_TAGS)):
            if element.mem_id not in ids and _link_block(element):
                element.attrs[_CLEAN_MARK] = ""

    def inside_another(node) -> bool:
        parent = node.parent
        while parent is not None:
            if parent.mem_id in ids:
                return True
            parent = parent.parent
        return False

    return "\n".join(block_lines(node.html or "") for node in chosen if not inside_another(node))


def iter_postlight(root: Path, log=print) -> Iterator[dict]:
    """Postlight Parser's fixture pages, each with the text its site's custom extractor
    selects (title and dek as its test asserts them, then the content); a page is kept only
    where that text holds ``POSTLIGHT_EXCERPT_SHARE`` of the words of the content excerpt the
    test asserts (counted in the log when not)."""
    from eval.metrics import words

    base = root / POSTLIGHT_EXTRACTORS
    if not base.is_dir():
        raise FileNotFoundError(f"{base}: not a Postlight Parser checkout "
                                f"(no {POSTLIGHT_EXTRACTORS})")
    left_out: dict[str, int] = {}
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        test = folder / "index.test.js"
        try:
            rule = postlight_content_rule((folder / "index.js").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            left_out["no readable content rule"] = left_out.get("no readable content rule",
                                                                0) + 1
            continue
        for case in postlight_cases(test.read_text(encoding="utf-8") if test.is_file() else ""):
            fixture = root / "fixtures" / case["fixture"]
            why = None
            if "excerpt" not in case or not fixture.is_file():
                why = "no fixture or no asserted content excerpt"
            else:
                html = _decode(fixture.read_bytes())
                content = postlight_content(html, rule)
                excerpt = words(case["excerpt"])
                found = set(words(content or ""))
                if content is None:
                    why = "no content selector matches"
                elif sum(w in found for w in excerpt) < POSTLIGHT_EXCERPT_SHARE * len(excerpt):
                    why = "the content misses the asserted excerpt"
            if why:
                left_out[why] = left_out.get(why, 0) + 1
                continue
            lines = [" ".join(case.get(k, "").split()) for k in ("title", "dek")]
            yield {"id": f"postlight/{case['fixture'].removesuffix('.html')}",
                   "source": POSTLIGHT_SOURCE, "url": case["url"], "html": html,
                   "reference": "\n".join([*filter(None, lines), content]),
                   "reference_kind": "groundtruth", "snippets": None}
    log("Postlight fixtures left out: " + (", ".join(f"{n} {why}" for why, n in
                                                     sorted(left_out.items())) or "none"))


def held_apart_bucket(site: str) -> bool:
    """Whether a site falls in the held-apart share by the sha1 of its name."""
    return int(hashlib.sha1(site.encode()).hexdigest(), 16) % BUCKETS < HELDOUT_BUCKETS


_PAGE_URL_RE = re.compile(
    r"""<link\b[^>]*\brel=["']?canonical["']?[^>]*\bhref=["']([^"']+)["']"""
    r"""|<meta\b[^>]*\bproperty=["']og:url["'][^>]*\bcontent=["']([^"']+)["']""", re.I)


def page_site(page: dict) -> str | None:
    """A page's site: of its ``url``, else of the canonical link or ``og:url`` in its HTML
    (Dragnet's and the readability pages' records carry no URL)."""
    if site := site_of(page.get("url")):
        return site
    m = _PAGE_URL_RE.search(page.get("html") or "")
    return site_of(m[1] or m[2]) if m else None


def measured_sets_sites(out: Path, heldout: list[dict]) -> dict[str, set[str]]:
    """The sites of the sets this project chooses and measures on (the held-apart modern news,
    the readability pages, L3S-GN1, Dragnet; ``page_site``), which pages to learn from must
    not come from."""
    from eval.article_sets import SETS, load_article_set
    from eval.pages import calibration_pages

    sets = {MODERN_NEWS_HELDOUT: heldout, "readability": calibration_pages(),
            **{name: load_article_set(name, out) for name in SETS}}
    return {name: {s for p in pages if (s := page_site(p))} for name, pages in sets.items()}


class _Admission:
    """Whether a page enters a set, and the record of each page that does not: no URL, a
    judge's site (``dropped``, for independence), a site of the sets chosen and measured on
    (``measured``, where the caller names them), no reference word or HTML under
    ``MIN_HTML_BYTES``, or HTML already admitted (``left_out`` counts). One instance across
    every source, so a page repeated between sources enters once."""

    def __init__(self, judged: set[str]) -> None:
        self.judged = judged
        self.dropped: dict[str, list[str]] = {}
        self.measured: dict[str, dict] = {}
        self.left_out = {"no reference word or HTML under 500 bytes": 0, "repeated HTML": 0,
                         "no URL": 0}
        self.seen: set[str] = set()

    def site(self, page: dict, measured_on: dict[str, set[str]] | None = None) -> str | None:
        """``page``'s site if it enters, else None with the reason recorded;
        ``measured_on``: set name -> its sites, whose pages are kept out (and listed)."""
        from eval.metrics import words

        site = site_of(page["url"])
        if site is None:
            self.left_out["no URL"] += 1
        elif site in self.judged:
            self.dropped.setdefault(site, []).append(page["id"])
        elif sets := sorted(k for k, v in (measured_on or {}).items() if site in v):
            entry = self.measured.setdefault(site, {"sets": sets, "pages": []})
            entry["pages"].append(page["id"])
        elif not words(page["reference"]) or len(page["html"].encode()) < MIN_HTML_BYTES:
            self.left_out["no reference word or HTML under 500 bytes"] += 1
        elif (digest := hashlib.sha1(page["html"].encode()).hexdigest()) in self.seen:
            self.left_out["repeated HTML"] += 1
        else:
            self.seen.add(digest)
            return site
        return None


def build(fundus: Path, evaluation: Path, wcxb: Path, zyte: Path, out: Path = ARTICLE_SETS_DIR,
          log=print, postlight: Path | None = None, fundus_history: bool = False) -> dict:
    """Both splits into ``out`` and the record of the sites left out for independence; with
    ``postlight``, the ``POSTLIGHT_TRAIN`` of Postlight Parser's fixtures, and with
    ``fundus_history``, the ``FUNDUS_HISTORY_TRAIN`` of Fundus's earlier test pages (both to
    learn from: no page of a judge's site nor of a site of the sets chosen and measured on,
    ``measured_sets_sites``, nor of a site held apart) too; returns what was written (counts,
    sites)."""
    judges = judge_sites(wcxb, zyte)
    judged = set().union(*judges.values())
    evaluation_pages = list(iter_fundus_evaluation(evaluation))
    evaluation_sites = {site_of(p["url"]) for p in evaluation_pages}
    splits: dict[str, list[dict]] = {MODERN_NEWS_TRAIN: [], MODERN_NEWS_HELDOUT: []}
    admission = _Admission(judged)
    for page in [*evaluation_pages, *iter_fundus(fundus)]:
        if (site := admission.site(page)) is None:
            continue
        page["site"] = site
        held = (page["source"] == EVALUATION_SOURCE or site in evaluation_sites
                or held_apart_bucket(site))
        splits[MODERN_NEWS_HELDOUT if held else MODERN_NEWS_TRAIN].append(page)
    chosen_on = (measured_sets_sites(out, splits[MODERN_NEWS_HELDOUT])
                 if postlight is not None or fundus_history else {})
    if postlight is not None:
        splits[POSTLIGHT_TRAIN] = [{**page, "site": site}
                                   for page in iter_postlight(postlight, log=log)
                                   if (site := admission.site(page, chosen_on)) is not None]
    if fundus_history:
        earlier = list(iter_fundus_history(fundus, log=log))
        # the held-apart share's sites by the split's rule, with or without a page there now
        # (a publisher Fundus has dropped since has none)
        held_apart = {site for page in earlier
                      if (site := site_of(page["url"])) and held_apart_bucket(site)}
        measured_on = {**chosen_on, "held-apart share": held_apart}
        splits[FUNDUS_HISTORY_TRAIN] = [
            {**page, "site": site} for page in earlier
            if (site := admission.site(page, measured_on)) is not None]
    dropped, left_out, measured = admission.dropped, admission.left_out, admission.measured
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, pages in splits.items():
        path = article_set_path(name, out)
        unfinished = path.with_suffix(".tmp")
        with gzip.open(unfinished, "wt", encoding="utf-8") as fh:
            for page in pages:
                fh.write(json.dumps(page, ensure_ascii=False) + "\n")
        unfinished.rename(path)
        sites = sorted({p["site"] for p in pages})
        written[name] = {"pages": len(pages), "sites": len(sites)}
        log(f"{name}: {len(pages)} pages of {len(sites)} sites -> {path}")
    record = {
        "judges": {"wcxb-test": "WCXB's test split (metadata.json: domain of each test file)",
                   "zyte": "Zyte's article-extraction-benchmark (ground-truth.json: url)"},
        "dropped_sites": {site: {"judges": sorted(k for k, v in judges.items() if site in v),
                                 "pages": ids} for site, ids in sorted(dropped.items())},
        "left_out": left_out, "splits": written,
        **({"sites_measured_on": dict(sorted(measured.items()))}
           if postlight is not None or fundus_history else {})}
    (out / DROPPED_NAME).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    log(f"left out for independence: {sum(len(v) for v in dropped.values())} pages of "
        f"{len(dropped)} sites in the judges' sets ({', '.join(sorted(dropped))}) -> "
        f"{out / DROPPED_NAME}")
    if postlight is not None or fundus_history:
        log(f"pages to learn from left out as sites of the sets chosen and measured on: "
            f"{sum(len(v['pages']) for v in measured.values())} pages of {len(measured)} sites")
    log("left out: " + ", ".join(f"{n} {why}" for why, n in left_out.items()))
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.modern_news",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--fundus", type=Path, required=True,
                        help="checkout of github.com/flairNLP/fundus (its test pages)")
    parser.add_argument("--fundus-evaluation", type=Path, required=True,
                        help="checkout of github.com/dobbersc/fundus-evaluation")
    parser.add_argument("--wcxb", type=Path, required=True,
                        help="checkout of WCXB (github.com/Murrough-Foley/web-content-"
                             "extraction-benchmark): only its metadata.json's test domains "
                             "are read")
    parser.add_argument("--zyte", type=Path, required=True,
                        help="checkout of github.com/scrapinghub/article-extraction-benchmark:"
                             " only its ground-truth.json's URLs are read")
    parser.add_argument("--postlight", type=Path,
                        help="checkout of github.com/postlight/parser: its fixtures and custom "
                             f"extractors, built into {POSTLIGHT_TRAIN} (needs l3s-gn1 and "
                             "dragnet built in --out: python -m eval.article_sets)")
    parser.add_argument("--fundus-history", action="store_true",
                        help=f"also build {FUNDUS_HISTORY_TRAIN} from the test pages --fundus "
                             "held at earlier commits (--fundus must then be a git clone with "
                             "its history; needs l3s-gn1 and dragnet built in --out)")
    parser.add_argument("--out", type=Path, default=ARTICLE_SETS_DIR)
    args = parser.parse_args(argv)
    build(args.fundus, args.fundus_evaluation, args.wcxb, args.zyte, args.out,
          postlight=args.postlight, fundus_history=args.fundus_history)
    return 0


if __name__ == "__main__":
    sys.exit(main())
