"""The Ray Data path against ``pulpie-rt run`` on the same pages, side by side in one run: what
running as a Ray Data job (actors, object store, Parquet in and out) costs on one machine.

    python -m bench.scale_out [--pages N] [--actors 2] [--model M] [--repeats R]

Both sides read the same Parquet file (``id``, ``html``) and write Parquet, with the same model
(default: the embedded one) on the CPU, each in its own process, one after the other
(alternating which goes first when repeated), so neither competes with the other:

- ``pulpie-rt run IN --format parquet``: one ``Pipeline`` (ONNX Runtime on every core, CPU
  stages in worker processes sized from measured stage times);
- Ray: a local cluster (``ray.init(num_cpus=actors + 2)``: more logical CPUs than actors, so
  the read and write tasks are never starved by the pool), ``read_parquet`` ->
  ``extract_dataset(actors=N)`` (each actor: one CPU, the model on one ONNX Runtime thread) ->
  ``write_parquet``.

pages/s = pages / wall seconds of the process, Python start, imports and model loading
included on both sides; the Ray side's ``ray.init`` and ``ray.shutdown`` (a cluster starts and
stops once, not per job) are timed and reported apart, not counted. "same output" counts pages
whose Markdown and error are identical on both sides.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eval.pages import bench_pages
from eval.report import format_table, machine_info, tool_env, write_result

DEFAULT_ACTORS = 2
GOAL_RATIO = 0.85  # the Ray path within 15% of pulpie-rt run


def write_input(pages: list[dict], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": [str(p["id"]) for p in pages], "html": [p["html"] for p in pages]})
    pq.write_table(table, path)


def read_output(folder: Path) -> dict[str, tuple[str, str | None]]:
    """``id -> (markdown, error)`` of every Parquet file under ``folder``."""
    import pyarrow.parquet as pq

    rows = pq.read_table(folder, columns=["id", "markdown", "error"]).to_pylist()
    return {r["id"]: (r["markdown"], r["error"]) for r in rows}


def run_side(source: Path, out: Path, model: str | None) -> dict[str, Any]:
    command = [sys.executable, "-m", "pulpie_rt.cli", "run", str(source), "--out", str(out),
               "--format", "parquet", "--quiet"] + (["--model", model] if model else [])
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"pulpie-rt run failed: {done.stderr[-2000:]}")
    return {"wall_s": wall}


def ray_side(source: Path, out: Path, model: str | None, actors: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.scale_out", "--ray-job", str(source),
               str(out), "--actors", str(actors)] + (["--model", model] if model else [])
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=tool_env())
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"the Ray job failed: {done.stderr[-3000:]}")
    timings = json.loads(done.stdout.strip().splitlines()[-1])
    cluster_s = timings["init_s"] + timings["shutdown_s"]
    return {"wall_s": wall - cluster_s, "ray_init_s": timings["init_s"],
            "ray_shutdown_s": timings["shutdown_s"]}


def ray_job(source: Path, out: Path, model: str | None, actors: int) -> None:
    """The Ray side's driver (its own process): prints its cluster start/stop times as JSON."""
    import ray

    from pulpie_rt.integrations.ray import extract_dataset

    start = time.perf_counter()
    ray.init(num_cpus=actors + 2, include_dashboard=False, log_to_driver=False)
    init_s = time.perf_counter() - start
    ray.data.DataContext.get_current().enable_progress_bars = False
    pages = ray.data.read_parquet(str(source))
    extract_dataset(pages, model, actors=actors, cpus_per_actor=1).write_parquet(str(out))
    start = time.perf_counter()
    ray.shutdown()
    print(json.dumps({"init_s": init_s, "shutdown_s": time.perf_counter() - start}))


