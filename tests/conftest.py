"""Shared fixtures: the real dev pages (never downloaded) and golden reference outputs."""

from __future__ import annotations

import gzip
import json
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
