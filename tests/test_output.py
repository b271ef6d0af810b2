"""What ``pulpie-rt run`` writes (``runtime.output``): compressed JSONL read by the standard
tools, JSONL shards, Parquet parts, and the index a rerun resumes from: torn tails cut, the
index rebuilt from an output without one, a changed or foreign output refused untouched."""

from __future__ import annotations

import gzip
import shutil
import subprocess

import pyarrow.parquet as pq
import pytest

from pulpie_rt.runtime.output import (
    Entry,
    OutputError,
    encode,
    open_output,
    scan_jsonl,
)

SUFFIXES = {"none": "out.jsonl", "gzip": "out.jsonl.gz", "zstd": "out.jsonl.zst"}
READERS = {"none": ["cat"], "gzip": ["gzip", "-dc"], "zstd": ["zstd", "-dc"]}


def entries(first: int, n: int, skipped: tuple[int, ...] = ()) -> list[Entry]:
    """Pages first..first+n-1; those in ``skipped`` are duplicates, not written."""
    return [Entry(i, f"p{i}", None if i in skipped else {"id": f"p{i}", "markdown": "é" * i})
            for i in range(first, first + n)]


def read_with_the_tool(path, compression: str) -> list[str]:
    """The ids in ``path`` as the command-line tool for its suffix reads them."""
    tool = READERS[compression]
    assert shutil.which(tool[0]), f"{tool[0]} is not installed (.ci/run installs it)"
    done = subprocess.run([*tool, str(path)], capture_output=True, check=True)
    import json

    return [json.loads(line)["id"] for line in done.stdout.decode().splitlines()]


def opened(path, **kwargs):
    output = open_output(path, **kwargs)
    output.resume()
    return output


@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
def test_each_batch_is_a_whole_unit_the_standard_tools_read(tmp_path, compression):
    path = tmp_path / SUFFIXES[compression]
    output = opened(path)
    output.write(entries(0, 3))
    output.write(entries(3, 2))
    output.close()
    assert read_with_the_tool(path, compression) == ["p0", "p1", "p2", "p3", "p4"]
    # one unit per batch: each a whole gzip member or zstd frame (or lines)
    assert [ids for _, ids in scan_jsonl(path, compression)] in (
        [["p0", "p1", "p2"], ["p3", "p4"]],  # gzip, zstd
        [["p0"], ["p1"], ["p2"], ["p3"], ["p4"]])  # lines
    if compression == "gzip":
        assert subprocess.run(["gzip", "-t", str(path)]).returncode == 0


@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
@pytest.mark.parametrize("index_kept", [True, False])
def test_a_torn_tail_is_cut_and_its_pages_are_done_again(tmp_path, compression, index_kept):
    path = tmp_path / SUFFIXES[compression]
    output = opened(path)
    output.write(entries(0, 3))
    output.close()
    whole = path.read_bytes()
    # the next batch killed mid-write (its first line, for lines: whole ones are done)
    torn = entries(3, 1 if compression == "none" else 4)
    with path.open("ab") as fh:
        fh.write(encode([e.record for e in torn], compression)[:-7])
    if not index_kept:  # an output of an older release, or its index deleted
        output.index_path.unlink()
    again = open_output(path)
    assert again.resume() == 3
    assert list(again.done_ids()) == ["p0", "p1", "p2"]
    assert path.read_bytes() == whole
    again.write(entries(3, 4))
    again.close()
    assert read_with_the_tool(path, compression) == [f"p{i}" for i in range(7)]


@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
def test_a_whole_batch_the_index_does_not_count_is_cut(tmp_path, compression):
    """Killed between the batch's fsync and the index's commit: the pages are not done."""
    path = tmp_path / SUFFIXES[compression]
    output = opened(path)
    output.write(entries(0, 2))
    output.close()
    whole = path.read_bytes()
    with path.open("ab") as fh:
        fh.write(encode([e.record for e in entries(2, 2)], compression))
    assert open_output(path).resume() == 2
    assert path.read_bytes() == whole


