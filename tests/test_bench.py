"""Benchmark machinery: the gate's verdicts, the FLOP and cost formulas, the report's JSON.

Speed itself is never asserted here; these check that the numbers the benchmarks print are
computed right and that the gate fails when it should.
"""

from __future__ import annotations

import argparse
import json

import pytest

from pulpie_rt.bench import check
from pulpie_rt.bench.cpu_stages import STAGES, main, parse_slowdown, run_cpu_stages
from pulpie_rt.bench.flops import (
    ORANGE_SMALL_SHAPE,
    chunk_flops,
    linear_flops_per_token,
    page_flops,
)
from pulpie_rt.bench.gpus import (
    GPUS,
    cost_per_billion_pages,
    gpu_hours_per_billion_pages,
    match_gpu,
    parse_price_overrides,
    peak_pages_per_second,
    price_table,
)
from pulpie_rt.bench.token_report import percentile, token_distribution
from pulpie_rt.eval.pages import spread

# ---------------------------------------------------------------- gate


def test_gate_fails_on_a_20_percent_drop_and_passes_a_10_percent_one():
    baseline = {"simplify": 8.0, "markdown": 4.0}
    lines = check.compare_ratios({"simplify": 8.0 * 0.80, "markdown": 4.0 * 0.90}, baseline)
    verdict = {line.stage: line.passed for line in lines}
    assert verdict == {"simplify": False, "markdown": True}
    assert not check.gate_passed(lines)
    assert check.gate_passed(check.compare_ratios({"simplify": 7.0, "markdown": 4.5}, baseline))


def test_gate_boundary_missing_and_new_stages():
    baseline = {"simplify": 10.0, "reconstruct": 2.0}
    lines = {line.stage: line for line in check.compare_ratios(
        {"simplify": 8.5, "cpu_path": 3.0}, baseline, tolerance=0.15)}
    assert lines["simplify"].passed  # exactly 15% below is still allowed
    assert lines["simplify"].change == pytest.approx(-0.15)
    assert not lines["reconstruct"].passed and "did not run" in lines["reconstruct"].note
    assert lines["cpu_path"].passed and lines["cpu_path"].note == "no baseline yet"
    assert "FAIL" in check.gate_table(list(lines.values()))


def test_slowdown_spec_is_parsed_and_checked():
    assert parse_slowdown("simplify=1.3, markdown=2") == {"simplify": 1.3, "markdown": 2.0}
    assert parse_slowdown("") == {}
    with pytest.raises(ValueError, match="unknown stage 'simplfy'"):
        parse_slowdown("simplfy=2")
    with pytest.raises(ValueError, match=">= 1"):
        parse_slowdown("markdown=0.5")


# ---------------------------------------------------------------- FLOPs


def test_flops_match_a_hand_computed_small_model():
    config = {"hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 2,
              "num_attention_heads": 2, "num_labels": 2}
    # per layer, n = 10 tokens: projections 2*10*8*(2*8 + 2*8) = 5,120; MLP 6*10*8*16 = 7,680;
    # attention 4*10*10*8 = 3,200 -> 16,000; two layers 32,000; classifier 2*10*8*2 = 320.
    assert chunk_flops(config, 10) == 32_320
    assert page_flops(config, [10, 10]) == 64_640
    # grouped-query attention: k/v narrower (1 kv head of width 4): 2*10*8*(16 + 8) = 3,840
    gqa = {**config, "num_key_value_heads": 1}
    assert chunk_flops(gqa, 10) == 2 * (3_840 + 7_680 + 3_200) + 320


def test_orange_small_flops_per_token():
    # 12 layers * (2*768*(4*768) + 6*768*3072) + 2*768*2 = 226,492,416 + 3,072
    assert linear_flops_per_token(ORANGE_SMALL_SHAPE) == 226_495_488
    # at the mean chunk (5,153 tokens) attention adds 4*12*768*5,153 per token: ~0.42 GFLOP
    per_token = chunk_flops(ORANGE_SMALL_SHAPE, 5153) / 5153
    assert per_token == pytest.approx(226_495_488 + 4 * 12 * 768 * 5153)
    assert 0.41e9 < per_token < 0.42e9


