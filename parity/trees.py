"""The tree kernel (``kernels/``, run by the compiled core) against ONNX Runtime's
``TreeEnsembleClassifier`` (onnxruntime's Python API, one thread), block by block, on every
rescorer of the embedded default model and on real pages:

- ``fast`` first stage (``rescorer-fast-first.onnx``): each page's ``context_features``;
- ``fast`` last stage (``rescorer-fast.onnx``): the same joined with ``stage_features`` of ONNX
  Runtime's first-stage probabilities (both sides read identical rows);
- ``accurate`` (``rescorer.onnx``): each page's ``blocks-v1`` rows (NaN where a transformer
  margin would be is not part of them: the margin is added after the trees).

Per stage: blocks, labels that differ (the classifier's ``label`` output against the
kernel's), the largest |Δ probability|, blocks bitwise equal, and CPU milliseconds per page of
each side, interleaved page by page. Exit 1 on any label difference or a probability more than
1e-6 apart.

    python -m parity.trees                    # dev pages
    python -m parity.trees --corpus train     # train pages (../shared/corpus)
    python -m parity.trees --corpus dev --corpus train --limit 50 --json out.json
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from eval.rows import page_rows
from pulpie_rt.runtime import native
from pulpie_rt.runtime.model.bundle import load_bundle
from pulpie_rt.runtime.model.resolve import embedded_model_dir
from pulpie_rt.runtime.stages.rescore import context_features, stage_features

TOLERANCE = 1e-6
STAGES = (("fast-first", "rescorer-fast-first.onnx"), ("fast", "rescorer-fast.onnx"),
          ("accurate", "rescorer.onnx"))

class KernelTrees:
    """The compiled core's tree kernel alone on one ONNX file's bytes (``pulpie_rt_trees_*``):
    ``native.CoreError`` with the kernel's reason when it cannot run the trees."""

    def __init__(self, model: bytes) -> None:
        lib = native.engine_abi()
        self._lib = lib
        self.handle = None
        handle = ctypes.c_void_p()
        native._engine_call(lib.pulpie_rt_trees_open, model, len(model), ctypes.byref(handle))
        self.handle = handle.value

    def __del__(self) -> None:
        if getattr(self, "handle", None):
            self._lib.pulpie_rt_trees_free(self.handle)
            self.handle = None

    def predict(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(probabilities [rows, 2] float32, labels [rows] int64)``."""
        rows = np.ascontiguousarray(features, np.float32)
        n = rows.shape[0]
        probabilities = np.empty((n, 2), np.float32)
        labels = np.empty(n, np.int64)
        native._engine_call(self._lib.pulpie_rt_trees_predict, self.handle, rows.ctypes.data, n,
                            rows.shape[1] if rows.ndim == 2 else 0, probabilities.ctypes.data,
                            labels.ctypes.data)
        return probabilities, labels


class OrtTrees:
    """The same file on onnxruntime's Python API (CPU, one thread each way, as the core opens
    a rescorer session)."""

    def __init__(self, model: bytes) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # not the warning on the label output's declared shape
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def predict(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        labels, probabilities = self.session.run(["label", "probabilities"],
                                                 {self.input: np.ascontiguousarray(features,
                                                                                   np.float32)})
        return probabilities, labels.reshape(-1)


@dataclass
class StageParity:
    """One rescorer's comparison over the pages."""

    stage: str
    file: str
    pages: int = 0
    blocks: int = 0
    label_differences: int = 0
    max_abs_difference: float = 0.0
    bitwise_equal: int = 0
    kernel_cpu_s: float = 0.0
    onnxruntime_cpu_s: float = 0.0
    first_difference: str | None = None
    worst: list[float] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.label_differences == 0 and self.max_abs_difference <= TOLERANCE

    def add(self, page_id: str, rows: np.ndarray, kernel: KernelTrees, ort: OrtTrees,
            order: int) -> np.ndarray:
        """Both sides on one page's rows (the first side alternating); ONNX Runtime's
        probabilities back."""
        results = {}
        for side in (("kernel", "ort") if order % 2 == 0 else ("ort", "kernel")):
            started = time.process_time()
            results[side] = (kernel if side == "kernel" else ort).predict(rows)
            spent = time.process_time() - started
            if side == "kernel":
                self.kernel_cpu_s += spent
            else:
                self.onnxruntime_cpu_s += spent
        (kp, kl), (op, ol) = results["kernel"], results["ort"]
        self.pages += 1
        self.blocks += len(rows)
        differ = np.flatnonzero(kl != ol)
        self.label_differences += len(differ)
        delta = np.abs(kp.astype(np.float64) - op.astype(np.float64))
        worst = float(delta.max()) if delta.size else 0.0
        self.max_abs_difference = max(self.max_abs_difference, worst)
        self.bitwise_equal += int(np.all(kp.view(np.uint32) == op.view(np.uint32), axis=1).sum())
        if self.first_difference is None and (len(differ) or worst > TOLERANCE):
            block = int(differ[0]) if len(differ) else int(np.argmax(delta.max(axis=1)))
            self.first_difference = (f"page {page_id} block {block}: kernel {kp[block].tolist()} "
                                     f"label {int(kl[block])}, onnxruntime {op[block].tolist()} "
                                     f"label {int(ol[block])}")
        return op


