"""Today's news pages, to learn from and to choose on: Fundus's parser test pages and the
Fundus evaluation set, rebuilt into the corpus record format (``pulpie_rt.corpus``), with a
train split and a held-apart split of other sites.

    python -m eval.modern_news --fundus DIR --fundus-evaluation DIR \\
        --wcxb DIR --zyte DIR [--out DIR]

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
folders are required: the sets cannot be built without checking against them.

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
from pathlib import Path
from urllib.parse import urlsplit

from eval.article_sets import (
    ARTICLE_SETS_DIR,
    MIN_HTML_BYTES,
    MODERN_NEWS_HELDOUT,
    MODERN_NEWS_TRAIN,
    article_set_path,
)

DROPPED_NAME = "modern-news-dropped.json"
FUNDUS_SOURCE = "flairNLP/fundus"
EVALUATION_SOURCE = "dobbersc/fundus-evaluation"
FUNDUS_TEST_DATA = Path("tests") / "resources" / "parser" / "test_data"
# a site is held apart when the sha1 of its name falls in the first HELDOUT_BUCKETS of BUCKETS
BUCKETS = 5
HELDOUT_BUCKETS = 1
# second-level labels under which a registrable domain has three labels (news.bbc.co.uk ->
# bbc.co.uk, www.smh.com.au -> smh.com.au): the country suffixes the sets' sites use
SECOND_LEVEL = frozenset("co com net org gov ac edu ne or go gob nic mil".split())
FUNDUS_HTML_RE = re.compile(r"^(?P<publisher>.+)_(?P<date>\d{4}_\d{2}_\d{2})\.html\.gz$")


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


def iter_fundus(root: Path) -> Iterator[dict]:
    """Fundus's test pages, each with the parser version's extraction that matches it: the
    assignment of a publisher's versions to its pages (as many of each) under which the most
    reference words are found in their pages (the version names do not follow the crawl
    dates everywhere: WAZ's ``V1`` is its 2025 page)."""
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
            covered = [[coverage(h, r) for r in references] for h in htmls]
            best = max(itertools.permutations(range(len(references))),
                       key=lambda order: sum(covered[i][j] for i, j in enumerate(order)))
            for page, html, version in zip(files, htmls, best, strict=True):
                url = (meta.get(page.name) or {}).get("url")
                yield {"id": f"fundus/{country.name}/{page.name.removesuffix('.html.gz')}",
                       "source": FUNDUS_SOURCE, "url": url, "html": html,
                       "reference": references[version],
                       "reference_kind": "groundtruth", "snippets": None}


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


def held_apart_bucket(site: str) -> bool:
    """Whether a site falls in the held-apart share by the sha1 of its name."""
    return int(hashlib.sha1(site.encode()).hexdigest(), 16) % BUCKETS < HELDOUT_BUCKETS


def build(fundus: Path, evaluation: Path, wcxb: Path, zyte: Path, out: Path = ARTICLE_SETS_DIR,
          log=print) -> dict:
    """Both splits into ``out`` and the record of the sites left out for independence; returns
    what was written (counts, sites)."""
    from eval.metrics import words

    judges = judge_sites(wcxb, zyte)
    judged = set().union(*judges.values())
    evaluation_pages = list(iter_fundus_evaluation(evaluation))
    evaluation_sites = {site_of(p["url"]) for p in evaluation_pages}
    splits: dict[str, list[dict]] = {MODERN_NEWS_TRAIN: [], MODERN_NEWS_HELDOUT: []}
    dropped: dict[str, list[str]] = {}
    left_out = {"no reference word or HTML under 500 bytes": 0, "repeated HTML": 0,
                "no URL": 0}
    seen: set[str] = set()
    for page in [*evaluation_pages, *iter_fundus(fundus)]:
        site = site_of(page["url"])
        if site is None:
            left_out["no URL"] += 1
            continue
        if site in judged:
            dropped.setdefault(site, []).append(page["id"])
            continue
        if not words(page["reference"]) or len(page["html"].encode()) < MIN_HTML_BYTES:
            left_out["no reference word or HTML under 500 bytes"] += 1
            continue
        digest = hashlib.sha1(page["html"].encode()).hexdigest()
        if digest in seen:
            left_out["repeated HTML"] += 1
            continue
        seen.add(digest)
        page["site"] = site
        held = (page["source"] == EVALUATION_SOURCE or site in evaluation_sites
                or held_apart_bucket(site))
        splits[MODERN_NEWS_HELDOUT if held else MODERN_NEWS_TRAIN].append(page)
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
        "left_out": left_out, "splits": written}
    (out / DROPPED_NAME).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    log(f"left out for independence: {sum(len(v) for v in dropped.values())} pages of "
        f"{len(dropped)} sites in the judges' sets ({', '.join(sorted(dropped))}) -> "
        f"{out / DROPPED_NAME}")
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
    parser.add_argument("--out", type=Path, default=ARTICLE_SETS_DIR)
    args = parser.parse_args(argv)
    build(args.fundus, args.fundus_evaluation, args.wcxb, args.zyte, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
