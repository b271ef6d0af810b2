"""A resumed ``pulpie-rt run`` over a large output: its peak memory and time to the end, beside
the same resume over a small output, in one run (``make bench``'s resume row).

An output of N done records (synthetic records written directly, ``--record-bytes`` of
Markdown each) with a torn last line, over inputs of those N pages and ``--new`` more, resumed
three times: the resume alone (the output opened, its index rebuilt from the records, the
inputs read past the pages done: what ``pulpie-rt run`` does before it opens the model), the
whole run without its index, and the whole run from its index (another torn line, ``--new``
more pages). Peak RSS is each process's own (VmHWM), so a bound independent of N shows as the
large output's peaks equal to the small one's.

    python -m bench.resume                      # 300,000 records (about 1.1 GB)
    python -m bench.resume --records 50000 --small 1000
"""

from __future__ import annotations

import argparse
import hashlib
import json
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


# A process's own peak RSS: /proc's VmHWM (ru_maxrss would count the parent's memory at the fork
# that started it, which Linux carries across exec)
PEAK_LINE = "peak RSS KiB:"
_PRINT_PEAK = (f"import atexit, sys\n"
               f"def _peak():\n"
               f"    for line in open('/proc/self/status'):\n"
               f"        if line.startswith('VmHWM:'):\n"
               f"            print('{PEAK_LINE}', line.split()[1], file=sys.stderr)\n"
               f"atexit.register(_peak)\n")
RUN_CLI = _PRINT_PEAK + "from pulpie_rt.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def _peak_mib(stderr: str) -> tuple[float, str]:
    """The peak the process printed (MiB), and its stderr without that line."""
    lines = stderr.splitlines()
    peak = [line for line in lines if line.startswith(PEAK_LINE)]
    if not peak:
        raise RuntimeError(f"no peak RSS printed: {stderr[-2000:]}")
    rest = "\n".join(line for line in lines if not line.startswith(PEAK_LINE))
    return int(peak[-1].split()[-1]) / 1024, rest


def run_measured(argv: list[str]) -> tuple[int, float, float, str]:
    """(exit status, peak RSS in MiB, wall seconds, stderr) of one ``pulpie-rt`` run."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUN_CLI, *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    peak, stderr = _peak_mib(done.stderr)
    return done.returncode, peak, wall, stderr


# what ``pulpie-rt run`` does to resume, before it opens the model (runtime.cli.cmd_run), alone in
# a process: the output opened (its index rebuilt when missing) and the inputs read past the
# pages done; prints the pages done
RESUME_ONLY = _PRINT_PEAK + """
from pathlib import Path
from pulpie_rt.runtime.cli import _skip_done
from pulpie_rt.runtime.io import iter_inputs
from pulpie_rt.runtime.output import open_output
out, inputs = Path(sys.argv[1]), Path(sys.argv[2])
output = open_output(out)
output.resume()
read, mismatch = _skip_done(iter_inputs([inputs]), output, out)
assert mismatch is None, mismatch
print(read)
"""


def resume_only(out: Path, inputs: Path) -> tuple[int, float]:
    """(pages done, peak RSS in MiB) of the resume alone (``RESUME_ONLY``), the model's memory
    left out: what grew with the pages done would show here first."""
    done = subprocess.run([sys.executable, "-c", RESUME_ONLY, str(out), str(inputs)],
                          capture_output=True, text=True, check=True)
    return int(done.stdout), _peak_mib(done.stderr)[0]


def measure(folder: Path, records: int, new: int, model: str, record_bytes: int) -> dict:
    """The three resumes of ``records`` done records (see the module docstring)."""
    out, inputs = folder / f"out-{records}.jsonl", folder / f"in-{records}.jsonl"
    index = out.with_name(out.name + INDEX_FILE_SUFFIX)
    size, _ = write_done_output(out, inputs, records, new, record_bytes)
    row: dict = {"records": records, "output_bytes": size}
    start = time.perf_counter()
    done, peak = resume_only(out, inputs)
    assert done == records, (done, records)
    row["resume alone"] = {"peak_rss_mib": round(peak, 1),
                           "wall_s": round(time.perf_counter() - start, 2)}
    argv = ["run", str(inputs), "--out", str(out), "--model", model, "--workers", "0",
            "--quiet"]
    for name in ("rebuilt index", "index"):
        if name == "rebuilt index":
            index.unlink()
        else:
            add_new_pages(inputs, records + new, new)
        with out.open("ab") as fh:
            fh.write(TORN)
        status, rss, wall, stderr = run_measured(argv)
        if status != 0:
            raise SystemExit(f"resume over {records} records failed: {stderr}")
        row[name] = {"peak_rss_mib": round(rss, 1), "wall_s": round(wall, 2)}
    for path in (out, index, inputs):
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
    kinds = ("resume alone", "rebuilt index", "index")
    lines = ["| done records | output | resume alone: peak RSS, s | run, index rebuilt | "
             "run from the index |", "|---:|---:|---:|---:|---:|"]
    for row in rows:
        cells = [f"{row[k]['peak_rss_mib']:.0f} MiB, {row[k]['wall_s']:.1f} s" for k in kinds]
        lines.append(f"| {row['records']:,} | {row['output_bytes'] / 1e9:.2f} GB | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
