"""Throughput regression gate (``make bench-check``): the working tree against its merge base,
side by side on this machine in this run.

A recorded figure from another machine cannot tell a slower change from a slower CPU: the
reference ``pulpie`` and our compiled core do not gain alike from AVX-512, so even the ratio
ours/reference moves by a quarter between two CPUs with no code change (bench/README.md). The
gate therefore measures the code it guards against the code it comes from, here and now:

1. the base is ``git merge-base HEAD origin/main`` (else ``main``; ``--base REF`` to choose);
   its files are taken with ``git archive`` into ``build/bench-gate/`` (kept for the next run);
2. each side's compiled core is built with the same ``cargo build --release`` (no cargo: both
   sides run the Python implementation);
3. two worker processes (``gate_worker.py``), one per tree, prepare every stage's input from the
   same real pages with their own stages, then are asked in turn, page by page and alternating
   which goes first, for the CPU seconds of one stage on one page; ``--repeats`` passes;
4. per stage: the sum over pages of each page's median over the passes, working tree / base;
   the gate fails when the working tree is more than ``--threshold`` slower on any stage, or a
   stage the base has no longer runs;
5. the ``run`` row: ``pulpie-rt run`` of each tree as a whole process on the dev pages
   (``bench.processes``: model load, reading and writing included; the best of
   ``--run-rounds`` alternating rounds, CPU seconds of the process), judged the same way.

    python -m bench.check                  # the gate (make bench-check)
    python -m bench.check --base HEAD~3    # against another commit
    PULPIE_RT_BENCH_SLOWDOWN=simplify=1.5 python -m bench.check   # must fail
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bench import gate_worker, processes
from bench.cpu_stages import SLOWDOWN_ENV, parse_slowdown
from eval.pages import bench_pages
from eval.report import REPO_ROOT, format_table, machine_info, write_result

GATE_DIR = REPO_ROOT / "build" / "bench-gate"
MAIN_REFS = ("origin/main", "main")
DEFAULT_PAGES = 48
DEFAULT_REPEATS = 5
DEFAULT_THRESHOLD = 0.15
# the whole-process row: pulpie-rt run of each tree on every dev page, best of this many rounds
RUN_STAGE = "run"
DEFAULT_RUN_ROUNDS = 3
# Stages faster than this per page are called several times per timed unit, so that timer
# resolution and the per-call bookkeeping stay small against the work.
MIN_TIMED_UNIT_S = 0.002
MAX_LOOPS = 200
TOKENIZER_DIR = REPO_ROOT / "pulpie_rt" / "default_model"  # the run's default tokenizer
NATIVE_LIBRARY_ENV = "PULPIE_RT_NATIVE_LIB"  # runtime/native.py: which compiled core to load
PURE_PYTHON_ENV = "PULPIE_RT_PURE_PYTHON"


class GateError(RuntimeError):
    """The gate cannot measure (no base commit, a core that does not build, a worker that
    does not start); distinct from a measured slowdown."""


# ---------------------------------------------------------------- the two trees


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise GateError(f"git {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout.strip()


def resolve_base(spec: str | None) -> tuple[str, str]:
    """The base commit and how it was chosen: ``spec`` if given, else the merge base of HEAD
    with the first of ``MAIN_REFS`` that exists."""
    if spec:
        return _git("rev-parse", "--verify", f"{spec}^{{commit}}"), spec
    for ref in MAIN_REFS:
        try:
            _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        except GateError:
            continue
        try:
            return _git("merge-base", "HEAD", ref), f"merge-base HEAD {ref}"
        except GateError as exc:
            raise GateError(f"no merge base of HEAD and {ref} (a shallow clone? fetch more "
                            f"history, or pass --base REF): {exc}") from exc
    raise GateError(f"none of {', '.join(MAIN_REFS)} exists here: pass --base REF")


def export_commit(commit: str, dest: Path) -> Path:
    """The files of ``commit`` under ``dest`` (``git archive``; reused when already there)."""
    done_marker = dest / ".exported"
    if done_marker.is_file():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    archive = subprocess.Popen(["git", "archive", "--format=tar", commit], cwd=REPO_ROOT,
                               stdout=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout,
                           capture_output=True)
    archive.stdout.close()
    if archive.wait() != 0 or untar.returncode != 0:
        raise GateError(f"cannot export {commit}: {untar.stderr.decode(errors='replace')}")
    done_marker.touch()
    return dest


def package_dirs(src: Path) -> dict[str, str]:
    """``[tool.setuptools] package-dir`` of the tree's pyproject: which folder is which
    ``pulpie_rt`` sub-package (the repository maps top-level folders into the package)."""
    text = (src / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # Python >= 3.11
    except ImportError:  # 3.10: the one inline table this needs, read by pattern
        line = re.search(r"^package-dir\s*=\s*\{(.*)\}\s*$", text, re.MULTILINE)
        mapping = dict(re.findall(r'"([\w.]+)"\s*=\s*"([^"]+)"', line.group(1))) if line else {}
    else:
        config = tomllib.loads(text)
        mapping = config.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    return mapping or {"pulpie_rt": "pulpie_rt"}


def make_shim(src: Path, shim: Path) -> Path:
    """A folder that imports as the tree's ``pulpie_rt`` (symlinks, as an editable install
    maps it), to put first on ``sys.path``."""
    if shim.exists():
        shutil.rmtree(shim)
    package = shim / "pulpie_rt"
    package.mkdir(parents=True)
    mapping = package_dirs(src)
    for entry in (src / mapping.get("pulpie_rt", "pulpie_rt")).iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry.resolve())
    for name, folder in sorted(mapping.items()):
        parts = name.split(".")
        if parts[0] != "pulpie_rt" or len(parts) != 2:
            continue  # nested mappings follow their parent folder
        link = package / parts[1]
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to((src / folder).resolve(), target_is_directory=True)
    return shim


def build_core(src: Path, target_dir: Path) -> tuple[Path | None, str]:
    """Build the tree's compiled core with ``cargo build --release``; its library file (or
    None) and a note saying how. A core that exists but does not build stops the gate."""
    manifest = src / "core" / "Cargo.toml"
    if not manifest.is_file():
        return None, "no core/ in this tree: Python implementation"
    cargo = shutil.which("cargo")
    if cargo is None:
        return None, "no cargo on PATH: Python implementation"
    done = subprocess.run(
        [cargo, "build", "--release", "--quiet", "--message-format=json-render-diagnostics",
         "--manifest-path", str(manifest), "--target-dir", str(target_dir)],
        capture_output=True, text=True)
    if done.returncode != 0:
        raise GateError(f"the compiled core of {src} does not build:\n{done.stderr[-3000:]}")
    libraries = []
    for line in done.stdout.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        if message.get("reason") == "compiler-artifact" and "cdylib" in message.get(
                "target", {}).get("kind", []):
            libraries += [f for f in message.get("filenames", [])
                          if f.endswith((".so", ".dylib", ".dll"))]
    if not libraries:
        raise GateError(f"cargo built no cdylib from {manifest}")
    return Path(libraries[0]), "compiled core (cargo build --release)"


@dataclass
class Tree:
    """One side of the comparison: where its code is and how its core was built."""

    label: str
    src: Path
    commit: str
    shim: Path
    core_library: Path | None
    core_note: str

    def environment(self, pure_python: bool = False) -> dict[str, str]:
        """This process's environment for a process of this tree: no ``PYTHONPATH`` (each side
        imports its own tree, from its shim), its own core (``NATIVE_LIBRARY_ENV``) where one
        was built; the pure-Python switch only where ``pure_python`` asks for it."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", NATIVE_LIBRARY_ENV, PURE_PYTHON_ENV)}
        if pure_python:
            env[PURE_PYTHON_ENV] = "1"
        elif self.core_library is not None:
            env[NATIVE_LIBRARY_ENV] = str(self.core_library)
        return env


