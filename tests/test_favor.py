"""``favor``: a named shift of a bundle's decision threshold (``pulpie_rt.h``'s
``PULPIE_RT_FAVOR_*``). Each setting decides exactly as the bundle would with its threshold
moved by 1 (precision up, recall down), in every profile and for a bundle decided by the
argmax at each SEP, and every door takes it (its P/R/F1 effect: ``python -m bench.favor``):
per engine, and per call or page on one engine (the service's requests, ``Extractor``'s
calls, the C ABI's ``pulpie_rt_extract_options``) with the labels of an engine built with it."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from rt_helpers import check_record, small_dev_pages, start_server, tiny_bundle

from bench.thresholds import bundle_at, linked_copy
from pulpie_rt import Extractor, Pipeline
from pulpie_rt.runtime.flow.engine import favor_settings
from pulpie_rt.runtime.flow.pages import PageInput
from pulpie_rt.runtime.flow.schema import record, record_fields
from pulpie_rt.runtime.model.resolve import resolve_model

SHIFTS = {"precision": 1.0, "balanced": 0.0, "recall": -1.0}


@pytest.fixture(scope="module")
def pages() -> list[str]:
    return [p["html"] for p in small_dev_pages(20_000)[:12]]


def labels(extractor: Extractor, pages: list[str]) -> list[dict]:
    return [r.labels for r in extractor.extract_batch(pages)]


@pytest.mark.parametrize("profile", ["fast", "accurate"])
def test_each_setting_decides_at_the_bundles_threshold_moved_by_1(tmp_path, pages, profile):
    bundle = resolve_model("default", profile=profile).bundle
    assert favor_settings() == {"balanced": 0, "precision": 1, "recall": 2}
    kept = {}
    for favor, shift in SHIFTS.items():
        moved = bundle_at(bundle.path, profile, bundle.main_margin + shift, tmp_path / favor)
        ours = labels(Extractor(profile=profile, favor=favor), pages)
        assert ours == labels(Extractor(moved, profile=profile), pages), favor
        kept[favor] = sum(v == "main" for page in ours for v in page.values())
    assert kept["precision"] < kept["balanced"] < kept["recall"], kept


def test_a_bundle_decided_by_the_argmax_is_decided_by_margins_when_shifted(tmp_path, pages):
    plain = tiny_bundle()
    manifest = json.loads((plain / "manifest.json").read_text())
    assert "decoding" not in manifest and "profiles" not in manifest  # the argmax at each SEP

    for favor, shift in SHIFTS.items():
        moved = linked_copy(plain, tmp_path / favor,
                            lambda m, shift=shift: m.update(decoding={"main_margin": shift}))
        assert labels(Extractor(plain, favor=favor), pages) == labels(
            Extractor(moved), pages), favor


def test_every_door_takes_it(tmp_path, pages):
    expected = Extractor(favor="precision").extract_batch(pages[:3])
    assert [r.markdown for r in Pipeline(favor="precision", workers=1).extract_batch(
        pages[:3])] == [r.markdown for r in expected]
    page = tmp_path / "page.html"
    page.write_text(pages[0], encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pulpie_rt.cli", "extract", str(page),
                           "--favor", "precision"], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == Extractor(favor="precision").extract(
        page.read_bytes()).markdown + "\n"
    refused = subprocess.run([sys.executable, "-m", "pulpie_rt.cli", "extract", str(page),
                              "--favor", "most"], capture_output=True, timeout=300)
    assert refused.returncode == 2 and b"invalid choice: 'most'" in refused.stderr
    from pulpie_rt.integrations.serve.service import ExtractionService

    service = ExtractionService(favor="recall")
    engine = service.open_engine()
    assert engine.favor == "recall" and engine.info()["favor"] == "recall"
    assert service.info()["favor"] == "recall"
    pytest.importorskip("ray.data")
    pytest.importorskip("datatrove")
    import pyarrow as pa

    from pulpie_rt.integrations.datatrove import PulpieExtractor as DatatroveStep
    from pulpie_rt.integrations.ray import PulpieExtractor as RayStep

    out = RayStep(threads=1, favor="precision")(pa.table({"html": pages[:3]}))
    assert out.column("markdown").to_pylist() == [r.markdown for r in expected]
    assert [e.favor for e in DatatroveStep(favor="precision", workers=1, threads=1)
            .pipeline().engines] == ["precision"]
    with pytest.raises(ValueError, match=r"^favor 'most' is not one of balanced, precision, "
                                         r"recall$"):
        Extractor(favor="most")


def test_the_bench_scores_each_setting_on_each_set(tmp_path, capsys):
    from bench import favor

    out = tmp_path / "favor.json"
    assert favor.main(["--profiles", "fast", "--sets", "groundtruth", "--limit", "3",
                       "--out", str(out)]) == 0
    found = json.loads(out.read_text())["sets"]["groundtruth"]
    assert found["pages"] == 3 and list(found["profiles"]) == ["fast"]
    scores = found["profiles"]["fast"]
    assert list(scores) == ["precision", "balanced", "recall"]
    assert all(set(s) == {"precision", "recall", "f1"} and 0 <= min(s.values()) <= max(
        s.values()) <= 1 for s in scores.values())
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:5]]
    assert [row[:4] for row in rows] == [["groundtruth", "3", "fast", favor_name]
                                         for favor_name in ("precision", "balanced", "recall")]


@pytest.mark.parametrize("profile", ["fast", "accurate"])
def test_a_call_or_a_page_asks_for_its_own_favor_on_one_engine(pages, profile):
    """One engine built balanced (and one built precision) decides a call's pages, or each
    page, as the engine built with the favor asked for: labels, scores and threshold."""
    built = {favor: Extractor(profile=profile, favor=favor) for favor in SHIFTS}
    expected = {favor: e.extract_batch(pages) for favor, e in built.items()}
    for engine_favor in ("balanced", "precision"):
        one = built[engine_favor]
        for favor in SHIFTS:
            got = one.extract_batch(pages, favor=favor)
            assert [(r.labels, r.scores, r.threshold) for r in got] == [
                (r.labels, r.scores, r.threshold) for r in expected[favor]], (engine_favor, favor)
        assert [r.labels for r in one.extract_batch(pages)] == [
            r.labels for r in expected[engine_favor]]  # no favor: the engine's
    # each page its own, in one call (their chunks in the same batches)
    asked = [("precision", "recall", None)[i % 3] for i in range(len(pages))]
    got = built["balanced"].engine.extract_pages(
        [PageInput(html, page_id=i, favor=favor) for i, (html, favor) in
         enumerate(zip(pages, asked, strict=True))])
    assert [r.labels for r in got] == [expected[favor or "balanced"][i].labels
                                       for i, favor in enumerate(asked)]
    assert built["balanced"].extract(pages[0], favor="recall").markdown == \
        expected["recall"][0].markdown


def test_a_favor_that_names_no_setting_is_refused_by_name(pages):
    extractor = Extractor()
    message = r"^favor 'most' is not one of balanced, precision, recall$"
    with pytest.raises(ValueError, match=message):
        extractor.extract_batch(pages[:2], favor="most")
    with pytest.raises(ValueError, match=message):
        extractor.extract(pages[0], favor="most")
    # a page's own favor fails that page alone
    results = extractor.engine.extract_pages([PageInput(pages[0], page_id="a", favor="most"),
                                              PageInput(pages[1], page_id="b")])
    assert results[0].error == "input: favor 'most' is not one of balanced, precision, recall"
    assert results[0].page_id == "a" and results[0].labels == {}
    assert results[1].error is None and results[1].labels == extractor.extract(pages[1]).labels


@pytest.fixture(scope="module")
def precise_server(tmp_path_factory):
    """A service built with --favor precision (the default model's fast profile)."""
    serve = start_server(tmp_path_factory, "--favor", "precision", profile=None)
    yield serve
    assert serve.stop() == 0, serve.log()


def test_the_service_decides_each_request_with_its_favor(precise_server, pages):
    """The same pages asked with precision, recall and no favor of one service built with
    precision: each answer the record of the engine built with that favor; requests of
    different favors at once (grouped into the same engine calls) each get their own; every
    body and answer follows the served OpenAPI document."""
    httpx = pytest.importorskip("httpx")
    from jsonschema import Draft202012Validator

    spec = httpx.get(precise_server.url + "/openapi.json").json()
    components = spec["components"]
    request_schema = Draft202012Validator({"$ref": "#/components/schemas/Request",
                                           "components": components})
    answer_schema = Draft202012Validator({"$ref": "#/components/schemas/Response",
                                          "components": components})
    assert components["schemas"]["Request"]["properties"]["favor"]["enum"] == [
        "balanced", "precision", "recall"]
    assert components["schemas"]["Request"]["properties"]["favor"]["default"] == "precision"
    assert components["schemas"]["InspectForm"]["properties"]["favor"]["enum"] == [
        "balanced", "precision", "recall"]
    assert not request_schema.is_valid({"pages": [{"html": "x"}], "format": "json",
                                        "favor": "most"})
    pages_asked = [{"id": f"p{i}", "html": html} for i, html in enumerate(pages[:6])]
    expected = {favor: Extractor(favor=favor).extract_batch([p["html"] for p in pages_asked])
                for favor in ("precision", "recall")}
    bodies = {favor: {"pages": pages_asked, "format": "json",
                      **({} if favor is None else {"favor": favor})}
              for favor in ("precision", "recall", None)}
    with ThreadPoolExecutor(6) as pool:  # 2 requests of each favor at once
        answers = list(pool.map(lambda favor: (favor, httpx.post(
            precise_server.url + "/v1/extract", json=bodies[favor], timeout=120)),
            [*bodies, *bodies]))
    labels_kept = {}
    for favor, response in answers:
        assert response.status_code == 200, response.text
        request_schema.validate(bodies[favor])
        body = response.json()
        answer_schema.validate(body)
        results = expected[favor or "precision"]
        for got, page, result in zip(body["results"], pages_asked, results, strict=True):
            check_record(got, record_fields("json"))
            assert got == record(page["id"], result, "json"), (favor, page["id"])
        labels_kept[favor] = sum(r["n_main"] for r in body["results"])
    assert labels_kept["precision"] == labels_kept[None] < labels_kept["recall"]
    # a raw page: ?favor= in the query string
    raw = httpx.post(precise_server.url + "/v1/extract", content=pages[0].encode(),
                     params={"favor": "recall", "format": "json"},
                     headers={"Content-Type": "text/html; charset=utf-8"}, timeout=120)
    assert raw.json()["results"][0]["labels"] == expected["recall"][0].labels
    # /inspect: the form's favor
    report = httpx.post(precise_server.url + "/inspect", data={"html": pages[0],
                                                               "favor": "recall"}, timeout=120)
    assert report.status_code == 200 and "favor <b>recall</b>" in report.text
    assert report.text.count('class="block main"') == expected["recall"][0].n_main
    form = httpx.get(precise_server.url + "/inspect").text
    assert 'value="precision" id="favor-precision" checked' in form


@pytest.mark.parametrize("case", ["json", "json-not-a-string", "raw", "inspect-form",
                                  "inspect-raw"])
def test_the_service_refuses_a_favor_that_names_no_setting(precise_server, case):
    httpx = pytest.importorskip("httpx")
    url = precise_server.url
    page = "<html><body><p>" + "A sentence of prose. " * 10 + "</p></body></html>"
    html_type = {"Content-Type": "text/html"}
    sent = {
        "json": lambda: httpx.post(url + "/v1/extract", json={"pages": [{"html": page}],
                                                              "favor": "most"}),
        "json-not-a-string": lambda: httpx.post(url + "/v1/extract", json={
            "pages": [{"html": page}], "favor": 1}),
        "raw": lambda: httpx.post(url + "/v1/extract", content=page.encode(),
                                  params={"favor": "Recall"}, headers=html_type),
        "inspect-form": lambda: httpx.post(url + "/inspect", data={"html": page,
                                                                   "favor": "most"}),
        "inspect-raw": lambda: httpx.post(url + "/inspect", content=page.encode(),
                                          params={"favor": "most"}, headers=html_type),
    }
    value = {"json-not-a-string": "1", "raw": "'Recall'"}.get(case, "'most'")
    response = sent[case]()
    assert response.status_code == 422
    assert response.json() == {
        "error": f"favor {value} is not one of balanced, precision, recall",
        "error_type": "invalid_request"}
