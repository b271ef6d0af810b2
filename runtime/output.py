"""What ``pulpie-rt run`` writes, and how a rerun resumes it in memory independent of what is done.

Outputs (``open_output``):

- one JSONL file, compressed by its suffix: ``.gz`` one gzip member per written batch, ``.zst``
  one zstd frame per batch (``zstandard``, the ``io`` extra), else plain lines;
- a folder of JSONL shards, ``DIR/part-NNNNN.jsonl[.gz|.zst]``, each closed after
  ``shard_records`` records or once it holds ``shard_bytes`` bytes; a shard is written under a
  hidden temporary name (``DIR/.part-NNNNN.jsonl.gz.tmp``) and renamed into place once complete;
- a folder of Parquet parts (``--format parquet``), one part per written batch.

Every written batch is a whole unit of its file (lines ending in a newline, a gzip member, a
zstd frame, a Parquet file), fsynced before the index counts it.

The index (``OUT.index.sqlite`` beside a file, ``DIR/_index.sqlite`` in a folder; SQLite, which
commits atomically) holds one row per input page done, in input order: its position, its id
and the part that holds its record (none for a duplicate id that was not written), and per
part the records and committed bytes (an id holding a lone surrogate, which escaped JSON can
give, as the bytes ``surrogatepass`` writes: a BLOB, equal to no other id). It is committed
after each batch's data is on disk, so a page is counted as done only once its record is.
A rerun reads it instead of the output:

- the data past the committed bytes (a batch torn by a kill, a full disk) is cut off, and
  those pages are done again, never written twice;
- the ids of the pages done are compared with the inputs' as a stream, without holding them
  (``done_pages``), and ``seen`` looks an id up on disk: memory does not grow with the pages done.

An output without its index (written before the index existed, or the index deleted) is read
once, record by record, to rebuild it; the same memory bound holds.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from pulpie_rt.runtime.flow import schema

INDEX_FILE_SUFFIX = ".index.sqlite"  # beside a one-file output
INDEX_IN_FOLDER = "_index.sqlite"  # in a folder output (readers skip names starting with _)
INDEX_FORMAT = "pulpie-rt output index 1"
COMPRESSIONS = ("none", "gzip", "zstd")
EXTENSIONS = {"none": "", "gzip": ".gz", "zstd": ".zst"}
# the compressed bytes read at a time when an output is read back (rebuilding its index)
READ_BYTES = 1 << 20
# index rows inserted per transaction when an index is rebuilt from the output
REBUILD_ROWS = 10_000


class OutputError(ValueError):
    """An output that cannot be used (another program's file, a changed output); one line."""


class OutputWriteError(OSError):
    """Writing a file of the output failed (disk full, read-only); names the file."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path}: cannot write ({reason})")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class Entry:
    """One input page done: its position among all input pages, its id, and its record
    (``None``: nothing written, a duplicate id skipped)."""

    position: int
    id: str
    record: dict | None


def compression_of(path: Path) -> str:
    """A one-file output's compression, from its suffix."""
    suffix = path.suffix.lower()
    return {".gz": "gzip", ".zst": "zstd"}.get(suffix, "none")


# ---------------------------------------------------------------------------- codecs


def _zstandard():
    try:
        import zstandard
    except ImportError as exc:
        raise OutputError("writing .zst needs zstandard: pip install 'pulpie-rt[io]'") from exc
    return zstandard


def _encode_lines(records: list[dict]) -> bytes:
    """One line per record: orjson's (compact), or the standard library's for a record orjson
    refuses (a lone surrogate in an id read from the input), with every non-ASCII character
    escaped: the lone surrogate is written as the input wrote it (``\\ud800``), the file stays
    UTF-8 for every reader, and the readers above read it back as the same string."""
    lines = []
    for record in records:
        try:
            lines.append(orjson.dumps(record))
        except TypeError:  # orjson.JSONEncodeError
            lines.append(json.dumps(record, separators=(",", ":")).encode("ascii"))
    lines.append(b"")
    return b"\n".join(lines) if records else b""


def encode(records: list[dict], compression: str) -> bytes:
    """One batch as one whole unit of its file: lines, a gzip member or a zstd frame."""
    payload = _encode_lines(records)
    if compression == "gzip":
        import gzip  # (here, as zlib below: a plain JSONL output imports neither)

        return gzip.compress(payload, compresslevel=6, mtime=0)
    if compression == "zstd":
        return _zstandard().ZstdCompressor(level=3).compress(payload)
    return payload


def _units(fh, compression: str) -> Iterator[tuple[int, bytes]]:
    """The whole units of a file from its start: (offset just past the unit, its
    decompressed bytes). Stops at a torn or damaged tail; memory is one unit's."""
    if compression == "none":
        offset = 0
        for line in fh:
            if not line.endswith(b"\n"):
                return
            offset += len(line)
            yield offset, line
        return
    offset = 0  # past the last whole unit
    data = b""
    while True:
        if compression == "gzip":
            import zlib

            decoder = zlib.decompressobj(wbits=31)
        else:
            decoder = _zstandard().ZstdDecompressor().decompressobj()
        parts = []
        consumed = 0  # compressed bytes of this unit fed so far
        while True:
            if not data:
                data = fh.read(READ_BYTES)
                if not data:
                    return  # the end: a unit begun and not finished is a torn tail
            try:
                parts.append(decoder.decompress(data))
            except Exception:  # zlib.error, zstandard.ZstdError: damaged from here on
                return
            if decoder.eof:
                left = decoder.unused_data
                consumed += len(data) - len(left)
                data = left
                break
            consumed += len(data)
            data = b""
        offset += consumed
        yield offset, b"".join(parts)


def _record_ids(payload: bytes, where: str) -> Iterator[str]:
    for line in payload.splitlines():
        try:
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:  # lone surrogates: valid JSON to the standard library
                record = json.loads(line)
            yield str(record["id"])
        except (ValueError, KeyError, TypeError) as exc:
            raise OutputError(f"{where}: not a pulpie-rt output record; use another --out"
                              ) from exc


def scan_jsonl(path: Path, compression: str) -> Iterator[tuple[int, list[str]]]:
    """A JSONL output read back unit by unit: (offset past the unit, the ids of its records).
    A unit that is not whole (the tail) is not read."""
    with path.open("rb") as fh:
        for end, payload in _units(fh, compression):
            yield end, list(_record_ids(payload, str(path)))


# ---------------------------------------------------------------------------- the index


def _write_error(path: Path, exc: BaseException) -> OutputWriteError:
    """A failed write of ``path`` as one line: the OS's reason, or SQLite's said as the OS
    would (its 'database or disk is full' is a full disk)."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary result code
        reason = {sqlite3.SQLITE_FULL: os.strerror(errno.ENOSPC),
                  sqlite3.SQLITE_READONLY: os.strerror(errno.EROFS)}.get(code, str(exc))
        return OutputWriteError(path, reason)
    return OutputWriteError(path, getattr(exc, "strerror", None) or str(exc))


def _index_id(page_id: str) -> str | bytes:
    """``page_id`` as the index holds it: itself (TEXT), or, where it holds a lone surrogate (a
    str read from escaped JSON or a file name can; SQLite's UTF-8 cannot), the bytes
    ``surrogatepass`` writes it as, a BLOB. SQLite finds no BLOB equal to a TEXT, so such an
    id meets only itself, and the ids of indexes written before keep their rows."""
    if page_id.isascii():
        return page_id
    try:
        page_id.encode("utf-8")
    except UnicodeEncodeError:
        return page_id.encode("utf-8", "surrogatepass")
    return page_id


def _read_id(value: str | bytes) -> str:
    """An id as ``_index_id`` stored it."""
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


class Index:
    """The pages done and the parts' committed sizes (see the module docstring)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.db = sqlite3.connect(path, isolation_level=None)
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript("""
                CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS pages (position INTEGER PRIMARY KEY, id TEXT NOT NULL,
                                                  part INTEGER);
                CREATE INDEX IF NOT EXISTS pages_by_id ON pages (id);
                CREATE TABLE IF NOT EXISTS parts (part INTEGER PRIMARY KEY,
                    records INTEGER NOT NULL, bytes INTEGER NOT NULL, complete INTEGER NOT NULL);
            """)
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF in (sqlite3.SQLITE_CANTOPEN,
                                                                 sqlite3.SQLITE_READONLY,
                                                                 sqlite3.SQLITE_FULL):
                raise _write_error(path, exc) from exc
            raise OutputError(f"{path}: not a pulpie-rt output index ({exc}); remove it to "
                              "rebuild it from the output") from exc

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def pages_done(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM pages").fetchone()[0]

    def parts(self) -> list[tuple[int, int, int, bool]]:
        """(part, records, committed bytes, complete), in order."""
        rows = self.db.execute("SELECT part, records, bytes, complete FROM parts ORDER BY part")
        return [(p, r, b, bool(c)) for p, r, b, c in rows]

    def done_pages(self) -> Iterator[tuple[int, str]]:
        """(position, id) of the pages done, in input order, streamed."""
        for position, page_id in self.db.execute(
                "SELECT position, id FROM pages ORDER BY position"):
            yield position, _read_id(page_id)

    def seen(self, page_id: str) -> int | None:
        """The position of the first page done with this id."""
        row = self.db.execute("SELECT MIN(position) FROM pages WHERE id = ?",
                              (_index_id(page_id),)).fetchone()
        return row[0]

    def commit(self, entries: list[Entry], parts: list[tuple[int, int, int, bool]],
               entry_parts: list[int | None], meta: dict[str, str] | None = None) -> None:
        """One transaction: the pages and the parts' new sizes."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.executemany("INSERT INTO pages VALUES (?, ?, ?)",
                                    [(e.position, _index_id(e.id), part)
                                     for e, part in zip(entries, entry_parts, strict=True)])
                self.db.executemany("INSERT OR REPLACE INTO parts VALUES (?, ?, ?, ?)",
                                    [(p, r, b, int(c)) for p, r, b, c in parts])
                for key, value in (meta or {}).items():
                    self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise _write_error(self.path, exc) from exc

    def close(self) -> None:
        self.db.close()


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _append(path: Path, offset: int, data: bytes) -> int:
    """``data`` written at ``offset`` of ``path`` and fsynced; on failure the file is cut back
    to ``offset`` (as far as it can be) and the error names the file."""
    try:
        with path.open("r+b" if path.exists() else "wb") as fh:
            fh.seek(offset)
            try:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            except OSError:
                try:
                    fh.truncate(offset)
                except OSError:
                    pass  # the rerun cuts it: the index does not count it
                raise
    except OSError as exc:
        raise _write_error(path, exc) from exc
    return offset + len(data)


def _cut(path: Path, size: int) -> None:
    """``path`` cut to its committed ``size`` (a torn tail off)."""
    if path.stat().st_size != size:
        with path.open("r+b") as fh:
            fh.truncate(size)
            os.fsync(fh.fileno())


# ---------------------------------------------------------------------------- outputs


class Output:
    """The common part of every output: its index and what the CLI asks of it."""

    def __init__(self, path: Path, index_path: Path, layout: dict,
                 content: schema.Output | None = None):
        self.content = content or schema.Output()
        self.path = path
        self.index_path = index_path
        self.layout = {**layout, "content": self.content.describe()}
        self.index: Index | None = None

    # what the layout asks a rerun to keep (a changed compression would mix formats, a changed
    # content records of other fields)
    LAYOUT_KEYS = ("format", "compression", "content")
    # what an index written before a key existed was written with
    LAYOUT_BEFORE = {"content": schema.Output().describe()}

    def resume(self) -> int:
        """Opens the output (created if new), checks it can be written, repairs what a kill
        left (torn tails cut, complete parts put in place), rebuilding the index from the
        output if it is missing. Returns the number of input pages done."""
        had_data = self._has_data()
        self._check_writable()  # on every run: before any page is read
        if self.index_path.exists() and not had_data:
            self.index_path.unlink()  # the output was removed: start again
        fresh_index = not self.index_path.exists()
        self.index = Index(self.index_path)
        if fresh_index:
            try:
                self._rebuild()
            except BaseException:
                self.index.close()
                self.index_path.unlink(missing_ok=True)
                raise
            self.index.commit([], [], [], {"format": INDEX_FORMAT,
                                           "layout": json.dumps(self.layout, sort_keys=True)})
        else:
            self._check_layout()
        self._repair()
        return self.index.pages_done()

    def _check_layout(self) -> None:
        if self.index.get("format") != INDEX_FORMAT:
            raise OutputError(f"{self.index_path}: not a pulpie-rt output index; remove it to "
                              "rebuild it from the output")
        written = {**self.LAYOUT_BEFORE, **json.loads(self.index.get("layout") or "{}")}
        for key in self.LAYOUT_KEYS:
            if written.get(key) != self.layout.get(key):
                raise OutputError(f"{self.path} was written with {key} {written.get(key)}, "
                                  f"not {self.layout.get(key)}; rerun as it was written or use "
                                  "another --out")

    def _rebuild_rows(self, rows: Iterator[tuple[str, int]], parts_done) -> None:
        """Index rows (id, part) from the output, committed in bounded transactions."""
        position = 0
        batch: list[Entry] = []
        batch_parts: list[int | None] = []
        for page_id, part in rows:
            batch.append(Entry(position, page_id, None))
            batch_parts.append(part)
            position += 1
            if len(batch) >= REBUILD_ROWS:
                self.index.commit(batch, [], batch_parts)
                batch, batch_parts = [], []
        self.index.commit(batch, parts_done(), batch_parts)

    def done_pages(self) -> Iterator[tuple[int, str]]:
        """(position, id) of the pages done, in input order, streamed (never held)."""
        return self.index.done_pages()

    def done_ids(self) -> Iterator[str]:
        return (page_id for _, page_id in self.index.done_pages())

    def seen(self, page_id: str) -> int | None:
        return self.index.seen(page_id)

    def pages_done(self) -> int:
        return self.index.pages_done() if self.index else 0

    def close(self) -> None:
        if self.index is not None:
            self.index.close()

    # the subclasses'
    def _has_data(self) -> bool:
        raise NotImplementedError

    def _check_writable(self) -> None:
        raise NotImplementedError

    def _rebuild(self) -> None:
        raise NotImplementedError

    def _repair(self) -> None:
        raise NotImplementedError

    def write(self, entries: list[Entry]) -> None:
        raise NotImplementedError

    def as_written(self, record: dict) -> dict:
        """``record`` as this output writes it (its error says what the format changed)."""
        return record

    def finish(self) -> None:
        """The run is complete: the last part is closed."""


class JsonlFile(Output):
    """One JSONL file, appended in place, one unit per batch."""

    def __init__(self, path: Path, compression: str, content: schema.Output | None = None):
        super().__init__(path, path.with_name(path.name + INDEX_FILE_SUFFIX),
                         {"format": "jsonl", "compression": compression}, content)
        self.compression = compression
        self.records = 0
        self.bytes = 0

    def _has_data(self) -> bool:
        return self.path.exists()

    def _check_writable(self) -> None:
        if self.path.is_dir():
            raise OutputError(f"{self.path}: is a directory (--format jsonl writes one file; "
                              "a folder of shards needs --shard-records or --shard-bytes)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab"):
            pass
        if self.compression == "zstd":
            _zstandard()

    def _rebuild(self) -> None:
        end = records = 0

        def rows():
            nonlocal end, records
            for end, ids in scan_jsonl(self.path, self.compression):  # noqa: B007
                records += len(ids)
                for page_id in ids:
                    yield page_id, 0

        self._rebuild_rows(rows(), lambda: [(0, records, end, False)])

    def _repair(self) -> None:
        parts = self.index.parts()
        self.records, self.bytes = (parts[0][1], parts[0][2]) if parts else (0, 0)
        size = self.path.stat().st_size
        if size < self.bytes:
            raise OutputError(f"{self.path} holds {size} bytes, fewer than the {self.bytes} its "
                              f"index {self.index_path} counts: it was changed by something "
                              "else; remove the index to rebuild it from the output, or use "
                              "another --out")
        _cut(self.path, self.bytes)

    def write(self, entries: list[Entry]) -> None:
        if not entries:
            return
        records = [e.record for e in entries if e.record is not None]
        before = self.bytes
        after = _append(self.path, before, encode(records, self.compression)) if records \
            else before
        try:
            self.index.commit(entries, [(0, self.records + len(records), after, False)],
                              [0 if e.record is not None else None for e in entries])
        except OutputWriteError:
            _cut_quietly(self.path, before)
            raise
        self.records += len(records)
        self.bytes = after


def _cut_quietly(path: Path, size: int) -> None:
    try:
        with path.open("r+b") as fh:
            fh.truncate(size)
    except OSError:
        pass  # the rerun cuts it: the index does not count it


class PartsFolder(Output):
    """A folder of numbered parts, each renamed into place once complete."""

    suffix = ""

    def __init__(self, path: Path, layout: dict, content: schema.Output | None = None):
        super().__init__(path, path / INDEX_IN_FOLDER, layout, content)
        self.part = 0  # the part being written
        self.part_records = 0
        self.part_bytes = 0

    def final(self, part: int) -> Path:
        return self.path / f"part-{part:05d}{self.suffix}"

    def temporary(self, part: int) -> Path:
        return self.path / f".part-{part:05d}{self.suffix}.tmp"

    def _finals(self) -> list[Path]:
        return sorted(self.path.glob(f"part-*{self.suffix}"))

    def _has_data(self) -> bool:
        return self.path.is_dir() and bool(self._finals() or list(self.path.glob(".part-*.tmp")))

    def _check_writable(self) -> None:
        if self.path.exists() and not self.path.is_dir():
            raise OutputError(f"{self.path}: exists and is not a directory (a folder output)")
        self.path.mkdir(parents=True, exist_ok=True)
        probe = self.path / ".pulpie-rt-write-check"
        with probe.open("wb"):
            pass
        probe.unlink()

    def _put_in_place(self, part: int) -> None:
        os.replace(self.temporary(part), self.final(part))
        _fsync_folder(self.path)

    def _repair(self) -> None:
        parts = self.index.parts()
        committed = {p for p, *_ in parts}
        for part, records, size, complete in parts:
            final, temporary = self.final(part), self.temporary(part)
            if complete:
                if temporary.exists():  # committed complete, not yet renamed when it stopped
                    _cut(temporary, size)
                    self._put_in_place(part)
                elif not final.exists():
                    raise OutputError(f"{final}: missing, though its index {self.index_path} "
                                      "counts it; use another --out")
            else:
                self.part, self.part_records, self.part_bytes = part, records, size
                if final.exists():
                    raise OutputError(f"{final}: not complete in its index "
                                      f"{self.index_path}; use another --out")
                if temporary.exists():
                    _cut(temporary, size)
                elif size:
                    raise OutputError(f"{temporary}: missing, though its index "
                                      f"{self.index_path} counts {size} bytes; use another --out")
        if parts and parts[-1][3]:
            self.part, self.part_records, self.part_bytes = parts[-1][0] + 1, 0, 0
        for stale in self.path.glob(".part-*.tmp"):
            number = int(stale.name.split("-")[1].split(".")[0])
            if number not in committed:  # written, never counted: its pages are done again
                stale.unlink()
        for final in self._finals():
            number = int(final.name.split("-")[1].split(".")[0])
            if number not in committed:
                raise OutputError(f"{final}: not in the index {self.index_path}; remove the "
                                  "index to rebuild it from the output, or use another --out")


class JsonlShards(PartsFolder):
    """``DIR/part-NNNNN.jsonl[.gz|.zst]``: a shard is closed after ``shard_records`` records or
    once it holds ``shard_bytes`` bytes, then renamed into place."""

    def __init__(self, path: Path, compression: str, shard_records: int | None,
                 shard_bytes: int | None, content: schema.Output | None = None):
        super().__init__(path, {"format": "jsonl", "compression": compression,
                                "shard_records": shard_records, "shard_bytes": shard_bytes},
                         content)
        self.compression = compression
        self.suffix = ".jsonl" + EXTENSIONS[compression]
        self.shard_records = shard_records
        self.shard_bytes = shard_bytes

    def _check_writable(self) -> None:
        super()._check_writable()
        if self.compression == "zstd":
            _zstandard()

    def _rebuild(self) -> None:
        parts: list[tuple[int, int, int, bool]] = []
        finals = self._finals()
        for number, final in enumerate(finals):
            if final != self.final(number):
                raise OutputError(f"{self.path}: parts are not numbered from 0 without gaps "
                                  f"({final.name}); use another --out")

        def rows():
            for number, final in enumerate(finals):
                records, end = 0, 0
                for end, ids in scan_jsonl(final, self.compression):  # noqa: B007
                    records += len(ids)
                    for page_id in ids:
                        yield page_id, number
                if end != final.stat().st_size:
                    raise OutputError(f"{final}: its end is not whole; use another --out")
                parts.append((number, records, end, True))
            temporary = self.temporary(len(finals))
            if temporary.exists():
                records, end = 0, 0
                for end, ids in scan_jsonl(temporary, self.compression):  # noqa: B007
                    records += len(ids)
                    for page_id in ids:
                        yield page_id, len(finals)
                parts.append((len(finals), records, end, False))

        self._rebuild_rows(rows(), lambda: parts)

    def _full(self) -> bool:
        return ((self.shard_records is not None and self.part_records >= self.shard_records)
                or (self.shard_bytes is not None and self.part_bytes >= self.shard_bytes))

    def write(self, entries: list[Entry]) -> None:
        start = 0
        while start < len(entries):
            # as many entries as the shard takes: up to its record limit
            room = (self.shard_records - self.part_records if self.shard_records is not None
                    else len(entries))
            end, taken = start, 0
            while end < len(entries) and (taken < room or entries[end].record is None):
                taken += entries[end].record is not None
                end += 1
            self._write_to_shard(entries[start:end])
            start = end

    def _write_to_shard(self, entries: list[Entry]) -> None:
        records = [e.record for e in entries if e.record is not None]
        temporary = self.temporary(self.part)
        before = self.part_bytes
        after = (_append(temporary, before, encode(records, self.compression)) if records
                 else before)
        self.part_records += len(records)
        self.part_bytes = after
        complete = self._full()
        try:
            self.index.commit(entries, [(self.part, self.part_records, after, complete)],
                              [self.part if e.record is not None else None for e in entries])
        except OutputWriteError:
            self.part_records -= len(records)
            self.part_bytes = before
            _cut_quietly(temporary, before)
            raise
        if complete:
            self._close_part()

    def _close_part(self) -> None:
        try:
            self._put_in_place(self.part)
        except OSError as exc:
            raise _write_error(self.final(self.part), exc) from exc
        self.part, self.part_records, self.part_bytes = self.part + 1, 0, 0

    def finish(self) -> None:
        if self.part_records:
            self.index.commit([], [(self.part, self.part_records, self.part_bytes, True)], [])
            self._close_part()


class ParquetParts(PartsFolder):
    """``OUT/part-NNNNN.parquet``, one per written batch (one row group each)."""

    suffix = ".parquet"

    def __init__(self, path: Path, content: schema.Output | None = None):
        super().__init__(path, {"format": "parquet", "compression": "zstd"}, content)

    def _rebuild(self) -> None:
        import pyarrow.parquet as pq

        parts: list[tuple[int, int, int, bool]] = []
        finals = self._finals()

        def rows():
            for number, final in enumerate(finals):
                if final != self.final(number):
                    raise OutputError(f"{self.path}: parts are not numbered from 0 without "
                                      f"gaps ({final.name}); use another --out")
                records = 0
                for batch in pq.ParquetFile(final).iter_batches(batch_size=REBUILD_ROWS,
                                                                columns=["id"]):
                    ids = batch.column(0).to_pylist()
                    records += len(ids)
                    for page_id in ids:
                        yield page_id, number
                parts.append((number, records, final.stat().st_size, True))

        self._rebuild_rows(rows(), lambda: parts)

    def as_written(self, record: dict) -> dict:
        return _parquet_record(record)

    def _schema(self, records: list[dict]):
        """The parts' Arrow schema (``flow.schema``): a record's fields, ``url`` when a record
        has one."""
        return schema.arrow_schema(schema.record_fields(self.content,
                                                        url=any("url" in r for r in records)))

    def write(self, entries: list[Entry]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not entries:
            return
        records = [_parquet_record(e.record) for e in entries if e.record is not None]
        if not records:  # only duplicates skipped: counted, no part
            self.index.commit(entries, [], [None] * len(entries))
            return
        temporary = self.temporary(self.part)
        try:
            table = pa.Table.from_pylist(records, schema=self._schema(records))
            pq.write_table(table, temporary, compression="zstd")
            with temporary.open("rb") as fh:
                os.fsync(fh.fileno())
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise _write_error(temporary, exc) from exc
        try:
            self.index.commit(entries, [(self.part, len(records), temporary.stat().st_size,
                                         True)],
                              [self.part if e.record is not None else None for e in entries])
        except OutputWriteError:
            temporary.unlink(missing_ok=True)
            raise
        try:
            self._put_in_place(self.part)
        except OSError as exc:
            raise _write_error(self.final(self.part), exc) from exc
        self.part += 1


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _parquet_record(record: dict) -> dict:
    """``record`` as a Parquet string column can hold it (UTF-8 only): a text holding a lone
    surrogate (an id read from escaped JSON can) is written with U+FFFD in its place, and the
    record's error says so, naming the page. The index keeps the id itself (a rerun resumes
    over it); an index rebuilt from the parts reads the id as written."""
    changed = [key for key, value in record.items()
               if isinstance(value, str) and not value.isascii()
               and _LONE_SURROGATE.search(value)]
    if not changed:
        return record
    note = (f"output: page {record['id']!r}: {', '.join(changed)} held a lone surrogate, "
            "which Parquet cannot store: written with U+FFFD")
    record = dict(record)
    for key in changed:
        record[key] = _LONE_SURROGATE.sub("\ufffd", record[key])
    record["error"] = note if record.get("error") is None else f"{record['error']}; {note}"
    return record


def open_output(out: str | Path, fmt: str = "jsonl", *, shard_records: int | None = None,
                shard_bytes: int | None = None, compression: str | None = None,
                content: schema.Output | None = None) -> Output:
    """The output ``pulpie-rt run --out OUT`` writes (see the module docstring). A folder of
    JSONL shards is asked by ``shard_records`` or ``shard_bytes``; ``compression`` is a
    folder's (a file's is its suffix); ``content``: what its records hold (a rerun must ask
    the same). Nothing is touched until ``resume``."""
    path = Path(out)
    sharded = shard_records is not None or shard_bytes is not None
    if fmt == "parquet":
        if sharded or compression not in (None, "zstd"):
            raise OutputError("--shard-records, --shard-bytes and --compression are for JSONL "
                              "output: --format parquet writes a part per batch, zstd-compressed")
        return ParquetParts(path, content)
    if fmt != "jsonl":
        raise OutputError(f"unknown output format {fmt!r}")
    if sharded:
        for name, value in (("--shard-records", shard_records), ("--shard-bytes", shard_bytes)):
            if value is not None and value <= 0:
                raise OutputError(f"{name} must be above 0, not {value}")
        return JsonlShards(path, compression or "none", shard_records, shard_bytes, content)
    if str(out).endswith(os.sep):
        raise OutputError(f"{out}: a folder output needs --shard-records or --shard-bytes")
    by_suffix = compression_of(path)
    if compression is not None and compression != by_suffix:
        raise OutputError(f"{path}: --compression {compression} does not match the file's "
                          f"suffix ({by_suffix}); name it *.jsonl{EXTENSIONS[compression]}")
    return JsonlFile(path, by_suffix, content)