def prepare_trees(base_spec: str | None, log: Callable[[str], None] = print) -> tuple[Tree, Tree]:
    """The working tree and its base, each importable from a shim, cores built."""
    head_commit = _git("rev-parse", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    base_commit, how = resolve_base(base_spec)
    GATE_DIR.mkdir(parents=True, exist_ok=True)
    base_src = GATE_DIR / f"base-{base_commit[:12]}"
    # its own target folder: cargo names a path package's build folders without its path, and
    # git archive dates the files at the commit, so another base's build script output (the
    # header's constants) would look current in a shared one
    base_target = GATE_DIR / f"target-base-{base_commit[:12]}"
    for stale in [*GATE_DIR.glob("base-*"), *GATE_DIR.glob("target-base*")]:
        if stale not in (base_src, base_target):  # one exported base at a time
            shutil.rmtree(stale, ignore_errors=True)
    log(f"bench-check: base {base_commit[:12]} ({how}); working tree {head_commit[:12]}"
        f"{' + uncommitted changes' if dirty else ''}")
    export_commit(base_commit, base_src)
    started = time.perf_counter()
    head_lib, head_note = build_core(REPO_ROOT, GATE_DIR / "target-head")
    base_lib, base_note = build_core(base_src, base_target)
    log(f"bench-check: cores built in {time.perf_counter() - started:.0f} s "
        f"(working tree: {head_note}; base: {base_note})")
    head = Tree("working tree", REPO_ROOT, head_commit + ("+dirty" if dirty else ""),
                make_shim(REPO_ROOT, GATE_DIR / "shim-head"), head_lib, head_note)
    base = Tree("base", base_src, base_commit, make_shim(base_src, GATE_DIR / "shim-base"),
                base_lib, base_note)
    return head, base


# ---------------------------------------------------------------- the workers


class Worker:
    """A ``gate_worker.py`` process on one tree."""

    def __init__(self, tree: Tree, pages_file: Path, slowdown: dict[str, float],
                 pure_python: bool):
        # a tree without a core times its pure-Python stages; the slowdown is the working
        # tree's alone and travels in the first message, never in either side's environment
        env = tree.environment(pure_python=pure_python or tree.core_library is None)
        env.pop(SLOWDOWN_ENV, None)
        self.tree = tree
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(Path(gate_worker.__file__).resolve()), str(tree.shim)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=tree.src)
        self._send({"pages": str(pages_file), "checkpoint": str(TOKENIZER_DIR),
                    "slowdown": slowdown})
        self.hello: dict[str, Any] = {}

    def _send(self, message: dict) -> None:
        stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()

    def _receive(self) -> dict:
        stdout: IO[str] = self.process.stdout  # type: ignore[assignment]
        line = stdout.readline()
        if not line:
            raise GateError(f"the {self.tree.label}'s worker exited "
                            f"(status {self.process.wait()}); its error is above")
        message = json.loads(line)
        if "error" in message:
            raise GateError(f"the {self.tree.label}'s worker: {message['error']}")
        return message

    def ready(self) -> dict[str, Any]:
        self.hello = self._receive()
        return self.hello

    def time(self, stage: str, page: int, loops: int) -> float | None:
        self._send({"stage": stage, "page": page, "loops": loops})
        return self._receive()["cpu_s"]

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.write("\n")  # type: ignore[union-attr]
                self.process.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# ---------------------------------------------------------------- measuring and judging


