"""Page metadata (issue 48): what reading it costs, and how often it is right, beside
trafilatura's metadata on the same pages.

    python -m bench.metadata cost [--corpus dev] [--pages N] [--repeats R] [--out PATH]
    python -m bench.metadata quality [--corpora dev train] [--out PATH]

``cost`` (a ``make bench`` row): the default model's fast profile over the pages with the
metadata read and without (``Engine(metadata=False)``), page by page back to back, the order
alternating (``harness.side_by_side``: CPU seconds of this process), after one warm-up pass.
Prints pages per CPU-second of each and their ratio (issue 48's bar: the metadata costs at
most 5%).

``quality`` (a ``make quality`` row): pages whose JSON-LD states a field's value (an
article's or web page's ``headline``/``name``, ``datePublished``, ``inLanguage``, ``url``)
give the known value; every JSON-LD script is removed from the page before either extractor
reads it, so the field is held out and must come from the page's other markup. Exact-match
rates: the title (whitespace collapsed), the date (its day, ``YYYY-MM-DD``), the language (ISO
639 primary subtag) and the URL (the record's URL given to both, as ``pulpie-rt run`` gives
a WARC record's). trafilatura's is ``trafilatura.extract_metadata`` (which has no language:
its language comes from ``py3langid`` over its extracted text, when that is installed). A
second language row removes the declarations too (``lang``, ``Content-Language``,
``og:locale``): the detectors alone; a third scores them so against what ``<html lang>``
declared, on every page declaring one (but the readability fixtures, lorem ipsum). Pages: the
dev and train corpora (WCXB's dev split, never its test split, and no page of Zyte's
benchmark).
"""

from __future__ import annotations

import argparse
import html as html_lib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from eval.report import format_table, machine_info, write_result

JSON_LD = re.compile(r"<script\b[^>]*\btype\s*=\s*[\"']?application/ld\+json[\"']?[^>]*>"
                     r"(.*?)</script\s*>", re.I | re.S)
# what declares a page's language: removed for the detector-only row
DECLARED_LANGUAGE = (
    re.compile(r"(<html\b[^>]*?)\s(?:xml:)?lang\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]+)", re.I),
    re.compile(r"<meta\b[^>]*(?:http-equiv|name)\s*=\s*[\"']?(?:content-)?language[^>]*>", re.I),
    re.compile(r"<meta\b[^>]*og:locale[^>]*>", re.I),
)
FIELDS = ("title", "date", "language", "url")
DETECTED = "language, detected"
# the detectors against what <html lang> declares, on every page declaring one (JSON-LD's
# inLanguage is mostly English on these pages)
DETECTED_HTML_LANG = "language, detected vs <html lang>"
HTML_LANG = re.compile(r"<html\b[^>]*?\slang\s*=\s*[\"']?([A-Za-z]{2,3})\b", re.I)


def _objects(value: Any, depth: int = 0) -> Iterator[dict]:
    if depth > 4:
        return
    if isinstance(value, list):
        for item in value:
            yield from _objects(item, depth + 1)
    elif isinstance(value, dict):
        yield value
        yield from _objects(value.get("@graph"), depth + 1)


def _types(obj: dict) -> list[str]:
    kind = obj.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return [k.rsplit("/", 1)[-1] for k in kinds if isinstance(k, str)]


def _text(value: Any) -> str | None:
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, str)), None)
    if not isinstance(value, str):
        return None
    return " ".join(html_lib.unescape(value).split()) or None


