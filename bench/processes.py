"""Whole processes on the same pages, as a user runs them: ``pulpie-rt run`` of the working
tree and of its merge base (the embedded default model, its default profile), resiliparse and
trafilatura, side by side in one run.

    python -m bench.processes                      # the dev pages, 3 rounds
    python -m bench.processes --rounds 5 --base HEAD~2 --skip trafilatura
    python -m bench.processes --fixed --rounds 15  # a run's fixed cost: over 0 and 1 page

Each side is one process over the same JSONL file of pages, from its start to its exit:
imports, model load, reading the pages and writing every record are in its figure. Its CPU
seconds are the user + system time of the process and its threads (``os.wait4``), so another
job on the machine is not charged to it. The sides run one after another, round after round,
the first side turning each round; per side the least CPU seconds over the rounds (another
job's load only ever adds to a process's CPU time: cache misses, a slower clock). The two
``pulpie-rt run`` sides are ``bench.check``'s trees: the merge base exported with ``git
archive`` and both cores built by the same ``cargo build --release``, each side importing its
own tree (the working tree's uncommitted changes included), both loading the same ONNX Runtime
library.
Their Markdown is compared page by page: the
row counts the pages where the two agree (a faster run that changes an output is no win).

``--fixed``: what a process costs besides its pages (start, imports, the model's load, exit),
the same two ``pulpie-rt run`` sides over an empty JSONL file and over one page (the first),
each the least CPU seconds of alternating rounds.

resiliparse: ``extract_plain_text(html, main_content=True)``; trafilatura:
``extract(html)`` with its defaults. Both from the ``bench`` extra; a side whose package is
missing is left out with a note.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from eval.report import REPO_ROOT, machine_info, write_result

DEFAULT_ROUNDS = 3
OTHERS = ("resiliparse", "trafilatura")
# the goal for the working tree against its merge base (issue 49)
GOAL_OVER_BASE = 2.0

_CHILD_CODE = {
    "resiliparse": ("from resiliparse.extract.html2text import extract_plain_text\n"
                    "def extract(html):\n"
                    "    return extract_plain_text(html, main_content=True)\n"),
    "trafilatura": ("import trafilatura\n"
                    "def extract(html):\n"
                    "    return trafilatura.extract(html) or ''\n"),
}


def _other_command(system: str, pages: Path, out: Path) -> list[str]:
    """A process that extracts every page of ``pages`` with ``system`` into ``out`` (JSONL of
    ``{id, text}``), as a user's loop over a JSONL file would."""
    code = _CHILD_CODE[system] + (
        "import json, sys\n"
        "with open(sys.argv[1], encoding='utf-8') as pages, "
        "open(sys.argv[2], 'w', encoding='utf-8') as out:\n"
        "    for line in pages:\n"
        "        page = json.loads(line)\n"
        "        out.write(json.dumps({'id': page['id'], 'text': extract(page['html'])}, "
        "ensure_ascii=False) + '\\n')\n")
    return [sys.executable, "-I", "-c", code, str(pages), str(out)]


def _run_command(shim: Path, pages: Path, out: Path) -> list[str]:
    """``pulpie-rt run PAGES --out OUT --quiet`` of the tree behind ``shim``."""
    code = ("import sys\n"
            f"sys.path.insert(0, {str(shim)!r})\n"
            "from pulpie_rt.cli import main\n"
            "sys.argv[0] = 'pulpie-rt'\n"
            "sys.exit(main())\n")
    return [sys.executable, "-I", "-c", code, "run", str(pages), "--out", str(out), "--quiet"]


