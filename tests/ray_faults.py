"""Faults injected for real into Ray actors (``test_integration_ray.py``): a
``PulpieExtractor`` whose model, for pages marked with a fault, fails or dies, and records every
attempt in files (actors are separate processes, restarted ones too).

A page's HTML ending in ``<!--fault:KIND-->`` gets, in ``open_pipeline``'s results:

- ``transient``: ``"inference: InjectedFault: ..."`` on its first ``TRANSIENT_FAILURES``
  attempts (more than one actor's own attempts: the task must be retried by Ray), then its
  real result;
- ``permanent``: ``"decode: InjectedFault: ..."`` every time;
- ``kill``: its actor process is killed (SIGKILL) the first time; its real result after.

The pickling of this module is by value (``register``): Ray's worker processes need not find
the tests folder on their path.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from pulpie_rt.integrations.failures import TRANSIENT_ATTEMPTS
from pulpie_rt.integrations.ray import PulpieExtractor

TRANSIENT_FAILURES = TRANSIENT_ATTEMPTS + 1


def marker(kind: str) -> str:
    return f"<!--fault:{kind}-->"


def register() -> None:
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class FaultyPipeline:
    def __init__(self, pipeline, log_dir: Path):
        self.pipeline = pipeline
        self.log_dir = log_dir

    def attempts(self, kind: str) -> int:
        path = self.log_dir / kind
        return len(path.read_text().splitlines()) if path.exists() else 0

    def record(self, kind: str) -> None:
        with open(self.log_dir / kind, "a") as fh:
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            os.fsync(fh.fileno())

    def extract_batch(self, pages):
        from pulpie_rt import PageResult

        kinds = [next((k for k in ("transient", "permanent", "kill")
                       if isinstance(p.html, str) and p.html.endswith(marker(k))), None)
                 for p in pages]
        if "kill" in kinds and self.attempts("kill") == 0:
            self.record("kill")
            os.kill(os.getpid(), signal.SIGKILL)
        results = self.pipeline.extract_batch(pages)
        for index, (page, kind) in enumerate(zip(pages, kinds, strict=True)):
            if kind == "transient":
                failures = self.attempts("transient")
                self.record("transient")
                if failures < TRANSIENT_FAILURES:
                    results[index] = PageResult(page.page_id, error="inference: InjectedFault: "
                                                f"attempt {failures + 1}")
            elif kind == "permanent":
                self.record("permanent")
                results[index] = PageResult(page.page_id,
                                            error="decode: InjectedFault: not a page")
        return results


class FaultyExtractor(PulpieExtractor):
    """Subclassed by a test with ``LOG_DIR`` set (a class made in the test travels to the
    actors with it)."""

    LOG_DIR = ""

    def open_pipeline(self):
        return FaultyPipeline(super().open_pipeline(), Path(self.LOG_DIR))