def run_scale_out(pages: list[dict], model: str | None = None, actors: int = DEFAULT_ACTORS,
                  repeats: int = 1, log=print) -> dict[str, Any]:
    """Both sides on ``pages``, ``repeats`` times each, alternating which goes first."""
    sides: dict[str, dict[str, Any]] = {
        "run": {"side": "pulpie-rt run (Pipeline)", "wall_s": 0.0},
        "ray": {"side": f"Ray Data, {actors} actors x 1 CPU", "wall_s": 0.0, "ray_init_s": 0.0},
    }
    outputs = {}
    with tempfile.TemporaryDirectory(prefix="pulpie-scale-out-") as tmp:
        source = Path(tmp) / "pages.parquet"
        write_input(pages, source)
        for rep in range(repeats):
            for name in (("run", "ray") if rep % 2 == 0 else ("ray", "run")):
                out = Path(tmp) / f"{name}-{rep}"
                log(f"  {sides[name]['side']}, pass {rep + 1}/{repeats} ...")
                if name == "run":
                    timing = run_side(source, out, model)
                else:
                    timing = ray_side(source, out, model, actors)
                    sides[name]["ray_init_s"] += timing["ray_init_s"]
                sides[name]["wall_s"] += timing["wall_s"]
                outputs[name] = read_output(out)
    ids = [str(p["id"]) for p in pages]
    for name, side in sides.items():
        side["pages"] = len(pages) * repeats
        side["pages_per_s"] = side["pages"] / side["wall_s"]
        side["rows_out"] = len(outputs[name])
        side["errors"] = sum(1 for _, error in outputs[name].values() if error is not None)
        if name == "ray":
            side["ray_init_s"] /= repeats
    same = sum(1 for i in ids if i in outputs["ray"] and outputs["ray"][i] == outputs["run"].get(i))
    sides["ray"]["same_output_pages"] = same
    ratio = sides["ray"]["pages_per_s"] / sides["run"]["pages_per_s"]
    return {"pages": len(pages), "repeats": repeats, "actors": actors, "model": model or "default",
            "sides": list(sides.values()), "ray_vs_run": ratio, "goal": GOAL_RATIO}


def scale_out_table(report: dict[str, Any]) -> str:
    rows = [(s["side"], s["pages"], s["pages_per_s"], s["wall_s"], s["rows_out"],
             f"{s['same_output_pages']}/{report['pages']}" if "same_output_pages" in s else "-",
             s["errors"]) for s in report["sides"]]
    table = format_table([f"scale out ({report['pages']} pages, CPU)", "pages", "pages/s",
                          "wall s", "rows out", "same output", "errors"], rows)
    ray = report["sides"][1]
    verdict = "within" if report["ray_vs_run"] >= report["goal"] else "NOT within"
    return (f"{table}\n  Ray / run: {report['ray_vs_run']:.2f}x ({verdict} the 15% goal); "
            f"ray.init {ray['ray_init_s']:.1f} s per pass, not counted")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=None,
                        help="dev pages, evenly spread (default: all)")
    parser.add_argument("--inputs", nargs="+", default=None, metavar="FILE",
                        help="JSONL[.gz] or WARC[.gz] files instead of the corpus")
    parser.add_argument("--corpus", default="dev")
    parser.add_argument("--actors", type=int, default=DEFAULT_ACTORS)
    parser.add_argument("--model", default=None, help="default: the embedded model")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", default=None, help="JSON file or folder (default: "
                        "bench/results/)")
    parser.add_argument("--ray-job", nargs=2, metavar=("IN", "OUT"), default=None,
                        help=argparse.SUPPRESS)  # the Ray side's own process
    args = parser.parse_args(argv)
    if args.ray_job:
        ray_job(Path(args.ray_job[0]), Path(args.ray_job[1]), args.model, args.actors)
        return 0
    pages = bench_pages(args.pages, args.inputs, args.corpus)
    print(f"Scale out: {len(pages)} pages, pulpie-rt run vs Ray Data ({args.actors} actors)",
          flush=True)
    report = run_scale_out(pages, args.model, args.actors, args.repeats)
    print(scale_out_table(report))
    path = write_result("scale-out", {"kind": "scale_out", "machine": machine_info(),
                                      "scale_out": report}, args.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
