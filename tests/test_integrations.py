"""The integrations stay optional: each imports without the other's engine, the base install
pulls neither, and ``import pulpie_rt`` loads neither."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ENGINES = ("ray", "datatrove")


def run_without(blocked: str, code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter where importing ``blocked`` fails, as if not installed."""
    prelude = textwrap.dedent(f"""
        import importlib.abc, sys

        class NotInstalled(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == {blocked!r} or name.startswith({blocked!r} + "."):
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, NotInstalled())
    """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("module", "engine", "other"), [("ray", "ray", "datatrove"),
                                                         ("datatrove", "datatrove", "ray")])
def test_each_integration_imports_without_the_others_engine(module, engine, other):
    if importlib.util.find_spec(engine) is None:
        pytest.skip(f"the [{engine}] extra is not installed")
    done = run_without(other, f"""
        import pulpie_rt.integrations.{module}
        assert {other!r} not in sys.modules
        print("imported")
    """)
    assert (done.returncode, done.stdout.strip()) == (0, "imported"), done.stderr[-2000:]


@pytest.mark.parametrize(("module", "extra"), [("ray", "ray"), ("datatrove", "datatrove")])
def test_an_integration_without_its_engine_says_which_extra(module, extra):
    done = run_without(extra, f"import pulpie_rt.integrations.{module}")
    assert done.returncode == 1
    assert f"pip install 'pulpie-rt[{extra}]'" in done.stderr.strip().splitlines()[-1]


def test_the_base_install_pulls_neither_engine():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [d.split("[")[0].split(">")[0].split("=")[0].strip().lower()
             for d in project["dependencies"]]
    assert not set(names) & set(ENGINES)
    assert project["optional-dependencies"]["ray"] == ["ray[data]>=2.60"]
    assert project["optional-dependencies"]["datatrove"] == ["datatrove[io]>=0.10.1"]
    done = subprocess.run([sys.executable, "-c", "import sys, pulpie_rt; print(sorted("
                           "m for m in ('ray', 'datatrove') if m in sys.modules))"],
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "[]", done.stderr[-2000:]


def test_which_page_errors_are_transient():
    from pulpie_rt import Extractor
    from pulpie_rt.integrations.failures import (
        PERMANENT_STAGES,
        TRANSIENT_STAGES,
        error_stage,
        is_transient,
    )

    assert not PERMANENT_STAGES & TRANSIENT_STAGES
    # the page's own failures, as the page flow writes them
    (missing,) = Extractor().extract_batch([None])
    assert missing.error == "input: html must be str or bytes, not NoneType"
    assert not is_transient(missing.error)
    for error in ("decode: LookupError: unknown encoding: x-nothing",
                  "simplify: SimplifyError: the compiled core failed on this input: depth",
                  "tokenize: RuntimeError: core tokenizer failed (status 2): panic",
                  "rescore: ValueError: the bundle has a rescorer but the page has no features",
                  "reconstruct: ValueError: map_html is not UTF-8",
                  "markdown: TypeError: html must be str, not int",
                  "features: the page has no blocks",
                  "somethingnew: a stage nobody classified"):  # unknown: never retried
        assert not is_transient(error), error
    # the machine's
    for error in ("inference: OrtError: CUDA out of memory",
                  "engine: EngineError: the session is gone",
                  "internal: KeyError: 'x'",
                  "prepare: BrokenProcessPool: A process in the process pool was terminated",
                  "finish: BrokenProcessPool: A process in the process pool was terminated",
                  "pipeline: RuntimeError: worker pool broke",
                  "worker: killed"):
        assert is_transient(error), error
    assert not is_transient(None)
    assert error_stage("decode: LookupError: a: b") == "decode"