def timed(command: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Runs ``command`` to its end: (CPU seconds of the process and its threads, wall
    seconds); raises with its error output if it fails."""
    started = time.perf_counter()
    process = subprocess.Popen(list(command), env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    assert process.stderr is not None
    # read stderr while waiting (a full pipe would block the child); wait4 for its rusage
    error = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} ... exited {process.returncode}:\n"
                           f"{error.decode('utf-8', 'replace')[-3000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def _markdown_by_id(path: Path) -> dict[str, str | None]:
    with open(path, encoding="utf-8") as records:
        return {r["id"]: r["markdown"] for r in map(json.loads, records)}


HEAD_ROW = "pulpie-rt run (working tree)"
BASE_ROW = "pulpie-rt run (base)"


def run_processes(pages: Sequence[dict], rounds: int = DEFAULT_ROUNDS,
                  base_spec: str | None = None, skip: Sequence[str] = (),
                  log: Callable[[str], None] = print, trees: tuple | None = None
                  ) -> dict[str, Any]:
    """The row: per side its CPU seconds per round, the best round's pages per CPU-second, and
    the working tree's Markdown against the base's. ``trees``: ``bench.check``'s (working
    tree, base) when already prepared."""
    from importlib.util import find_spec

    from bench.check import prepare_trees
    from pulpie_rt.runtime.native import ORT_LIBRARY_ENV, ort_library_path

    head, base = trees if trees is not None else prepare_trees(base_spec, log=log)
    # one ONNX Runtime library for both trees: the exported base has none beside its core and
    # would load another one (or none), whose start-up is not the change's
    ort_library = ort_library_path()
    sides: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for label, tree in ((HEAD_ROW, head), (BASE_ROW, base)):
        env = tree.environment()
        if ort_library is not None:
            env[ORT_LIBRARY_ENV] = str(ort_library)
        sides[label] = {"tree": tree, "env": env, "commit": tree.commit}
    for system in OTHERS:
        if system in skip:
            continue
        if find_spec(system) is None:
            notes.append(f"{system}: not installed (pip install -e '.[bench]')")
            continue
        sides[system] = {"env": dict(os.environ)}
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-processes-") as tmp:
        folder = Path(tmp)
        pages_file = folder / "pages.jsonl"
        with open(pages_file, "w", encoding="utf-8") as out:
            for page in pages:
                out.write(json.dumps({"id": page["id"], "html": page["html"]},
                                     ensure_ascii=False) + "\n")
        names = list(sides)
        for label in names:
            sides[label]["cpu_s"], sides[label]["wall_s"] = [], []
        for round_index in range(rounds):
            turn = round_index % len(names)
            for label in names[turn:] + names[:turn]:
                side = sides[label]
                out = folder / f"out-{names.index(label)}.jsonl"
                for stale in folder.glob(f"{out.name}*"):  # a fresh run, not a resume
                    stale.unlink()
                if "tree" in side:
                    command = _run_command(side["tree"].shim, pages_file, out)
                    cwd = side["tree"].src
                else:
                    command = _other_command(label, pages_file, out)
                    cwd = REPO_ROOT
                cpu, wall = timed(command, side["env"], cwd)
                side["cpu_s"].append(cpu)
                side["wall_s"].append(wall)
                log(f"  round {round_index + 1}/{rounds} {label}: {cpu:.2f} CPU s, "
                    f"{wall:.2f} s")
        head_md = _markdown_by_id(folder / f"out-{names.index(HEAD_ROW)}.jsonl")
        base_md = _markdown_by_id(folder / f"out-{names.index(BASE_ROW)}.jsonl")
    different = sorted(i for i in head_md if head_md[i] != base_md.get(i))
    rows = []
    for label, side in sides.items():
        cpu = min(side["cpu_s"])
        rows.append({"system": label, "commit": side.get("commit"), "cpu_s": side["cpu_s"],
                     "wall_s": side["wall_s"], "best_cpu_s": cpu,
                     "pages_per_cpu_s": len(pages) / cpu})
    by_name = {row["system"]: row for row in rows}
    ours = by_name[HEAD_ROW]["pages_per_cpu_s"]
    result: dict[str, Any] = {
        "pages": len(pages), "rounds": rounds, "rows": rows, "notes": notes,
        "head_over_base": ours / by_name[BASE_ROW]["pages_per_cpu_s"],
        "goal_over_base": GOAL_OVER_BASE,
        "same_markdown": len(head_md) - len(different), "different_markdown": different[:50],
    }
    for system in OTHERS:
        if system in by_name:
            result[f"head_over_{system}"] = ours / by_name[system]["pages_per_cpu_s"]
    return result


# the inputs of ``--fixed``: an empty file and the first page alone
FIXED_INPUTS = (("0 pages", 0), ("1 page", 1))


def run_fixed_cost(pages: Sequence[dict], rounds: int = DEFAULT_ROUNDS,
                   base_spec: str | None = None, log: Callable[[str], None] = print,
                   trees: tuple | None = None) -> dict[str, Any]:
    """A run's fixed cost, side by side: per input of ``FIXED_INPUTS`` (no page, the first of
    ``pages``) and per tree (working tree, base), its CPU seconds per round and the least of
    them, and the base's least over the working tree's. The sides alternate as in
    ``run_processes``."""
    from bench.check import prepare_trees
    from pulpie_rt.runtime.native import ORT_LIBRARY_ENV, ort_library_path

    head, base = trees if trees is not None else prepare_trees(base_spec, log=log)
    ort_library = ort_library_path()
    sides = []
    for label, tree in ((HEAD_ROW, head), (BASE_ROW, base)):
        env = tree.environment()
        if ort_library is not None:
            env[ORT_LIBRARY_ENV] = str(ort_library)
        sides.append((label, tree, env))
    inputs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-fixed-") as tmp:
        folder = Path(tmp)
        for name, count in FIXED_INPUTS:
            path = folder / f"pages-{count}.jsonl"
            path.write_text("".join(json.dumps({"id": p["id"], "html": p["html"]},
                                               ensure_ascii=False) + "\n"
                                    for p in pages[:count]), encoding="utf-8")
            cpu: dict[str, list[float]] = {label: [] for label, _, _ in sides}
            for round_index in range(rounds):
                turn = round_index % len(sides)
                for label, tree, env in sides[turn:] + sides[:turn]:
                    out = folder / "out.jsonl"
                    for stale in folder.glob("out.jsonl*"):
                        stale.unlink()
                    seconds, _ = timed(_run_command(tree.shim, path, out), env, tree.src)
                    cpu[label].append(seconds)
            best = {label: min(values) for label, values in cpu.items()}
            inputs[name] = {"pages": count, "cpu_s": cpu, "best_cpu_s": best,
                            "base_over_head": best[BASE_ROW] / best[HEAD_ROW]}
            log(f"  {name}: working tree {best[HEAD_ROW]:.3f} CPU s, base "
                f"{best[BASE_ROW]:.3f} CPU s")
    return {"rounds": rounds, "commits": {HEAD_ROW: head.commit, BASE_ROW: base.commit},
            "inputs": inputs}


def fixed_cost_table(result: dict[str, Any]) -> str:
    """The fixed cost as a small table: per input, each side's least CPU seconds."""
    lines = [f"A run's fixed cost (pulpie-rt run, whole process), best of {result['rounds']} "
             "alternating rounds, CPU seconds:",
             f"  {'input':<10} {'working tree':>13} {'base':>8}  base / working tree"]
    for name, row in result["inputs"].items():
        best = row["best_cpu_s"]
        lines.append(f"  {name:<10} {best[HEAD_ROW]:13.3f} {best[BASE_ROW]:8.3f}  "
                     f"{row['base_over_head']:.2f}x")
    return "\n".join(lines)


