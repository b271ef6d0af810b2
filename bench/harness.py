"""Side-by-side timing, what every speed benchmark shares (pages, machine facts, tables and JSON
files come from ``eval``).

Every claim is a ratio measured in one run: for each page the benchmark calls ours and the
reference back to back (alternating which goes first), so machine noise — other jobs on the
shared cores, frequency changes — hits both sides alike.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

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


