"""The fuzzing campaign (``bench/fuzz.py``), short: a few hundred mutated dev pages through the
compiled core and some through ``pulpie-rt run``; ``make fuzz`` runs 100,000."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter

from rt_helpers import tiny_bundle

from bench import fuzz


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


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_the_watchdog_tells_an_answer_a_busy_hang_and_a_sleeping_hang():
    answers = _child("print('0 ok 0.01', flush=True)")
    assert fuzz._next_answer(answers, 5.0) == "0 ok 0.01\n"
    answers.wait()
    # past the bound in CPU time: caught after about the bound, not WALL_FACTOR times it
    busy = _child("while True: pass")
    began = time.monotonic()
    assert fuzz._next_answer(busy, 0.5) is None
    assert time.monotonic() - began < 0.5 * fuzz.WALL_FACTOR
    busy.kill()
    busy.wait()
    # no CPU used (a deadlock): caught after WALL_FACTOR times the bound in wall time
    asleep = _child("import time; time.sleep(60)")
    began = time.monotonic()
    assert fuzz._next_answer(asleep, 0.2) is None
    assert time.monotonic() - began >= 0.2 * fuzz.WALL_FACTOR
    asleep.kill()
    asleep.wait()
