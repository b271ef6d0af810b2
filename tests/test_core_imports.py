"""The import picture of the core (``core/src``): which module uses which, and no circle in it.

A module is a file (``tree.rs`` is ``tree``, ``ort/mod.rs`` is ``ort``). Module ``a`` uses
module ``b`` when ``a`` names an item of ``b`` by a path (``crate::b::x``, ``super::x``, or a
child's ``b::x`` in a ``mod.rs``); an item a module re-exports (``pub use``) counts as used from
the module that defines it, so a circle through a parent's re-exports is found too. Tests
(``#[cfg(test)]`` and what follows) are left out: a test may use anything.
"""

from __future__ import annotations

import re
from pathlib import Path

from eval.report import REPO_ROOT

SRC = REPO_ROOT / "core" / "src"

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_PATH = re.compile(r"\b((?:crate|super|self|\w+)(?:::\w+)+)")
_REEXPORT = re.compile(r"\bpub(?:\([\w ]+\))?\s+use\s+([^;]+);")


def module_of(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return "::".join(parts)


def _code(path: Path) -> str:
    text = _STRING.sub('""', _COMMENT.sub("", path.read_text(encoding="utf-8")))
    return re.split(r"#\[cfg\(test\)\]", text, maxsplit=1)[0]


def _expand(tree: str) -> list[str]:
    """The paths of a use tree: ``a::{b, c::{d as e}}`` is ``a::b``, ``a::c::d``."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    if "{" not in tree:
        return [tree]
    head, _, rest = tree.partition("{")
    inner = rest[:rest.rindex("}")]
    parts, depth, start = [], 0, 0
    for index, char in enumerate(inner):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(inner[start:index])
            start = index + 1
    parts.append(inner[start:])
    return [path for part in parts if part for path in _expand(head + part)]


class Picture:
    """The modules of ``core/src`` and the uses between them."""

    def __init__(self, src: Path = SRC) -> None:
        self.files = {module_of(p, src): p for p in sorted(src.rglob("*.rs"))}
        self.code = {m: _code(p) for m, p in self.files.items()}
        # per module: a re-exported name -> the path it stands for
        self.reexports: dict[str, dict[str, list[str]]] = {}
        for module, code in self.code.items():
            names: dict[str, list[str]] = {}
            for tree in _REEXPORT.findall(code):
                for path in _expand(tree):
                    names[path.split("::")[-1]] = self._absolute(module, path.split("::"))
            self.reexports[module] = names
        self.uses = {m: self._uses(m) for m in self.files}

    def _is_dir_module(self, module: str) -> bool:
        return self.files[module].name in ("mod.rs", "lib.rs")

    def _absolute(self, module: str, parts: list[str]) -> list[str]:
        """A path written in ``module``, from the crate's root."""
        here = module.split("::") if module else []
        if parts[0] == "crate":
            return parts[1:]
        if parts[0] in ("super", "self"):
            base = list(here)
            while parts and parts[0] in ("super", "self"):
                if parts[0] == "super":
                    base = base[:-1]
                parts = parts[1:]
            return base + parts
        if "::".join(here + parts[:1]) in self.files:  # a child of a mod.rs / lib.rs
            return here + parts
        return []  # std, a crate dependency, a type's associated item

    def _resolve(self, parts: list[str], seen: int = 0) -> str | None:
        """The module that defines the item at ``parts`` (through re-exports)."""
        for n in range(len(parts), -1, -1):
            module = "::".join(parts[:n])
            if module in self.files:
                rest = parts[n:]
                if rest and rest[0] in self.reexports[module] and seen < 20:
                    target = self.reexports[module][rest[0]]
                    return self._resolve(target + rest[1:], seen + 1) or module
                return module
        return None

    def _uses(self, module: str) -> set[str]:
        code = _REEXPORT.sub("", self.code[module])  # a re-export is not a use
        found = set()
        for written in _PATH.findall(code):
            parts = self._absolute(module, written.split("::"))
            if not parts:
                continue
            target = self._resolve(parts)
            if target is not None and target != module:
                found.add(target)
        for tree in re.findall(r"\buse\s+([^;]+);", code):
            for path in _expand(tree):
                parts = self._absolute(module, path.split("::"))
                target = self._resolve(parts) if parts else None
                if target is not None and target != module:
                    found.add(target)
        return found

    def circles(self) -> list[list[str]]:
        """Each set of modules that use one another in a circle (Tarjan's components of more
        than one module), as one circle through them."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        found: list[list[str]] = []

        def visit(module: str) -> None:
            index[module] = low[module] = len(index)
            stack.append(module)
            for other in sorted(self.uses[module]):
                if other not in index:
                    visit(other)
                    low[module] = min(low[module], low[other])
                elif other in stack:
                    low[module] = min(low[module], index[other])
            if low[module] == index[module]:
                component = []
                while True:
                    other = stack.pop()
                    component.append(other)
                    if other == module:
                        break
                if len(component) > 1:
                    found.append(self._circle(set(component)))

        for module in sorted(self.files):
            if module not in index:
                visit(module)
        return found

    def _circle(self, component: set[str]) -> list[str]:
        """One circle through a component: ``a -> b -> ... -> a``."""
        start = min(component)
        paths = {start: [start]}
        queue = [start]
        while queue:
            module = queue.pop(0)
            for other in sorted(self.uses[module] & component):
                if other == start:
                    return [*paths[module], start]
                if other not in paths:
                    paths[other] = [*paths[module], other]
                    queue.append(other)
        return sorted(component)

    def draw(self) -> str:
        """The picture: each module and the modules it uses."""
        return "\n".join(f"{m or 'crate'} -> {', '.join(sorted(u)) or '-'}"
                         for m, u in sorted(self.uses.items()))


def test_the_core_has_no_import_circle():
    picture = Picture()
    circles = picture.circles()
    assert circles == [], "import circles in core/src:\n" + "\n".join(
        " -> ".join(m or "crate" for m in circle) for circle in circles) + "\n\n" + picture.draw()


def test_the_picture_sees_uses_re_exports_and_circles(tmp_path):
    """A circle through a parent's re-export is found, a test's use is not."""
    (tmp_path / "a").mkdir()
    (tmp_path / "lib.rs").write_text("mod a;\nmod b;\n")
    (tmp_path / "a" / "mod.rs").write_text("mod x;\nmod y;\npub use x::Thing;\n")
    (tmp_path / "a" / "x.rs").write_text("pub struct Thing;\nfn f() { super::y::g(); }\n")
    (tmp_path / "a" / "y.rs").write_text("use super::Thing;\npub fn g() {}\n")
    (tmp_path / "b.rs").write_text("fn h() -> crate::a::Thing { todo!() }\n"
                                   "#[cfg(test)]\nmod tests { use crate::a::y::g; }\n")
    picture = Picture(tmp_path)
    assert picture.uses["b"] == {"a::x"}
    assert picture.uses["a::y"] == {"a::x"}
    assert picture.circles() == [["a::x", "a::y", "a::x"]]
