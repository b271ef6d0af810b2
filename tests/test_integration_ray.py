"""Ray Data (``pulpie_rt.integrations.ray``) on a local cluster: real dev pages as Parquet in,
every row out exactly once with ``Extractor``'s Markdown, resume by id column.

The cluster declares 4 CPUs on this 2-core machine: read tasks and the actor pool then never
wait on each other for a CPU slot.
"""

from __future__ import annotations

import pytest

pytest.importorskip("ray.data", reason="the [ray] extra is not installed: "
                    "pip install -e '.[ray]' (make test installs it)")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from integration_helpers import (  # noqa: E402
    GARBAGE_HTML,
    SETTINGS,
    Setting,
    extractor_results,
    integration_pages,
)
from rt_helpers import check_record  # noqa: E402

from pulpie_rt import Extractor, PageResult  # noqa: E402
from pulpie_rt.runtime.flow.schema import Output, result_fields, result_values  # noqa: E402

NULL_ERROR = "input: html must be str or bytes, not NoneType"
OUTPUT_COLUMNS = [f.name for f in result_fields()]


@pytest.fixture(scope="module")
def cluster():
    import ray

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def input_rows(setting: Setting) -> list[dict]:
    """The pages, then a garbage row and a null row; ``n`` is a column the step must keep."""
    rows = [{"id": p["id"], "html": p["html"]} for p in integration_pages(setting.all_pages)]
    rows += [{"id": "garbage", "html": GARBAGE_HTML}, {"id": "null", "html": None}]
    return [{**row, "n": n} for n, row in enumerate(rows)]


def write_rows(path, rows: list[dict]) -> None:
    schema = pa.schema([("id", pa.string()), ("html", pa.string()), ("n", pa.int64())])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def run_job(inputs, out, checkpoint, setting: Setting) -> None:
    import ray

    from pulpie_rt.integrations.ray import extract_dataset

    pages = ray.data.read_parquet(str(inputs))
    # blocks of 4 pages on the default model's subset (many blocks for few pages), 16 on all
    extract_dataset(pages, actors=2, batch_size=16 if setting.all_pages else 4,
                    checkpoint_path=checkpoint, profile=setting.profile).write_parquet(str(out))


def data_files(out) -> set:
    return {p.name for p in out.glob("*.parquet")}


def read_ids(out, names) -> list:
    return [i for name in sorted(names) for i in pq.read_table(out / name).column("id").to_pylist()]


def wrong_rows(table: pa.Table, rows: list[dict], setting: Setting) -> list[str]:
    """Ids of rows whose output is not what it must be (inputs kept; Extractor's results)."""
    expected = extractor_results(setting)
    by_id = {r["id"]: r for r in table.to_pylist()}
    wrong = []
    for row in rows:
        got = by_id[row["id"]]
        if (got["html"], got["n"]) != (row["html"], row["n"]):
            wrong.append(f"{row['id']}: input columns changed")
        elif row["html"] is None:
            if (got["markdown"], got["n_main"], got["n_other"], got["error"]) != (
                    "", 0, 0, NULL_ERROR):
                wrong.append(f"{row['id']}: {got['error']!r}")
        elif (got["markdown"], got["n_main"], got["n_other"], got["error"]) != expected[
                row["id"]]:
            wrong.append(f"{row['id']}: not Extractor's output (error {got['error']!r})")
    return wrong


@pytest.mark.parametrize("setting", SETTINGS, ids=str)
def test_every_row_comes_out_once_as_extractor_makes_it_and_resumes(cluster, tmp_path, setting):
    rows = input_rows(setting)
    half = len(rows) // 2
    inputs, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "checkpoint"
    inputs.mkdir()

    # A job that wrote the first half of the rows, then stopped ...
    write_rows(inputs / "part-0.parquet", rows[:half])
    run_job(inputs, out, checkpoint, setting)
    first = data_files(out)
    assert sorted(read_ids(out, first)) == sorted(r["id"] for r in rows[:half])

    # ... rerun over all rows: only the rows not written yet are processed
    write_rows(inputs / "part-1.parquet", rows[half:])
    run_job(inputs, out, checkpoint, setting)
    second = data_files(out) - first
    assert sorted(read_ids(out, second)) == sorted(r["id"] for r in rows[half:])

    table = pq.read_table(out)
    assert sorted(table.column("id").to_pylist()) == sorted(r["id"] for r in rows)
    assert wrong_rows(table, rows, setting) == []
    assert table.schema.field("error").type == pa.string()
    assert table.schema.field("n_main").type == pa.int64()
    # the garbage row is a page without content, not a failure (as Extractor has it)
    garbage = table.filter(pa.compute.equal(table.column("id"), "garbage")).to_pylist()[0]
    assert (garbage["markdown"], garbage["error"]) == ("", None)

    # A rerun of the finished job: every row is dropped at the read, none reaches the model,
    # nothing is written (one row in, one row out: rows written == pages processed).
    run_job(inputs, out, checkpoint, setting)
    assert data_files(out) == first | second