# ---------------------------------------------------------------- cost


def test_cost_per_billion_pages_reproduces_the_seed_figures():
    # issue 5: Pulpie Small on an L4 at 13.7 pages/s ~ $7,900 per billion pages at $0.39/h
    assert gpu_hours_per_billion_pages(13.7) == pytest.approx(1e9 / 13.7 / 3600)
    assert cost_per_billion_pages(13.7, 0.39) == pytest.approx(7907.5, abs=0.1)
    assert cost_per_billion_pages(0.68, 0.39) == pytest.approx(159_313.7, abs=0.1)
    # an L4 at its dense FP16 peak with 3.4 TFLOP pages: ~36 pages/s
    assert peak_pages_per_second(GPUS["l4"].dense_fp16_tflops, 3.4e12) == pytest.approx(35.6,
                                                                                         abs=0.1)
    with pytest.raises(ValueError):
        gpu_hours_per_billion_pages(0)


def test_price_overrides_and_gpu_names():
    assert GPUS["l4"].usd_per_hour == 0.39 and GPUS["a100"].usd_per_hour == 2.72
    assert all(spec.price_source and spec.peak_source for spec in GPUS.values())
    table = price_table(parse_price_overrides(["l4=0.5", "H100=2.1"]))
    assert table["l4"].usd_per_hour == 0.5 and table["l4"].price_source == "--price override"
    assert table["h100"].usd_per_hour == 2.1 and table["a100"].usd_per_hour == 2.72
    for bad, message in (("l4", "expected GPU=USD"), ("tpu=1", "expected GPU=USD"),
                         ("l4=cheap", "not a number"), ("l4=-1", "positive")):
        with pytest.raises(ValueError, match=message):
            parse_price_overrides([bad])
    assert match_gpu("NVIDIA H200").key == "h200"
    assert match_gpu("NVIDIA A100-SXM4-80GB").key == "a100"
    assert match_gpu("NVIDIA A10G").key == "a10g"
    assert match_gpu("NVIDIA L4").key == "l4"
    assert match_gpu("NVIDIA L40S") is None


# ---------------------------------------------------------------- token statistics


def test_token_distribution_on_known_chunks():
    pages = [[100], [8192, 50], [], [300]]
    stats = token_distribution(pages)
    assert stats["tokens_per_page"]["median"] == 200
    assert stats["tokens_per_page"]["mean"] == pytest.approx(8642 / 4)
    assert stats["fraction_pages_one_chunk"] == 0.75
    assert stats["pages_without_blocks"] == 1
    assert stats["mean_chunk_tokens"] == pytest.approx(8642 / 4)
    assert stats["flops_per_page_mean"] == pytest.approx(
        sum(chunk_flops(ORANGE_SMALL_SHAPE, n) for n in (100, 8192, 50, 300)) / 4)
    assert percentile([1, 2, 3, 4], 90) == pytest.approx(3.7)
    assert spread(list(range(10)), 3) == [0, 3, 6]


# ---------------------------------------------------------------- a tiny real run


@pytest.fixture(scope="module")
def small_real_pages(dev_pages):
    """The three smallest real dev pages (keeps the run well under a few seconds)."""
    return sorted(dev_pages, key=lambda p: len(p["html"]))[40:43]


def test_cpu_stage_report_schema(small_real_pages):
    report = run_cpu_stages(small_real_pages, log=lambda _line: None)
    json.dumps(report)  # JSON-ready
    assert report["pages"] == 3
    assert report["page_ids"] == [p["id"] for p in small_real_pages]
    ran = [row["stage"] for row in report["stages"]]
    assert set(ran) | set(report["skipped"]) == set(STAGES)
    for row in report["stages"]:
        assert row["pages"] == 3
        assert row["ours_cpu_s"] > 0 and row["ref_cpu_s"] > 0
        assert row["ratio"] == pytest.approx(row["ours_pages_per_cpu_s"]
                                             / row["ref_pages_per_cpu_s"])
        assert row["errors"] == {"ours": 0, "ref": 0}
        assert row["same_output_pages"] == 3  # ours equals the reference on real pages


