"""The C library (``make capi``: ``build/capi/libpulpie_rt.so`` and the example program
``build/capi/extract``) against the Python page flow, on the same pages and machine.

    python -m bench.capi                   # pages/s: C path vs Python Pipeline
    python -m bench.capi --pages 64 --model build/small-onnx
    python -m bench.capi --write-pages 12 out.jsonl   # for make capi-valgrind
    python -m bench.capi --parity [--model DIR] [--profile P]  # C vs Extractor
    python -m bench.capi --processes --pages 200 --threads 2 --batch 8
                                 # whole processes: pulpie-rt run vs the C program

The C side is the example program, run as a user runs it: one process, one engine, its
threads sharing it (``--threads``), pages batched ``--batch`` at a time, timed by the program
itself (``--timing``). Model load is in neither side's figure (each side's start-up is timed
apart; Python's includes its first page). The Python side is
``pulpie_rt.Pipeline`` (threads on the same engine, through the C ABI) on the same pages. Both
must give the same Markdown page by page; the row says how many did. ``--processes`` times
whole processes as a user runs them, model load included: ``pulpie-rt run`` against the
example program, alternating, best of three, wall time and CPU time.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from eval.report import REPO_ROOT

CAPI_DIR = REPO_ROOT / "build" / "capi"
EXTRACT = CAPI_DIR / "extract"
LIBRARY = CAPI_DIR / "libpulpie_rt.so"
HEADER = CAPI_DIR / "pulpie_rt.h"


@functools.cache
def c_library():
    """``(library, declarations)``: the C library (``make capi`` first) with the functions
    of the header it was installed with declared from that header, as a C program sees them
    (``runtime/binding.py``)."""
    from pulpie_rt.runtime import binding

    declarations = binding.parse(HEADER.read_text(encoding="utf-8"))
    lib = ctypes.CDLL(str(LIBRARY))
    binding.declare(lib, declarations)
    return lib, declarations


def build_capi() -> None:
    """``make capi`` (cargo and a C compiler needed); raises with make's output on failure."""
    missing = [tool for tool in ("cargo", "cc", "make") if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(f"the C library needs {', '.join(missing)} on the PATH")
    done = subprocess.run(["make", "-s", "capi"], cwd=REPO_ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"make capi failed:\n{done.stdout}\n{done.stderr}")


def write_pages(pages: Sequence[dict], path: Path) -> Path:
    """``pages`` (``id``, ``html``) as the example program's JSONL input."""
    with open(path, "w", encoding="utf-8") as out:
        for page in pages:
            record = {"id": page["id"], "html": page["html"]}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def run_extract(pages_path: Path, model: str | Path | None = None, threads: int = 1,
                batch: int = 1, ort_threads: int | None = None,
                env: dict[str, str] | None = None, timing: dict | None = None,
                profile: str | None = None, max_batch_tokens: int | None = None,
                labels: bool = False) -> list[dict]:
    """The example program's JSONL output for a pages file (one record per page, in order);
    raises when the process fails (a page's own error is in its record). ``timing``, when
    given, receives the program's own ``open_s`` and ``extract_s``. ``profile``: the
    bundle's profile (None: its default). ``max_batch_tokens``: padded tokens per model call
    (None: the library's default). ``labels``: each record with its blocks' labels (the json
    format's record)."""
    command = [str(EXTRACT), "--jsonl", "--threads", str(threads), "--batch", str(batch),
               "--timing"]
    if model is not None:
        command += ["--model", str(model)]
    if profile is not None:
        command += ["--profile", profile]
    if ort_threads is not None:
        command += ["--ort-threads", str(ort_threads)]
    if max_batch_tokens is not None:
        command += ["--max-batch-tokens", str(max_batch_tokens)]
    if labels:
        command.append("--labels")
    command.append(str(pages_path))
    done = subprocess.run(command, capture_output=True, env=env)
    if done.returncode not in (0, 2):  # 2: some page has an error (in its record)
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: "
                           f"{done.stderr.decode('utf-8', 'replace')[-2000:]}")
    if timing is not None:
        found = re.search(rb"timing: open ([0-9.]+) s, extract ([0-9.]+) s", done.stderr)
        if found:
            timing.update(open_s=float(found.group(1)), extract_s=float(found.group(2)))
    return [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]


DEFAULT_PAGES = 48