def test_actor_pool_sized_to_the_cluster(cluster):
    from pulpie_rt.integrations.ray import actors_for_cluster

    assert actors_for_cluster() == 3  # 4 CPUs, one left to the reads
    assert actors_for_cluster(cpus_per_actor=2) == 1
    with pytest.raises(ValueError, match=r"^num_gpus=1, but the Ray cluster has 0 GPUs$"):
        actors_for_cluster(num_gpus=1)


# ---------------------------------------------------------------- the callable, without Ray


@pytest.fixture(scope="module")
def extractor():
    from pulpie_rt.integrations.ray import PulpieExtractor

    return PulpieExtractor(html_column="page", content_type_column="type", threads=1)


def small_rows() -> list[dict]:
    pages = integration_pages()[:2]
    return [{"id": p["id"], "page": p["html"].encode("utf-8"), "type": "text/html; charset=utf-8"}
            for p in pages] + [{"id": "null", "page": None, "type": None},
                               {"id": "garbage", "page": GARBAGE_HTML.encode(), "type": None}]


def expected_columns(rows: list[dict]) -> dict[str, list]:
    expected = extractor_results()
    markdown, n_main, n_other, error = [], [], [], []
    for row in rows:
        result = ("", 0, 0, NULL_ERROR) if row["page"] is None else expected[row["id"]]
        for column, value in zip((markdown, n_main, n_other, error), result, strict=True):
            column.append(value)
    return {"markdown": markdown, "n_main": n_main, "n_other": n_other, "error": error}


def test_arrow_pandas_and_numpy_batches_with_bytes_and_content_type(extractor):
    import numpy as np

    rows = small_rows()
    expected = expected_columns(rows)
    table = pa.Table.from_pylist(rows)
    out = extractor(table)
    assert out.column_names == ["id", "page", "type", *OUTPUT_COLUMNS]
    assert {name: out.column(name).to_pylist() for name in expected} == expected
    assert out.column("page").to_pylist() == [r["page"] for r in rows]
    # the bytes cells decoded with their content-type column's charset; the null row has none
    assert out.column("encoding").to_pylist()[:3] == ["UTF-8", "UTF-8", None]

    out = extractor(table.to_pandas())
    assert list(out.columns) == ["id", "page", "type", *OUTPUT_COLUMNS]
    got = {name: out[name].tolist() for name in expected}
    got["error"] = [None if e is None or e != e else e for e in got["error"]]  # NaN is missing
    assert got == expected

    batch = {name: np.array([r[name] for r in rows], dtype=object) for name in rows[0]}
    out = extractor(batch)
    assert out["n_main"].dtype == np.int64
    assert {name: out[name].tolist() for name in expected} == expected

    # a batch that already has the output columns (a rerun over an output) gets them replaced
    again = extractor(extractor(table))
    assert again.column_names == ["id", "page", "type", *OUTPUT_COLUMNS]


def test_the_added_columns_are_the_schemas_result_fields(extractor):
    """Every row gets exactly the schema's result fields, of its Arrow types, with
    ``Extractor``'s values (the row keeps its own id and columns)."""
    rows = small_rows()
    out = extractor(pa.Table.from_pylist(rows))
    fields = result_fields()
    assert out.schema.names == ["id", "page", "type", *(f.name for f in fields)]
    assert [out.schema.field(f.name).type for f in fields] == [f.arrow_type() for f in fields]
    results = Extractor().extract_batch([r["page"] for r in rows], [r["type"] for r in rows])
    added = out.select([f.name for f in fields]).to_pylist()
    for row, result in zip(added, results, strict=True):
        check_record(row, fields)
        assert row == result_values(result)
    assert added[2]["error"] == NULL_ERROR


