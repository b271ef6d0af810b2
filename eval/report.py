"""Where and with what a figure was measured, and how it is written: machine facts, package
versions, JSON result files, plain text tables. Shared by ``bench``, ``parity`` and ``train``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"

# Packages whose versions decide the numbers; missing ones are recorded as null.
_VERSIONED_PACKAGES = (
    "pulpie-rt", "pulpie", "selectolax", "lxml", "html2text", "tokenizers", "numpy",
    "onnxruntime", "onnxruntime-gpu", "tensorrt", "tensorrt-cu12", "torch", "transformers",
)


def tool_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) with the checkout's root first on
    ``PYTHONPATH``: a child ``python -m bench.…`` imports the repository's tools (which are not
    installed) from whatever folder it is started in."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


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
