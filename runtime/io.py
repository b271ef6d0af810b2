"""Readers for ``pulpie-rt run``: JSONL(.gz), WARC(.gz) and Parquet in (``runtime.output``
writes, and resumes).

Every input page becomes exactly one output record (its fields: ``runtime.flow.schema``; WARC
inputs add ``url``), written in input order. A record
the reader cannot use (bad JSON, no HTML field) is still a page: it gets an ``input: ...``
error. ``encoding`` is what page bytes were decoded with (``stages.decode``): a WARC record's
bytes with its HTTP header's Content-Type, a Parquet binary HTML column with the row's
``content_type`` column when there is one; JSONL and string columns hold text (null).

``fastwarc`` and ``pyarrow`` (the ``io`` extra) are imported only for WARC / Parquet files.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from pulpie_rt.runtime import native

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".json.gz")
WARC_SUFFIXES = (".warc", ".warc.gz", ".arc.gz")
PARQUET_SUFFIXES = (".parquet",)
# a JSONL field or Parquet column with each page's transport Content-Type, read when present
CONTENT_TYPE_FIELD = "content_type"
# the bytes a JSONL input is read at a time (``_Lines``; a longer line doubles them)
READ_BUFFER = 1 << 20


class InputError(ValueError):
    """An input file that cannot be read at all; the message is one line."""


@dataclass
class InputPage:
    """One page read from an input: its id and HTML, or the reason it is unusable."""

    id: str
    html: str | bytes | native.PageText | None
    error: str | None = None
    url: str | None = None
    content_type: str | None = None  # the transport's (WARC: the HTTP header), for bytes


def input_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(WARC_SUFFIXES):
        return "warc"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    raise InputError(
        f"{path}: unknown input format (expected "
        f"{', '.join(JSONL_SUFFIXES + WARC_SUFFIXES + PARQUET_SUFFIXES)})"
    )


def check_inputs(paths: list[Path]) -> None:
    """Fail fast, before any work, on a missing, unreadable or unknown input file."""
    for path in paths:
        input_format(path)
        if not path.is_file():
            raise InputError(f"{path}: no such file")
        try:
            with path.open("rb") as fh:
                fh.read(1)
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def iter_inputs(paths: list[Path], html_field: str = "html", id_field: str = "id"
                ) -> Iterator[InputPage]:
    """Pages of all inputs, in order. ``InputError`` if a file breaks off unreadably."""
    for path in paths:
        kind = input_format(path)
        if kind == "jsonl":
            yield from iter_jsonl(path, html_field, id_field)
        elif kind == "warc":
            yield from iter_warc(path)
        else:
            yield from iter_parquet(path, html_field, id_field)


def _record_page(record, where: str, html_field: str, id_field: str) -> InputPage:
    if not isinstance(record, dict):
        return InputPage(where, None, f"input: {where}: record is not a JSON object")
    page_id = record.get(id_field)
    page_id = where if page_id is None else str(page_id)
    html = record.get(html_field)
    if not isinstance(html, (str, bytes, native.PageText)):
        found = "missing" if html is None else f"a {type(html).__name__}"
        return InputPage(page_id, None, f"input: {where}: field {html_field!r} is {found}, "
                                         "not a string")
    content_type = record.get(CONTENT_TYPE_FIELD)
    return InputPage(page_id, html,
                     content_type=content_type if isinstance(content_type, str) else None)


def loads_json(line: bytes):
    """One JSON record, or a request body of the service: orjson (5x the standard library on
    pages' escaped HTML: 0.14 against 0.69 CPU-s for 200 dev pages, measured with both on the
    same lines), and the standard library's reading where orjson refuses a line (lone surrogate
    escapes, which pages do hold, are valid JSON to it; numbers past 64 bits, NaN, nesting past
    orjson's depth; and its message or RecursionError names what is wrong)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def _loads_page(lines: _Lines, html_field: str, html_member: native.JsonStringMember):
    """``loads_json`` of the line ``lines`` is at, its HTML (the member ``html_field``, where a
    string) read by the core, in the reader's buffer, into the bytes it takes a page's text as
    (``native.PageText``): the rest of the line is read by ``loads_json`` with that string emptied,
    so no ``str`` of the page is built and encoded again (orjson's str and its UTF-8 encoding
    were 5.8% of a whole ``pulpie-rt run`` of the dev pages), and no ``bytes`` of its line. A
    line the core does not read so (not one object, the member repeated or not a string, a
    lone surrogate escape) is read whole by ``loads_json``, as before."""
    found = html_member(lines.address + lines.start, lines.stop - lines.start)
    if found is not None:
        html, start, end = found
        view, at = lines.view, lines.start
        try:
            record = orjson.loads(b'""'.join((view[at:at + start], view[at + end:lines.stop])))
        except orjson.JSONDecodeError:
            record = None
        if isinstance(record, dict) and record.get(html_field) == "":
            record[html_field] = html
            return record
    return loads_json(lines.line())


def iter_jsonl(path: Path, html_field: str = "html", id_field: str = "id"
               ) -> Iterator[InputPage]:
    # the core reads the HTML member unless another field read from the record has its name
    html_member = native.JsonStringMember(html_field.encode("utf-8", "surrogatepass")) \
        if html_field not in (id_field, CONTENT_TYPE_FIELD) and native.available() else None
    try:
        with _open_bytes(path) as fh:
            lines = _Lines(fh)
            number = 0
            while lines.next():
                number += 1
                if lines.blank():
                    continue
                where = f"{path.name}:{number}"
                try:
                    record = loads_json(lines.line()) if html_member is None else \
                        _loads_page(lines, html_field, html_member)
                except ValueError as exc:
                    yield InputPage(where, None, f"input: {where}: invalid JSON ({exc})")
                    continue
                yield _record_page(record, where, html_field, id_field)
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
        raise InputError(f"{path}: unreadable ({exc})") from exc