@dataclass
class StageTimes:
    """CPU seconds per call of one stage: ``[repeat][page]`` for each side (None: no input)."""

    stage: str
    loops: int = 1
    head: list[list[float | None]] = field(default_factory=list)
    base: list[list[float | None]] = field(default_factory=list)


def measure(head: Worker, base: Worker, stages: Sequence[str], n_pages: int, repeats: int,
            log: Callable[[str], None] = print) -> dict[str, StageTimes]:
    """``repeats`` timed passes over the pages after a warm-up on a few of them (which also
    sizes each stage's loop count); per page and stage both sides back to back, the first
    side alternating."""
    times = {stage: StageTimes(stage) for stage in stages}
    started = time.perf_counter()
    _size_loops(times, head, base, stages, n_pages)
    log(f"bench-check: warm-up {time.perf_counter() - started:.1f} s; calls per timed unit: "
        + ", ".join(f"{s} {times[s].loops}" for s in stages))
    workers = (head, base)
    for rep in range(repeats):
        started = time.perf_counter()
        for stage_times in times.values():
            stage_times.head.append([])
            stage_times.base.append([])
        for page in range(n_pages):
            for k, stage in enumerate(stages):
                loops = times[stage].loops
                first = (page + rep + k) % 2
                per_call: dict[int, float | None] = {}
                for side in (first, 1 - first):
                    cpu_s = workers[side].time(stage, page, loops)
                    per_call[side] = None if cpu_s is None else cpu_s / loops
                times[stage].head[-1].append(per_call[0])
                times[stage].base[-1].append(per_call[1])
        log(f"bench-check: pass {rep + 1}/{repeats} {time.perf_counter() - started:.1f} s")
    return times