def known_values(page_html: str) -> dict[str, str]:
    """What the page's JSON-LD states of it: the article's value (any ``…Article``,
    ``…Posting``), else its web page's (any ``…Page``)."""
    objects: list[dict] = []
    for script in JSON_LD.findall(page_html):
        try:
            objects.extend(_objects(json.loads(script)))
        except ValueError:
            continue
    main = [o for o in objects if any(t.endswith(("Article", "Posting")) for t in _types(o))][:1]
    main += [o for o in objects if any(t.endswith("Page") for t in _types(o))][:1]
    known: dict[str, str] = {}
    for obj in main:
        title = _text(obj.get("headline")) or _text(obj.get("name"))
        date = _text(obj.get("datePublished"))
        language = _text(obj.get("inLanguage"))
        url = _text(obj.get("url"))
        if title and "title" not in known:
            known["title"] = title
        if date and re.match(r"\d{4}-\d{2}-\d{2}", date) and "date" not in known:
            known["date"] = date[:10]
        if language and re.fullmatch(r"[A-Za-z]{2,3}([-_].*)?", language) and \
                "language" not in known:
            known["language"] = re.split(r"[-_]", language)[0].lower()
        if url and url.startswith(("http://", "https://")) and "url" not in known:
            known["url"] = url
    return known


def held_out(page_html: str, declarations: bool = False) -> str:
    """The page without its JSON-LD (and, with ``declarations``, without what declares its
    language)."""
    page_html = JSON_LD.sub("", page_html)
    if declarations:
        page_html = DECLARED_LANGUAGE[0].sub(r"\1", page_html, count=1)
        for pattern in DECLARED_LANGUAGE[1:]:
            page_html = pattern.sub("", page_html)
    return page_html


def _same(field: str, got: str | None, known: str) -> bool:
    if got is None:
        return False
    if field == "title":
        return " ".join(got.split()) == known
    if field == "date":
        return got[:10] == known
    return got == known


def ours_values(extract: Callable[[str], Any], page_html: str, url: str | None
                ) -> dict[str, str | None]:
    from pulpie_rt.runtime.flow import schema

    result = extract(page_html)
    canonical = schema.record(None, result, url=url)["canonical_url"] if url else \
        result.canonical_url
    return {"title": result.title, "date": result.published, "language": result.language,
            "url": canonical}


def trafilatura_values(page_html: str, url: str | None) -> dict[str, str | None]:
    import trafilatura

    meta = trafilatura.extract_metadata(page_html, default_url=url)
    language = None
    try:
        import py3langid

        text = trafilatura.extract(page_html) or ""
        language = py3langid.classify(text)[0] if text.strip() else None
    except ImportError:
        pass
    return {"title": meta.title, "date": meta.date, "language": language, "url": meta.url}


def quality(corpora: list[str]) -> dict[str, Any]:
    import trafilatura

    from eval.pages import is_readability_fixture
    from pulpie_rt.corpus import iter_pages
    from pulpie_rt.runtime.flow.extractor import Extractor

    try:
        import py3langid  # noqa: F401

        trafilatura_language = "py3langid over trafilatura's text"
    except ImportError:
        trafilatura_language = None
    extractor = Extractor()
    rows: dict[str, dict[str, list[int]]] = {
        name: {"ours": [0, 0], "trafilatura": [0, 0]}
        for name in (*FIELDS, DETECTED, DETECTED_HTML_LANG)}
    declared_languages: dict[str, int] = {}
    per_page = []
    for corpus in corpora:
        for page in iter_pages(corpus):
            declared = HTML_LANG.search(page["html"][:5000])
            fixture = page["source"] == "mozilla/readability" and is_readability_fixture(page)
            if declared and not fixture:
                language = declared.group(1).lower()
                declared_languages[language] = declared_languages.get(language, 0) + 1
                bare = held_out(page["html"], declarations=True)
                detected = {"ours": extractor.extract(bare).language,
                            "trafilatura": trafilatura_values(bare, None)["language"]}
                for side, got in detected.items():
                    rows[DETECTED_HTML_LANG][side][0] += got == language
                    rows[DETECTED_HTML_LANG][side][1] += 1
            known = known_values(page["html"])
            if not known:
                continue
            stripped = held_out(page["html"])
            ours = ours_values(extractor.extract, stripped, page.get("url"))
            theirs = trafilatura_values(stripped, page.get("url"))
            outcome = {"id": page["id"], "known": known, "ours": ours, "trafilatura": theirs}
            for field, value in known.items():
                for side, got in (("ours", ours), ("trafilatura", theirs)):
                    rows[field][side][0] += _same(field, got[field], value)
                    rows[field][side][1] += 1
            if "language" in known:
                bare = held_out(page["html"], declarations=True)
                detected = {"ours": extractor.extract(bare).language,
                            "trafilatura": trafilatura_values(bare, None)["language"]}
                for side, got in detected.items():
                    rows[DETECTED][side][0] += got == known["language"]
                    rows[DETECTED][side][1] += 1
                outcome["detected"] = detected
            per_page.append(outcome)
    return {"corpora": corpora, "pages": len(per_page),
            "trafilatura": trafilatura.__version__,
            "trafilatura_language": trafilatura_language,
            "declared_languages": dict(sorted(declared_languages.items(),
                                              key=lambda item: -item[1])),
            "rows": {name: {side: {"right": r, "pages": n, "rate": r / n if n else None}
                            for side, (r, n) in sides.items()}
                     for name, sides in rows.items()},
            "per_page": per_page}


