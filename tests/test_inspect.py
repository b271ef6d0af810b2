"""The page inspector (``pulpie-rt inspect``, the service's ``/inspect``) in a real browser.

Debian's ``chromium`` (``.ci/run`` installs it), driven headless by Playwright over the
system's browser (no browser download): each test opens a report as a user does, reads the
kept and dropped blocks it shows (and their scores) and checks them against the engine's
labels and scores for that page, uses its filter, and saves a screenshot into
``build/test-artifacts/`` (``ARTIFACTS``), which the run keeps. A hostile page (script,
event handlers, markup that tries to close the report's own elements) must run nothing in
the report and make it fetch nothing.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rt_helpers import start_server

from pulpie_rt import Extractor
from pulpie_rt.corpus import load_pages
from pulpie_rt.runtime.flow.engine import Engine
from pulpie_rt.runtime.inspector import inspect_page, report_html

sync_api = pytest.importorskip("playwright.sync_api")

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "build" / "test-artifacts"
# a page that tries everything a page could to run script in, or leave, the report
HOSTILE_PAGE = """<!doctype html><html><head><title>x</title>
<script>window.__pwned = "head script";</script>
<base href="http://example.invalid/"><link rel="stylesheet" href="http://example.invalid/a.css">
</head><body>
<article><h1 onmouseover="window.__pwned='handler'">Breaking <script>window.__pwned='inline'
</script>news</h1>
<p>The council met on Tuesday to discuss the new budget, which raises spending on schools and
roads by a tenth. &lt;img src=x onerror="window.__pwned='escaped'"&gt; Residents who spoke at
the meeting asked for more parks. </pre></div></section><script>window.__pwned='closed'</script>
The vote is next week, and the mayor expects it to pass by a wide margin.</p>
<p><img src="http://example.invalid/x.png" onerror="window.__pwned='img'">
<a href="javascript:window.__pwned='link'">a link</a> "quotes" & 'apostrophes' in the text of
a second paragraph that is long enough to be read as prose by any model at all.</p>
<iframe src="http://example.invalid/frame"></iframe><svg onload="window.__pwned='svg'"></svg>
</article><footer>Copyright 2026 &lt;/style&gt;&lt;script&gt;window.__pwned='footer'
&lt;/script&gt;</footer></body></html>"""


def chromium() -> str:
    """The system's chromium (Debian's package); skipped where none is installed."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium on this machine (.ci/run installs Debian's chromium)")
    return path