def _size_loops(times: dict[str, StageTimes], head: Worker, base: Worker,
                stages: Sequence[str], n_pages: int) -> None:
    """Loops per timed call: enough that a call of the mean page lasts ``MIN_TIMED_UNIT_S``."""
    for stage in stages:
        samples = [t for p in range(min(n_pages, 8))
                   for t in (head.time(stage, p, 1), base.time(stage, p, 1)) if t]
        mean = statistics.fmean(samples) if samples else MIN_TIMED_UNIT_S
        times[stage].loops = max(1, min(MAX_LOOPS, math.ceil(MIN_TIMED_UNIT_S / max(mean, 1e-9))))


@dataclass(frozen=True)
class GateLine:
    """One stage's verdict."""

    stage: str
    pages: int
    head_s: float | None  # sum over pages of each page's median CPU seconds
    base_s: float | None
    pass_ratios: tuple[float, ...]  # per pass: sum(head) / sum(base), to show the spread
    same_output: int | None
    passed: bool
    note: str

    @property
    def change(self) -> float | None:
        if self.head_s is None or not self.base_s:
            return None
        return self.head_s / self.base_s - 1


def judge(times: StageTimes, head_available: bool, base_available: bool,
          same_output: int | None, threshold: float) -> GateLine:
    """Working tree vs base on the pages both could run: fails when more than ``threshold``
    slower, or when a stage the base runs does not run on the working tree."""
    if not head_available and base_available:
        return GateLine(times.stage, 0, None, None, (), same_output, False,
                        "FAIL: stage does not run on the working tree")
    if not base_available:
        return GateLine(times.stage, 0, None, None, (), same_output, True,
                        "new stage: the base has none")
    n_pages = len(times.head[0]) if times.head else 0
    usable = [p for p in range(n_pages)
              if all(times.head[r][p] is not None and times.base[r][p] is not None
                     for r in range(len(times.head)))]
    if not usable:
        return GateLine(times.stage, 0, None, None, (), same_output, False,
                        "FAIL: no page ran on both sides")
    head_s = sum(statistics.median(r[p] for r in times.head) for p in usable)
    base_s = sum(statistics.median(r[p] for r in times.base) for p in usable)
    ratios = tuple(sum(times.head[r][p] for p in usable) / sum(times.base[r][p] for p in usable)
                   for r in range(len(times.head)))
    slower = head_s / base_s - 1
    if slower > threshold:
        return GateLine(times.stage, len(usable), head_s, base_s, ratios, same_output, False,
                        f"FAIL: {slower:.0%} slower than the base (limit {threshold:.0%})")
    return GateLine(times.stage, len(usable), head_s, base_s, ratios, same_output, True, "ok")


