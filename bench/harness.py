"""What every benchmark shares: pages, side-by-side timing, machine facts, tables, JSON files.

Every claim is a ratio measured in one run: for each page the benchmark calls ours and the
reference back to back (alternating which goes first), so machine noise — other jobs on the
shared cores, frequency changes — hits both sides alike.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import gzip
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from pulpie_rt.corpus import load_pages

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"

# Packages whose versions decide the numbers; missing ones are recorded as null.
_VERSIONED_PACKAGES = (
    "pulpie-rt", "pulpie", "selectolax", "lxml", "html2text", "tokenizers", "numpy",
    "onnxruntime", "onnxruntime-gpu", "tensorrt", "tensorrt-cu12", "torch", "transformers",
)


# ---------------------------------------------------------------- pages


def spread(items: Sequence, n: int | None) -> list:
    """``n`` items evenly spaced over ``items`` (all when ``n`` is None or too large).

    The corpus is ordered by source, so the first ``n`` pages would all be readability
    fixtures; an even spread keeps every source in a small subset.
    """
    if n is None or n >= len(items):
        return list(items)
    if n <= 0:
        return []
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def _read_jsonl(path: Path, html_field: str) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    pages = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            if not isinstance(record.get(html_field), str):
                raise ValueError(f"{path}:{line_no}: no string field {html_field!r}")
            pages.append({"id": str(record.get("id", f"{path.name}:{line_no}")),
                          "html": record[html_field]})
    return pages


def _read_warc(path: Path) -> list[dict]:
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    pages = []
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh, record_types=WarcRecordType.response):
            if "html" not in (record.http_content_type or ""):
                continue
            body = record.reader.read()
            pages.append({"id": record.headers.get("WARC-Record-ID") or f"{path.name}:{len(pages)}",
                          "html": body.decode(record.http_charset or "utf-8", errors="replace")})
    return pages


def read_input_pages(paths: Iterable[str | Path], html_field: str = "html") -> list[dict]:
    """Pages from user files: JSONL / JSONL.gz (``html_field``) and WARC / WARC.gz."""
    pages: list[dict] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise FileNotFoundError(f"bench input {path} does not exist")
        name = path.name.lower()
        if name.endswith((".warc", ".warc.gz")):
            pages.extend(_read_warc(path))
        elif name.endswith((".jsonl", ".jsonl.gz", ".json.gz", ".ndjson")):
            pages.extend(_read_jsonl(path, html_field))
        else:
            raise ValueError(f"bench input {path}: expected .jsonl[.gz] or .warc[.gz]")
    return pages


def bench_pages(n: int | None = None, inputs: Sequence[str] | None = None,
                corpus: str = "dev") -> list[dict]:
    """``n`` real pages (evenly spread): the user's files if given, else ``../shared/corpus``.

    ``corpus`` may join names with '+' ("dev+train") to draw from several files in order.
    """
    if inputs:
        pages = read_input_pages(inputs)
    else:
        pages = [page for name in corpus.split("+") for page in load_pages(name)]
    return spread(pages, n)


# ---------------------------------------------------------------- timing


@dataclass
class SideBySide:
    """Accumulated time of ours and the reference over the same items."""

    name: str
    items: int = 0
    ours_cpu_s: float = 0.0
    ref_cpu_s: float = 0.0
    ours_wall_s: float = 0.0
    ref_wall_s: float = 0.0
    errors: dict[str, int] = field(default_factory=lambda: {"ours": 0, "ref": 0})
    # pages whose outputs agree (first pass only), when the caller gave a comparison
    same_output: int | None = None

    def as_dict(self) -> dict[str, Any]:
        ours = self.items / self.ours_cpu_s if self.ours_cpu_s else None
        ref = self.items / self.ref_cpu_s if self.ref_cpu_s else None
        return {
            "stage": self.name,
            "pages": self.items,
            "ours_pages_per_cpu_s": ours,
            "ref_pages_per_cpu_s": ref,
            "ratio": (ours / ref) if ours and ref else None,
            "ours_cpu_s": self.ours_cpu_s,
            "ref_cpu_s": self.ref_cpu_s,
            "ours_wall_s": self.ours_wall_s,
            "ref_wall_s": self.ref_wall_s,
            "errors": dict(self.errors),
            "same_output_pages": self.same_output,
        }


def _timed(fn: Callable[[Any], Any], item: Any) -> tuple[float, float, Any]:
    """CPU and wall seconds of ``fn(item)``, and its output (the exception when it raised).

    Garbage left by the previous call is collected first, untimed, so a collection that one
    side's allocations made due is not charged to the other side.
    """
    gc.collect()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        out = fn(item)
    except Exception as exc:  # a page that fails on one side is counted, not fatal
        out = exc
    return time.process_time() - cpu0, time.perf_counter() - wall0, out


def side_by_side(name: str, items: Sequence[Any], ours: Callable[[Any], Any],
                 ref: Callable[[Any], Any], repeats: int = 1,
                 same: Callable[[Any, Any], bool] | None = None) -> SideBySide:
    """Time ``ours(item)`` and ``ref(item)`` back to back on every item, alternating order.

    Per core: CPU seconds of this process (``time.process_time``), so other jobs on the
    machine do not count against either side; a library that spreads work over threads is
    charged for every core it used. Wall seconds are recorded as well.
    """
    gc.collect()
    gc.freeze()  # the per-call collections below then only scan what the calls allocated
    try:
        with single_threaded_tokenizers():
            return _side_by_side(name, items, ours, ref, repeats, same)
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def single_threaded_tokenizers() -> Iterator[None]:
    """``tokenizers`` batch encoding on one thread: per-core figures then measure one core's
    work, and idle worker threads spinning on a loaded machine stop adding noise. (Pipeline
    workers are separate processes, where ``tokenizers`` runs one thread anyway.)"""
    previous = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = previous


def _side_by_side(name: str, items: Sequence[Any], ours: Callable[[Any], Any],
                  ref: Callable[[Any], Any], repeats: int,
                  same: Callable[[Any, Any], bool] | None) -> SideBySide:
    result = SideBySide(name, same_output=0 if same else None)
    for rep in range(repeats):
        for i, item in enumerate(items):
            order = ("ours", "ref") if (i + rep) % 2 == 0 else ("ref", "ours")
            outputs = {}
            for side in order:
                cpu_s, wall_s, out = _timed(ours if side == "ours" else ref, item)
                outputs[side] = out
                if side == "ours":
                    result.ours_cpu_s += cpu_s
                    result.ours_wall_s += wall_s
                else:
                    result.ref_cpu_s += cpu_s
                    result.ref_wall_s += wall_s
                if isinstance(out, Exception):
                    result.errors[side] += 1
            if same and rep == 0 and not any(isinstance(o, Exception) for o in outputs.values()):
                result.same_output += bool(same(outputs["ours"], outputs["ref"]))
            result.items += 1
    return result


# ---------------------------------------------------------------- machine and output


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=REPO_ROOT, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in _VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def machine_info() -> dict[str, Any]:
    """Where and with what a figure was measured."""
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "loadavg_at_start": load,
        "git_commit": _git_commit(),
        "versions": package_versions(),
    }


def write_result(kind: str, payload: dict[str, Any], out: str | Path | None = None) -> Path:
    """Write ``payload`` as JSON: to ``out`` if it names a .json file, else into a folder
    (``out`` or ``bench/results/``) as ``<kind>-<UTC time>.json``."""
    if out is not None and str(out).endswith(".json"):
        path = Path(out)
    else:
        folder = Path(out) if out is not None else RESULTS_DIR
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        path = folder / f"{kind}-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n",
                    encoding="utf-8")
    return path


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 100:
            return f"{value:.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}" if abs(value) >= 0.1 else f"{value:.3g}"
    return str(value)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain aligned text table (first column left-aligned, numbers right-aligned)."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        rest = zip(row[1:], widths[1:], strict=True)
        parts = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in rest]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
