"""The package's layers, bottom to top, and the rule that imports only run downwards.

   -1  runtime.binding      the ctypes declarations read from the core's headers (stdlib only)
    0  runtime.constants, runtime.digest, runtime.native, corpus, version
    1  runtime.stages       html -> simplify -> blocks -> tokens -> ... -> markdown
    2  runtime.model        bundle, hub, resolve, backends
    3  runtime.flow         the page flow: Extractor, Pipeline
    4  runtime.io (readers), runtime.output (writers, the resume index), runtime.inspector (a
       page's blocks as an HTML report), ``pulpie_rt`` itself (the public API: re-exports the
       flow)
    5  runtime.cli (``pulpie-rt extract|run``), integrations, export
    6  pulpie_rt.cli        the console script
    -- the repository's tools, run from a checkout, never shipped: nothing above imports them --
    7  eval                 metrics, pages, systems, reports
    8  bench, parity, train (none imports another)

A module may import its own package and any lower layer. Every ``import`` counts, those inside
functions too: a lazy import is still a dependency. Which folder is which package is read from
its one definition, pyproject.toml (``package_folders``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parent.parent


def package_folders(repo: Path = REPO) -> dict[str, str]:
    """Folder in the repository -> the package it imports as: pyproject.toml's package-dir
    (what the wheel ships, each folder mapped into ``pulpie_rt``) and the repository's tools,
    every other top-level folder holding an ``__init__.py`` (imported by its own name from a
    checkout's root)."""
    config = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = {folder: package for package, folder
               in config["tool"]["setuptools"]["package-dir"].items()}
    tools = {init.parent.name: init.parent.name for init in sorted(repo.glob("*/__init__.py"))
             if init.parent.name not in shipped}
    return {**shipped, **tools}


FOLDERS = package_folders()
# the repository's tools: the top-level packages besides pulpie_rt
TOOLS = tuple(sorted(p for p in FOLDERS.values() if "." not in p and p != "pulpie_rt"))
# (layer, package); the longest package that prefixes a module's name is its package
LAYERS = {
    "pulpie_rt.runtime.constants": 0, "pulpie_rt.runtime.digest": 0,
    "pulpie_rt.runtime.binding": -1,
    "pulpie_rt.runtime.native": 0, "pulpie_rt.corpus": 0, "pulpie_rt.version": 0,
    "pulpie_rt.runtime.stages": 1,
    "pulpie_rt.runtime.model": 2,
    "pulpie_rt.runtime.flow": 3,
    "pulpie_rt.runtime.io": 4, "pulpie_rt.runtime.output": 4, "pulpie_rt": 4,
    "pulpie_rt.runtime.inspector": 4,
    "pulpie_rt.runtime.cli": 5, "pulpie_rt.integrations": 5, "pulpie_rt.export": 5,
    "pulpie_rt.cli": 6,
    "eval": 7,
    "bench": 8, "parity": 8, "train": 8,
}


def package_of(module: str) -> str:
    """The entry of ``LAYERS`` that ``module`` belongs to."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in LAYERS:
            return name
    raise KeyError(module)


def modules() -> list[tuple[str, Path]]:
    found = []
    for folder, package in FOLDERS.items():
        root = REPO / folder
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            found.append((".".join([package, *parts]), path))
    return found


def imported(module: str, path: Path, module_names: set[str]) -> set[str]:
    """Every module of the project (the package's, the tools') ``path`` imports (relative
    imports resolved; ``from a import b`` is module ``a.b`` when that is a module, else module
    ``a``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                names.add(submodule if submodule in module_names else target)
    return {n for n in names if n.split(".")[0] in {"pulpie_rt", *TOOLS}}


def _known(name: str) -> bool:
    try:
        package_of(name)
    except KeyError:
        return False
    return True


def upward_imports() -> list[str]:
    problems = []
    found = modules()
    module_names = {name for name, _ in found}
    for module, path in found:
        own = package_of(module)
        for target in imported(module, path, module_names):
            if not _known(target):
                continue
            other = package_of(target)
            if other == own or LAYERS[other] < LAYERS[own]:
                continue
            problems.append(f"{module} (layer {LAYERS[own]}) imports {target} "
                            f"(layer {LAYERS[other]})")
    return sorted(problems)


def test_every_module_has_a_layer():
    unknown = [m for m, _ in modules() if not _known(m)]
    assert unknown == []


def test_imports_only_run_downwards():
    assert upward_imports() == []


@pytest.mark.parametrize(("stage", "statement", "found"), [
    ("stages", "from pulpie_rt.runtime.flow.pages import x",
     "pulpie_rt.runtime.stages.leak (layer 1) imports pulpie_rt.runtime.flow.pages (layer 3)"),
    # the package never imports a repository tool
    ("flow", "from eval.metrics import word_f1",
     "pulpie_rt.runtime.flow.leak (layer 3) imports eval.metrics (layer 7)"),
])
def test_the_check_sees_an_upward_import(stage, statement, found, tmp_path, monkeypatch):
    """A wrong check (one that reads no import, or no lazy one) would pass anything."""
    fake = tmp_path / "runtime" / stage
    fake.mkdir(parents=True)
    (fake / "leak.py").write_text(f"def f():\n    {statement}\n")
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    monkeypatch.setattr(f"{__name__}.FOLDERS", {"runtime": "pulpie_rt.runtime"})
    assert upward_imports() == [found]


@pytest.mark.parametrize("module", ["pulpie_rt.runtime.stages.simplify",
                                    "pulpie_rt.runtime.flow.pipeline", "bench.quality"])
def test_layers_are_known_for(module):
    assert package_of(module) in LAYERS


def test_the_layout_is_pyprojects_package_dir_and_the_tools_folders():
    """The wheel ships what package-dir maps; the tools are the other top-level packages,
    each imported by its folder's name."""
    assert FOLDERS == {"pulpie_rt": "pulpie_rt", "runtime": "pulpie_rt.runtime",
                       "integrations": "pulpie_rt.integrations", "export": "pulpie_rt.export",
                       "bench": "bench", "eval": "eval", "parity": "parity", "train": "train"}
    assert TOOLS == ("bench", "eval", "parity", "train")