def test_cpu_stages_command_prints_ours_beside_the_reference(capsys):
    assert main(["--stages", "tokenize_pack", "--pages", "2"]) == 0
    table = capsys.readouterr().out
    assert "ours p/s/core  ref p/s/core" in table
    assert [line.split()[-1] for line in table.splitlines()
            if line.startswith("tokenize_pack ")] == ["2/2"]


def test_gate_run_fails_on_a_deliberate_slowdown(small_real_pages, tmp_path, monkeypatch):
    """The gate end to end: a baseline, then our markdown made 4x slower -> exit 1."""
    monkeypatch.setattr(check, "bench_pages", lambda n: small_real_pages)
    baseline = tmp_path / "baseline.json"
    args = argparse.Namespace(baseline=baseline, pages=3, repeats=1, tolerance=None,
                              checkpoint=None, update=True, rounds=1, json=None)
    assert check.run(args) == 0
    written = json.loads(baseline.read_text())
    assert written["tolerance"] == 0.15 and "markdown" in written["ratios"]

    out = tmp_path / "gate.json"
    args.update, args.json = False, out
    monkeypatch.setenv("PULPIE_RT_BENCH_SLOWDOWN", "markdown=4")
    assert check.run(args) == 1
    result = json.loads(out.read_text())
    assert result["passed"] is False
    slowed = next(r for r in result["report"]["stages"] if r["stage"] == "markdown")
    assert slowed["deliberate_slowdown"] == 4


def test_gpu_side_figures_and_projected_price_table():
    from pulpie_rt.bench.end_to_end import SideResult
    from pulpie_rt.bench.gpu import projected_costs, side_figures

    side = SideResult("ours tensorrt Pipeline", pages=100, wall_s=10.0)
    prices = price_table()
    row = side_figures(side, page_tokens=800_000, page_flops=3.4e14, gpu=GPUS["l4"],
                       prices=prices)
    assert row["pages_per_s"] == 10.0 and row["tokens_per_s"] == 80_000
    assert row["achieved_tflops"] == pytest.approx(34.0)
    assert row["fraction_of_dense_fp16_peak"] == pytest.approx(34.0 / 121.0)
    assert row["usd_per_billion_pages"] == pytest.approx(1e9 / 10 / 3600 * 0.39)
    table = {r["gpu"]: r for r in projected_costs(row["fraction_of_dense_fp16_peak"], 3.4e12,
                                                  prices)}
    assert table["l4"]["ceiling_pages_per_s"] == pytest.approx(121e12 / 3.4e12)
    assert table["l4"]["projected_pages_per_s"] == pytest.approx(10.0)  # back to the measured
    assert table["a100"]["projected_pages_per_s"] == pytest.approx(10.0 * 312 / 121)
    assert table["h200"]["price_source"] and table["h200"]["peak_source"]


def test_make_bench_report_schema(small_real_pages, tmp_path, monkeypatch):
    """``run_all`` (make bench) with only the CPU stages: tables printed, one JSON written."""
    from pulpie_rt.bench import run_all

    monkeypatch.setattr(run_all, "bench_pages", lambda n, inputs, corpus: small_real_pages)
    out = tmp_path / "bench.json"
    parser = argparse.ArgumentParser()
    run_all.add_arguments(parser)
    args = parser.parse_args(["--skip", "e2e", "tokens", "--out", str(out)])
    assert run_all.run(args) == 0
    report = json.loads(out.read_text())
    assert report["kind"] == "bench"
    assert {"utc", "cpu", "cpu_count", "python", "git_commit", "versions"} <= set(
        report["machine"])
    assert report["machine"]["versions"]["pulpie"] == "0.0.2"
    assert report["cpu_stages"]["pages"] == 3
    assert "no NVIDIA GPU" in report["gpu"]


def test_baseline_is_the_per_stage_median_of_rounds():
    rounds = [{"simplify": 2.0, "markdown": 1.0}, {"simplify": 1.5, "markdown": None},
              {"simplify": 1.8, "markdown": 1.2}]
    assert check.median_ratios(rounds) == {"simplify": 1.8}
    assert check.median_ratios(rounds[::2]) == {"markdown": 1.1, "simplify": 1.9}