def processes_table(result: dict[str, Any]) -> str:
    """The row as a small table, the ratios and the Markdown check below it."""
    lines = [f"Whole processes on {result['pages']} pages (model load included), best of "
             f"{result['rounds']} alternating rounds, pages per CPU-second:"]
    for row in result["rows"]:
        commit = f" {row['commit'][:12]}" if row.get("commit") else ""
        lines.append(f"  {row['system'] + commit:<48} {row['pages_per_cpu_s']:8.1f}  "
                     f"({row['best_cpu_s']:.2f} CPU s)")
    verdict = "meets" if result["head_over_base"] >= result["goal_over_base"] else "below"
    ratios = [f"working tree / base {result['head_over_base']:.2f}x ({verdict} the "
              f"{result['goal_over_base']:g}x goal)"]
    ratios += [f"/ {system} {result[f'head_over_{system}']:.2f}x" for system in OTHERS
               if f"head_over_{system}" in result]
    lines.append("  " + ", ".join(ratios))
    lines.append(f"  same Markdown as the base: {result['same_markdown']}/{result['pages']} "
                 "pages" + (f" (differ: {', '.join(result['different_markdown'][:5])})"
                            if result["different_markdown"] else ""))
    lines += [f"  {note}" for note in result["notes"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from eval.pages import bench_pages

    parser = argparse.ArgumentParser(prog="python -m bench.processes",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=None, help="dev pages (default: all)")
    parser.add_argument("--inputs", nargs="+", default=None, metavar="FILE",
                        help="JSONL[.gz] (field 'html') or WARC[.gz] files instead of the corpus")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--base", default=None, help="commit to compare with (default: merge "
                        "base of HEAD and origin/main or main)")
    parser.add_argument("--skip", nargs="*", default=[], choices=list(OTHERS))
    parser.add_argument("--out", default=None, help="JSON file or folder (default: "
                        "bench/results/)")
    parser.add_argument("--fixed", action="store_true",
                        help="only the fixed cost: both trees' run over 0 pages and over the "
                             "first page")
    args = parser.parse_args(argv)
    pages = bench_pages(args.pages, args.inputs)
    if args.fixed:
        print(f"A run's fixed cost: {args.rounds} rounds", flush=True)
        fixed = run_fixed_cost(pages, rounds=args.rounds, base_spec=args.base)
        print(fixed_cost_table(fixed))
        path = write_result("processes-fixed", {"kind": "processes-fixed",
                                                "machine": machine_info(), "fixed": fixed},
                            args.out)
        print(f"wrote {path}")
        return 0
    print(f"Whole processes: {len(pages)} pages, {args.rounds} rounds", flush=True)
    result = run_processes(pages, rounds=args.rounds, base_spec=args.base, skip=args.skip)
    print(processes_table(result))
    path = write_result("processes", {"kind": "processes", "machine": machine_info(),
                                      "processes": result}, args.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