def bench(pages: Sequence[dict], model: str | None = None, threads: int | None = None,
          batch: int = 4, profile: str | None = None) -> dict:
    """Pages/s of the C path and of the Python Pipeline on the same pages (the bundle's
    ``profile``; None: its default)."""
    import tempfile

    from pulpie_rt import Pipeline
    from pulpie_rt.runtime.flow.pages import PageInput

    threads = threads or os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-capi-") as tmp:
        path = write_pages(pages, Path(tmp) / "pages.jsonl")
        timing: dict = {}
        c_records = run_extract(path, model, threads, batch, timing=timing, profile=profile)
        c_startup, c_seconds = timing["open_s"], timing["extract_s"]
    started = time.perf_counter()
    pipeline = Pipeline(model, profile=profile) if model else Pipeline(profile=profile)
    list(pipeline.run([PageInput(pages[0]["html"], page_id=0)]))
    py_startup = time.perf_counter() - started
    started = time.perf_counter()
    py_results = list(pipeline.run(PageInput(p["html"], page_id=i) for i, p in enumerate(pages)))
    py_seconds = time.perf_counter() - started
    close = getattr(pipeline, "close", None)
    if close is not None:
        close()
    same = sum(1 for c, p in zip(c_records, py_results, strict=True) if c["markdown"] == p.markdown)
    return {
        "pages": len(pages),
        "model": model or "default",
        "profile": profile,
        "c_threads": threads,
        "c_batch": batch,
        "c_pages_per_s": len(pages) / c_seconds,
        "c_startup_s": c_startup,
        "python_pipeline_pages_per_s": len(pages) / py_seconds,
        "python_startup_s": py_startup,
        "speedup": py_seconds / c_seconds,
        "same_markdown": same,
        "cpus": os.cpu_count(),
    }


def bench_processes(pages: Sequence[dict], threads: int = 2, batch: int = 8,
                    repeats: int = 3, model: str | None = None) -> dict:
    """Whole processes, model load included, as a user runs them on the same JSONL file:
    ``pulpie-rt run PAGES --workers THREADS`` against the example program ``extract --jsonl
    --threads THREADS --batch BATCH``; alternating, best wall time of ``repeats`` each."""
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pulpie-rt-doors-") as tmp:
        path = write_pages(pages, Path(tmp) / "pages.jsonl")
        out = Path(tmp) / "out.jsonl"
        c_command = [str(EXTRACT), "--jsonl", "--threads", str(threads), "--batch", str(batch),
                     str(path)]
        py_command = [sys.executable, "-m", "pulpie_rt.cli", "run", str(path), "--out",
                      str(out), "--workers", str(threads), "--quiet"]
        if model is not None:
            c_command[1:1] = ["--model", str(model)]
            py_command += ["--model", str(model)]
        c_best = py_best = c_cpu = py_cpu = float("inf")
        c_stdout = b""
        for _ in range(repeats):
            cpu = _children_cpu_s()
            started = time.perf_counter()
            done = subprocess.run(c_command, capture_output=True)
            c_best = min(c_best, time.perf_counter() - started)
            c_cpu = min(c_cpu, _children_cpu_s() - cpu)
            if done.returncode not in (0, 2):
                raise RuntimeError(f"{' '.join(c_command)} exited {done.returncode}")
            c_stdout = done.stdout
            out.unlink(missing_ok=True)
            cpu = _children_cpu_s()
            started = time.perf_counter()
            subprocess.run(py_command, capture_output=True, check=True)
            py_best = min(py_best, time.perf_counter() - started)
            py_cpu = min(py_cpu, _children_cpu_s() - cpu)
        c_records = [json.loads(line) for line in c_stdout.decode("utf-8").splitlines()]
        py_records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    same = sum(1 for c, p in zip(c_records, py_records, strict=True)
               if c["markdown"] == p["markdown"])
    return {"pages": len(pages), "model": model or "default", "threads": threads,
            "c_batch": batch, "repeats": repeats, "c_seconds": c_best, "python_seconds": py_best,
            "c_pages_per_s": len(pages) / c_best, "python_pages_per_s": len(pages) / py_best,
            "python_over_c": c_best / py_best, "c_cpu_s": c_cpu, "python_cpu_s": py_cpu,
            "python_over_c_per_cpu_s": c_cpu / py_cpu, "same_markdown": same,
            "cpus": os.cpu_count()}