def _open_bytes(path: Path):
    """``path``'s bytes, gunzipped for ``.gz``: read straight into ``_Lines``' buffer."""
    if path.name.lower().endswith(".gz"):
        import gzip  # (here: a run over plain JSONL does not import it)

        return gzip.open(path, "rb")
    return open(path, "rb", buffering=0)


# the bytes a line may begin with and still be blank (bytes.isspace's)
_SPACE = frozenset(b" \t\n\r\x0b\x0c")


class _Lines:
    """The lines of a binary file, as ``for line in file`` splits them (each up to and with
    its ``\\n``; the last one without, if the file does not end in one), read ``READ_BUFFER``
    bytes at a time into one buffer kept for the whole file and left there: a line is
    ``view[start:stop]``, at ``address + start``, until ``next`` moves on. No ``bytes`` is made
    of a line the core reads (a page's line is hundreds of kB: ``readline`` read it in pieces,
    joined them and copied them out, ~10% of ``pulpie-rt run``'s main thread on the dev
    pages); a line longer than the buffer doubles it."""

    def __init__(self, fh) -> None:
        self.fh = fh
        self._use(bytearray(READ_BUFFER))
        self.start = self.stop = 0
        self.filled = 0
        self.eof = False

    def _use(self, buffer: bytearray) -> None:
        self.buffer = buffer
        self.view = memoryview(buffer)
        self._array = (ctypes.c_char * len(buffer)).from_buffer(buffer)
        self.address = ctypes.addressof(self._array)

    def next(self) -> bool:
        """Moves to the next line; False at the end of the file."""
        self.start = self.stop
        searched = self.start  # the line holds no newline before this
        while True:
            newline = self.buffer.find(b"\n", searched, self.filled)
            if newline >= 0:
                self.stop = newline + 1
                return True
            if self.eof:
                self.stop = self.filled
                return self.stop > self.start  # the last line, without its newline
            # a pipe gives a long line in short reads: each read's bytes are searched once, not
            # the whole line again after every read (quadratic in the line's length)
            searched = self.filled - self.start
            self._refill()

    def _refill(self) -> None:
        """The part line at ``start`` moved to the buffer's start (into a buffer twice as
        large if it fills this one), then the buffer filled after it from the file."""
        part = self.filled - self.start
        if part == len(self.buffer):
            larger = bytearray(2 * len(self.buffer))
            larger[:part] = self.view[self.start:self.filled]
            self._use(larger)
        elif self.start:
            ctypes.memmove(self.address, self.address + self.start, part)
        self.start = self.stop = 0
        self.filled = part
        read = self.fh.readinto(self.view[part:])
        if not read:
            self.eof = True
        else:
            self.filled += read

    def blank(self) -> bool:
        """Whether the line is white space only (as ``not line.strip()``)."""
        return self.buffer[self.start] in _SPACE and self.line().isspace()

    def line(self) -> bytes:
        """The line as ``bytes`` (a copy), for the readers that take it whole."""
        return self.view[self.start:self.stop].tobytes()


def iter_warc(path: Path) -> Iterator[InputPage]:
    """HTML response records (other records are not pages and are skipped)."""
    try:
        from fastwarc.warc import ArchiveIterator, WarcRecordType
    except ImportError as exc:
        raise InputError(f"{path}: reading WARC needs fastwarc: pip install "
                         "'pulpie-rt[io]'") from exc
    try:
        records = ArchiveIterator(str(path), record_types=WarcRecordType.response,
                                  parse_http=True, fsspec_args=False)
        for record in records:
            http = record.http_headers
            content_type = (http.get("Content-Type") or "") if http is not None else ""
            if "html" not in content_type.lower():
                continue
            page_id = record.headers.get("WARC-Record-ID") or record.record_id
            url = record.headers.get("WARC-Target-URI")
            # the bytes as they are: the flow decodes them (stages.decode) with the header's
            # charset, else the page's BOM, <meta>, the detector
            yield InputPage(str(page_id), record.reader.read(), url=url,
                            content_type=content_type)
    except OSError as exc:
        raise InputError(f"{path}: unreadable WARC ({exc})") from exc


def iter_parquet(path: Path, html_field: str = "html", id_field: str = "id"
                 ) -> Iterator[InputPage]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise InputError(f"{path}: reading Parquet needs pyarrow: pip install "
                         "'pulpie-rt[io]'") from exc
    try:
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
        if html_field not in names:
            raise InputError(f"{path}: no column {html_field!r} (columns: {', '.join(names)})")
        columns = [html_field] + [name for name in (id_field, CONTENT_TYPE_FIELD)
                                  if name in names and name != html_field]
        row = 0
        for batch in parquet.iter_batches(batch_size=256, columns=columns):
            for record in batch.to_pylist():
                row += 1
                yield _record_page(record, f"{path.name}:{row}", html_field, id_field)
    except InputError:
        raise
    except Exception as exc:  # pyarrow's errors: ArrowInvalid, OSError, ...
        raise InputError(f"{path}: unreadable Parquet ({exc})") from exc
