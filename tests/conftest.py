"""Shared fixtures: the real dev pages (never downloaded) and golden reference outputs."""

from __future__ import annotations

import gzip
import json
import signal
from pathlib import Path

import pytest

from pulpie_rt.corpus import load_pages

GOLDEN_DIR = Path(__file__).parent / "golden"


@pytest.fixture(scope="session")
def dev_pages() -> list[dict]:
    return load_pages("dev")


def load_golden(name: str) -> dict:
    """A golden file recorded from the reference by ``make golden``."""
    path = GOLDEN_DIR / name
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


class _Timeout(Exception):
    pass


@pytest.fixture
def time_limit():
    """Hostile pages must not hang: fail after 60 s (a guard, not a speed assertion)."""

    def _raise(signum, frame):
        raise _Timeout("took over 60 s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
