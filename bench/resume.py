"""A resumed ``pulpie-rt run`` over a large output: its peak memory and time to the end, beside
the same resume over a small output, in one run (``make bench``'s resume row).

An output of N done records (synthetic records written directly, ``--record-bytes`` of
Markdown each) with a torn last line, over inputs of those N pages and ``--new`` more; the run
resumes it twice: without its index (rebuilt from the output, read record by record) and with
it. Peak RSS is the run's own (``wait4``), so a bound independent of N shows as the large
output's peak equal to the small one's.

    python -m bench.resume                      # 300,000 records (about 1.1 GB)
    python -m bench.resume --records 50000 --small 1000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pulpie_rt.runtime.output import INDEX_FILE_SUFFIX

# the records' Markdown: a paragraph of text, as many bytes as asked
_TEXT = "The main content of a page, written as Markdown by a run that was killed. "
NEW_PAGE = ("<html><body><article><h1>A page not yet done</h1><p>"
            + "Its paragraph holds enough words to be the page's main content. " * 8
            + "</p></article></body></html>")
TORN = b'{"id": "torn", "markdown": "half a rec'
DEFAULT_RECORDS = 300_000
DEFAULT_SMALL = 3_000


def page_id(n: int) -> str:
    return f"page-{n:09d}"


def write_done_output(out: Path, inputs: Path, records: int, new: int,
                      record_bytes: int = 3500) -> tuple[int, str]:
    """``out``: ``records`` done records and a torn last line; ``inputs``: those pages and
    ``new`` more. Returns the done records' bytes and their SHA-256."""
    markdown = (_TEXT * (record_bytes // len(_TEXT) + 1))[:record_bytes]
    digest = hashlib.sha256()
    size = 0
    with out.open("wb") as fh:
        lines = []
        for n in range(records):
            lines.append(json.dumps({"id": page_id(n), "markdown": markdown, "n_main": 1,
                                     "n_other": 0, "error": None, "truncated": None,
                                     "empty_reason": None, "encoding": None}) + "\n")
            if len(lines) == 2000 or n == records - 1:
                chunk = "".join(lines).encode()
                fh.write(chunk)
                digest.update(chunk)
                size += len(chunk)
                lines = []
        fh.write(TORN)
    with inputs.open("w") as fh:
        fh.writelines(f'{{"id": "{page_id(n)}", "html": "<p>done</p>"}}\n'
                      for n in range(records))
    add_new_pages(inputs, records, new)
    return size, digest.hexdigest()


def run_measured(argv: list[str]) -> tuple[int, float, float, str]:
    """(exit status, peak RSS in MiB, wall seconds, stderr) of one ``pulpie-rt`` run."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "pulpie_rt.cli", *argv],
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    return proc.returncode, usage.ru_maxrss / 1024, time.perf_counter() - start, stderr


def measure(folder: Path, records: int, new: int, model: str, record_bytes: int) -> dict:
    """The resume of ``records`` done records twice: its index rebuilt from the output, then
    (``new`` more input pages, another torn line) with the index the first resume wrote."""
    out, inputs = folder / f"out-{records}.jsonl", folder / f"in-{records}.jsonl"
    size, _ = write_done_output(out, inputs, records, new, record_bytes)
    argv = ["run", str(inputs), "--out", str(out), "--model", model, "--workers", "0",
            "--quiet"]
    row = {"records": records, "output_bytes": size}
    for name in ("rebuilt index", "index"):
        if name == "index":
            add_new_pages(inputs, records + new, new)
            with out.open("ab") as fh:
                fh.write(TORN)
        status, rss, wall, stderr = run_measured(argv)
        if status != 0:
            raise SystemExit(f"resume over {records} records failed: {stderr}")
        row[name] = {"peak_rss_mib": round(rss, 1), "wall_s": round(wall, 2)}
    for path in (out, out.with_name(out.name + INDEX_FILE_SUFFIX), inputs):
        path.unlink()
    return row


def add_new_pages(inputs: Path, first: int, new: int) -> None:
    html = json.dumps(NEW_PAGE)
    with inputs.open("a") as fh:
        for n in range(first, first + new):
            fh.write(f'{{"id": "{page_id(n)}", "html": {html}}}\n')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS)
    parser.add_argument("--small", type=int, default=DEFAULT_SMALL,
                        help="the small output's records")
    parser.add_argument("--new", type=int, default=8, help="pages not yet done")
    parser.add_argument("--record-bytes", type=int, default=3500)
    parser.add_argument("--model", default="default")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = resume_rows(args.records, args.small, args.new, args.model, args.record_bytes)
    print(resume_table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def resume_rows(records: int, small: int = DEFAULT_SMALL, new: int = 8, model: str = "default",
                record_bytes: int = 3500) -> list[dict]:
    """The resume of a small output and of a large one, one after the other."""
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-resume-") as folder:
        return [measure(Path(folder), n, new, model, record_bytes) for n in (small, records)]


def resume_table(rows: list[dict]) -> str:
    lines = ["| done records | output | peak RSS, index rebuilt | wall | peak RSS, index kept "
             "| wall |", "|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        rebuilt, kept = row["rebuilt index"], row["index"]
        lines.append(f"| {row['records']:,} | {row['output_bytes'] / 1e9:.2f} GB | "
                     f"{rebuilt['peak_rss_mib']:.0f} MiB | {rebuilt['wall_s']:.1f} s | "
                     f"{kept['peak_rss_mib']:.0f} MiB | {kept['wall_s']:.1f} s |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