def test_duplicates_are_counted_in_the_index_and_not_written(tmp_path):
    path = tmp_path / "out.jsonl"
    output = opened(path)
    output.write(entries(0, 4, skipped=(2,)))
    assert output.pages_done() == 4
    assert list(output.done_ids()) == ["p0", "p1", "p2", "p3"]
    assert output.seen("p2") == 2 and output.seen("p9") is None
    output.close()
    assert read_with_the_tool(path, "none") == ["p0", "p1", "p3"]


def test_a_foreign_file_is_refused_untouched(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"not": "a record"}\n{"torn')
    before = path.read_bytes()
    with pytest.raises(OutputError) as refused:
        open_output(path).resume()
    assert str(refused.value) == (f"{path}: not a pulpie-rt output record; use another --out")
    assert path.read_bytes() == before
    assert not (tmp_path / "out.jsonl.index.sqlite").exists()


def test_an_output_shorter_than_its_index_is_refused_and_a_removed_one_starts_again(tmp_path):
    path = tmp_path / "out.jsonl.gz"
    output = opened(path)
    output.write(entries(0, 3))
    output.close()
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.truncate(size - 5)
    with pytest.raises(OutputError) as refused:
        open_output(path).resume()
    assert str(refused.value) == (
        f"{path} holds {size - 5} bytes, fewer than the {size} its index {path}.index.sqlite "
        "counts: it was changed by something else; remove the index to rebuild it from the "
        "output, or use another --out")
    path.unlink()
    assert open_output(path).resume() == 0


@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
def test_shards_of_n_records_each_readable_alone(tmp_path, compression):
    folder = tmp_path / "out"
    output = opened(folder, shard_records=3, compression=compression)
    output.write(entries(0, 2))
    output.write(entries(2, 6, skipped=(4,)))  # 5 records: parts 0 and 1 complete, p7 in 2
    suffix = ".jsonl" + {"none": "", "gzip": ".gz", "zstd": ".zst"}[compression]
    # complete shards are in place; the one being written is hidden until complete
    assert sorted(p.name for p in folder.iterdir()) == [
        f".part-00002{suffix}.tmp", "_index.sqlite", f"part-00000{suffix}", f"part-00001{suffix}"]
    output.write(entries(8, 2))
    output.finish()
    output.close()
    shards = sorted(folder.glob(f"part-*{suffix}"))
    assert [read_with_the_tool(s, compression) for s in shards] == [
        ["p0", "p1", "p2"], ["p3", "p5", "p6"], ["p7", "p8", "p9"]]
    assert not list(folder.glob(".*.tmp"))


def test_shards_resume_by_shard(tmp_path):
    folder = tmp_path / "out"
    output = opened(folder, shard_records=4, compression="gzip")
    output.write(entries(0, 6))  # part 0 complete, part 1 holds 2
    output.close()
    # killed twice over: the shard being written has a torn tail; and as if killed after the
    # index counted part 0 complete, before its rename
    (folder / "part-00000.jsonl.gz").rename(folder / ".part-00000.jsonl.gz.tmp")
    with (folder / ".part-00001.jsonl.gz.tmp").open("ab") as fh:
        fh.write(gzip.compress(b'{"id": "p6"}\n')[:-3])
    (folder / ".part-00007.jsonl.gz.tmp").write_bytes(b"never counted")
    again = open_output(folder, shard_records=4, compression="gzip")
    assert again.resume() == 6
    assert sorted(p.name for p in folder.iterdir()) == [
        ".part-00001.jsonl.gz.tmp", "_index.sqlite", "part-00000.jsonl.gz"]
    again.write(entries(6, 3))
    again.finish()
    again.close()
    assert [read_with_the_tool(s, "gzip") for s in sorted(folder.glob("part-*"))] == [
        ["p0", "p1", "p2", "p3"], ["p4", "p5", "p6", "p7"], ["p8"]]
    # the index lost: rebuilt from the shards
    (folder / "_index.sqlite").unlink()
    rebuilt = open_output(folder, shard_records=4, compression="gzip")
    assert rebuilt.resume() == 9
    assert list(rebuilt.done_ids()) == [f"p{i}" for i in range(9)]


def test_shards_close_once_they_hold_n_bytes(tmp_path):
    folder = tmp_path / "out"
    output = opened(folder, shard_bytes=200)
    for first in range(0, 30, 3):
        output.write(entries(first, 3))
    output.finish()
    output.close()
    sizes = [p.stat().st_size for p in sorted(folder.glob("part-*.jsonl"))]
    batch = max(len(encode([e.record for e in entries(f, 3)], "none")) for f in range(0, 30, 3))
    assert len(sizes) > 2
    assert all(200 <= s < 200 + batch for s in sizes[:-1])
    assert sum(len(read_with_the_tool(p, "none")) for p in folder.glob("part-*")) == 30


def test_a_changed_compression_is_refused(tmp_path):
    folder = tmp_path / "out"
    output = opened(folder, shard_records=2, compression="gzip")
    output.write(entries(0, 1))
    output.close()
    with pytest.raises(OutputError) as refused:
        open_output(folder, shard_records=2, compression="zstd").resume()
    assert str(refused.value) == (f"{folder} was written with compression gzip, not zstd; rerun "
                                  "as it was written or use another --out")


@pytest.mark.parametrize(("out", "kwargs", "message"), [
    ("{tmp}/out", {"shard_records": 0}, "--shard-records must be above 0, not 0"),
    ("{tmp}/out/", {}, "{tmp}/out/: a folder output needs --shard-records or --shard-bytes"),
    ("{tmp}/out.jsonl", {"compression": "gzip"},
     "{tmp}/out.jsonl: --compression gzip does not match the file's suffix (none); name it "
     "*.jsonl.gz"),
    ("{tmp}/out", {"fmt": "parquet", "shard_records": 5},
     "--shard-records, --shard-bytes and --compression are for JSONL output: --format parquet "
     "writes a part per batch, zstd-compressed"),
])
def test_options_refused_with_the_reason(tmp_path, out, kwargs, message):
    with pytest.raises(OutputError) as refused:
        open_output(out.format(tmp=tmp_path), **kwargs)
    assert str(refused.value) == message.format(tmp=tmp_path)


def test_parquet_parts_resume(tmp_path):
    out = tmp_path / "out"
    output = opened(out, fmt="parquet")
    record = {"markdown": "m", "n_main": 1, "n_other": 0, "error": None}
    output.write([Entry(0, "a", {"id": "a", **record})])
    output.write([Entry(1, "b", {"id": "b", **record}), Entry(2, "c", {"id": "c", **record})])
    output.close()
    (out / ".part-00002.parquet.tmp").write_bytes(b"half a file")
    again = open_output(out, fmt="parquet")
    assert again.resume() == 3
    assert not list(out.glob("*.tmp"))
    again.write([Entry(3, "d", {"id": "d", **record})])
    again.close()
    assert sorted(p.name for p in out.iterdir())[-1] == "part-00002.parquet"
    assert pq.read_table(out).column("id").to_pylist() == ["a", "b", "c", "d"]
    assert pq.ParquetFile(out / "part-00000.parquet").metadata.row_group(0).column(
        0).compression == "ZSTD"
    (out / "_index.sqlite").unlink()
    rebuilt = open_output(out, fmt="parquet")
    assert rebuilt.resume() == 4 and list(rebuilt.done_ids()) == ["a", "b", "c", "d"]


def test_records_are_written_by_orjson_and_a_lone_surrogate_by_the_standard_library(tmp_path):
    """Records are written with orjson (no json.dumps per page); one orjson refuses (a lone
    surrogate in an id read from the input) is written by the standard library, escaped to
    ASCII as the input wrote it, so the file stays UTF-8. Both read back as written; an
    output of orjson's lines is resumed from the file alone."""
    import json

    records = [{"id": "a", "markdown": 'é\n"q"\x00\u2028 end', "n_main": 3, "error": None},
               {"id": "b\ud800", "markdown": "lone surrogate id", "n_main": 0, "error": "x"},
               {"id": "c", "markdown": "", "n_main": 1, "error": None}]
    payload = encode(records, "none")
    lines = payload.split(b"\n")
    assert lines[0].startswith(b'{"id":"a","markdown":')  # orjson's compact line
    assert lines[1] == (b'{"id":"b\\ud800","markdown":"lone surrogate id","n_main":0,'
                        b'"error":"x"}')  # the standard library's, ASCII
    assert lines[-1] == b"" and len(lines) == 4
    payload.decode("utf-8")  # strict: every reader takes the file
    assert [json.loads(line) for line in lines[:-1]] == records
    path = tmp_path / "out.jsonl"
    output = opened(path)
    output.write([Entry(i, r["id"], r) for i, r in enumerate(records) if r["id"] != "b\ud800"])
    output.close()
    (tmp_path / "out.jsonl.index.sqlite").unlink()
    rebuilt = opened(path)
    assert list(rebuilt.done_ids()) == ["a", "c"]


LONE = "bad\ud800"  # a str read from the JSON "bad\\ud800" holds a lone surrogate


@pytest.mark.parametrize("out", ["out.jsonl", "out.jsonl.gz", "shards/"])
def test_an_id_with_a_lone_surrogate_is_written_looked_up_and_resumed(tmp_path, out):
    """The index holds an id with a lone surrogate as its surrogatepass bytes (SQLite's UTF-8
    has no text for it): it is written, found by ``seen``, streamed back by ``done_pages`` as
    the same str, never taken for another id (its U+FFFD form, the bytes as a text), and an
    index rebuilt from the output reads it back the same."""
    path = tmp_path / out
    kwargs = {"shard_records": 2} if out.endswith("/") else {}
    ids = ["a", LONE, "bad\ufffd", "bad\udcff", "b"]
    output = opened(path, **kwargs)
    output.write([Entry(i, page_id, {"id": page_id, "markdown": "m"})
                  for i, page_id in enumerate(ids[:3])])
    output.write([Entry(3, LONE, None)])  # a duplicate skipped: counted, not written
    output.write([Entry(4, ids[3], {"id": ids[3], "markdown": "m"})])
    assert output.seen(LONE) == 1 and output.seen("bad\ufffd") == 2
    assert output.seen("bad\udcff") == 4 and output.seen("bad\udc00") is None
    assert output.seen("bad\xed\xa0\x80") is None  # the BLOB's bytes read as a text
    assert list(output.done_pages()) == [(0, "a"), (1, LONE), (2, "bad\ufffd"), (3, LONE),
                                         (4, "bad\udcff")]
    output.close()
    again = opened(path, **kwargs)
    assert again.pages_done() == 5 and again.seen(LONE) == 1
    again.close()
    index = path / "_index.sqlite" if out.endswith("/") else tmp_path / (out + ".index.sqlite")
    index.unlink()
    rebuilt = opened(path, **kwargs)  # from the records: the duplicate has none
    assert list(rebuilt.done_ids()) == ["a", LONE, "bad\ufffd", "bad\udcff"]
    assert rebuilt.seen(LONE) == 1


def test_parquet_writes_a_lone_surrogate_as_u_fffd_and_says_so(tmp_path):
    """Parquet's strings are UTF-8: a record whose id holds a lone surrogate is written with
    U+FFFD in its place and an error naming the page; the index keeps the id itself."""
    out = tmp_path / "out"
    output = opened(out, fmt="parquet")
    record = {"markdown": "m", "n_main": 1, "n_other": 0}
    output.write([Entry(0, "a", {"id": "a", "error": None, **record}),
                  Entry(1, LONE, {"id": LONE, "error": None, **record}),
                  Entry(2, "c\udfff", {"id": "c\udfff", "error": "input: bad", **record})])
    assert output.seen(LONE) == 1 and output.seen("bad\ufffd") is None
    assert list(output.done_ids()) == ["a", LONE, "c\udfff"]
    output.close()
    table = pq.read_table(out)
    assert table.column("id").to_pylist() == ["a", "bad\ufffd", "c\ufffd"]
    assert table.column("error").to_pylist() == [
        None,
        "output: page 'bad\\ud800': id held a lone surrogate, which Parquet cannot store: "
        "written with U+FFFD",
        "input: bad; output: page 'c\\udfff': id held a lone surrogate, which Parquet cannot "
        "store: written with U+FFFD"]
