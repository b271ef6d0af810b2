"""Readers and writers for ``pulpie-rt run``: JSONL(.gz), WARC(.gz) and Parquet in; JSONL or
Parquet out, resumable.

Every input page becomes exactly one output record ``{id, markdown, n_main, n_other, error,
truncated, empty_reason, encoding}`` (WARC inputs add ``url``), written in input order. A record
the reader cannot use (bad JSON, no HTML field) is still a page: it gets an ``input: ...``
error. ``encoding`` is what page bytes were decoded with (``stages.decode``): a WARC record's
bytes with its HTTP header's Content-Type, a Parquet binary HTML column with the row's
``content_type`` column when there is one; JSONL and string columns hold text (null).

Resume: records are written in input order, so the pages already done are the first
``len(existing records)`` input pages. Writes are crash-safe:

- JSONL: one append + flush + fsync per batch of records; a torn last line (killed mid-write)
  is cut off on resume, so that page is processed again, never written twice;
- Parquet: ``OUT/part-NNNNN.parquet`` files, each written to a temporary name and renamed.

``fastwarc`` and ``pyarrow`` (the ``io`` extra) are imported only for WARC / Parquet files.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".json.gz")
WARC_SUFFIXES = (".warc", ".warc.gz", ".arc.gz")
PARQUET_SUFFIXES = (".parquet",)
# a JSONL field or Parquet column with each page's transport Content-Type, read when present
CONTENT_TYPE_FIELD = "content_type"


class InputError(ValueError):
    """An input file that cannot be read at all; the message is one line."""


@dataclass
class InputPage:
    """One page read from an input: its id and HTML, or the reason it is unusable."""

    id: str
    html: str | bytes | None
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
    if not isinstance(html, (str, bytes)):
        found = "missing" if html is None else f"a {type(html).__name__}"
        return InputPage(page_id, None, f"input: {where}: field {html_field!r} is {found}, "
                                         "not a string")
    content_type = record.get(CONTENT_TYPE_FIELD)
    return InputPage(page_id, html,
                     content_type=content_type if isinstance(content_type, str) else None)


def _loads(line: bytes):
    """One JSON record: orjson (5x the standard library on pages' escaped HTML: 0.14 against
    0.69 CPU-s for 200 dev pages, measured with both on the same lines), and the standard
    library's reading where orjson refuses a line (lone surrogate escapes, which pages do hold,
    are valid JSON to it; and its message names what is wrong)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def iter_jsonl(path: Path, html_field: str = "html", id_field: str = "id"
               ) -> Iterator[InputPage]:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                where = f"{path.name}:{number}"
                try:
                    record = _loads(line)
                except ValueError as exc:
                    yield InputPage(where, None, f"input: {where}: invalid JSON ({exc})")
                    continue
                yield _record_page(record, where, html_field, id_field)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"{path}: unreadable ({exc})") from exc


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


# ---------------------------------------------------------------------------- writers


class JsonlWriter:
    """Append-only JSONL with an fsync per batch; resume-safe (see module docstring)."""

    def __init__(self, path: Path):
        self.path = path

    def existing_ids(self) -> list[str]:
        """Ids already written, after cutting a torn last line off the file."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # killed mid-write: the last record is incomplete
            with self.path.open("r+b") as fh:
                fh.truncate(end)
                os.fsync(fh.fileno())
        ids = []
        for number, line in enumerate(data[:end].splitlines(), 1):
            try:
                ids.append(json.loads(line)["id"])
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{self.path}:{number}: not a pulpie-rt output record; "
                                 "use another --out") from exc
        return ids

    def write(self, records: list[dict]) -> None:
        if not records:
            return
        payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        with self.path.open("ab") as fh:
            fh.write(payload.encode("utf-8", "surrogatepass"))
            fh.flush()
            os.fsync(fh.fileno())


class ParquetWriter:
    """``OUT/part-NNNNN.parquet``, each written under a temporary name, then renamed."""

    def __init__(self, path: Path):
        self.path = path
        self.parts = 0

    def existing_ids(self) -> list[str]:
        import pyarrow.parquet as pq

        if self.path.exists() and not self.path.is_dir():
            raise InputError(f"{self.path}: exists and is not a directory (--format parquet)")
        self.path.mkdir(parents=True, exist_ok=True)
        for stale in self.path.glob("*.tmp"):
            stale.unlink()
        ids: list[str] = []
        parts = sorted(self.path.glob("part-*.parquet"))
        for part in parts:
            ids.extend(pq.read_table(part, columns=["id"]).column("id").to_pylist())
        self.parts = len(parts)
        return ids

    def write(self, records: list[dict]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not records:
            return
        table = pa.Table.from_pylist(records, schema=_parquet_schema(records))
        final = self.path / f"part-{self.parts:05d}.parquet"
        temporary = final.with_suffix(".tmp")
        pq.write_table(table, temporary)
        with temporary.open("rb") as fh:
            os.fsync(fh.fileno())
        os.replace(temporary, final)
        self.parts += 1


def _parquet_schema(records: list[dict]):
    import pyarrow as pa

    fields = [("id", pa.string()), ("markdown", pa.string()), ("n_main", pa.int64()),
              ("n_other", pa.int64()), ("error", pa.string()), ("truncated", pa.string()),
              ("empty_reason", pa.string()), ("encoding", pa.string())]
    if any("url" in r for r in records):
        fields.append(("url", pa.string()))
    return pa.schema(fields)


def open_writer(path: Path, fmt: str) -> JsonlWriter | ParquetWriter:
    if fmt == "jsonl":
        if path.is_dir():
            raise InputError(f"{path}: is a directory (--format jsonl writes one file)")
        path.parent.mkdir(parents=True, exist_ok=True)
        return JsonlWriter(path)
    if fmt == "parquet":
        return ParquetWriter(path)
    raise InputError(f"unknown output format {fmt!r}")
