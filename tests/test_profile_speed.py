"""bench.profile_speed: one profile of two bundles timed side by side on the same pages, the
old one possibly a git revision's default model."""

from __future__ import annotations

import json


def test_two_bundles_side_by_side_and_a_revisions_model(tmp_path, capsys):
    import subprocess

    from bench.profile_speed import ROOT, main, revision_model
    from pulpie_rt.runtime.model.resolve import embedded_model_dir

    old = revision_model("HEAD", tmp_path / "rev")
    assert (old / "manifest.json").read_bytes() == subprocess.run(
        ["git", "-C", str(ROOT), "show", "HEAD:pulpie_rt/default_model/manifest.json"],
        check=True, capture_output=True).stdout
    out = tmp_path / "speed.json"
    assert main(["--model", str(embedded_model_dir()), "--baseline", "git:HEAD",
                 "--pages", "3", "--repeats", "1", "--out", str(out)]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("fast profile on 3 dev pages x 1: ") and "ratio" in line
    record = json.loads(out.read_text())
    assert record["kind"] == "profile-speed" and record["pages"] == 3
    assert record["errors"] == {"ours": 0, "ref": 0} and record["ratio"] > 0