def quality_table(result: dict[str, Any]) -> str:
    def rate(cell: dict) -> str:
        if cell["rate"] is None:
            return "—"
        return f"{cell['rate']:.3f} ({cell['right']}/{cell['pages']})"

    lines = []
    for name, sides in result["rows"].items():
        theirs = sides["trafilatura"]
        no_language = name.startswith("language") and result["trafilatura_language"] is None
        lines.append((name, sides["ours"]["pages"], rate(sides["ours"]),
                      "— (no language in its metadata)" if no_language else rate(theirs)))
    return (f"Page metadata, exact match on {result['pages']} pages of "
            f"{' + '.join(result['corpora'])} whose JSON-LD states the value (JSON-LD removed "
            f"before extraction), trafilatura {result['trafilatura']}:\n"
            + format_table(("field", "pages", "pulpie-rt", "trafilatura"), lines)
            + f"\n<html lang> of the pages declaring one: {result['declared_languages']}")


def cost(pages: list[dict], corpus: str, repeats: int) -> dict[str, Any]:
    """The fast profile over ``pages`` (records with ``html``; from ``corpus``) with the
    metadata and without, interleaved."""
    from bench.harness import side_by_side
    from pulpie_rt.runtime.flow.extractor import Extractor

    htmls = [p["html"] for p in pages]
    with_metadata = Extractor(threads=1)
    without = Extractor(threads=1, metadata=False)
    for page_html in htmls:  # warm-up
        with_metadata.extract(page_html), without.extract(page_html)
    result = side_by_side("metadata", htmls, with_metadata.extract, without.extract,
                          repeats=repeats,
                          same=lambda a, b: a.markdown == b.markdown).as_dict()
    return {"corpus": corpus, "n_pages": len(htmls), "repeats": repeats, **result}


def cost_line(result: dict[str, Any]) -> str:
    return (f"Metadata cost, fast profile on {result['n_pages']} {result['corpus']} pages x "
            f"{result['repeats']}: with {result['ours_pages_per_cpu_s']:.1f}, without "
            f"{result['ref_pages_per_cpu_s']:.1f} pages per CPU-second: ratio "
            f"{result['ratio']:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.metadata",
                                     description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cost_parser = commands.add_parser("cost", help="pages per CPU-second with and without")
    cost_parser.add_argument("--corpus", default="dev")
    cost_parser.add_argument("--pages", type=int, default=None)
    cost_parser.add_argument("--repeats", type=int, default=3)
    cost_parser.add_argument("--out", default=None, help="JSON result (a file or a folder)")
    quality_parser = commands.add_parser("quality", help="exact-match rates beside trafilatura")
    quality_parser.add_argument("--corpora", nargs="+", default=["dev", "train"])
    quality_parser.add_argument("--out", default=None, help="JSON result (a file or a folder)")
    args = parser.parse_args(argv)
    if args.command == "cost":
        from eval.pages import bench_pages

        result = cost(bench_pages(args.pages, None, args.corpus), args.corpus, args.repeats)
        print(cost_line(result))
        kind = "metadata-cost"
    else:
        result = quality(args.corpora)
        print(quality_table(result))
        kind = "metadata-quality"
    if args.out:
        path = write_result(kind, {"kind": kind, "machine": machine_info(), **result}, args.out)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
