"""A figure said in several places (README, docs, the model card, ``--help``) is its source
table's: each place is read and compared with the number recorded where it was measured, so a
retrained model or a new run cannot leave an old figure behind in one of them."""

from __future__ import annotations

import json
import re

import pytest

from eval.report import REPO_ROOT
from pulpie_rt.cli import build_parser

RESULTS = REPO_ROOT / "pulpie_rt" / "default_model" / "results.json"


def _help(command: str) -> str:
    """``pulpie-rt <command> --help`` as printed, one line (argparse wraps it)."""
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command")
    return " ".join(sub.choices[command].format_help().split())


def _flat(path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


def accurate_cost() -> str:
    """How many times the CPU per page of ``fast`` the ``accurate`` profile takes, as the
    places round it: the shipped model's own measurement (``results.json``, its dev pages'
    pages per CPU-second, which the card is written from)."""
    speeds = json.loads(RESULTS.read_text(encoding="utf-8"))["dev_groundtruth"]
    return f"{speeds['fast']['pages_per_cpu_s'] / speeds['accurate']['pages_per_cpu_s']:.0f}"


# where the accurate profile's cost is said, and how: (name, text, pattern of the figure)
COST_PLACES = [
    ("docs/models-and-quality.md", lambda: _flat(REPO_ROOT / "docs" / "models-and-quality.md"),
     r"about (\d+)× the CPU per page of `fast`"),
    ("docs/user-guide.md", lambda: _flat(REPO_ROOT / "docs" / "user-guide.md"),
     r"about (\d+)× the CPU per page of `fast`"),
    ("the card", lambda: _flat(REPO_ROOT / "pulpie_rt" / "default_model" / "README.md"),
     r"about (\d+) times less CPU per page than `accurate`"),
    ("pulpie-rt run --help", lambda: _help("run"), r"about (\d+)x the CPU time"),
    ("pulpie-rt extract --help", lambda: _help("extract"), r"about (\d+)x the CPU time"),
]


@pytest.mark.parametrize(("place", "text", "pattern"), COST_PLACES,
                         ids=[place for place, _, _ in COST_PLACES])
def test_the_accurate_profiles_cost_is_the_measured_one_everywhere(place, text, pattern):
    found = re.findall(pattern, text())
    assert found, f"{place} no longer says the accurate profile's cost ({pattern})"
    assert set(found) == {accurate_cost()}, place


def test_no_place_says_the_engine_file_that_model_no_longer_takes():
    assert "engine file" not in _help("run") and "engine file" not in _help("extract")


def test_the_card_says_what_was_chosen_on_the_dev_corpus():
    """The card's "never chosen on the dev corpus" names the decoding settings that were
    (a container prior given to the recipe, the story), and says nothing of them when none
    was."""
    from train.card import model_card

    folder = REPO_ROOT / "pulpie_rt" / "default_model"
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    card = " ".join(model_card(results, manifest, 1).split())
    assert ("but for the `fast` profile's container prior and story (`continue_story`), "
            "chosen there (above);") in card
    results["recipe"] = {**results["recipe"], "fast_container_prior": True,
                         "fast_continue_story": False}
    card = " ".join(model_card(results, manifest, 1).split())
    assert "readability article pages are where it is measured), WCXB's test split" in card
