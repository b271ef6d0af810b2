"""The package's layers, bottom to top, and the rule that imports only run downwards.

    0  runtime.constants, runtime.digest, runtime.native, corpus, version   (no pulpie_rt imports)
    1  runtime.stages       html -> simplify -> blocks -> tokens -> ... -> markdown
    2  runtime.model        bundle, hub, resolve, backends
    3  runtime.flow         the page flow: Extractor, Pipeline
    4  runtime.io (readers, writers), ``pulpie_rt`` itself (the public API: re-exports the flow)
    5  runtime.cli (``pulpie-rt extract|run``), integrations, export
    6  eval                 metrics, pages, systems, reports
    7  bench, parity, train (none imports another)
    8  pulpie_rt.cli        the console script

A module may import its own package and any lower layer. Every ``import`` counts, those inside
functions too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# folder in the repository -> package it is installed as (pyproject.toml's package-dir)
FOLDERS = {"pulpie_rt": "pulpie_rt", "runtime": "pulpie_rt.runtime", "eval": "pulpie_rt.eval",
           "export": "pulpie_rt.export", "parity": "pulpie_rt.parity",
           "bench": "pulpie_rt.bench", "train": "pulpie_rt.train",
           "integrations": "pulpie_rt.integrations"}
# (layer, package); the longest package that prefixes a module's name is its package
LAYERS = {
    "pulpie_rt.runtime.constants": 0, "pulpie_rt.runtime.digest": 0,
    "pulpie_rt.runtime.native": 0, "pulpie_rt.corpus": 0, "pulpie_rt.version": 0,
    "pulpie_rt.runtime.stages": 1,
    "pulpie_rt.runtime.model": 2,
    "pulpie_rt.runtime.flow": 3,
    "pulpie_rt.runtime.io": 4, "pulpie_rt": 4,
    "pulpie_rt.runtime.cli": 5, "pulpie_rt.integrations": 5, "pulpie_rt.export": 5,
    "pulpie_rt.eval": 6,
    "pulpie_rt.bench": 7, "pulpie_rt.parity": 7, "pulpie_rt.train": 7,
    "pulpie_rt.cli": 8,
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
    """Every pulpie_rt module ``path`` imports (relative imports resolved; ``from a import b``
    is module ``a.b`` when that is a module, else module ``a``)."""
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
    return {n for n in names if n == "pulpie_rt" or n.startswith("pulpie_rt.")}


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


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """A wrong check (one that reads no import, or no lazy one) would pass anything."""
    fake = tmp_path / "runtime" / "stages"
    fake.mkdir(parents=True)
    (fake / "leak.py").write_text("def f():\n    from pulpie_rt.runtime.flow.pages import x\n")
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    monkeypatch.setattr(f"{__name__}.FOLDERS", {"runtime": "pulpie_rt.runtime"})
    assert upward_imports() == [
        "pulpie_rt.runtime.stages.leak (layer 1) imports pulpie_rt.runtime.flow.pages (layer 3)"]


@pytest.mark.parametrize("module", ["pulpie_rt.runtime.stages.simplify",
                                    "pulpie_rt.runtime.flow.pipeline"])
def test_layers_are_known_for(module):
    assert package_of(module) in LAYERS
