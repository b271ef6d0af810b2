"""``pulpie-rt run`` at crawl scale, through the real command: a resume over a large output in
memory independent of the records done, compressed and sharded outputs killed with SIGKILL and
resumed, a disk that fills mid-run (a real tmpfs), a read-only output, duplicate ids, and
inputs that are not the output's."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from rt_helpers import pages_counted, small_dev_pages

from bench.resume import TORN, resume_only, run_measured, write_done_output

CLI = [sys.executable, "-m", "pulpie_rt.cli"]
READERS = {".jsonl": ["cat"], ".gz": ["gzip", "-dc"], ".zst": ["zstd", "-dc"]}
# the embedded model's fast profile: no transformer, so the runs are cheap
MODEL = "default"


def read_ids(path: Path) -> list[str]:
    """The ids in an output file, as the command-line tool for its suffix reads it."""
    done = subprocess.run([*READERS[path.suffix], str(path)], capture_output=True, check=True)
    return [json.loads(line)["id"] for line in done.stdout.decode().splitlines()]


def write_pages(path: Path, pages: list[tuple[str, str]]) -> None:
    path.write_text("".join(json.dumps({"id": i, "html": h}) + "\n" for i, h in pages))


def copies(n: int) -> list[tuple[str, str]]:
    return [(f"{copy}/{p['id']}", p["html"]) for copy in range(n) for p in small_dev_pages()]


def run(*args, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "run", *map(str, args)], capture_output=True, timeout=timeout)


def last_line(done: subprocess.CompletedProcess) -> str:
    return done.stderr.decode().strip().splitlines()[-1]


# ---------------------------------------------------------------------------- resume at scale

BIG_RECORDS = 300_000  # 1.09 GB of JSONL
SMALL_RECORDS = 3_000
NEW_PAGES = 8
# how much more a resume over BIG_RECORDS may peak at than one over SMALL_RECORDS (measured: 2
# to 3 MiB more, for the resume alone and the whole run): the done ids held in a list would take
# 20 MiB more, the old resume (the whole file read, every id listed) over 2 GiB
RSS_MARGIN_MIB = 12


def test_a_resume_over_a_large_output_takes_memory_independent_of_the_records_done(tmp_path):
    """300,000 records (over 1 GB) with a torn last line and no index (an older release's
    output): the resume reads it record by record, peaks at what a resume over 3,000 does, writes
    each new page once and leaves every done byte as it was. The resume's own work (the index
    rebuilt, the done pages read past) is also measured alone, with a model that does not load:
    the run stops right after it, before the model's own memory hides what it took."""
    rss: dict[tuple[str, int], float] = {}
    for records in (SMALL_RECORDS, BIG_RECORDS):
        out, inputs = tmp_path / f"out-{records}.jsonl", tmp_path / f"in-{records}.jsonl"
        size, digest = write_done_output(out, inputs, records, NEW_PAGES)
        if records == BIG_RECORDS:
            assert size >= 10**9
        done_pages, rss["resume", records] = resume_only(out, inputs)
        assert done_pages == records
        with out.open("ab") as fh:  # killed again mid-write
            fh.write(TORN)
        status, rss["run", records], _, stderr = run_measured(
            ["run", str(inputs), "--out", str(out), "--workers", "0", "--quiet", "--model",
             MODEL])
        assert status == 0, stderr
        assert f"{NEW_PAGES} pages ({records} already done), 0 errors" in stderr
        with out.open("rb") as fh:
            done = hashlib.sha256()
            for _ in range(size // (1 << 20)):
                done.update(fh.read(1 << 20))
            done.update(fh.read(size % (1 << 20)))
            assert done.hexdigest() == digest  # nothing done rewritten, the torn line cut
            new = [json.loads(line) for line in fh.read().splitlines()]
        assert [r["id"] for r in new] == [f"page-{n:09d}" for n in
                                          range(records, records + NEW_PAGES)]
        assert all(r["error"] is None and r["n_main"] > 0 for r in new)
        for path in (out, inputs):
            path.unlink()
    print("peak RSS (MiB):", {f"{what} {n}": round(v) for (what, n), v in rss.items()})
    for what in ("resume", "run"):
        assert rss[what, BIG_RECORDS] < rss[what, SMALL_RECORDS] + RSS_MARGIN_MIB, rss


# ---------------------------------------------------------------------------- kill -9 + resume


def already_done(done: subprocess.CompletedProcess) -> int:
    """The pages a resumed run's summary says were done before it."""
    return int(re.search(r"\((\d+) already done\)", last_line(done)).group(1))


def kill_after_first_write(args: list, written) -> None:
    proc = subprocess.Popen([*CLI, "run", *map(str, args)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None and not written():
            time.sleep(0.02)
        if proc.poll() is not None:
            pytest.fail("the run ended before it could be killed")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl.zst"])
def test_a_killed_compressed_run_resumes_with_every_page_once(tmp_path, suffix):
    pages = copies(20)
    inp, out = tmp_path / "pages.jsonl", tmp_path / f"out{suffix}"
    write_pages(inp, pages)
    args = [inp, "--out", out, "--model", MODEL, "--workers", "1", "--quiet"]
    index = Path(f"{out}.index.sqlite")
    kill_after_first_write(args, lambda: pages_counted(index) > 0)
    killed = read_ids(out)  # whole units only: each batch is a member or a frame
    assert 0 < len(killed) < len(pages)
    with out.open("ab") as fh:  # and a unit torn as if killed in the middle of a write
        fh.write(out.read_bytes()[:40])
    done = run(*args)
    assert done.returncode == 0, done.stderr.decode()
    # the pages the index counted (a batch on disk that it did not count is written again)
    assert 0 < already_done(done) <= len(killed)
    assert read_ids(out) == [i for i, _ in pages]  # each once, in input order


def test_a_killed_sharded_run_resumes_by_shard_with_every_page_once(tmp_path):
    pages = copies(20)
    inp, out = tmp_path / "pages.jsonl", tmp_path / "out"
    write_pages(inp, pages)
    args = [inp, "--out", f"{out}/", "--shard-records", 150, "--compression", "zstd",
            "--model", MODEL, "--workers", "1", "--quiet"]
    kill_after_first_write(args, lambda: any(out.glob("part-*")))
    complete = sorted(out.glob("part-*.jsonl.zst"))
    assert complete and all(len(read_ids(p)) == 150 for p in complete)
    done = run(*args)
    assert done.returncode == 0, done.stderr.decode()
    assert already_done(done) >= 150
    shards = sorted(out.glob("part-*.jsonl.zst"))
    assert [p.name for p in shards] == [f"part-{n:05d}.jsonl.zst" for n in range(len(shards))]
    ids = [read_ids(p) for p in shards]  # each readable alone
    assert [len(i) for i in ids[:-1]] == [150] * (len(shards) - 1)
    assert 0 < len(ids[-1]) <= 150
    assert [i for shard in ids for i in shard] == [i for i, _ in pages]
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith("part-")) == [
        "_index.sqlite"]


# ---------------------------------------------------------------------------- faults


@contextmanager
def tmpfs(folder: Path, options: str):
    """A real tmpfs at ``folder``; the test fails (never skips) where it cannot be mounted."""
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True, text=True)
    assert done.returncode == 0, f"cannot mount a tmpfs (the test runs as root): {done.stderr}"
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def test_a_full_disk_stops_naming_the_file_and_a_rerun_with_space_resumes_exactly(tmp_path):
    pages = copies(6)
    inp = tmp_path / "pages.jsonl"
    write_pages(inp, pages)
    with tmpfs(tmp_path / "small", "size=512k") as disk:
        out = disk / "out.jsonl"
        args = [inp, "--out", out, "--model", MODEL, "--workers", "1", "--quiet"]
        full = run(*args)
        assert full.returncode == 3, full.stderr.decode()
        written = read_ids(out)
        assert 0 < len(written) < len(pages)
        assert out.read_bytes().endswith(b"\n")  # nothing half-written left
        message = ("cannot write (No space left on device); "
                   f"{len(written)} pages are written, rerun with the same --out to resume")
        assert last_line(full) in (f"pulpie-rt run: {out}: {message}",
                                   f"pulpie-rt run: {out}.index.sqlite: {message}")
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        done = run(*args)
        assert done.returncode == 0, done.stderr.decode()
        assert f"({len(written)} already done)" in last_line(done)
        assert read_ids(out) == [i for i, _ in pages]


def test_a_read_only_output_is_refused_before_any_page_is_read(tmp_path):
    inp = tmp_path / "pages.jsonl"
    write_pages(inp, copies(1)[:2])
    with tmpfs(tmp_path / "ro", "ro,size=64k") as disk:
        for out, options in ((disk / "out.jsonl", []), (disk / "shards", ["--shard-records", 5])):
            # a model that does not exist: the output is checked before the model is opened
            done = run(inp, "--out", out, *options, "--model", tmp_path / "nope")
            assert done.returncode == 2
            assert done.stderr.decode().strip() == (
                f"pulpie-rt run: {out}: cannot write there (Read-only file system)")


def test_resuming_onto_the_output_of_other_inputs_is_refused(tmp_path):
    pages = copies(1)[:4]
    first, other, short, swapped = (tmp_path / f"{n}.jsonl" for n in ("first", "other", "short",
                                                                     "swapped"))
    write_pages(first, pages)
    write_pages(other, [(f"other/{i}", h) for i, h in pages] + pages)
    write_pages(short, pages[:2])
    write_pages(swapped, [pages[1], pages[0], *pages[2:]])  # not a duplicate: a later page
    out = tmp_path / "out.jsonl"
    assert run(first, "--out", out, "--model", MODEL, "--quiet").returncode == 0
    before = out.read_bytes()
    refused = run(other, "--out", out, "--model", MODEL, "--quiet")
    assert refused.returncode == 2
    assert refused.stderr.decode().strip() == (
        f"pulpie-rt run: {out} holds results of other inputs (input page 1 is "
        f"'other/{pages[0][0]}', {out} has '{pages[0][0]}'); use another --out")
    refused = run(short, "--out", out, "--model", MODEL, "--quiet")
    assert refused.returncode == 2
    assert refused.stderr.decode().strip() == (
        f"pulpie-rt run: {out} holds results of other inputs (4 pages done, the inputs have "
        "2); use another --out")
    refused = run(swapped, "--out", out, "--model", MODEL, "--quiet")
    assert refused.returncode == 2
    assert refused.stderr.decode().strip() == (
        f"pulpie-rt run: {out} holds results of other inputs (input page 1 is "
        f"'{pages[1][0]}', {out} has '{pages[0][0]}'); use another --out")
    assert out.read_bytes() == before


def test_duplicate_ids_follow_the_rule_and_are_counted(tmp_path):
    html = {p["id"]: p["html"] for p in small_dev_pages()[:4]}
    a, b, c, d = html
    inp, more = tmp_path / "pages.jsonl", tmp_path / "more.jsonl"
    ids = [a, b, a, c, b, d]
    write_pages(inp, [(i, html[i]) for i in ids])
    expected = {"skip": [a, b, c, d], "keep": ids}
    for rule, records in expected.items():
        out = tmp_path / f"{rule}.jsonl"
        done = run(inp, "--out", out, "--model", MODEL, "--on-duplicate-id", rule, "--quiet")
        assert done.returncode == 0, done.stderr.decode()
        assert last_line(done).startswith(
            f"pulpie-rt run: 6 pages, 0 errors, 0 truncated, 2 duplicate ids "
            f"{'skipped' if rule == 'skip' else 'kept'}, ")
        assert read_ids(out) == records
    out = tmp_path / "error.jsonl"
    done = run(inp, "--out", out, "--model", MODEL, "--on-duplicate-id", "error", "--quiet")
    assert done.returncode == 2
    assert last_line(done) == (f"pulpie-rt run: input page 3 has the id {a!r} of input page 1 "
                               "(--on-duplicate-id error); 2 pages are written")
    assert read_ids(out) == [a, b]
    # across a resume: the index knows the ids done; the skipped duplicates are pages done
    write_pages(more, [(i, html[i]) for i in [*ids, a, d, "new"] if i != "new"]
                + [("new", html[a])])
    done = run(more, "--out", tmp_path / "skip.jsonl", "--model", MODEL, "--quiet")
    assert done.returncode == 0, done.stderr.decode()
    assert last_line(done).startswith("pulpie-rt run: 3 pages (6 already done), 0 errors, "
                                      "0 truncated, 2 duplicate ids skipped, ")
    assert read_ids(tmp_path / "skip.jsonl") == [a, b, c, d, "new"]