def _children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's finished children."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def processes_line(row: dict) -> str:
    """The whole-process row, one line."""
    return (f"pulpie-rt run vs the C program ({row['threads']} threads, same {row['pages']} "
            f"pages, model load included, best of {row['repeats']}): "
            f"{row['python_pages_per_s']:.1f} vs {row['c_pages_per_s']:.1f} pages/s = "
            f"{row['python_over_c']:.2f}x; CPU {row['python_cpu_s']:.2f} vs {row['c_cpu_s']:.2f} s "
            f"= {row['python_over_c_per_cpu_s']:.2f}x pages per CPU-second | same Markdown "
            f"{row['same_markdown']}/{row['pages']}")


def parity(model: str | None, profile: str | None = None, step: int = 1) -> dict:
    """The example program against ``Extractor(model, profile=profile).extract_batch([html])``
    page by page on every ``step``-th dev page: Markdown, error, n_main and n_other."""
    import tempfile

    from pulpie_rt import Extractor
    from pulpie_rt.corpus import load_pages

    pages = load_pages("dev")[::step]
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-capi-") as tmp:
        started = time.perf_counter()
        records = run_extract(write_pages(pages, Path(tmp) / "pages.jsonl"), model,
                              profile=profile)
        c_seconds = time.perf_counter() - started
    extractor = Extractor(model, profile=profile) if model else Extractor(profile=profile)
    started = time.perf_counter()
    different = []
    for page, record in zip(pages, records, strict=True):
        (result,) = extractor.extract_batch([page["html"]])
        if (record["markdown"], record["error"], record["n_main"], record["n_other"]) != (
                result.markdown, result.error, result.n_main, result.n_other):
            different.append(page["id"])
    return {"pages": len(pages), "model": model or "default", "profile": profile, "identical":
            len(pages) - len(different), "different": different, "c_seconds": c_seconds,
            "python_seconds": time.perf_counter() - started}


def capi_line(row: dict) -> str:
    """The bench row, one line."""
    return (f"C path (build/capi/extract, {row['c_threads']} threads, batch {row['c_batch']}): "
            f"{row['c_pages_per_s']:.2f} pages/s | Python Pipeline: "
            f"{row['python_pipeline_pages_per_s']:.2f} pages/s | C / Python "
            f"{row['speedup']:.2f}x | same Markdown {row['same_markdown']}/{row['pages']} | "
            f"{row['pages']} dev pages, model {row['model']}, {row['cpus']} CPUs")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES,
                        help=f"dev pages, evenly spread (default {DEFAULT_PAGES})")
    parser.add_argument("--model", default=None, help="a bundle directory (default: embedded)")
    parser.add_argument("--profile", default=None,
                        help="the bundle's profile, e.g. fast or accurate for the default "
                             "model (default: its default_profile)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--write-pages", nargs=2, metavar=("N", "PATH"),
                        help="write N dev pages of under 60 kB, evenly spread, as the C "
                             "program's JSONL and stop (valgrind runs 20-50x slower)")
    parser.add_argument("--processes", action="store_true",
                        help="whole processes: pulpie-rt run vs the C program, same pages")
    parser.add_argument("--parity", action="store_true",
                        help="compare the C program with Extractor on every dev page and stop")
    args = parser.parse_args(argv)
    if args.parity:
        from eval.report import write_result

        build_capi()
        result = parity(args.model, args.profile)
        print(f"C program vs Extractor, model {result['model']}, profile "
              f"{result['profile'] or 'default'}: {result['identical']}/"
              f"{result['pages']} dev pages identical (C {result['c_seconds']:.0f} s, Python "
              f"{result['python_seconds']:.0f} s); different: {result['different']}")
        print(f"wrote {write_result('capi-parity', result, None)}")
        return 0 if not result["different"] else 1
    if args.write_pages:
        from eval.pages import bench_pages, spread

        small = [page for page in bench_pages(None) if len(page["html"]) < 60_000]
        write_pages(spread(small, int(args.write_pages[0])), Path(args.write_pages[1]))
        return 0
    from eval.pages import bench_pages
    from eval.report import write_result

    build_capi()
    if args.processes:
        row = bench_processes(bench_pages(args.pages), args.threads, args.batch,
                              model=args.model)
        print(processes_line(row))
        print(f"wrote {write_result('doors', row, None)}")
        return 0
    row = bench(bench_pages(args.pages), args.model, args.threads, args.batch, args.profile)
    print(capi_line(row))
    print(f"wrote {write_result('capi', row, None)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
