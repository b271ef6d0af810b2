"""The readers of ``pulpie-rt run``: JSONL, WARC, Parquet (its writers: test_output.py)."""

from __future__ import annotations

import ctypes
import gzip
import json
import sys
import tracemalloc

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pulpie_rt.runtime import native
from pulpie_rt.runtime.io import InputError, check_inputs, iter_inputs
from pulpie_rt.runtime.native import PageText
from pulpie_rt.runtime.stages.decode import decode_input


def _warc_record(url: str, content_type: str, body: bytes, record_id: str) -> bytes:
    http = (b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type.encode()
            + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: {record_id}\r\n"
            f"WARC-Target-URI: {url}\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
            f"Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http)}\r\n\r\n").encode()
    return head + http + b"\r\n\r\n"


def write_warc(path, compress: bool) -> None:
    data = (
        _warc_record("http://a.example/", "text/html; charset=iso-8859-1", "<p>caf\xe9</p>"
                     .encode("latin-1"), "<urn:uuid:1>")
        + _warc_record("http://a.example/img", "image/png", b"\x89PNG", "<urn:uuid:2>")
        + _warc_record("http://b.example/", "text/html", "<p>ünïcode</p>".encode(), "<urn:uuid:3>")
    )
    if compress:
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)


@pytest.mark.parametrize("compress", [False, True])
def test_warc_html_responses_only(tmp_path, compress):
    path = tmp_path / ("in.warc.gz" if compress else "in.warc")
    write_warc(path, compress)
    pages = list(iter_inputs([path]))
    # the record's bytes and its HTTP header's Content-Type, for the flow's decoding
    assert [(p.id, p.url, p.html, p.content_type) for p in pages] == [
        ("<urn:uuid:1>", "http://a.example/", b"<p>caf\xe9</p>", "text/html; charset=iso-8859-1"),
        ("<urn:uuid:3>", "http://b.example/", "<p>ünïcode</p>".encode(), "text/html"),
    ]
    assert [decode_input(p.html, p.content_type) for p in pages] == [
        ("<p>café</p>", "windows-1252"), ("<p>ünïcode</p>", "UTF-8")]


def test_jsonl_gz_and_bad_records(tmp_path):
    path = tmp_path / "in.jsonl.gz"
    lines = [json.dumps({"id": "a", "html": "<p>x</p>"}), "", "{not json",
             json.dumps({"html": "<p>no id</p>"}), json.dumps({"id": 7, "html": None}),
             json.dumps([1, 2])]
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    pages = list(iter_inputs([path]))
    assert [(p.id, _text(p.html), p.error) for p in pages] == [
        ("a", "<p>x</p>", None),
        ("in.jsonl.gz:3", None, "input: in.jsonl.gz:3: invalid JSON (Expecting property name "
                                "enclosed in double quotes: line 1 column 2 (char 1))"),
        ("in.jsonl.gz:4", "<p>no id</p>", None),
        ("7", None, "input: in.jsonl.gz:5: field 'html' is missing, not a string"),
        ("in.jsonl.gz:6", None, "input: in.jsonl.gz:6: record is not a JSON object"),
    ]


def _text(html):
    """A page's text as every door reads it (``PageText``: the core's bytes of a JSONL page)."""
    return html.text() if isinstance(html, PageText) else html


@pytest.fixture(params=["bytes written by the core", "through a buffer"])
def member_path(request, monkeypatch):
    """Each way ``JsonStringMember`` gives a text: written into its bytes object (CPython's C
    API), or through the buffer an interpreter without that API uses."""
    if request.param == "through a buffer":
        monkeypatch.setattr(native, "_BYTES_API", [None])
    elif native._bytes_api() is None:
        pytest.skip("this interpreter has no C API to call")
    return request.param