def compare(pages: list[dict], model_dir: Path | None = None,
            log=print) -> list[StageParity]:
    """Every stage of the model's rescorers, kernel against ONNX Runtime, on ``pages``."""
    model_dir = model_dir or embedded_model_dir()
    sides = {}
    results = {}
    for stage, file in STAGES:
        data = (model_dir / file).read_bytes()
        sides[stage] = (KernelTrees(data), OrtTrees(data))
        results[stage] = StageParity(stage, file)
    layout = load_bundle(model_dir, "fast").feature_layout  # the rows the fast stages read
    started = time.perf_counter()
    for n, page in enumerate(pages):
        try:
            fast, v1 = page_rows(page["html"], layout)
        except Exception as exc:  # noqa: BLE001 - a page the pipeline refuses has no blocks
            log(f"page {page.get('id')}: no rows ({type(exc).__name__}: {exc})")
            continue
        if len(fast) == 0:
            continue
        page_id = str(page.get("id", n))
        context = context_features(fast)
        first = results["fast-first"].add(page_id, context, *sides["fast-first"], n)
        joined = np.hstack([context, stage_features(first[:, 1].astype(np.float64), fast)])
        results["fast"].add(page_id, joined, *sides["fast"], n)
        results["accurate"].add(page_id, v1, *sides["accurate"], n)
        if (n + 1) % 50 == 0:
            log(f"  {n + 1}/{len(pages)} pages, {time.perf_counter() - started:.0f} s")
    return list(results.values())


def table(results: list[StageParity]) -> str:
    lines = ["| rescorer | pages | blocks | labels differing | max abs Δp | blocks bitwise equal "
             "| kernel ms/page | ONNX Runtime ms/page | speed-up |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        pages = max(r.pages, 1)
        speed = r.onnxruntime_cpu_s / r.kernel_cpu_s if r.kernel_cpu_s else float("nan")
        lines.append(f"| {r.stage} ({r.file}) | {r.pages} | {r.blocks:,} | "
                     f"{r.label_differences} | {r.max_abs_difference:.2e} | "
                     f"{r.bitwise_equal:,}/{r.blocks:,} | {1000 * r.kernel_cpu_s / pages:.2f} | "
                     f"{1000 * r.onnxruntime_cpu_s / pages:.2f} | {speed:.1f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.trees",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", action="append", default=None,
                        help="corpus file(s) under ../shared/corpus (default: dev)")
    parser.add_argument("--limit", type=int, default=None, help="pages per corpus file")
    parser.add_argument("--model", type=Path, default=None,
                        help="bundle directory with the rescorer files (default: embedded)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    from pulpie_rt.corpus import load_pages

    ok = True
    report = {}
    for corpus in args.corpus or ["dev"]:
        pages = load_pages(corpus, args.limit)
        print(f"{corpus}: {len(pages)} pages", flush=True)
        results = compare(pages, args.model, log=lambda line: print(line, flush=True))
        print(table(results), flush=True)
        for r in results:
            if not r.passed:
                ok = False
                print(f"{corpus} {r.stage}: DIFFERENT, first at {r.first_difference}")
        report[corpus] = [asdict(r) | {"passed": r.passed} for r in results]
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print("trees parity: " + ("identical labels, probabilities within 1e-6" if ok
                              else "DIFFERENCES (above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
