"""Pipeline: input order, per-page errors, bounded streaming, threads on one engine (no
process), no torch, transformers or onnxruntime module imported."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap

import pytest
from rt_helpers import small_dev_pages, tiny_bundle

from pulpie_rt import Extractor, PageInput, PageResult, Pipeline
from pulpie_rt.runtime.model.devices import usable_cpus


@pytest.fixture(scope="module")
def pages() -> list[dict]:
    return small_dev_pages(20_000)[:16]


@pytest.fixture(scope="module")
def expected(pages):
    extractor = Extractor(tiny_bundle(), device="cpu")
    return extractor.extract_batch([p["html"] for p in pages])


@pytest.mark.parametrize("workers", [0, 1, 4])
def test_results_in_input_order_with_errors_in_place(pages, expected, workers):
    inputs = [PageInput(p["html"], page_id=p["id"], metadata={"n": i}) for i, p in
              enumerate(pages)]
    inputs.insert(3, PageInput(None, page_id="bad"))
    pipeline = Pipeline(tiny_bundle(), devices="cpu", workers=workers)
    results = pipeline.extract_batch(inputs)
    assert [r.page_id for r in results] == [i.page_id for i in inputs]
    assert results[3].error == "input: html must be str or bytes, not NoneType"
    assert results[3].markdown == "" and results[3].labels == {}
    good = results[:3] + results[4:]
    assert all(isinstance(r, PageResult) and r.error is None for r in good)
    assert [r.metadata["n"] for r in good] == list(range(len(pages)))
    assert [r.labels for r in good] == [e.labels for e in expected]
    assert [r.markdown for r in good] == [e.markdown for e in expected]


def test_run_streams_with_bounded_memory(pages):
    consumed = 0
    ahead = 0
    pipeline = Pipeline(tiny_bundle(), devices="cpu", workers=2, window=1)
    group = pipeline.group_pages
    assert pipeline.window == group  # the window holds at least one group

    def source():
        nonlocal consumed
        for index in range(3 * group + 5):
            consumed += 1
            yield pages[index % len(pages)]["html"]

    produced = 0
    for result in pipeline.run(source()):
        produced += 1
        ahead = max(ahead, consumed - produced)
        assert result.error is None
    assert produced == 3 * group + 5
    # never more than the window, plus the group being gathered, between input and output
    assert ahead <= 2 * group


def test_a_cpu_run_reads_a_few_groups_per_thread_ahead():
    """On the CPU the window is ``WINDOW_GROUPS_PER_THREAD`` groups per calling thread (at most
    ``WINDOW_PAGES_GPU``), and a run reads no further ahead of its results than that."""
    from pulpie_rt.runtime.flow import pipeline as flow

    pipeline = Pipeline(devices="cpu", workers=2)
    group = pipeline.group_pages
    assert pipeline.window == flow.WINDOW_GROUPS_PER_THREAD * group * 2 < flow.WINDOW_PAGES_GPU
    assert Pipeline(devices="cpu", workers=4096).window == flow.WINDOW_PAGES_GPU
    assert Pipeline(devices="cpu", workers=2, window=3 * group).window == 3 * group
    consumed = produced = ahead = 0

    def source():
        nonlocal consumed
        for index in range(3 * pipeline.window):
            consumed += 1
            yield f"<article><h1>Page {index}</h1><p>{'Some words of it. ' * 20}</p></article>"

    for result in pipeline.run(source()):
        produced += 1
        ahead = max(ahead, consumed - produced)
        assert result.error is None
    assert produced == 3 * pipeline.window
    assert ahead <= pipeline.window + group  # (the 512 pages read before: all 192)


def test_threads_share_one_engine_and_start_no_process(pages, expected):
    pipeline = Pipeline(tiny_bundle(), devices="cpu")
    assert len(pipeline.engines) == 1 and pipeline.devices == ["cpu"]
    assert pipeline.workers == usable_cpus()  # one calling thread per usable CPU
    results = pipeline.extract_batch([p["html"] for p in pages])
    assert [r.markdown for r in results] == [e.markdown for e in expected]
    assert multiprocessing.active_children() == []
    assert pipeline.stats.pages == len(pages) and pipeline.stats.errors == 0


def test_extraction_imports_no_torch_transformers_or_onnxruntime():
    """The engine loads ONNX Runtime's C library itself: one ONNX Runtime per process."""
    code = textwrap.dedent(f"""
        import sys
        import pulpie_rt
        result = pulpie_rt.Extractor({str(tiny_bundle())!r}, device="cpu").extract(
            "<html><body><h1>Title</h1><p>Some text here.</p></body></html>")
        assert result.n_blocks == 2, result
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("torch", "transformers", "pulpie", "onnxruntime"))
        print(",".join(heavy) or "none")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "none"
