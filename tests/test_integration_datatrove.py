"""datatrove (``pulpie_rt.integrations.datatrove``) under ``LocalPipelineExecutor``, 2 tasks
over real dev pages as JSONL: every document comes out or is counted in the stats, the
Markdown is ``Extractor``'s, and a rerun skips the tasks that completed."""

from __future__ import annotations

import gzip
import json

import pytest

pytest.importorskip("datatrove", reason="the [datatrove] extra is not installed: "
                    "pip install -e '.[datatrove]' (make test installs it)")

from integration_helpers import (  # noqa: E402
    GARBAGE_HTML,
    SETTINGS,
    Setting,
    extractor_results,
    integration_pages,
)

STEP_NAME = "🛢 - EXTRAC: pulpie-rt main content"


def write_shards(folder, setting: Setting) -> list[list[dict]]:
    """Two JSONL shards (one per task: datatrove's readers share files out among tasks); the
    garbage page is in the second."""
    pages = [{"id": p["id"], "html": p["html"]} for p in integration_pages(setting.all_pages)]
    shards = [pages[: len(pages) // 2], [*pages[len(pages) // 2:],
                                        {"id": "garbage", "html": GARBAGE_HTML}]]
    folder.mkdir()
    for index, shard in enumerate(shards):
        with gzip.open(folder / f"pages-{index}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(record) + "\n" for record in shard)
    return shards


def executor(inputs, out, logs, **step_options):
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    from pulpie_rt.integrations.datatrove import PulpieExtractor

    # two tasks share the 2 cores: each runs its CPU stages in-process on one ONNX thread
    step = PulpieExtractor(workers=0, threads=1, **step_options)
    return LocalPipelineExecutor(
        [JsonlReader(str(inputs), text_key="html"), step, JsonlWriter(str(out))],
        tasks=2, workers=2, logging_dir=str(logs))


def read_output(out) -> dict[str, dict]:
    documents = {}
    for path in sorted(out.glob("*.jsonl*")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                record = json.loads(line)
                assert record["id"] not in documents
                documents[record["id"]] = record
    return documents


def step_stats(logs) -> dict[str, int]:
    merged = json.loads((logs / "stats.json").read_text())
    (ours,) = [s for s in merged if s["name"] == STEP_NAME]
    return {name: value["total"] if isinstance(value, dict) else value
            for name, value in ours["stats"].items() if name != "doc_len"}


@pytest.mark.parametrize("setting", SETTINGS, ids=str)
def test_every_document_out_or_counted_as_extractor_makes_it_and_rerun_skips(tmp_path, setting):
    inputs, out, logs = tmp_path / "in", tmp_path / "out", tmp_path / "logs"
    shards = write_shards(inputs, setting)
    ids = [d["id"] for shard in shards for d in shard]

    stats = executor(inputs, out, logs, profile=setting.profile).run()
    assert stats is not None
    documents = read_output(out)
    expected = extractor_results(setting)
    assert step_stats(logs) == {"total": len(ids), "forwarded": len(documents),
                                "dropped": len(ids) - len(documents), "empty": 1}
    assert set(documents) == {i for i in ids if expected[i][0]}  # garbage: no content, dropped
    wrong = [i for i, d in documents.items()
             if (d["text"], d["metadata"]["n_main"], d["metadata"]["n_other"], None)
             != expected[i]]
    assert wrong == []
    written = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert len(written) == 2

    # rerun: both tasks completed, nothing runs, nothing is rewritten
    assert executor(inputs, out, logs, profile=setting.profile).run() is None
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == written

    # a task that did not complete runs again, alone, and rewrites only its own output
    (logs / "completions" / "00001").unlink()
    stats = executor(inputs, out, logs, profile=setting.profile).run()
    assert (stats is not None) and len(stats.stats) > 0
    rewritten = {p.name for p in out.iterdir() if p.stat().st_mtime_ns != written[p.name]}
    assert rewritten == {"00001.jsonl.gz"}
    assert read_output(out) == documents


def test_failed_and_empty_documents_kept_when_asked(tmp_path):
    from datatrove.data import Document

    from pulpie_rt.integrations.datatrove import PulpieExtractor

    page = integration_pages()[0]
    documents = [Document(text=page["html"], id=page["id"]), Document(text=GARBAGE_HTML, id="g"),
                 Document(text=None, id="none")]
    step = PulpieExtractor(keep_failed=True, keep_empty=True, workers=0, threads=1)
    out = list(step.run(iter(documents)))
    assert [d.id for d in out] == [page["id"], "g", "none"]
    assert out[0].text == extractor_results()[page["id"]][0] != ""
    assert (out[1].text, out[1].metadata) == ("", {"n_main": 0, "n_other": 0})
    assert out[2].text == ""
    assert out[2].metadata["error"] == "input: html must be str or bytes, not NoneType"
    counts = {name: int(step.stats[name].total) for name in
              ("total", "forwarded", "errors", "empty")}
    assert counts == {"total": 3, "forwarded": 3, "errors": 1, "empty": 1}
    assert "dropped" not in step.stats.stats
