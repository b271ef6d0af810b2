"""A seeded fuzzing campaign over mutated real pages (issue 15): no input crashes, hangs or loses
its record.

Each input is a real dev or train page (a window of it: pages are cut to ``--window`` bytes
first so that a campaign of 100,000 inputs runs in minutes) as UTF-8 bytes, changed by one to
four mutations drawn from ``MUTATIONS``: byte flips, truncation, tag and attribute splices from
other pages, deep nesting, huge attributes, invalid UTF-8, NUL bytes, unclosed raw-text and
comment openers, odd character references, repeated or removed ranges. Input ``i`` of seed
``s`` depends only on ``(s, i)``: ``--replay I`` writes it to stdout to reproduce a failure.

Every input goes through the compiled core, one call after the other as a page goes: decode
(``stages.decode.decode``, the detector included) -> ``pulpie_rt.simplify`` -> reconstruct
(``stages.reconstruct.extract_main_html``, every other block main) -> the core's Markdown and
plain text (``native.markdown`` / ``native.text``, no fallback to the Python specification).
Outcomes per input, exactly one each:

- ``ok``; ``refused``: a documented refusal (``SimplifyError`` / ``ValueError`` naming the
  reason, the specification's own exception for Markdown);
- ``panic``: a Rust panic caught at the C boundary (a bug, though not a crash);
- ``crash``: the worker process died (a signal, an abort) or raised anything else;
- ``hang``: the input took more than ``--page-seconds`` of CPU time (10 times that in wall
  time: a deadlock uses no CPU).

The inputs run in worker processes that report each input's outcome; a worker that dies or
stops answering is replaced after its input is recorded, so one bad input never hides the
others. Every ``--run-every``-th input also goes into a WARC (bytes, as a crawl gives them)
run once through ``pulpie-rt run`` with the tiny checkpoint's bundle (``tests/fixtures``):
exactly one record per input, in order, within ``--page-seconds`` per page.

    python -m bench.fuzz [--seed 15] [--pages 100000] [--jobs 2] [--json out.json]

Exit status 1 on any panic, crash, hang or missing/duplicated record.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from eval.report import tool_env
from pulpie_rt.export.tiny import export_tiny_bundle

OUTCOMES = ("ok", "refused", "panic", "crash", "hang")
WALL_FACTOR = 10
TAGS = ("div", "p", "span", "table", "tr", "td", "ul", "li", "a", "b", "i", "section", "pre",
        "font", "h1", "form", "select", "option", "svg", "math", "template", "noscript")
RAW_OPENERS = (b"<!--", b"<script>", b"<style>", b"<textarea>", b"<title>", b"<xmp>",
               b"<plaintext>", b"<noembed>", b"<iframe>", b"<![CDATA[", b"<!DOCTYPE",
               b"<?xml ", b"</", b"<", b"&", b"<svg><![CDATA[", b"<math><mtext><table>")
CHARREFS = (b"&#0;", b"&#x110000;", b"&#xD800;", b"&#x80;", b"&#99999999999999;", b"&amp",
            b"&notanentity;", b"&#;", b"&#x;", b"&nbsp", b"&#1;", b"&#xFFFE;", b"&#65533;")
INVALID_UTF8 = (b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe2\x82",
                b"\xf4\x90\x80\x80", b"\x80\x80\x80", b"\xef\xbb\xbf", b"\xff\xfe", b"\x1b$B")


def load_windows(window: int, splits: str = "dev,train") -> list[bytes]:
    """The pages of the corpus splits (comma-separated) as UTF-8 bytes, each cut to its first
    ``window`` bytes."""
    from pulpie_rt.corpus import load_pages

    pages = [page for split in splits.split(",") for page in load_pages(split)]
    return [page["html"].encode("utf-8", "surrogatepass")[:window] for page in pages]


def _at(rng: random.Random, data: bytes | bytearray) -> int:
    return rng.randrange(len(data) + 1)


def _tag_piece(rng: random.Random, other: bytes) -> bytes:
    """A run of markup from another page: from one ``<`` up to a later ``>``."""
    if not other:
        return b"<div>"
    start = other.find(b"<", rng.randrange(len(other)))
    if start < 0:
        return b"<p>"
    end = other.find(b">", start)
    end = len(other) if end < 0 else end + 1
    return other[start:min(end + rng.choice((0, 0, 200, 2000)), len(other))]


def mutate_flip(rng, data, pages):
    for _ in range(rng.randint(1, 16)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return data


def mutate_truncate(rng, data, pages):
    return data[:_at(rng, data)]


def mutate_tag_splice(rng, data, pages):
    at = _at(rng, data)
    return data[:at] + _tag_piece(rng, rng.choice(pages)) + data[at:]


def mutate_attribute_splice(rng, data, pages):
    """An attribute (a real page's, or an odd one) inserted into a tag of the page."""
    start = data.find(b"<", rng.randrange(len(data) + 1)) if data else -1
    if start < 0:
        start = 0
    name_end = start + 1
    while name_end < len(data) and chr(data[name_end]).isalnum():
        name_end += 1
    other = rng.choice(pages)
    eq = other.find(b'="', rng.randrange(len(other) + 1)) if other else -1
    if eq > 0:
        begin = other.rfind(b" ", max(0, eq - 40), eq)
        end = other.find(b'"', eq + 2)
        attribute = other[begin if begin >= 0 else eq:end + 1 if end > 0 else eq + 2]
    else:
        attribute = b" _item_id=\"1\""
    attribute = rng.choice((attribute, attribute, b" _item_id=\"7\"", b" class", b" =x",
                            b" a=\"<p>\"", b" style='", b" href=javascript:x", b" \x00=\x00"))
    return data[:name_end] + attribute + data[name_end:]


def mutate_deep_nesting(rng, data, pages):
    depth = rng.choice((100, 1000, 5000, 20000))
    tag = rng.choice(TAGS).encode()
    at = _at(rng, data)
    close = b"</" + tag + b">" if rng.random() < 0.5 else b""
    return data[:at] + (b"<" + tag + b">") * depth + b"deep" + close * depth + data[at:]


def mutate_huge_attribute(rng, data, pages):
    size = rng.choice((10_000, 100_000, 1_000_000))
    value = bytes([rng.choice(b"ab <>&\"'=x")]) * size if rng.random() < 0.3 else b"v" * size
    at = _at(rng, data)
    return data[:at] + b'<div title="' + value + b'">t</div>' + data[at:]


def mutate_invalid_utf8(rng, data, pages):
    for _ in range(rng.randint(1, 8)):
        at = _at(rng, data)
        data = data[:at] + rng.choice(INVALID_UTF8) + data[at:]
    return data


def mutate_nul(rng, data, pages):
    for _ in range(rng.randint(1, 8)):
        at = _at(rng, data)
        data = data[:at] + b"\x00" * rng.choice((1, 1, 3, 100)) + data[at:]
    return data


def mutate_raw_opener(rng, data, pages):
    at = _at(rng, data)
    return data[:at] + rng.choice(RAW_OPENERS) + data[at:]


def mutate_charref(rng, data, pages):
    at = _at(rng, data)
    return data[:at] + rng.choice(CHARREFS) + data[at:]


def mutate_repeat_range(rng, data, pages):
    if not data:
        return data
    start = rng.randrange(len(data))
    end = min(len(data), start + rng.randint(1, 400))
    return data[:end] + data[start:end] * rng.randint(2, 200) + data[end:]


def mutate_remove_range(rng, data, pages):
    if not data:
        return data
    start = rng.randrange(len(data))
    return data[:start] + data[start + rng.randint(1, 2000):]


MUTATIONS = {
    "flip": mutate_flip,
    "truncate": mutate_truncate,
    "tag-splice": mutate_tag_splice,
    "attribute-splice": mutate_attribute_splice,
    "deep-nesting": mutate_deep_nesting,
    "huge-attribute": mutate_huge_attribute,
    "invalid-utf8": mutate_invalid_utf8,
    "nul": mutate_nul,
    "raw-opener": mutate_raw_opener,
    "charref": mutate_charref,
    "repeat-range": mutate_repeat_range,
    "remove-range": mutate_remove_range,
}


# how often each mutation is drawn, relative to the others: the two that make inputs of
# megabytes or tens of thousands of elements cost ten times the rest per input, and a quarter
# of the draws keeps them in one input of ten
HEAVY = {"deep-nesting": 0.25, "huge-attribute": 0.25}
WEIGHTS = [HEAVY.get(name, 1.0) for name in MUTATIONS]


def mutated_page(pages: list[bytes], seed: int, index: int) -> tuple[bytes, list[str]]:
    """Input ``index`` of seed ``seed`` and the mutations that made it."""
    rng = random.Random(f"{seed}:{index}")
    data = bytearray(pages[rng.randrange(len(pages))])
    names = rng.choices(list(MUTATIONS), weights=WEIGHTS, k=rng.randint(1, 4))
    for name in names:
        data = bytearray(MUTATIONS[name](rng, data, pages))
    return bytes(data), names


def run_page(data: bytes) -> str:
    """The core on one input: its outcome (module docstring)."""
    from pulpie_rt import simplify
    from pulpie_rt.runtime import native
    from pulpie_rt.runtime.stages.blocks import extract_blocks
    from pulpie_rt.runtime.stages.decode import decode
    from pulpie_rt.runtime.stages.reconstruct import extract_main_html
    from pulpie_rt.runtime.stages.simplify import SimplifyError

    def failure(exc: Exception) -> str:
        return "panic" if "panic:" in str(exc) else "refused"

    text = decode(data).text
    try:
        simplified, map_html = simplify(text)
    except SimplifyError as exc:
        return failure(exc)
    _, ids = extract_blocks(simplified)
    labels = {item_id: "main" if n % 2 == 0 else "other"
              for n, item_id in enumerate(ids) if item_id is not None}
    try:
        main_html = extract_main_html(map_html, labels)
    except ValueError as exc:
        return failure(exc)
    outcome = "ok"
    for convert in (native.markdown, native.text):
        try:
            if convert(main_html) is None:
                return "panic"
        except native.SpecificationRaises:
            outcome = "refused"
    return outcome


def worker(seed: int, start: int, stop: int, window: int, splits: str) -> None:
    """Runs inputs ``start`` .. ``stop - 1``, one line per input on stdout: ``index outcome
    wall-seconds cpu-seconds``, written before the next input starts."""
    pages = load_windows(window, splits)
    print("ready", flush=True)
    for index in range(start, stop):
        data, _ = mutated_page(pages, seed, index)
        began, began_cpu = time.perf_counter(), time.process_time()
        try:
            outcome = run_page(data)
        except Exception as exc:  # anything undocumented is a crash of this input
            print(f"error {index} {type(exc).__name__}: {exc}"[:500].replace("\n", " "),
                  file=sys.stderr, flush=True)
            outcome = "crash"
        print(f"{index} {outcome} {time.perf_counter() - began:.4f} "
              f"{time.process_time() - began_cpu:.4f}", flush=True)


def _read_line(process: subprocess.Popen, timeout: float) -> str | None:
    """A line of the worker's output, or None when it sends none within ``timeout``."""
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    if not ready:
        return None
    return process.stdout.readline()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _next_answer(process: subprocess.Popen, page_seconds: float) -> str | None:
    """The worker's answer for its current input, or None when the input is a hang: more than
    ``page_seconds`` of the worker's CPU time, or ``WALL_FACTOR`` times that in wall time (a
    deadlock uses no CPU). CPU time, not wall time, so that a loaded machine makes no hangs."""
    began_wall = time.monotonic()
    began_cpu = cpu_seconds(process.pid)
    while True:
        line = _read_line(process, min(1.0, page_seconds))
        if line is not None:
            return line
        if (cpu_seconds(process.pid) - began_cpu > page_seconds
                or time.monotonic() - began_wall > WALL_FACTOR * page_seconds):
            return None


def run_worker(seed: int, start: int, stop: int, window: int, splits: str,
               page_seconds: float, counts: Counter, failures: list[dict]) -> tuple[int, float]:
    """Inputs from ``start`` on through one worker process, until ``stop`` or the first input
    it crashes or hangs on (recorded as such). The next input to run and the slowest input's
    CPU seconds."""
    slowest = 0.0
    index = start
    # stderr to a file: a worker that writes much there must not block on a full pipe
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.fuzz", "--worker", str(seed), str(index),
             str(stop), "--window", str(window), "--splits", splits],
            stdout=subprocess.PIPE, stderr=errors, text=True, env=tool_env())
        first = _read_line(process, 300)
        if first is None or first.strip() != "ready":
            process.kill()
            process.wait()
            errors.seek(0)
            raise SystemExit(f"fuzz worker did not start: {errors.read()[-2000:]}")
        while index < stop:
            line = _next_answer(process, page_seconds)
            if not line:  # None: no answer in time; "": the worker's output ended
                process.kill()
                process.wait()
                outcome = "hang" if line is None else "crash"
                counts[outcome] += 1
                errors.seek(0)
                failures.append({"index": index, "outcome": outcome,
                                 "returncode": process.returncode,
                                 "stderr": errors.read()[-1000:]})
                return index + 1, slowest
            number, outcome, _, cpu = line.split()
            if int(number) != index:
                raise SystemExit(f"fuzz worker answered input {number} for {index}")
            counts[outcome] += 1
            slowest = max(slowest, float(cpu))
            if outcome == "panic":  # a crash's reason comes on stderr (below)
                failures.append({"index": index, "outcome": outcome})
            index += 1
        process.wait()
        errors.seek(0)
        for line in errors.read().splitlines():
            if line.startswith("error "):  # the reason of a "crash" outcome the worker caught
                failures.append({"index": int(line.split()[1]), "outcome": "crash",
                                 "error": line})
    return index, slowest