def judge_run(result: dict[str, Any], threshold: float) -> GateLine:
    """The whole-process row (``bench.processes.run_processes``'s result): the working tree's
    best round against the base's, in CPU seconds of the process; fails when more than
    ``threshold`` slower. Its "same output" is the pages whose Markdown is the base's."""
    rows = {row["system"]: row for row in result["rows"]}
    head, base = rows[processes.HEAD_ROW], rows[processes.BASE_ROW]
    ratios = tuple(h / b for h, b in zip(head["cpu_s"], base["cpu_s"], strict=True))
    slower = head["best_cpu_s"] / base["best_cpu_s"] - 1
    note = "ok" if slower <= threshold else (f"FAIL: {slower:.0%} slower than the base "
                                             f"(limit {threshold:.0%})")
    return GateLine(RUN_STAGE, result["pages"], head["best_cpu_s"], base["best_cpu_s"], ratios,
                    result["same_markdown"], slower <= threshold, note)


def gate_passed(lines: Sequence[GateLine]) -> bool:
    return all(line.passed for line in lines)


def gate_table(lines: Sequence[GateLine]) -> str:
    rows = []
    for line in lines:
        spread = (f"{min(line.pass_ratios):.3f}-{max(line.pass_ratios):.3f}"
                  if line.pass_ratios else "-")
        rows.append((
            line.stage, line.pages,
            f"{line.base_s * 1e3:.1f}" if line.base_s is not None else "-",
            f"{line.head_s * 1e3:.1f}" if line.head_s is not None else "-",
            f"{line.change:+.1%}" if line.change is not None else "-",
            spread,
            f"{line.same_output}/{line.pages}" if line.same_output is not None else "-",
            line.note))
    return format_table(["stage", "pages", "base ms", "now ms", "change", "per-pass ratios",
                         "same output", "verdict"], rows)


def _same_output(head: dict, base: dict, stage: str) -> int | None:
    ours, theirs = head["digests"].get(stage), base["digests"].get(stage)
    if ours is None or theirs is None:
        return None
    return sum(a is not None and a == b for a, b in zip(ours, theirs, strict=True))


