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