def test_jsonl_html_read_by_the_core_is_the_json_readers_text(tmp_path, member_path):
    """The HTML member the core reads (no str built) is, as the engine takes it, the str the
    JSON reader gives; lines the core leaves (a lone surrogate escape, the member repeated or
    not a string, the id read from the same field) are read whole as before."""
    html = '<p a="x">caf\u00e9 "q" \\ / \t\n\u2028 \U0001f642 <\u00e0></p>'
    lines = [
        json.dumps({"id": "esc", "html": html}),  # ASCII, every kind of escape
        json.dumps({"id": "raw", "html": html, "content_type": "text/html"},
                   ensure_ascii=False),
        json.dumps({"meta": {"html": 1, "x": [1.5, None]}, "html": "<b>n</b>", "id": 3}),
        '{"id": "lone", "html": "a\\ud800b"}',  # valid JSON to the standard library only
        '{"id": "twice", "html": "<i>1</i>", "html": "<i>2</i>"}',
        '{"id": "number", "html": 5}',
        '{"ht\\u006dl": "<u>esc</u>", "id": "escaped name"}',
        '{"id": "x", "html": "<p>a</p>"} trailing',
        # long enough for the core's 64-byte blocks, escapes falling at every offset of them
        json.dumps({"id": "long", "html": "".join(html[:k] for k in range(len(html)))}),
        json.dumps({"id": "long raw", "html": "".join(html[:k] for k in range(len(html)))},
                   ensure_ascii=False),
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    pages = list(iter_inputs([path]))
    assert [type(p.html) for p in pages] == [PageText, PageText, PageText, str, str,
                                            type(None), PageText, type(None), PageText,
                                            PageText]
    for page, line in zip(pages, lines, strict=True):
        if page.error is not None:
            continue
        record = json.loads(line)
        assert (page.id, _text(page.html), page.content_type) == (
            str(record["id"]), record["html"], record.get("content_type"))
        # as the engine takes it: the str's UTF-8 (surrogatepass), text without an encoding
        assert decode_input(page.html) == (record["html"], None)
        assert native.page_bytes(_text(page.html)) == (
            page.html.data if isinstance(page.html, PageText) else native.page_bytes(page.html))
    assert [pages[5].error, pages[7].error] == [
        "input: in.jsonl:6: field 'html' is a int, not a string",
        "input: in.jsonl:8: invalid JSON (Extra data: line 1 column 33 (char 32))"]
    # the id read from the HTML's own field: the record is read whole
    same = list(iter_inputs([path], html_field="id", id_field="id"))
    assert [(p.id, p.html) for p in same[:2]] == [("esc", "esc"), ("raw", "raw")]


def _member_of(member: native.JsonStringMember, line: bytes):
    buffer = ctypes.create_string_buffer(line, len(line))
    found = member(ctypes.addressof(buffer), len(line))
    return None if found is None else (found[0].data, found[1], found[2])


def test_the_core_writes_into_bytes_whatever_another_library_set_on_ctypes_pythonapi(
        monkeypatch):
    """``ctypes.pythonapi``'s functions are one object per name for the whole process: fsspec
    (imported by the Ray and datatrove doors) sets PyBytes_FromStringAndSize's restype to
    py_object and PyBytes_AsString's argument to py_object. Our prototypes are our own: a
    reader made after that reads as before, and fsspec's settings stay fsspec's."""
    shared = ctypes.pythonapi
    monkeypatch.setattr(shared.PyBytes_FromStringAndSize, "restype", ctypes.py_object)
    monkeypatch.setattr(shared.PyBytes_FromStringAndSize, "argtypes",
                        (ctypes.c_void_p, ctypes.c_ssize_t))
    monkeypatch.setattr(shared.PyBytes_AsString, "argtypes", (ctypes.py_object,))
    monkeypatch.setattr(native, "_BYTES_API", [])
    member = native.JsonStringMember(b"html")
    line = json.dumps({"html": "<p>caf\u00e9</p>"}).encode()
    assert _member_of(member, line) == ("<p>café</p>".encode(), 9, len(line) - 1)
    assert native._BYTES_API[0] is not None  # the C API path, not the buffer's
    assert shared.PyBytes_FromStringAndSize.restype is ctypes.py_object
    assert shared.PyBytes_AsString.argtypes == (ctypes.py_object,)


def test_a_text_is_its_own_bytes_and_a_line_left_to_json_keeps_none(member_path):
    """The texts are whole bytes objects of their own, each held only by its PageText; a
    line the core leaves frees what was made for it (a leak would hold a line's length each
    time: megabytes here)."""
    member = native.JsonStringMember(b"html")
    long = "<p>" + "é\"" * 200_000 + "</p>"
    for html in ("", "<p>x</p>", long):
        line = json.dumps({"html": html, "id": 1}).encode()
        data, start, end = _member_of(member, line)
        assert (data, line[start:end]) == (html.encode(), json.dumps(html).encode())
        if html:  # (the empty bytes object is Python's one, shared)
            assert sys.getrefcount(data) == 2  # ours and getrefcount's argument
    refused = json.dumps({"html": 5, "id": "x" * 1_000_000}).encode()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(20):
            assert _member_of(member, refused) is None
        data, _, _ = _member_of(member, json.dumps({"html": long}).encode())
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < len(data) + 100_000, grown


def test_custom_fields_and_parquet(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"url": ["u1", "u2"], "body": ["<p>1</p>", None]}), path)
    pages = list(iter_inputs([path], html_field="body", id_field="url"))
    assert [(p.id, p.html, p.error) for p in pages] == [
        ("u1", "<p>1</p>", None),
        ("u2", None, "input: in.parquet:2: field 'body' is missing, not a string"),
    ]
    with pytest.raises(InputError, match="no column 'html'"):
        list(iter_inputs([path]))