def test_the_output_asked_for_decides_the_added_columns():
    from pulpie_rt.integrations.ray import PulpieExtractor

    output = Output("json", tables=False)
    step = PulpieExtractor(html_column="page", content_type_column="type", threads=1,
                           output=output)
    rows = small_rows()
    out = step(pa.Table.from_pylist(rows))
    fields = result_fields(output)
    assert out.schema.names == ["id", "page", "type", *(f.name for f in fields)]
    assert [out.schema.field(f.name).type for f in fields] == [f.arrow_type() for f in fields]
    results = Extractor().extract_batch([r["page"] for r in rows], [r["type"] for r in rows])
    for row, result in zip(out.select([f.name for f in fields]).to_pylist(), results,
                           strict=True):
        row["labels"] = dict(row["labels"])  # an Arrow map reads back as (key, value) pairs
        check_record(row, fields)
        assert row == result_values(result, output)


def test_a_missing_column_is_an_error_of_the_job_not_of_a_page(extractor):
    with pytest.raises(KeyError, match="no column 'page' in the batch"):
        extractor(pa.table({"html": ["<p>x</p>"]}))


def test_truncated_and_empty_reason_columns(extractor):
    out = extractor(pa.table({"page": ["<html><body><p>" + "word " * 50 + "</p></body></html>",
                                       GARBAGE_HTML], "type": [None, None]}))
    assert out.schema.field("truncated").type == pa.string()
    assert out.column("truncated").to_pylist() == [None, None]
    reasons = out.column("empty_reason").to_pylist()
    assert reasons[0] is None and isinstance(reasons[1], str) and reasons[1]


class FlakyPipeline:
    """A model that fails some calls as a whole or some pages for a transient reason."""

    def __init__(self, whole_failures: int = 0, page_failures: int = 0, permanent: bool = False):
        self.whole_failures = whole_failures
        self.page_failures = page_failures
        self.permanent = permanent
        self.calls: list[list[int]] = []

    def extract_batch(self, pages):
        self.calls.append([p.page_id for p in pages])
        if self.whole_failures > 0:
            self.whole_failures -= 1
            raise RuntimeError("worker pool broke")
        results = [PageResult(p.page_id, markdown=f"page {p.page_id}") for p in pages]
        for result in results:
            if result.page_id == 1 and self.page_failures > 0:
                self.page_failures -= 1
                result.markdown, result.error = "", "inference: OrtError: device lost"
            if result.page_id == 2 and self.permanent:
                result.markdown, result.error = "", "decode: LookupError: unknown encoding"
        return results


def with_pipeline(extractor, flaky: FlakyPipeline, monkeypatch) -> list[FlakyPipeline]:
    """``extractor`` running ``flaky`` (the same one reopened after a transient failure);
    the list of the pipelines it opened."""
    import pulpie_rt.integrations.ray as ray_integration

    opened = []

    def open_pipeline():
        opened.append(flaky)
        return flaky

    monkeypatch.setattr(extractor, "open_pipeline", open_pipeline)
    monkeypatch.setattr(extractor, "pipeline", flaky)
    monkeypatch.setattr(ray_integration, "RETRY_BACKOFF_S", 0)
    return opened


def test_transient_failures_rerun_in_the_actor_permanent_ones_are_written(extractor,
                                                                           monkeypatch):
    flaky = FlakyPipeline(whole_failures=1, page_failures=1, permanent=True)
    opened = with_pipeline(extractor, flaky, monkeypatch)
    out = extractor(pa.table({"page": ["<p>a</p>", "<p>b</p>", "<p>c</p>"], "type": [None] * 3}))
    assert out.column("markdown").to_pylist() == ["page 0", "page 1", ""]
    assert out.column("error").to_pylist() == [None, None,
                                               "decode: LookupError: unknown encoding"]
    # the whole batch failed, then page 1 alone (transient), then page 1 again; page 2's
    # permanent error is never run again
    assert flaky.calls == [[0, 1, 2], [0, 1, 2], [1]]
    assert len(opened) == 2  # the model reopened after each transient failure