# ---------------------------------------------------------------- the command


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="python -m bench.check",
                                               description=__doc__.split("\n")[0])
    parser.add_argument("--base", default=None,
                        help="commit to compare with (default: merge base of HEAD and "
                             "origin/main, else main)")
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES,
                        help=f"dev pages, evenly spread (default {DEFAULT_PAGES})")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                        help=f"timed passes over the pages (default {DEFAULT_REPEATS})")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                        help=f"largest allowed slowdown per stage (default "
                             f"{DEFAULT_THRESHOLD})")
    stages = [*gate_worker.STAGES, RUN_STAGE]
    parser.add_argument("--stages", nargs="+", default=stages, choices=stages, metavar="STAGE",
                        help=f"stages to gate (default all: {' '.join(stages)}; {RUN_STAGE}: "
                             "pulpie-rt run as a whole process)")
    parser.add_argument("--run-rounds", type=int, default=DEFAULT_RUN_ROUNDS,
                        help=f"alternating rounds of the {RUN_STAGE} row (default "
                             f"{DEFAULT_RUN_ROUNDS})")
    parser.add_argument("--run-pages", type=int, default=None,
                        help=f"dev pages of the {RUN_STAGE} row (default: all)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        slowdown = parse_slowdown(os.environ.get(SLOWDOWN_ENV), gate_worker.STAGES)
        pure_python = os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")
        if RUN_STAGE in args.stages and args.run_rounds < 1:
            raise ValueError(f"--run-rounds must be at least 1, not {args.run_rounds}")
        head_tree, base_tree = prepare_trees(args.base)
        pages = bench_pages(args.pages)
        with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
            pages_file = Path(tmp) / "pages.jsonl"
            pages_file.write_text("".join(json.dumps({"id": p.get("id"), "html": p["html"]})
                                          + "\n" for p in pages), encoding="utf-8")
            if slowdown:
                print(f"bench-check: deliberate slowdown of the working tree: {slowdown}",
                      flush=True)
            head = Worker(head_tree, pages_file, slowdown, pure_python)
            base = Worker(base_tree, pages_file, {}, pure_python)
            try:
                head_hello, base_hello = head.ready(), base.ready()
                for tree, hello in ((head_tree, head_hello), (base_tree, base_hello)):
                    print(f"bench-check: {tree.label}: pulpie_rt from {hello['pulpie_rt']}, "
                          f"compiled core {'loaded' if hello['compiled_core'] else 'not used'}",
                          flush=True)
                if head_hello["compiled_core"] != base_hello["compiled_core"]:
                    print("bench-check: note: only one side runs the compiled core",
                          flush=True)
                stages = [s for s in args.stages if s != RUN_STAGE
                          and (head_hello["stages"].get(s) or base_hello["stages"].get(s))]
                print(f"bench-check: {len(pages)} dev pages x {args.repeats} passes, "
                      f"stages: {' '.join(stages)}", flush=True)
                started = time.perf_counter()
                times = measure(head, base, [s for s in stages
                                             if head_hello["stages"].get(s)
                                             and base_hello["stages"].get(s)],
                                len(pages), args.repeats,
                                log=lambda line: print(line, flush=True))
            finally:
                head.close()
                base.close()
        lines = [judge(times.get(stage, StageTimes(stage)),
                       bool(head_hello["stages"].get(stage)),
                       bool(base_hello["stages"].get(stage)),
                       _same_output(head_hello, base_hello, stage), args.threshold)
                 for stage in stages]
        run_result = None
        if RUN_STAGE in args.stages:
            run_pages = bench_pages(args.run_pages)
            print(f"bench-check: {RUN_STAGE}: pulpie-rt run of each tree on {len(run_pages)} "
                  f"dev pages, {args.run_rounds} rounds", flush=True)
            try:
                run_result = processes.run_processes(
                    run_pages, rounds=args.run_rounds, skip=processes.OTHERS,
                    trees=(head_tree, base_tree), log=lambda line: print(line, flush=True))
            except RuntimeError as exc:  # a side's run exited with an error
                print(f"bench-check: {RUN_STAGE}: {exc}", flush=True)
                lines.append(GateLine(RUN_STAGE, 0, None, None, (), None, False,
                                      f"FAIL: {str(exc).splitlines()[0]}"))
            else:
                lines.append(judge_run(run_result, args.threshold))
    except (GateError, ValueError, FileNotFoundError) as exc:
        print(f"bench-check: {exc}", file=sys.stderr)
        return 2

    print(gate_table(lines))
    for tree, hello in (("working tree", head_hello), ("base", base_hello)):
        for stage, error in hello["errors"].items():
            print(f"bench-check: {tree}: {stage}: first failing page: {error}")
    passed = gate_passed(lines)
    if args.json:
        write_result("bench-check", {
            "machine": machine_info(), "passed": passed, "threshold": args.threshold,
            "pages": [p.get("id") for p in pages], "repeats": args.repeats,
            "slowdown": slowdown, "measure_s": time.perf_counter() - started,
            "trees": {t.label: {"commit": t.commit, "core": t.core_note}
                      for t in (head_tree, base_tree)},
            "stages": [{"stage": line.stage, "pages": line.pages, "head_s": line.head_s,
                        "base_s": line.base_s, "change": line.change,
                        "pass_ratios": line.pass_ratios, "same_output": line.same_output,
                        "passed": line.passed, "note": line.note,
                        "loops": times[line.stage].loops if line.stage in times else None,
                        "head_per_pass_page": times[line.stage].head if line.stage in times
                        else None,
                        "base_per_pass_page": times[line.stage].base if line.stage in times
                        else None} for line in lines],
            "processes": run_result,
        }, args.json)
    print(f"bench-check: {'PASSED' if passed else 'FAILED'} (working tree vs base "
          f"{base_tree.commit[:12]}, same machine, same run; a stage fails when more than "
          f"{args.threshold:.0%} slower)")
    return 0 if passed else 1


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