def test_unreadable_inputs(tmp_path):
    with pytest.raises(InputError, match=r"missing\.jsonl: no such file$"):
        check_inputs([tmp_path / "missing.jsonl"])
    with pytest.raises(InputError, match="unknown input format"):
        check_inputs([tmp_path / "pages.txt"])
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"id": "a", "html": "x"}\n' * 100)[:-30])
    with pytest.raises(InputError, match="broken.jsonl.gz: unreadable"):
        list(iter_inputs([broken]))


def test_jsonl_lines_longer_than_the_read_buffer(tmp_path, monkeypatch):
    """Lines split as ``for line in file`` splits them whatever the buffer holds: lines longer
    than it (the buffer grows), a line cut where a read ends, blank lines (counted, skipped),
    CRLF, a last line without its newline; plain and gzipped."""
    import pulpie_rt.runtime.io as runtime_io

    monkeypatch.setattr(runtime_io, "READ_BUFFER", 8)
    lines = [json.dumps({"id": "long", "html": "<p>" + "é\\\"x" * 40 + "</p>"}), "",
             json.dumps({"id": "short", "html": "<b>s</b>"}) + "\r", "   ", "{bad",
             json.dumps({"id": "last", "html": "<i>l</i>"})]
    text = "\n".join(lines)  # no newline after the last line
    for name, data in (("in.jsonl", text.encode()), ("in.jsonl.gz", gzip.compress(text.encode()))):
        path = tmp_path / name
        path.write_bytes(data)
        pages = list(iter_inputs([path]))
        assert [(p.id, _text(p.html)) for p in pages[:2]] == [
            ("long", "<p>" + "é\\\"x" * 40 + "</p>"), ("short", "<b>s</b>")]
        assert pages[2].error.startswith(f"input: {name}:5: invalid JSON (")
        assert [(p.id, _text(p.html)) for p in pages[3:]] == [("last", "<i>l</i>")]


def test_jsonl_lines_from_a_pipe_in_short_reads(tmp_path, monkeypatch):
    """A named pipe (``pulpie-rt run <(zcat pages.jsonl.gz)``) gives a line in reads as short as
    its writer's writes: every line is whole, each read's bytes searched once."""
    import os
    import threading

    import pulpie_rt.runtime.io as runtime_io

    monkeypatch.setattr(runtime_io, "READ_BUFFER", 16)
    records = [{"id": f"p{i}", "html": "<p>" + "long text " * (7 * i) + "</p>"} for i in range(6)]
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    fifo = tmp_path / "pages.jsonl"
    os.mkfifo(fifo)

    def write_in_pieces() -> None:
        with open(fifo, "wb", buffering=0) as out:
            for at in range(0, len(data), 5):
                out.write(data[at:at + 5])

    writer = threading.Thread(target=write_in_pieces)
    writer.start()
    try:
        pages = list(iter_inputs([fifo]))
    finally:
        writer.join()
    assert [(p.id, _text(p.html)) for p in pages] == [(r["id"], r["html"]) for r in records]