@pytest.fixture(scope="module")
def browser():
    path = chromium()
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, headless=True,
                                              args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def dev_pages() -> list[dict]:
    """Three dev pages: a short, a middling and a long one."""
    pages = sorted(load_pages("dev"), key=lambda p: len(p["html"]))
    return [pages[10], pages[len(pages) // 2], pages[-20]]


def shown_blocks(page) -> list[dict]:
    """The blocks the report shows, as a user reads them: each one's id, whether it is shaded
    kept, its verdict and score as printed, and whether it is visible."""
    return page.eval_on_selector_all(".block", """blocks => blocks.map(b => ({
        id: b.dataset.itemId, kept: b.classList.contains('main'),
        verdict: b.querySelector('.verdict').textContent,
        score: b.querySelector('.score').textContent,
        shaded: getComputedStyle(b).backgroundColor,
        visible: b.offsetParent !== null}))""")


def check_against_engine(shown: list[dict], labels: dict[str, str], scores: dict[str, float]
                         ) -> None:
    assert [b["id"] for b in shown] == list(labels)
    assert [b["kept"] for b in shown] == [labels[i] == "main" for i in labels]
    assert [b["verdict"] for b in shown] == ["kept" if labels[i] == "main" else "dropped"
                                            for i in labels]
    for block in shown:
        score = scores[block["id"]]
        printed = block["score"].removeprefix("score ")
        assert printed == ("none" if math.isnan(score) else f"{score:+.3f}"), block
    # kept and dropped blocks are shaded differently
    assert len({b["shaded"] for b in shown if b["kept"]}) == 1
    assert not {b["shaded"] for b in shown if b["kept"]} & {b["shaded"] for b in shown
                                                            if not b["kept"]}


def open_report(browser, url: str):
    """A page of ``browser`` at ``url``, recording every request it makes and every dialog
    and error a script raises."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.requests_made = []
    page.script_events = []
    page.on("request", lambda r: page.requests_made.append(r.url))
    page.on("dialog", lambda d: (page.script_events.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: page.script_events.append(str(e)))
    page.goto(url)
    return page


def filter_shows(page, which: str) -> tuple[int, int]:
    page.check(f'input[name="show"][value="{which}"]')
    shown = shown_blocks(page)
    return (sum(b["visible"] and b["kept"] for b in shown),
            sum(b["visible"] and not b["kept"] for b in shown))


@pytest.mark.parametrize("favor", ["balanced", "precision"])
def test_the_cli_report_shows_the_engines_labels_and_scores(browser, dev_pages, tmp_path,
                                                             favor):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    extractor = Extractor(favor=favor)
    for number, page_record in enumerate(dev_pages):
        page_file = tmp_path / f"page{number}.html"
        page_file.write_text(page_record["html"], encoding="utf-8")
        out = tmp_path / f"report{number}.html"
        run = subprocess.run([sys.executable, "-m", "pulpie_rt.cli", "inspect", str(page_file),
                              "--out", str(out), "--favor", favor, "--url",
                              "https://example.org/page"], capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stderr
        expected = extractor.extract(page_file.read_bytes())
        assert expected.labels and "main" in expected.labels.values()
        report = open_report(browser, out.as_uri())
        shown = shown_blocks(report)
        check_against_engine(shown, expected.labels, expected.scores)
        facts = report.inner_text("header .facts")
        assert f"favor {favor}" in facts
        assert f"threshold {expected.threshold:+.3f}" in facts
        assert report.inner_text("#markdown pre").strip() == expected.markdown.strip()
        n_main = expected.n_main
        assert filter_shows(report, "main") == (n_main, 0)
        assert filter_shows(report, "other") == (0, expected.n_other)
        assert filter_shows(report, "all") == (n_main, expected.n_other)
        assert all(url.startswith("file://") for url in report.requests_made)
        assert report.script_events == []
        report.screenshot(path=str(ARTIFACTS / f"inspect-cli-{favor}-{number}.png"))
        report.close()


def test_a_hostile_page_runs_nothing_and_fetches_nothing(browser, tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    engine = Engine()
    inspection = inspect_page(engine, HOSTILE_PAGE.encode(), source="<hostile> \"page\"")
    out = tmp_path / "hostile.html"
    out.write_text(report_html(inspection), encoding="utf-8")
    report = open_report(browser, out.as_uri())
    report.hover("#blocks h2")
    for block in report.query_selector_all(".block"):
        block.hover()
    assert report.evaluate("window.__pwned") is None
    assert report.script_events == []
    assert report.requests_made == [out.as_uri()]
    # the page's markup is shown as text, where it stands
    shown = shown_blocks(report)
    check_against_engine(shown, inspection.result.labels, inspection.result.scores)
    texts = report.eval_on_selector_all(".block .text", "ts => ts.map(t => t.textContent)")
    assert any("<img src=x onerror=" in t for t in texts)
    assert report.evaluate("document.querySelectorAll('script').length") == 1  # the report's
    assert report.evaluate("document.querySelectorAll('img, iframe, svg, base, link').length") \
        == 0
    assert report.title() == 'pulpie-rt inspect: <hostile> "page"'
    report.screenshot(path=str(ARTIFACTS / "inspect-hostile.png"))
    report.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    serve = start_server(tmp_path_factory, profile=None)
    yield serve
    assert serve.stop() == 0, serve.log()


def test_the_services_inspect_form_and_report(browser, server, dev_pages, tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    extractor, recall = Extractor(), Extractor(favor="recall")
    # upload a file: its bytes, decoded as the page says; the first dev page from the second
    # on whose labels recall changes (the report must show the favor asked for, not the
    # service's), whichever page that is for the embedded model of the day
    page_record = next(p for p in dev_pages[1:] if recall.extract(p["html"].encode()).labels
                       != extractor.extract(p["html"].encode()).labels)
    page_file = tmp_path / "upload.html"
    page_file.write_bytes(page_record["html"].encode("utf-8"))
    form = open_report(browser, server.url + "/inspect")
    form.screenshot(path=str(ARTIFACTS / "inspect-service-form.png"))
    form.set_input_files("#file", str(page_file))
    assert form.is_checked("#favor-balanced")  # the service's --favor
    form.check("#favor-recall")  # decided as an engine built with recall
    with form.expect_navigation():
        form.click("#inspect")
    expected = recall.extract(page_file.read_bytes())
    assert expected.labels != extractor.extract(page_file.read_bytes()).labels
    check_against_engine(shown_blocks(form), expected.labels, expected.scores)
    assert "upload.html" in form.title()
    assert form.inner_text("#markdown pre").strip() == expected.markdown.strip()
    assert filter_shows(form, "main") == (expected.n_main, 0)
    assert all(url.startswith(server.url) for url in form.requests_made)
    form.screenshot(path=str(ARTIFACTS / "inspect-service-report.png"))
    form.close()
    # paste the hostile page: its report runs nothing either
    form = open_report(browser, server.url + "/inspect")
    form.fill("#html", HOSTILE_PAGE)
    with form.expect_navigation():
        form.click("#inspect")
    expected = extractor.extract(HOSTILE_PAGE)
    check_against_engine(shown_blocks(form), expected.labels, expected.scores)
    assert form.evaluate("window.__pwned") is None and form.script_events == []
    assert all(url.startswith(server.url) for url in form.requests_made)
    form.close()


def test_the_inspect_route_answers_raw_html_and_refuses_an_empty_form(server):
    import httpx

    page = "<html><body><article><p>" + "A sentence of prose. " * 20 + "</p></article></body>"
    answer = httpx.post(server.url + "/inspect", content=page.encode(),
                        headers={"Content-Type": "text/html; charset=utf-8"})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    csp = answer.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'nonce-" in csp
    assert 'class="block main"' in answer.text
    empty = httpx.post(server.url + "/inspect", data={"html": "  "})
    assert empty.status_code == 400 and empty.json() == {
        "error": "the form has no page: paste its HTML in 'html' or upload its file in 'file'",
        "error_type": "empty_body"}
    other = httpx.post(server.url + "/inspect", json={"html": page})
    assert other.status_code == 415 and other.json()["error_type"] == "unsupported_media_type"
    spec = httpx.get(server.url + "/openapi.json").json()
    assert set(spec["paths"]["/inspect"]) == {"get", "post"}
    assert set(spec["paths"]["/inspect"]["post"]["requestBody"]["content"]) == {
        "multipart/form-data", "application/x-www-form-urlencoded", "text/html"}