def run_range(seed: int, start: int, stop: int, window: int, splits: str, page_seconds: float,
              failures: list[dict]) -> tuple[Counter, float]:
    """Inputs ``start`` .. ``stop - 1`` through worker processes, a new worker after a crash
    or hang. Outcome counts and the slowest input's CPU seconds."""
    counts: Counter = Counter()
    slowest = 0.0
    index = start
    while index < stop:
        index, worker_slowest = run_worker(seed, index, stop, window, splits, page_seconds,
                                           counts, failures)
        slowest = max(slowest, worker_slowest)
    return counts, slowest


def write_warc(path: Path, inputs: list[tuple[int, bytes]]) -> None:
    """One response record per input, its payload the input's bytes."""
    with path.open("wb") as fh:
        for index, data in inputs:
            http = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
                    + str(len(data)).encode() + b"\r\n\r\n" + data)
            head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:fuzz:{index}>\r\n"
                    f"WARC-Target-URI: https://fuzz.example/{index}\r\n"
                    "WARC-Date: 2024-01-01T00:00:00Z\r\n"
                    "Content-Type: application/http; msgtype=response\r\n"
                    f"Content-Length: {len(http)}\r\n\r\n").encode("ascii")
            fh.write(head + http + b"\r\n\r\n")


def run_cli_share(seed: int, indices: list[int], window: int, splits: str, page_seconds: float,
                  bundle: str | None) -> dict:
    """The inputs ``indices`` through ``pulpie-rt run`` over a WARC: records, errors, seconds."""
    pages = load_windows(window, splits)
    inputs = [(index, mutated_page(pages, seed, index)[0]) for index in indices]
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-fuzz-") as tmp:
        workdir = Path(tmp)
        model = bundle or str(export_tiny_bundle(workdir / "bundle"))
        warc = workdir / "fuzz.warc"
        write_warc(warc, inputs)
        out = workdir / "out.jsonl"
        began = time.perf_counter()
        limit = 120 + page_seconds * len(inputs)
        try:
            done = subprocess.run([sys.executable, "-m", "pulpie_rt.cli", "run", str(warc),
                                   "--out", str(out), "--model", model, "--quiet"],
                                  capture_output=True, text=True, timeout=limit)
            returncode, stderr = done.returncode, done.stderr[-2000:]
        except subprocess.TimeoutExpired:
            returncode, stderr = None, f"did not finish in {limit:.0f} s"
        seconds = time.perf_counter() - began
        records = [json.loads(line) for line in out.read_text().splitlines()] \
            if out.exists() else []
    expected = [f"<urn:fuzz:{index}>" for index in indices]
    got = [record.get("id") for record in records]
    return {"pages": len(inputs), "records": len(records), "returncode": returncode,
            "seconds": round(seconds, 1), "one_record_each": got == expected,
            "errors": sum(record.get("error") is not None for record in records),
            "error_kinds": dict(Counter(str(record["error"]).split(":")[0]
                                        for record in records if record.get("error"))),
            "stderr": stderr if returncode != 0 else ""}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--pages", type=int, default=100_000, help="mutated inputs")
    parser.add_argument("--first", type=int, default=0,
                        help="the first input's index (to rerun a failure: --first I --pages 1)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes at a time")
    parser.add_argument("--window", type=int, default=32_768,
                        help="bytes of each real page a mutation starts from")
    parser.add_argument("--splits", default="dev,train", help="corpus splits the pages come from")
    parser.add_argument("--page-seconds", type=float, default=20.0,
                        help="an input taking more CPU seconds than this (or 10 times as many "
                        "wall seconds) is a hang")
    parser.add_argument("--run-every", type=int, default=100,
                        help="every Nth input also goes through pulpie-rt run (0: none)")
    parser.add_argument("--bundle", default=None, help="model bundle (default: the tiny one)")
    parser.add_argument("--json", default=None, help="write the result here")
    parser.add_argument("--replay", type=int, default=None,
                        help="write input N of the seed to stdout and stop")
    parser.add_argument("--worker", nargs=3, type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker is not None:
        worker(*args.worker, args.window, args.splits)
        return 0
    if args.replay is not None:
        data, names = mutated_page(load_windows(args.window, args.splits), args.seed,
                                   args.replay)
        print(f"input {args.replay} of seed {args.seed}: {', '.join(names)}", file=sys.stderr)
        sys.stdout.buffer.write(data)
        return 0

    began = time.perf_counter()
    failures: list[dict] = []
    counts: Counter = Counter()
    slowest = 0.0
    jobs = max(1, args.jobs)
    bounds = [args.first + args.pages * j // jobs for j in range(jobs + 1)]
    if jobs == 1:
        counts, slowest = run_range(args.seed, args.first, args.first + args.pages, args.window,
                                    args.splits, args.page_seconds, failures)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(jobs) as pool:
            parts = [pool.submit(run_range, args.seed, bounds[j], bounds[j + 1], args.window,
                                 args.splits, args.page_seconds, failures)
                     for j in range(jobs)]
            for part in parts:
                part_counts, part_slowest = part.result()
                counts += part_counts
                slowest = max(slowest, part_slowest)
    core_seconds = time.perf_counter() - began
    recorded = sum(counts.values())
    cli = None
    if args.run_every > 0:
        indices = list(range(args.first, args.first + args.pages, args.run_every))
        cli = run_cli_share(args.seed, indices, args.window, args.splits, args.page_seconds,
                            args.bundle)

    result = {
        "command": "python -m bench.fuzz " + " ".join(argv if argv is not None
                                                                  else sys.argv[1:]),
        "seed": args.seed, "first": args.first, "inputs": args.pages, "splits": args.splits,
        "window_bytes": args.window,
        "page_seconds_bound": args.page_seconds,
        "core": {"outcomes": {name: counts.get(name, 0) for name in OUTCOMES},
                 "records": recorded, "seconds": round(core_seconds, 1),
                 "slowest_input_cpu_seconds": round(slowest, 3)},
        "pulpie_rt_run": cli,
        "failures": sorted(failures, key=lambda f: f["index"])[:50],
    }
    bad = (counts["panic"] + counts["crash"] + counts["hang"] + (recorded != args.pages)
           + (cli is not None and (cli["returncode"] != 0 or not cli["one_record_each"])))
    result["passed"] = not bad
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
