"""Every code block of README.md and docs/ runs here, so the documentation cannot rot.

Each page's fenced blocks run in the order they are written, in one scratch folder per page that
holds the files the examples read (``page.html``: a real dev page; ``pages.jsonl``: a few dev
pages as ``{"id", "html"}`` lines) beside links to the repository's top-level entries (so
``make …`` and ``tests/fixtures/…`` work as from a clone's root):

- ``python``: run as a script of its own (each block stands alone, as a reader copies it);
- ``bash`` / ``sh``: run with ``bash -e -o pipefail``; the port ``8080`` becomes a free one;
- ``c``: a whole program, compiled with ``-Wall -Werror`` against the C SDK ``make capi``
  builds (``build/capi``), then run;
- ``json``: parsed; ``text``: diagrams, layouts and printed output, not run.

A block that cannot run here says so in an HTML comment right above it, with a reason of a
known kind (``SKIP_KINDS``): ``<!-- docs-test: skip KIND: why -->``, KIND one of ``gpu`` (an
NVIDIA GPU), ``cluster`` (a cluster or object store), ``network`` (a network this machine has
not), ``recursion`` (``make test`` running itself), ``install`` (installing into the test's own
environment) or ``slow`` (a job of many minutes), or ``<!-- docs-test: covered
tests/FILE.py::TEST -->`` where a test of its own runs that command (the test must exist).
Skips are kept few (``MAX_SKIPPED``). Commands named inline (`` `python -m pulpie_rt.…` ``,
`` `pytest tests/…` ``, `` `make …` ``), the measurements' long runs, are checked to exist.
``mkdocs build --strict`` builds the site (``make docs``), and every relative link of the
pages must lead to a file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
RUN_LANGUAGES = {"python", "bash", "sh", "c"}
PARSED_LANGUAGES = {"json"}
SHOWN_LANGUAGES = {"text"}
SKIP_KINDS = {"gpu", "cluster", "network", "recursion", "install", "slow"}
MAX_SKIPPED = 14
BLOCK_TIMEOUT_S = 900
README_MAX_LINES = 200

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(?P<what>.*?)\s*-->")


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the block's first code line
    language: str
    code: str
    directive: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"


def parse_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, each with the directive comment above it."""
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        language = (opening["info"].strip().split() or [""])[0].strip("{}.").lower()
        directive = None
        above = index - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        if above >= 0 and (found := DIRECTIVE.search(lines[above])):
            directive = found["what"]
        end = index + 1
        while end < len(lines) and not (
                lines[end].strip().startswith(fence[0] * len(fence))
                and lines[end].strip().strip(fence[0]) == ""):
            end += 1
        assert end < len(lines), f"{path}:{index + 1}: code block never closed"
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip()
                for line in lines[index + 1:end]]
        blocks.append(Block(path, index + 2, language, "\n".join(body) + "\n", directive))
        index = end + 1
    return blocks


ALL_BLOCKS = [block for path in DOC_FILES for block in parse_blocks(path)]


def skip_reason(block: Block) -> str | None:
    """Why a block is not run (None: it runs); fails on a directive of no known kind."""
    if block.directive is None:
        return None
    kind, _, reason = block.directive.partition(" ")
    if kind == "covered":
        file, _, name = reason.strip().partition("::")
        test_file = REPO_ROOT / file
        assert test_file.is_file() and re.search(rf"^def {re.escape(name)}\(",
                                                 test_file.read_text(), re.M), (
            f"{block.where}: covered by {reason!r}, which is not a test")
        return f"covered by {reason}"
    if kind == "skip":
        category, _, why = reason.partition(":")
        assert category.strip() in SKIP_KINDS and why.strip(), (
            f"{block.where}: a skip names one of {sorted(SKIP_KINDS)} and a reason: "
            f"{block.directive!r}")
        return reason
    raise AssertionError(f"{block.where}: unknown docs-test directive {block.directive!r}")


def test_every_block_is_of_a_known_kind_and_skips_are_few():
    assert len(DOC_FILES) >= 10, DOC_FILES
    unknown = [f"{b.where} ({b.language or 'no language'})" for b in ALL_BLOCKS
               if b.language not in RUN_LANGUAGES | PARSED_LANGUAGES | SHOWN_LANGUAGES]
    assert not unknown, f"blocks the docs test cannot check: {unknown}"
    skipped = [b for b in ALL_BLOCKS if skip_reason(b) is not None]
    assert all(b.language in RUN_LANGUAGES for b in skipped), "only commands and code are skipped"
    assert len(skipped) <= MAX_SKIPPED, [b.where for b in skipped]


def test_the_readme_is_short_and_keeps_the_two_set_up_commands():
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    commands = [b.code for b in parse_blocks(REPO_ROOT / "README.md") if b.language == "bash"]
    assert any(re.search(r"^make run\b", c, re.M) and re.search(r"^make test\b", c, re.M)
               for c in commands)


