"""``pulpie-rt extract`` and ``pulpie-rt run``: outputs, hostile pages, errors, kill + resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from rt_helpers import (
    check_record,
    hostile_pages,
    pages_counted,
    short_context_bundle,
    small_dev_pages,
    tiny_bundle,
)

from pulpie_rt import Extractor
from pulpie_rt.integrations.serve.process import descendants
from pulpie_rt.runtime.flow.schema import Output, arrow_schema, record, record_fields
from pulpie_rt.runtime.io import iter_inputs
from pulpie_rt.runtime.output import INDEX_FILE_SUFFIX

CLI = [sys.executable, "-m", "pulpie_rt.cli"]


def run_cli(*args, stdin: bytes | None = None, timeout: float = 600):
    return subprocess.run([*CLI, *map(str, args)], input=stdin, capture_output=True,
                          timeout=timeout)


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_run_without_model_uses_the_embedded_one_offline(tmp_path):
    pages = small_dev_pages()[:3]
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": p["id"], "html": p["html"]}) + "\n"
                           for p in pages), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PULPIE_RT_MODEL"}
    env["HF_HUB_OFFLINE"] = "1"
    done = subprocess.run([*CLI, "run", str(inp), "--out", str(tmp_path / "o.jsonl"),
                           "--quiet"], capture_output=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr.decode()
    records = read_jsonl(tmp_path / "o.jsonl")
    assert [r["id"] for r in records] == [p["id"] for p in pages]
    assert all(r["error"] is None and r["n_main"] > 0 and r["markdown"] for r in records)


def test_extract_prints_markdown(tmp_path):
    page = small_dev_pages()[0]
    path = tmp_path / "page.html"
    path.write_text(page["html"], encoding="utf-8")
    expected = Extractor(tiny_bundle(), device="cpu").extract(page["html"]).markdown
    done = run_cli("extract", path, "--model", tiny_bundle())
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == expected + "\n"
    from_stdin = run_cli("extract", "-", "--model", tiny_bundle(), stdin=page["html"].encode())
    assert from_stdin.stdout == done.stdout


@pytest.mark.parametrize(("options", "output"), [
    (["--format", "text"], Output("text")),
    (["--format", "html", "--no-links"], Output("html", links=False)),
    (["--no-links", "--no-images", "--no-tables"],
     Output(links=False, images=False, tables=False)),
    (["--format", "json", "--no-tables"], Output("json", tables=False)),
])
def test_extract_prints_the_format_asked_for(tmp_path, options, output):
    page = small_dev_pages()[0]
    path = tmp_path / "page.html"
    path.write_text(page["html"], encoding="utf-8")
    # the file's bytes, decoded as the command decodes them
    result = Extractor(tiny_bundle(), device="cpu").extract(path.read_bytes())
    done = run_cli("extract", path, "--model", tiny_bundle(), *options)
    assert done.returncode == 0, done.stderr
    expected = record(str(path), result, output)
    if output.format == "json":
        assert json.loads(done.stdout) == expected and expected["labels"] == result.labels
    else:
        assert done.stdout.decode() == expected[output.content_format] + "\n"


def test_one_line_errors_without_traceback(tmp_path):
    cases = [
        (("extract", tmp_path / "missing.html", "--model", tiny_bundle()),
         f"pulpie-rt extract: {tmp_path / 'missing.html'}: cannot read (No such file or "
         "directory)"),
        (("inspect", tmp_path / "missing.html", "--out", tmp_path / "r.html"),
         f"pulpie-rt inspect: {tmp_path / 'missing.html'}: cannot read (No such file or "
         "directory)"),
        (("run", tmp_path / "missing.jsonl", "--out", tmp_path / "o.jsonl"),
         f"pulpie-rt run: {tmp_path / 'missing.jsonl'}: no such file"),
    ]
    pages = tmp_path / "in.jsonl"
    pages.write_text('{"id": "a", "html": "<p>x</p>"}\n')
    cases.append((("run", pages, "--out", tmp_path / "o.jsonl", "--model", tmp_path / "nope"),
                  f"pulpie-rt run: model '{tmp_path / 'nope'}': no such file or directory, "
                  "and not a hub name (default, orange-small, orange-base, orange-large, small, "
                  "base, large or owner/name)"))
    for args, message in cases:
        done = run_cli(*args)
        assert done.returncode == 2
        assert done.stderr.decode().strip() == message
        assert b"Traceback" not in done.stderr


# The documented bound on the hostile pages' run (README, "Page limits"): the page limits cap
# each page's model work, so the run ends well inside it on 2 cores; past it the run is stuck.
HOSTILE_RUN_BOUND_S = 600


def test_hostile_pages_one_record_each(tmp_path):
    """Every hostile page gives exactly one record, with a result or a named failure, and no
    record is silently empty: empty Markdown without an error always says why."""
    pages = hostile_pages()
    inp = tmp_path / "hostile.jsonl"
    with inp.open("w", encoding="utf-8") as fh:
        for page_id, html in pages.items():
            fh.write(json.dumps({"id": page_id, "html": html}) + "\n")
        fh.write("{truncated json\n")
    bad_line = f"hostile.jsonl:{len(pages) + 1}"
    out = tmp_path / "out.jsonl"
    done = run_cli("run", inp, "--out", out, "--model", short_context_bundle(tmp_path),
                   "--workers", "0", "--quiet", timeout=HOSTILE_RUN_BOUND_S)
    assert done.returncode == 0, done.stderr.decode()
    records = read_jsonl(out)
    assert [r["id"] for r in records] == [*pages, bad_line]
    by_id = {r["id"]: r for r in records}
    assert by_id[bad_line]["error"].startswith(f"input: {bad_line}: invalid JSON")
    for page_id in pages:
        record = by_id[page_id]
        assert record["error"] is None, record
        assert record["markdown"] or record["empty_reason"], page_id
    for page_id in ("empty", "whitespace", "script-only"):
        assert by_id[page_id]["empty_reason"] == "the page has no visible text"
    # pages without blocks give their text
    assert by_id["plain-text"]["markdown"] == "plain text without any tag"
    assert by_id["many-blocks"]["n_main"] + by_id["many-blocks"]["n_other"] == 60000
    summary = done.stderr.decode().strip().splitlines()[-1]
    assert summary.startswith(f"pulpie-rt run: {len(records)} pages, 1 errors, ")  # bad JSON


def test_killed_run_resumes_with_every_page_once(tmp_path):
    base = small_dev_pages(20_000)
    # ten copies: the first write comes after 64 pages, and the ~300 left take seconds even on
    # a fast machine (two copies once finished between that write and the signal)
    pages = [(f"{copy}/{p['id']}", p["html"]) for copy in range(10) for p in base]
    inp = tmp_path / "pages.jsonl"
    inp.write_text("".join(json.dumps({"id": i, "html": h}) + "\n" for i, h in pages))
    out = tmp_path / "out.jsonl"
    index = out.with_name(out.name + INDEX_FILE_SUFFIX)
    args = [*CLI, "run", str(inp), "--out", str(out), "--model", str(tiny_bundle()),
            "--workers", "1", "--quiet"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # wait until the index counts a batch: what it counts is what a rerun keeps (a batch
        # whose data is written but not yet counted is cut, as a torn tail is)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if pages_counted(index) > 0:
                break
            time.sleep(0.05)
        if proc.poll() is not None:
            pytest.fail("the run ended before it could be killed")
        workers = descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    # threads on one engine: the run had no child process to leave behind
    assert workers == []
    written = read_jsonl(out)
    counted = pages_counted(index)
    assert 0 < counted <= len(written) < len(pages)
    with out.open("ab") as fh:  # and a torn record, as if killed in the middle of a write
        fh.write(b'{"id": "torn", "markdown": "half')
    done = subprocess.run(args, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()
    records = read_jsonl(out)
    assert [r["id"] for r in records] == [i for i, _ in pages]  # each once, in input order
    assert all(r["error"] is None for r in records)
    assert f"({counted} already done)" in done.stderr.decode()
    # resumed pages are the same as pages of an uninterrupted run (copies of one page agree)
    first = {r["id"].split("/", 1)[1]: r["markdown"] for r in records[: len(base)]}
    assert all(r["markdown"] == first[r["id"].split("/", 1)[1]] for r in records)


def test_parquet_output(tmp_path):
    import pyarrow.parquet as pq

    base = small_dev_pages(20_000)[:3]
    inp = tmp_path / "pages.jsonl"
    inp.write_text("".join(json.dumps({"id": p["id"], "html": p["html"]}) + "\n" for p in base))
    out = tmp_path / "out"
    done = run_cli("run", inp, "--out", out, "--format", "parquet", "--model", tiny_bundle(),
                   "--workers", "0", "--quiet")
    assert done.returncode == 0, done.stderr.decode()
    table = pq.read_table(out)
    assert table.column("id").to_pylist() == [p["id"] for p in base]
    assert table.schema == arrow_schema(record_fields())
    assert table.column("encoding").to_pylist() == [None] * 3  # JSONL holds text


@pytest.mark.parametrize("output_format", ["jsonl", "parquet"])
def test_run_records_are_the_schemas_records(tmp_path, output_format):
    """Each record has exactly the schema's fields, ``url`` for WARC pages, and the
    extractor's values; Parquet parts have the schema's Arrow types."""
    import pyarrow.parquet as pq
    from test_io import write_warc

    warc = tmp_path / "in.warc"
    write_warc(warc, compress=False)
    page = small_dev_pages(20_000)[0]
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(json.dumps({"id": page["id"], "html": page["html"]}) + "\n{bad\n",
                     encoding="utf-8")
    out = tmp_path / ("out" if output_format == "parquet" else "out.jsonl")
    done = run_cli("run", jsonl, warc, "--out", out, "--format", output_format, "--model",
                   tiny_bundle(), "--workers", "0", "--quiet")
    assert done.returncode == 0, done.stderr.decode()
    inputs = list(iter_inputs([jsonl, warc]))
    results = Extractor(tiny_bundle(), device="cpu").extract_batch(
        [p.html if p.error is None else None for p in inputs], [p.content_type for p in inputs])
    expected = [record(p.id, r, error=p.error, url=p.url) for p, r in zip(inputs, results,
                                                                           strict=True)]
    assert [r.get("url") for r in expected] == [None, None, "http://a.example/",
                                                "http://b.example/"]
    assert expected[1]["error"].startswith("input: in.jsonl:2: invalid JSON")
    if output_format == "parquet":
        table = pq.read_table(out)
        assert table.schema == arrow_schema(record_fields(url=True))
        # the JSONL pages have no URL: null in the column the WARC pages fill
        got = [{k: v for k, v in row.items() if k != "url" or v is not None}
               for row in table.to_pylist()]
    else:
        got = read_jsonl(out)
    for row, want in zip(got, expected, strict=True):
        check_record(row, record_fields(url="url" in want))
    assert got == expected


@pytest.mark.parametrize(("output_format", "options", "output"), [
    ("jsonl", ["--content", "text", "--no-tables"], Output("text", tables=False)),
    ("parquet", ["--content", "json", "--no-links"], Output("json", links=False)),
])
def test_run_writes_the_content_asked_for_and_resumes_only_as_asked(tmp_path, output_format,
                                                                    options, output):
    import pyarrow.parquet as pq

    pages = small_dev_pages(20_000)[:3]
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": p["id"], "html": p["html"]}) + "\n"
                           for p in pages), encoding="utf-8")
    out = tmp_path / ("out" if output_format == "parquet" else "out.jsonl")
    args = ["run", inp, "--out", out, "--format", output_format, "--model", tiny_bundle(),
            "--workers", "0", "--quiet"]
    done = run_cli(*args, *options)
    assert done.returncode == 0, done.stderr.decode()
    results = Extractor(tiny_bundle(), device="cpu").extract_batch([p["html"] for p in pages])
    expected = [record(p["id"], r, output) for p, r in zip(pages, results, strict=True)]
    if output_format == "parquet":
        table = pq.read_table(out)
        assert table.schema == arrow_schema(record_fields(output))
        got = [{**row, "labels": dict(row["labels"])} for row in table.to_pylist()]
    else:
        got = read_jsonl(out)
    for row in got:
        check_record(row, record_fields(output))
    assert got == expected
    again = run_cli(*args)  # the default content: records of other fields
    assert again.returncode == 2
    assert again.stderr.decode().strip().splitlines()[-1] == (
        f"pulpie-rt run: {out} was written with content {output.describe()}, not markdown; "
        "rerun as it was written or use another --out")


def test_sigterm_writes_the_finished_pages_and_a_rerun_resumes(tmp_path):
    base = small_dev_pages(20_000)
    # ten copies: the first write comes after 64 pages, and the ~300 left take seconds even on
    # a fast machine (two copies once finished between that write and the signal)
    pages = [(f"{copy}/{p['id']}", p["html"]) for copy in range(10) for p in base]
    inp = tmp_path / "pages.jsonl"
    inp.write_text("".join(json.dumps({"id": i, "html": h}) + "\n" for i, h in pages))
    out = tmp_path / "out.jsonl"
    args = [*CLI, "run", str(inp), "--out", str(out), "--model", str(tiny_bundle()),
            "--workers", "1", "--quiet"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.stat().st_size > 0:
            break
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.fail("the run ended before SIGTERM could be sent")
    workers = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr.decode()
    written = read_jsonl(out)  # whole records only: the handler let no write tear
    last = stderr.decode().strip().splitlines()[-1]
    assert last == (f"pulpie-rt run: SIGTERM: {len(written)} pages are written to {out}, "
                    "rerun with the same --out to resume")
    assert 0 < len(written) < len(pages)
    assert workers == []  # threads on one engine: no child process
    done = subprocess.run(args, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()
    assert [r["id"] for r in read_jsonl(out)] == [i for i, _ in pages]


def _run_in_process(argv: list[str]) -> int:
    from pulpie_rt.cli import main

    return main([str(a) for a in argv])


def test_parquet_parts_are_single_row_groups_read_as_one_table(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    base = small_dev_pages(20_000)[:5]
    inp = tmp_path / "pages.jsonl"
    inp.write_text("".join(json.dumps({"id": p["id"], "html": p["html"]}) + "\n" for p in base))
    out = tmp_path / "out"
    monkeypatch.setattr("pulpie_rt.runtime.cli.PARQUET_ROWS_PER_PART", 2)
    argv = ["run", inp, "--out", out, "--format", "parquet", "--model", tiny_bundle(),
            "--workers", "0", "--quiet"]
    assert _run_in_process(argv) == 0
    parts = sorted(out.glob("part-*.parquet"))
    assert [pq.ParquetFile(p).metadata.num_row_groups for p in parts] == [1, 1, 1]
    assert [pq.ParquetFile(p).metadata.num_rows for p in parts] == [2, 2, 1]
    assert pq.read_table(out).column("id").to_pylist() == [p["id"] for p in base]


def test_an_id_with_a_lone_surrogate_gets_its_record_and_resumes(tmp_path):
    """A page id holding a lone surrogate (valid JSON: "bad\\ud800") gets its record, written
    as the input wrote it; a rerun over a longer input resumes after it, its duplicate is
    skipped, and an output whose index was removed is resumed from its records. Parquet,
    whose strings are UTF-8, writes it with U+FFFD and an error naming the page."""
    import pyarrow.parquet as pq

    lines = ['{"id": "ok1", "html": "<p>hello</p>"}', '{"id": "bad\\ud800", "html": "<p>x</p>"}',
             '{"id": "bad\\ud800", "html": "<p>again</p>"}', '{"id": "ok2", "html": "<p>y</p>"}']
    inp = tmp_path / "in.jsonl"
    out = tmp_path / "out.jsonl"
    args = ["--model", tiny_bundle(), "--workers", "0", "--quiet"]

    def run(n_lines: int, *more):
        inp.write_text("".join(line + "\n" for line in lines[:n_lines]))
        done = run_cli("run", inp, "--out", out, *args, *more)
        assert b"Traceback" not in done.stderr
        assert done.returncode == 0, done.stderr.decode()
        return done.stderr.decode().strip().splitlines()[-1]

    assert run(2).startswith("pulpie-rt run: 2 pages, 0 errors, ")
    assert out.read_bytes().splitlines()[1].startswith(b'{"id":"bad\\ud800","markdown":"x",')
    assert run(4).startswith("pulpie-rt run: 2 pages (2 already done), 0 errors, 0 truncated, "
                             "1 duplicate ids skipped, ")
    records = read_jsonl(out)
    assert [(r["id"], r["markdown"], r["error"]) for r in records] == [
        ("ok1", "hello", None), ("bad\ud800", "x", None), ("ok2", "y", None)]
    assert run(4).startswith("pulpie-rt run: 0 pages (4 already done), ")
    out.with_name(out.name + INDEX_FILE_SUFFIX).unlink()
    assert run(4).startswith("pulpie-rt run: 0 pages (4 already done), ")
    assert read_jsonl(out) == records
    out.unlink()
    out.with_name(out.name + INDEX_FILE_SUFFIX).unlink()
    assert run(4, "--on-duplicate-id", "keep").startswith("pulpie-rt run: 4 pages, 0 errors, ")
    assert [r["markdown"] for r in read_jsonl(out)] == ["hello", "x", "again", "y"]

    out = tmp_path / "parquet"
    assert run(4, "--format", "parquet").startswith("pulpie-rt run: 4 pages, 1 errors, ")
    table = pq.read_table(out)
    assert table.column("id").to_pylist() == ["ok1", "bad\ufffd", "ok2"]
    assert table.column("error").to_pylist()[1] == (
        "output: page 'bad\\ud800': id held a lone surrogate, which Parquet cannot store: "
        "written with U+FFFD")
    assert run(4, "--format", "parquet").startswith("pulpie-rt run: 0 pages (4 already done), ")
