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
from rt_helpers import check_record  # noqa: E402

from pulpie_rt import Extractor  # noqa: E402
from pulpie_rt.runtime.flow.schema import (  # noqa: E402
    RESULT_FIELDS,
    Output,
    metadata,
    result_values,
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

    # two tasks share the 2 cores: each calls its engine from one thread, one ONNX thread
    step = PulpieExtractor(workers=1, threads=1, **step_options)
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
    step = PulpieExtractor(keep_failed=True, keep_empty=True, workers=1, threads=1)
    out = list(step.run(iter(documents)))
    assert [d.id for d in out] == [page["id"], "g", "none"]
    assert out[0].text == extractor_results()[page["id"]][0] != ""
    assert (out[1].text, out[1].metadata["n_main"], out[2].text) == ("", 0, "")
    assert out[2].metadata["error"] == "input: html must be str or bytes, not NoneType"
    # every document's metadata is the schema's result fields but the content (its text)
    results = Extractor().extract_batch([page["html"], GARBAGE_HTML, None])
    for doc, result in zip(out, results, strict=True):
        check_record(doc.metadata, RESULT_FIELDS)
        assert doc.metadata == metadata(result)
    counts = {name: int(step.stats[name].total) for name in
              ("total", "forwarded", "errors", "empty")}
    assert counts == {"total": 3, "forwarded": 3, "errors": 1, "empty": 1}
    assert "dropped" not in step.stats.stats


def test_the_output_asked_for_fills_text_and_metadata():
    from datatrove.data import Document

    from pulpie_rt.integrations.datatrove import PulpieExtractor

    output = Output("text", links=False)
    pages = integration_pages()[:2]
    step = PulpieExtractor(keep_failed=True, workers=1, threads=1, output=output)
    out = list(step.run(iter([Document(text=p["html"], id=p["id"]) for p in pages])))
    results = Extractor().extract_batch([p["html"] for p in pages])
    for doc, result in zip(out, results, strict=True):
        values = result_values(result, output)
        assert doc.text == values.pop("text") == result.content("text", links=False) != ""
        assert doc.metadata == values


# ---------------------------------------------------------------------------- failures


class FlakyPipeline:
    """A task's model that fails the documents in ``transient`` for a transient reason (while
    ``failing`` says so) and those in ``permanent`` for good; every run of a page counted."""

    def __init__(self, pipeline, fault):
        self.pipeline, self.fault = pipeline, fault
        self.stats = pipeline.stats

    def _faulted(self, results):
        for result in results:
            doc_id = result.metadata["document"].id
            self.fault.runs[doc_id] = self.fault.runs.get(doc_id, 0) + 1
            if doc_id in self.fault.transient and self.fault.failing:
                result.error, result.html, result.markdown = (
                    "inference: InjectedFault: device lost", "", "")
            elif doc_id in self.fault.permanent:
                result.error, result.html, result.markdown = (
                    "decode: InjectedFault: not a page", "", "")
            yield result

    def run(self, pages):
        yield from self._faulted(self.pipeline.run(pages))

    def extract_batch(self, pages):
        return list(self._faulted(self.pipeline.extract_batch(pages)))


class Fault:
    def __init__(self, transient=(), permanent=(), failing=True):
        self.transient, self.permanent, self.failing = set(transient), set(permanent), failing
        self.runs: dict[str, int] = {}


def flaky_step(fault: Fault, **options):
    from pulpie_rt.integrations.datatrove import PulpieExtractor

    class FlakyExtractor(PulpieExtractor):
        def pipeline(self, world_size: int = 1):
            return FlakyPipeline(super().pipeline(world_size), fault)

    return FlakyExtractor(workers=1, threads=1, **options)


def test_a_transient_failure_runs_again_a_permanent_one_once(tmp_path, monkeypatch):
    from datatrove.data import Document

    import pulpie_rt.integrations.datatrove as integration

    monkeypatch.setattr(integration.time, "sleep", lambda s: None)
    pages = integration_pages()[:3]
    docs = [Document(text=p["html"], id=p["id"]) for p in pages]
    fault = Fault(transient=[pages[0]["id"]], permanent=[pages[1]["id"]])

    class Recovering(FlakyPipeline):  # the model opened again no longer fails
        def extract_batch(self, pages):
            fault.failing = False
            return super().extract_batch(pages)

    step = flaky_step(fault, keep_failed=True)
    opened = []

    def pipeline(world_size: int = 1):
        from pulpie_rt import Pipeline

        opened.append(world_size)
        return Recovering(Pipeline(workers=1, threads=1), fault)

    monkeypatch.setattr(step, "pipeline", pipeline)
    out = {d.id: d for d in step.run(iter(docs))}
    expected = extractor_results()
    assert out[pages[0]["id"]].text == expected[pages[0]["id"]][0] != ""
    assert out[pages[0]["id"]].metadata["error"] is None  # the retry succeeded
    assert out[pages[1]["id"]].metadata["error"] == "decode: InjectedFault: not a page"
    assert fault.runs == {pages[0]["id"]: 2, pages[1]["id"]: 1, pages[2]["id"]: 1}
    assert len(opened) == 2  # the task's model, and a fresh one for the retry
    assert int(step.stats["errors"].total) == 1


def test_a_persistent_transient_failure_fails_the_task_and_the_rerun_completes_it(tmp_path):
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    from pulpie_rt.integrations.failures import TRANSIENT_ATTEMPTS, TransientPageError

    inputs, out, logs = tmp_path / "in", tmp_path / "out", tmp_path / "logs"
    shards = write_shards(inputs, SETTINGS[1])
    victim = shards[1][0]["id"]
    fault = Fault(transient=[victim])

    def executor():
        return LocalPipelineExecutor(
            [JsonlReader(str(inputs), text_key="html"), flaky_step(fault), JsonlWriter(str(out))],
            tasks=2, workers=1, logging_dir=str(logs))

    with pytest.raises(TransientPageError, match=f"^1 pages failed {TRANSIENT_ATTEMPTS} times "
                       f"for a transient reason \\('{victim}'\\); first: inference: "
                       "InjectedFault: device lost$"):
        executor().run()
    assert fault.runs[victim] == TRANSIENT_ATTEMPTS
    assert sorted(p.name for p in (logs / "completions").iterdir()) == ["00000"]

    fault.failing = False  # the machine is well again: the rerun runs task 1 alone
    executor().run()
    assert sorted(p.name for p in (logs / "completions").iterdir()) == ["00000", "00001"]
    documents = read_output(out)  # each document once
    assert victim in documents and documents[victim]["text"]
    expected = extractor_results(SETTINGS[1])
    assert set(documents) == {d["id"] for shard in shards for d in shard if expected[d["id"]][0]}


def test_a_task_gets_its_share_of_the_machine(monkeypatch):
    from pulpie_rt.integrations.datatrove import task_cpus
    from pulpie_rt.runtime.model.devices import usable_cpus

    monkeypatch.setenv("DATATROVE_CPUS_PER_TASK", "3")  # Slurm's and Ray's executors set it
    assert task_cpus(64) == 3
    monkeypatch.setenv("DATATROVE_CPUS_PER_TASK", "-1")  # the local executor's
    cpus = usable_cpus()
    assert task_cpus(1) == cpus
    assert task_cpus(64) == 1
    assert task_cpus(2) == max(1, cpus // min(2, cpus))
