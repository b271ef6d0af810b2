"""``bench.thresholds``: the fast profile's word F1 at other thresholds, by the runtime itself."""

from __future__ import annotations

import json

import pytest

from bench.thresholds import bundle_at, main, sweep
from eval.metrics import score_pages
from eval.pages import groundtruth_pages
from pulpie_rt import Extractor
from pulpie_rt.runtime.model.bundle import load_bundle
from pulpie_rt.runtime.model.resolve import embedded_model_dir


@pytest.fixture(scope="module")
def pages() -> list[dict]:
    return groundtruth_pages(limit=6)


def test_the_shipped_threshold_scores_as_the_extractor_does_and_others_differ(pages):
    bundle = embedded_model_dir()
    shipped = load_bundle(bundle, "fast").main_margin
    outputs = Extractor(profile="fast").extract_batch([p["html"] for p in pages])
    direct = score_pages({p["id"]: r.text for p, r in zip(pages, outputs, strict=True)},
                         {p["id"]: p["reference"] for p in pages})["f1"]
    # +30: no block is that sure, so each page keeps its best block alone (keep_best_block)
    f1 = sweep(bundle, "fast", pages, (shipped, 30.0))
    assert f1[f"{shipped:+.2f}"] == round(direct, 4)
    assert f1["+30.00"] < f1[f"{shipped:+.2f}"] - 0.2


def test_the_copy_changes_only_the_profiles_threshold(tmp_path):
    source = embedded_model_dir()
    copy = bundle_at(source, "fast", -1.5, tmp_path / "copy")
    before = json.loads((source / "manifest.json").read_text())
    after = json.loads((copy / "manifest.json").read_text())
    assert after["profiles"]["fast"]["decoding"]["main_margin"] == -1.5
    after["profiles"]["fast"]["decoding"]["main_margin"] = before["profiles"]["fast"][
        "decoding"]["main_margin"]
    assert after == before
    assert load_bundle(copy, "fast").main_margin == -1.5
    assert load_bundle(copy, "accurate").main_margin == load_bundle(source, "accurate").main_margin


