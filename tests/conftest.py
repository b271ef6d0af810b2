"""Shared fixtures: the real dev pages (never downloaded) and golden reference outputs."""

from __future__ import annotations

import gzip
import json
import os
import signal
from pathlib import Path

import pytest

from pulpie_rt.corpus import find_corpus, load_pages, missing_reason

GOLDEN_DIR = Path(__file__).parent / "golden"


@pytest.fixture(scope="session")
def dev_pages() -> list[dict]:
    return load_pages("dev")


@pytest.fixture(scope="session")
def derivation_pages() -> dict[str, dict]:
    """The dev pages by id that the train corpora derived from WCXB articles are tested on
    (``train.comments``, ``train.stories``): ``rt_helpers.WCXB_ARTICLES``, ``WCXB_FORUM`` and
    ``NOT_WCXB``."""
    from rt_helpers import NOT_WCXB, WCXB_ARTICLES, WCXB_FORUM

    wanted = {*WCXB_ARTICLES, WCXB_FORUM, NOT_WCXB}
    return {p["id"]: p for p in load_pages("dev") if p["id"] in wanted}


@pytest.fixture(scope="session")
def train_corpus() -> Path:
    """``train.jsonl.gz``, which is not in the repository: the test is skipped without it,
    saying where it was looked for and where to get it (corpus/README.md)."""
    path = find_corpus("train")
    if path is None:
        pytest.skip(missing_reason("train"))
    return path


def load_golden(name: str) -> dict:
    """A golden file recorded from the reference by ``make golden``."""
    path = GOLDEN_DIR / name
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


class _Timeout(Exception):
    pass


CPU_LIMIT_S = 60


@pytest.fixture
def time_limit():
    """Hostile pages must not hang: fail after 60 s of this process's CPU time (a guard, not a
    speed assertion). CPU time, not wall time: a loaded or slower machine waits longer for a
    core but does not spend more of it; a runaway loop spends all of it."""

    def _raise(signum, frame):
        raise _Timeout(f"took over {CPU_LIMIT_S} s of CPU time")

    previous = signal.signal(signal.SIGPROF, _raise)
    signal.setitimer(signal.ITIMER_PROF, CPU_LIMIT_S)
    yield
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.signal(signal.SIGPROF, previous)


# The reasons a test may skip for under CI (.ci/run, or CI=true): what the machine is, which
# nothing the project installs changes. There any other skip fails the test: what a test needs
# and could not be installed must fail CI, not hide in a green run. Every run prints the skips.
MACHINE_SKIP_REASONS = ("no NVIDIA GPU", "this machine has an NVIDIA GPU",
                        "this machine has an NVIDIA driver")
STRICT_SKIPS_VARIABLE = "PULPIE_RT_STRICT_SKIPS"
_skipped: list[tuple[str, str]] = []


def strict_skips() -> bool:
    return (os.environ.get("CI", "").lower() == "true"
            or os.environ.get(STRICT_SKIPS_VARIABLE) == "1")


def _skip_reason(report) -> str:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason.removeprefix("Skipped: ")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    if strict_skips() and not reason.startswith(MACHINE_SKIP_REASONS):
        report.outcome = "failed"
        report.longrepr = (f"skipped for a reason the machine can change ({reason}); under CI "
                           f"only these skip: {', '.join(MACHINE_SKIP_REASONS)}")
    else:
        _skipped.append((report.nodeid, reason))


def pytest_terminal_summary(terminalreporter) -> None:
    terminalreporter.section(f"skipped: {len(_skipped)}")
    for nodeid, reason in _skipped:
        terminalreporter.write_line(f"{nodeid}: {reason}")