def test_transient_failures_that_persist_fail_the_task_not_the_row(extractor, monkeypatch):
    from pulpie_rt.integrations.failures import TRANSIENT_ATTEMPTS, TransientPageError

    flaky = FlakyPipeline(page_failures=TRANSIENT_ATTEMPTS)
    with_pipeline(extractor, flaky, monkeypatch)
    with pytest.raises(TransientPageError, match=r"^1 pages failed 3 times for a transient "
                       r"reason \('row 1 of the batch'\); first: inference: OrtError: "
                       r"device lost$"):
        extractor(pa.table({"page": ["<p>a</p>", "<p>b</p>"], "type": [None] * 2}))
    assert flaky.calls == [[0, 1], [1], [1]]


# ---------------------------------------------------------------- faults in a real job


def fault_rows(kinds: dict[int, str], n: int = 16) -> list[dict]:
    """``n`` dev pages as rows, the ones at ``kinds``' indexes marked with that fault."""
    from ray_faults import marker

    pages = integration_pages(True)[:n]
    return [{"id": p["id"], "html": p["html"] + (marker(kinds[i]) if i in kinds else ""),
             "n": i} for i, p in enumerate(pages)]


def run_faulty_job(tmp_path, rows: list[dict]) -> tuple[list[dict], object]:
    """``rows`` through ``extract_dataset`` with ``FaultyExtractor``, written as Parquet and
    read back; the log folder of the attempts."""
    import ray
    import ray_faults

    from pulpie_rt.integrations.ray import extract_dataset

    ray_faults.register()
    logs = tmp_path / "attempts"
    logs.mkdir()

    class Faulty(ray_faults.FaultyExtractor):
        LOG_DIR = str(logs)

    inputs, out = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    write_rows(inputs / "part-0.parquet", rows)
    extract_dataset(ray.data.read_parquet(str(inputs)), actors=2, batch_size=4,
                    extractor=Faulty).write_parquet(str(out))
    return pq.read_table(out).to_pylist(), logs


def expected_for(rows: list[dict]) -> dict[str, tuple[str, str | None]]:
    from pulpie_rt import Extractor

    results = Extractor().extract_batch([r["html"] for r in rows])
    return {r["id"]: (res.markdown, res.error) for r, res in zip(rows, results, strict=True)}


def attempts(logs, kind: str) -> int:
    path = logs / kind
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_transient_failure_is_retried_by_ray_a_permanent_one_written_once(cluster, tmp_path):
    from ray_faults import TRANSIENT_FAILURES

    rows = fault_rows({1: "permanent", 10: "transient"})
    out, logs = run_faulty_job(tmp_path, rows)
    assert sorted(r["id"] for r in out) == sorted(r["id"] for r in rows)  # each exactly once
    expected = expected_for(rows)
    by_id = {r["id"]: r for r in out}
    permanent, transient = rows[1]["id"], rows[10]["id"]
    assert (by_id[permanent]["markdown"], by_id[permanent]["error"]) == (
        "", "decode: InjectedFault: not a page")
    wrong = [i for i, r in by_id.items() if i != permanent
             and (r["markdown"], r["error"]) != expected[i]]
    assert wrong == []
    assert by_id[transient]["error"] is None and by_id[transient]["markdown"]
    assert attempts(logs, "permanent") == 1  # written once, never run again
    # failed in the actor's own attempts, then in Ray's retry of the task until it passed
    assert attempts(logs, "transient") == TRANSIENT_FAILURES + 1


def test_an_actor_killed_mid_job_loses_and_repeats_no_row(cluster, tmp_path):
    rows = fault_rows({9: "kill"})
    out, logs = run_faulty_job(tmp_path, rows)
    assert attempts(logs, "kill") == 1  # the actor was killed
    ids = [r["id"] for r in out]
    assert sorted(ids) == sorted(r["id"] for r in rows) and len(set(ids)) == len(ids)
    expected = expected_for(rows)
    assert [i for i, r in ((r["id"], r) for r in out)
            if (r["markdown"], r["error"]) != expected[i]] == []