def test_every_relative_link_leads_to_a_file():
    link = re.compile(r"\[[^\]]*\]\((?!https?://|mailto:|#)([^)#\s]+)(?:#[^)]*)?\)")
    broken = []
    for path in DOC_FILES:
        in_code = False
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if FENCE.match(line):
                in_code = not in_code
            if in_code:
                continue
            for target in link.findall(line):
                if not (path.parent / target).exists():
                    broken.append(f"{path.relative_to(REPO_ROOT)}:{number}: {target}")
    assert not broken, broken


INLINE_COMMAND = re.compile(r"`((?:python -m pulpie_rt\.|pytest tests/|make )[^`]*)`")


def _make_targets() -> set[str]:
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w-]*):", makefile, re.M))


def test_every_command_named_inline_exists():
    """The measurements' commands (minutes to hours) are not run, but each names a module,
    test file or make target that exists."""
    import importlib.util

    targets, missing, found = _make_targets(), [], 0
    for path in DOC_FILES:
        for command in INLINE_COMMAND.findall(path.read_text(encoding="utf-8")):
            found += 1
            words = command.split()
            if words[0] == "python":
                module = words[2]
                if importlib.util.find_spec(module) is None:
                    missing.append(f"{path.name}: {command}")
            elif words[0] == "pytest":
                if not (REPO_ROOT / words[1].split("::")[0]).exists():
                    missing.append(f"{path.name}: {command}")
            elif words[1] not in targets:
                missing.append(f"{path.name}: {command}")
    assert found >= 20 and not missing, missing


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which(
        "mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs-material is not installed (the dev extra has it)")
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def example_files(tmp_path_factory) -> dict[str, bytes]:
    """The files the examples read: real dev pages, small ones (the tests stay fast)."""
    from rt_helpers import small_dev_pages

    pages = small_dev_pages(20_000)[:4]
    lines = "".join(json.dumps({"id": p["id"], "html": p["html"]}) + "\n" for p in pages)
    return {"page.html": pages[0]["html"].encode(), "pages.jsonl": lines.encode()}


def _scratch(tmp_path: Path, files: dict[str, bytes]) -> Path:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for entry in REPO_ROOT.iterdir():
        if entry.name not in files and not entry.name.startswith(".git"):
            (scratch / entry.name).symlink_to(entry)
    for name, data in files.items():
        (scratch / name).write_bytes(data)
    return scratch


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PULPIE_RT_MODEL", None)
    return env


def _run_block(block: Block, scratch: Path, env: dict[str, str], port: int) -> None:
    code = block.code.replace("8080", str(port))
    if block.language == "python":
        script = scratch / f"block_{block.line}.py"
        # blank lines first, so a traceback's line numbers are the Markdown file's
        script.write_text("\n" * (block.line - 1) + code)
        command = [sys.executable, str(script)]
    elif block.language in ("bash", "sh"):
        command = ["bash", "-e", "-o", "pipefail", "-c", code]
    elif block.language == "c":
        from bench.capi import build_capi

        build_capi()
        capi = REPO_ROOT / "build" / "capi"
        source = scratch / f"block_{block.line}.c"
        source.write_text(f'#line {block.line} "{block.where.split(":")[0]}"\n' + code)
        program = scratch / f"block_{block.line}"
        compiled = subprocess.run(
            [os.environ.get("CC", "cc"), "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror",
             f"-I{capi}", str(source), f"-L{capi}", "-lpulpie_rt", f"-Wl,-rpath,{capi}",
             "-o", str(program)], capture_output=True, text=True)
        assert compiled.returncode == 0, f"{block.where}: does not compile\n{compiled.stderr}"
        command = [str(program), "page.html"]
    else:
        return
    done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT_S)
    assert done.returncode == 0, (
        f"{block.where}: {block.language} block exited {done.returncode}\n"
        f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")


# the pages with something to run or parse (a page of prose alone has no test, not a skip)
CODE_PAGES = [path for path in DOC_FILES
              if any(b.language in RUN_LANGUAGES | PARSED_LANGUAGES for b in parse_blocks(path))]


@pytest.mark.parametrize("path", CODE_PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_block_of_the_page_runs(path, tmp_path, example_files):
    blocks = parse_blocks(path)
    scratch = _scratch(tmp_path, example_files)
    env, port = _environment(), _free_port()
    for block in blocks:
        if skip_reason(block) is not None:
            continue
        if block.language == "json":
            json.loads(block.code)
        elif block.language in RUN_LANGUAGES:
            _run_block(block, scratch, env, port)


CURL_CALL = re.compile(r"\bcurl\b[^\n|;&]*")
FAIL_FLAG = re.compile(r"(?:^|\s)(?:-[a-zA-Z]*f[a-zA-Z]*|--fail(?:-with-body)?)(?=\s|$)")


def test_every_http_call_of_the_docs_fails_on_an_http_error():
    """curl exits 0 on a 404 or a 500 unless told -f: an example answered with an error would
    pass (bash -e sees only exit statuses)."""
    calls = [(block.where, match.group(0)) for block in ALL_BLOCKS
             if block.language in {"bash", "sh"} for match in CURL_CALL.finditer(block.code)]
    assert len(calls) >= 5, calls
    assert [call for call in calls if not FAIL_FLAG.search(call[1])] == []
