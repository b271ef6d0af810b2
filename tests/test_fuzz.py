"""The fuzzing campaign (``bench/fuzz.py``), short: a few hundred mutated dev pages through the
compiled core and some through ``pulpie-rt run``; ``make fuzz`` runs 100,000."""

from __future__ import annotations

import json
from collections import Counter

from rt_helpers import tiny_bundle

from pulpie_rt.bench import fuzz


def test_short_campaign_has_no_crash_hang_or_lost_record(tmp_path):
    out = tmp_path / "fuzz.json"
    code = fuzz.main(["--pages", "300", "--jobs", "1", "--splits", "dev", "--run-every", "50",
                      "--bundle", str(tiny_bundle()), "--json", str(out)])
    result = json.loads(out.read_text())
    assert code == 0, result["failures"]
    outcomes = result["core"]["outcomes"]
    assert (outcomes["panic"], outcomes["crash"], outcomes["hang"]) == (0, 0, 0)
    assert outcomes["ok"] + outcomes["refused"] == 300 == result["core"]["records"]
    run = result["pulpie_rt_run"]
    assert (run["pages"], run["records"], run["returncode"]) == (6, 6, 0)
    assert run["one_record_each"]


def test_inputs_depend_only_on_seed_and_index():
    pages = fuzz.load_windows(4096, "dev")
    first = [fuzz.mutated_page(pages, 15, index) for index in range(40)]
    assert first == [fuzz.mutated_page(pages, 15, index) for index in range(40)]
    assert len({data for data, _ in first}) == 40
    assert fuzz.mutated_page(pages, 16, 0) != first[0]
    # every mutation is drawn within a few hundred inputs
    drawn = Counter(name for index in range(300) for name in fuzz.mutated_page(pages, 15, index)[1])
    assert set(drawn) == set(fuzz.MUTATIONS)


def test_an_input_past_the_time_bound_is_a_hang_and_the_next_one_runs():
    failures: list[dict] = []
    counts, _ = fuzz.run_range(15, 0, 2, 4096, "dev", 1e-4, failures)
    assert counts == Counter(hang=2)
    assert [(f["index"], f["outcome"]) for f in failures] == [(0, "hang"), (1, "hang")]