def test_the_command_prints_each_threshold_and_the_best(capsys, tmp_path):
    out = tmp_path / "sweep.json"
    assert main(["--sets", "groundtruth", "--limit", "3", "--thresholds", "0", "1",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    shipped = f"{load_bundle(embedded_model_dir(), 'fast').main_margin:+.2f}"
    result = json.loads(out.read_text())
    sweep_f1 = result["sets"]["groundtruth"]["f1"]
    assert set(sweep_f1) == {"+0.00", "+1.00", shipped}
    assert f"{shipped} *" in printed
    best = result["sets"]["groundtruth"]["best"]
    assert sweep_f1[best] == max(sweep_f1.values())
    assert (f"thresholds: groundtruth: 3 pages, best {best} ({sweep_f1[best]:.4f}), "
            f"shipped {shipped} ({sweep_f1[shipped]:.4f})") in printed
    # the decoding given nowhere is the fast profile's own, as the copies decode with it
    own = json.loads((embedded_model_dir() / "manifest.json").read_text())["profiles"]["fast"][
        "decoding"]
    assert result["story_prior"] == own["story_prior"] is not None
    assert result["short_story"] == own.get("short_story")


def test_a_profile_with_the_transformer_is_refused():
    with pytest.raises(SystemExit, match="^thresholds: profile 'accurate' of .* is not a "
                                         "rescorer-only profile$"):
        main(["--profile", "accurate", "--sets", "groundtruth", "--limit", "1"])


def extractor_f1(bundle, pages: list[dict]) -> float:
    """The mean word F1 of ``bundle``'s fast profile over ``pages``, run by the Extractor."""
    outputs = Extractor(str(bundle), profile="fast").extract_batch([p["html"] for p in pages])
    return score_pages({p["id"]: r.text for p, r in zip(pages, outputs, strict=True)},
                       {p["id"]: p["reference"] for p in pages})["f1"]


def test_a_container_prior_is_decoded_by_the_runtime(capsys, tmp_path):
    """``--container-prior``: each threshold's copy decodes with it (the engine's
    ``decoding.container_prior``), its F1 that of the Extractor over such a copy, and the
    result names it."""
    copy = bundle_at(embedded_model_dir(), "fast", 0.25, tmp_path / "copy",
                     {"share": 0.6, "shift": 1.0})
    assert load_bundle(copy, "fast").container_prior == (0.6, 1.0)
    direct = extractor_f1(copy, groundtruth_pages(limit=12))
    out = tmp_path / "prior.json"
    assert main(["--sets", "groundtruth", "--limit", "12", "--thresholds", "0.25",
                 "--container-prior", "0.6/1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["container_prior"] == {"share": 0.6, "shift": 1.0}
    assert result["sets"]["groundtruth"]["f1"]["+0.25"] == round(direct, 4)
    assert "container prior 0.6/1;" in capsys.readouterr().out


def test_several_priors_are_each_decoded_and_none_is_without_one(capsys, tmp_path):
    """``--container-prior none 0.6/1``: one sweep per prior, ``none`` a copy whose decoding
    has no prior even where the bundle ships one; the result keys each by its name."""
    pages = groundtruth_pages(limit=6)
    out = tmp_path / "priors.json"
    assert main(["--sets", "groundtruth", "--limit", "6", "--thresholds", "0.25",
                 "--container-prior", "none", "0.6/1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["container_priors"] == [None, {"share": 0.6, "shift": 1.0}]
    by_prior = result["sets"]["groundtruth"]["priors"]
    assert set(by_prior) == {"none", "0.6/1"}
    copy = bundle_at(embedded_model_dir(), "fast", 0.25, tmp_path / "none", None)
    assert "container_prior" not in json.loads(
        (copy / "manifest.json").read_text())["profiles"]["fast"]["decoding"]
    assert by_prior["none"]["f1"]["+0.25"] == sweep(copy, "fast", pages, (0.25,))["+0.25"]
    printed = capsys.readouterr().out
    assert "thresholds: groundtruth: 6 pages, container prior 0.6/1, best" in printed
    assert "container priors none 0.6/1;" in printed


def test_a_malformed_prior_is_refused_with_the_form_to_give():
    for text in ("0.6", "0.6/x", "half/1"):
        with pytest.raises(SystemExit, match=f"^thresholds: container prior '{text}': give "
                                             "none or SHARE/SHIFT, e.g. 0.6/0.5$"):
            main(["--sets", "groundtruth", "--limit", "1", "--container-prior", text])


@pytest.mark.parametrize(
    ("option", "given", "key", "value", "printed", "shipped_key", "malformed", "refusal"),
    [
        ("--story-prior", "0.5/3", "story_prior", {"share": 0.5, "shift": 3.0},
         ", story prior 0.5/3;", "container_prior", "3",
         "^thresholds: story prior '3': give none or SHARE/SHIFT, e.g. 0.6/0.5$"),
        ("--short-story", "150/3/0.5", "short_story",
         {"words": 150.0, "shift": 3.0, "prose_shift": 0.5}, ", short story 150/3/0.5;",
         "story_prior", "150/3",
         "^thresholds: short story '150/3': give none or WORDS/SHIFT/PROSE_SHIFT, "
         "e.g. 150/3/0.5$"),
    ],
    ids=["story_prior", "short_story"],
)
def test_a_decoding_option_is_decoded_by_the_runtime(capsys, tmp_path, option, given, key,
                                                      value, printed, shipped_key, malformed,
                                                      refusal):
    """``--story-prior`` and ``--short-story``: each copy decodes with it (the engine's
    ``decoding.story_prior`` / ``decoding.short_story``, beside the bundle's own other
    decoding), its F1 that of the Extractor over such a copy; the result names it; a
    malformed one is refused with the form to give."""
    source = embedded_model_dir()
    copy = bundle_at(source, "fast", 0.25, tmp_path / "copy", **{key: value})
    decoding = json.loads((copy / "manifest.json").read_text())["profiles"]["fast"]["decoding"]
    shipped = json.loads((source / "manifest.json").read_text())["profiles"]["fast"]["decoding"]
    assert decoding[key] == value
    assert decoding[shipped_key] == shipped[shipped_key]  # the shipped one, left as it is
    direct = extractor_f1(copy, groundtruth_pages(limit=12))
    out = tmp_path / "decoded.json"
    assert main(["--sets", "groundtruth", "--limit", "12", "--thresholds", "0.25",
                 option, given, "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result[key] == value
    assert result["sets"]["groundtruth"]["f1"]["+0.25"] == round(direct, 4)
    assert printed in capsys.readouterr().out
    with pytest.raises(SystemExit, match=refusal):
        main(["--sets", "groundtruth", "--limit", "1", option, malformed])
