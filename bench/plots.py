"""The plots of the docs site, drawn from the result files in ``bench/results/`` (nothing is
measured again): ``make quality`` and ``make bench`` end with it, and it runs on its own.

    python -m bench.plots [--results bench/results] [--quality FILE] [--lengths FILE]
                          [--out docs/plots]

- ``quality-speed.svg``: word F1 against pages per CPU-second, one panel per page set, our
  profiles and the peers, from the newest ``make quality`` result (``bench.quality``; the
  fast profile's bar: its spread over seeds);
- ``speed-by-length.svg``: pages per CPU-second by the page's HTML size, from the newest
  ``bench.page_lengths`` result;
- ``gpu-calls-in-flight.svg``: GPU pages per second by model calls in flight, from every
  ``gpu_check.json`` under the results (``bench/gpu_check.sh``; its ``.callsN`` runs), when
  there are any.

SVG with its text as text and no date or random ids: the same results give the same bytes.
matplotlib (the ``docs`` extra) is imported here only, never by the package.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
OUT = ROOT / "docs" / "plots"
SET_TITLES = {"groundtruth": "dev pages, ground truth", "readability": "readability articles",
              "modern-news-heldout": "today's news (held apart)", "l3s-gn1": "L3S-GN1",
              "dragnet": "Dragnet"}
CALLS_RUN = re.compile(r"\.calls(\d+)$")


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _utc(data: dict[str, Any]) -> str:
    return str((data.get("machine") or {}).get("utc") or "")


def newest_quality(results: Path) -> Path | None:
    """The newest whole ``make quality`` result: the ground-truth set with our profiles and
    trafilatura, timed."""
    found = []
    for path in results.glob("quality-*.json"):
        data = _load(path)
        if not data or data.get("kind") != "quality":
            continue
        sets = {s.get("page_set"): s for s in data.get("sets", [])}
        rows = sets.get("groundtruth", {}).get("rows", [])
        systems = {r.get("system") for r in rows if r.get("pages_per_cpu_s")}
        if {"ours", "trafilatura"} <= systems:
            found.append((_utc(data), path.name, path))
    return max(found)[2] if found else None


def newest(results: Path, kind: str) -> Path | None:
    found = [(_utc(d), p.name, p) for p in results.glob(f"{kind}-*.json")
             if (d := _load(p)) and d.get("kind") == kind]
    return max(found)[2] if found else None


def gpu_checks(results: Path) -> list[Path]:
    """Every GPU check result with runs by calls in flight."""
    found = []
    for path in sorted(results.rglob("gpu_check.json")):
        data = _load(path)
        if data and not data.get("cpu_dry_run") and any(
                CALLS_RUN.search(str(r.get("run", ""))) and r.get("pages_per_s")
                for r in data.get("runs", [])):
            found.append(path)
    return found


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "pulpie-rt",
                                "font.size": 9, "axes.grid": True, "grid.alpha": 0.3})
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
    return path


def quality_speed(source: Path, out: Path) -> Path:
    plt = _pyplot()
    data = _load(source)
    sets = [s for s in data["sets"] if any(r.get("pages_per_cpu_s") for r in s["rows"])]
    columns = min(3, len(sets))
    rows = -(-len(sets) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False)
    for ax, page_set in zip(axes.flat, sets, strict=False):
        for row in page_set["rows"]:
            speed, scores = row.get("pages_per_cpu_s"), row.get("scores") or {}
            if not speed or scores.get("f1") is None:
                continue
            ours = row.get("system") == "ours"
            ax.errorbar(speed, scores["f1"], yerr=scores.get("f1_sd"), fmt="o" if ours else "s",
                        color="#1d3557" if ours else "#c1121f", capsize=3, markersize=6)
            ax.annotate(row["name"], (speed, scores["f1"]), textcoords="offset points",
                        xytext=(6, 4))
        ax.set_xscale("log")
        ax.set_title(f"{SET_TITLES.get(page_set['page_set'], page_set['page_set'])} "
                     f"({page_set.get('scored_pages')} pages)")
        ax.set_xlabel("pages per CPU-second (log)")
        ax.set_ylabel("word F1")
        ax.margins(x=0.35, y=0.15)
    for ax in list(axes.flat)[len(sets):]:
        ax.set_visible(False)
    fig.suptitle(f"Word F1 against speed on one core ({source.name})")
    fig.tight_layout()
    path = _save(fig, out / "quality-speed.svg")
    plt.close(fig)
    return path


def speed_by_length(source: Path, out: Path) -> Path:
    plt = _pyplot()
    data = _load(source)
    bins = [b for b in data["bins"] if b["pages"]]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    positions = range(len(bins))
    for name in data["systems"]:
        speeds = [b["systems"][name]["pages_per_cpu_s"] for b in bins]
        ax.plot(positions, speeds, marker="o", label=name if name == "trafilatura"
                else f"ours ({name})")
    ax.set_xticks(list(positions), [f"{b['bin']}\n({b['pages']} pages)" for b in bins])
    ax.set_yscale("log")
    ax.set_ylabel("pages per CPU-second (log)")
    ax.set_xlabel("the page's HTML size")
    ax.set_title(f"Speed by page length, {data['corpus']} pages ({source.name})")
    ax.legend()
    fig.tight_layout()
    path = _save(fig, out / "speed-by-length.svg")
    plt.close(fig)
    return path


def gpu_calls(sources: Iterable[Path], results: Path, out: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for source in sources:
        data = _load(source)
        points = sorted((int(m.group(1)), r["pages_per_s"]) for r in data["runs"]
                        if (m := CALLS_RUN.search(str(r.get("run", "")))) and r.get("pages_per_s"))
        calls, speeds = zip(*points, strict=True)
        where = source.parent.relative_to(results)
        ax.plot(calls, speeds, marker="o", label=f"{where} ({data.get('gpu', 'GPU')})")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter("{x:g}")
    ax.set_xlabel("model calls in flight per GPU")
    ax.set_ylabel("pages per second")
    ax.set_title("GPU pages per second by calls in flight (bench/gpu_check.sh)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = _save(fig, out / "gpu-calls-in-flight.svg")
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plots",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="the results folder (default: bench/results/)")
    parser.add_argument("--quality", type=Path, default=None,
                        help="the make quality result (default: the newest whole one)")
    parser.add_argument("--lengths", type=Path, default=None,
                        help="the bench.page_lengths result (default: the newest)")
    parser.add_argument("--out", type=Path, default=OUT, help="default: docs/plots/")
    args = parser.parse_args(argv)
    written: list[tuple[Path, str]] = []
    quality = args.quality or newest_quality(args.results)
    if quality is not None:
        written.append((quality_speed(quality, args.out), str(quality)))
    lengths = args.lengths or newest(args.results, "page-lengths")
    if lengths is not None:
        written.append((speed_by_length(lengths, args.out), str(lengths)))
    checks = gpu_checks(args.results)
    if checks:
        written.append((gpu_calls(checks, args.results, args.out),
                        f"{len(checks)} gpu_check.json files"))
    for path, source in written:
        print(f"{path} <- {source}")
    if not written:
        print(f"bench.plots: no results to draw in {args.results}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
