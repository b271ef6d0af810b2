"""What a user outside the project gets: a clone that runs on its own (the dev pages inside it,
the training pages outside with a note), the wheel (``make wheel`` in a fresh clone with nothing
built or cached, an empty HOME and pip cache: one ``py3-none-manylinux`` wheel holding the
package alone, the core, ONNX Runtime's CPU library and the embedded model, installed into a
fresh venv with no cargo and no C compiler on the PATH, giving the checkout's output; ``pip
wheel .`` holding the same package), the sdist (from that clean clone, holding what a build
needs, installed alone into a fresh venv, giving the checkout's output), which
ONNX Runtime the core loads (never by importing the onnxruntime module), the ``gpu`` extra's
one ONNX Runtime distribution, the C SDK from a clean copy with no venv (``make capi``,
``make install``, pkg-config, ``make capi-dist``) giving ``Extractor``'s output, and
``pulpie-rt --version``.

The wheel, sdist and C SDK tests build for real (cargo and a C compiler: the core three times,
a few minutes in all on 2 cores) and pip installs from the package index; they are skipped,
saying so, where the tools are missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from pulpie_rt.corpus import DEV_PAGES, load_pages
from pulpie_rt.version import __version__

REPO = Path(__file__).resolve().parent.parent
BUILD_TOOLS = [tool for tool in ("cargo", "cc", "make", "git") if shutil.which(tool) is None]
needs_build_tools = pytest.mark.skipif(
    bool(BUILD_TOOLS), reason=f"building needs {', '.join(BUILD_TOOLS)} on the PATH")


def _ort_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("ort_library", REPO / "tools" / "ort_library.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, (f"{' '.join(map(str, command))} exited {done.returncode}:\n"
                                  f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def _env_without_venv(**extra: str) -> dict[str, str]:
    """This process's environment less its virtual environment (a user's shell with none)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and Path(p) != Path(venv_bin) and ".venv" not in p)
    env.update(extra)
    return env


def _clean_copy(dest: Path) -> Path:
    """What a clone of this working tree holds (tracked files and untracked ones git does not
    ignore: no build/, no venv, no built library), at ``dest``, with no ``../shared`` beside
    it."""
    files = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                 cwd=REPO).stdout.split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():  # a file deleted but not yet staged is listed and absent
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    assert not (dest.parent / "shared").exists()
    return dest


def _records(path: Path) -> dict[str, dict]:
    with open(path, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    by_id = {r["id"]: r for r in records}
    assert len(by_id) == len(records), "a page written twice"
    return by_id


# ── the clone on its own: the dev pages in it, the training pages outside ───────────────────


def test_the_dev_pages_are_in_the_repository_with_their_licence_notes():
    assert DEV_PAGES == REPO / "corpus" / "dev.jsonl.gz"
    assert DEV_PAGES.is_file()
    pages = load_pages("dev")
    assert len(pages) == 254 and len({p["id"] for p in pages}) == 254
    notes = (REPO / "corpus" / "README.md").read_text(encoding="utf-8")
    for needed in ("Apache-2.0", "CC-BY-4.0", "© 2026 Murrough Foley, CC BY 4.0",
                   "has been changed here", "train.jsonl.gz", "Where to get it"):
        assert needed in notes, needed


def test_no_reader_builds_a_path_of_its_own_to_the_corpus():
    # every reader goes through pulpie_rt.corpus, the one place that names the folders
    reader = re.compile(r"""["'](\.\./)?shared/corpus|"shared"\s*/\s*"corpus"|^INPUT.*shared""",
                        re.M)
    offenders = []
    for path in map(Path, _run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                                "*.py", "*.sh", "Makefile"], cwd=REPO).stdout.split()):
        path = REPO / path
        if not path.is_file() or path in (REPO / "pulpie_rt" / "corpus.py", Path(__file__)):
            continue
        if reader.search(path.read_text(encoding="utf-8", errors="replace")):
            offenders.append(str(path.relative_to(REPO)))
    assert not offenders, offenders


@needs_build_tools
def test_a_clone_alone_finds_its_dev_pages_and_says_where_the_training_pages_come_from(
        tmp_path):
    clone = _clean_copy(tmp_path / "alone" / "pulpie-rt")
    env = _env_without_venv()
    env.pop("PULPIE_RT_CORPUS", None)
    dev = _run([sys.executable, "pulpie_rt/corpus.py", "dev"], cwd=clone, env=env)
    assert dev.stdout == "corpus/dev.jsonl.gz\n"
    assert _sha256(clone / "corpus" / "dev.jsonl.gz") == _sha256(DEV_PAGES)
    # make run's default input is that file
    dry = _run(["make", "-n", "run"], cwd=clone, env=env).stdout
    assert re.search(r"\.venv-run/bin/pulpie-rt run corpus/dev\.jsonl\.gz --out ", dry), dry
    train = subprocess.run([sys.executable, "pulpie_rt/corpus.py", "train"], cwd=clone, env=env,
                           capture_output=True, text=True)
    assert train.returncode == 2 and train.stdout == ""
    assert train.stderr == (
        f"pulpie_rt/corpus.py: corpus file train.jsonl.gz not found (looked in "
        f"{clone / 'corpus'}, {tmp_path / 'alone' / 'shared' / 'corpus'}): put it in one of "
        "those folders or set PULPIE_RT_CORPUS to the folder holding it. The training pages "
        "are not part of the repository: corpus/README.md says where they come from and how "
        "to get them.\n")


# ── which ONNX Runtime the core loads ───────────────────────────────────────────────────────

_WHERE = ("import sys; from pulpie_rt.runtime import native; "
          "print(native.ort_library_path()); print('onnxruntime' in sys.modules)")


def _fake_distribution(site: Path, name: str, version: str = "1.32.0") -> Path:
    """An installed distribution ``name`` (dist-info and RECORD) holding ONNX Runtime's library
    where the real wheels put it."""
    library = site / "onnxruntime" / "capi" / f"libonnxruntime.so.{version}"
    library.parent.mkdir(parents=True, exist_ok=True)
    library.write_bytes(b"\x7fELF not really")
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"onnxruntime/capi/libonnxruntime.so.{version},,\n"
                                 f"{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
    return library


def _where(env_extra: dict[str, str]) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PULPIE_RT_ORT_LIB"}
    env.update(env_extra)
    out = _run([sys.executable, "-c", _WHERE], env=env).stdout.splitlines()
    return out[0], out[1]


def test_the_core_loads_the_library_shipped_beside_it_without_importing_onnxruntime():
    from pulpie_rt.runtime import native

    if not native.VENDORED_ORT_LIBRARY.is_file():
        pytest.skip("no ONNX Runtime library beside the core: reinstall (make core)")
    assert native.VENDORED_ORT_LIBRARY.name == "libonnxruntime.so.1"
    assert _sha256(native.VENDORED_ORT_LIBRARY) == _ort_tool().WHEELS[
        _ort_tool().host_machine()][2]
    # this environment has the onnxruntime wheel (the tests' oracle): the pinned copy wins
    assert _where({}) == (str(native.VENDORED_ORT_LIBRARY), "False")


def test_an_installed_onnxruntime_gpu_comes_first_and_the_variable_before_everything(tmp_path):
    from pulpie_rt.runtime import native

    gpu = _fake_distribution(tmp_path / "site", "onnxruntime-gpu")
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    assert _where({"PYTHONPATH": path}) == (str(gpu), "False")
    assert _where({"PYTHONPATH": path, "PULPIE_RT_ORT_LIB": "/opt/ort/libonnxruntime.so.1"}) \
        == ("/opt/ort/libonnxruntime.so.1", "False")
    # a CPU onnxruntime distribution does not displace the pinned copy
    cpu_site = tmp_path / "cpu"
    _fake_distribution(cpu_site, "onnxruntime")
    if native.VENDORED_ORT_LIBRARY.is_file():
        assert _where({"PYTHONPATH": str(cpu_site)})[0] == str(native.VENDORED_ORT_LIBRARY)


def test_no_onnxruntime_package_no_distribution_lookup():
    """Where no onnxruntime package can be found, no distribution's file list is read and
    importlib.metadata (~10 ms of a process's start) is not imported."""
    from pulpie_rt.runtime import native

    probe = ("import sys\nsys.modules['onnxruntime'] = None  # found by no finder\n"
             "from pulpie_rt.runtime import native\n"
             "print(native.ort_library_path()); print('importlib.metadata' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "PULPIE_RT_ORT_LIB"}
    out = _run([sys.executable, "-c", probe], env=env).stdout.splitlines()
    vendored = native.VENDORED_ORT_LIBRARY
    assert out == [str(vendored) if vendored.is_file() else "None", "False"]


def test_no_onnxruntime_gpu_installed_no_distribution_lookup(monkeypatch):
    """The CPU onnxruntime installed (this environment's oracle) and no onnxruntime-gpu: the
    GPU distribution is not asked of importlib.metadata (~15 ms of every start)."""
    from importlib import metadata
    from importlib.util import find_spec

    from pulpie_rt.runtime import native

    if find_spec("onnxruntime") is None:
        pytest.skip("no onnxruntime package: the lookup is skipped before this rule")
    if native._has_distribution_folder("onnxruntime-gpu"):
        pytest.skip("onnxruntime-gpu is installed here")
    asked = []
    real = metadata.distribution
    monkeypatch.setattr(metadata, "distribution", lambda name: asked.append(name) or real(name))
    monkeypatch.delenv(native.ORT_LIBRARY_ENV, raising=False)
    found = native.ort_library_path()
    assert "onnxruntime-gpu" not in asked
    if native.VENDORED_ORT_LIBRARY.is_file():
        assert (found, asked) == (native.VENDORED_ORT_LIBRARY, [])


def test_a_distribution_is_found_by_its_metadata_folder_under_its_normalized_name(
        tmp_path, monkeypatch):
    from pulpie_rt.runtime import native

    site, other = tmp_path / "site", tmp_path / "other"
    (site / "onnxruntime-1.32.0.dist-info").mkdir(parents=True)
    (site / "onnxruntime_gpu_extras-1.0.dist-info").mkdir()
    other.mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "absent"), str(tmp_path / "a.zip"),
                                      str(site), str(other)])
    (tmp_path / "a.zip").write_bytes(b"PK")  # a file on the path: not a folder to list
    # the CPU distribution's folder, or another whose name begins the same, is not the GPU one
    assert native._has_distribution_folder("onnxruntime")
    assert not native._has_distribution_folder("onnxruntime-gpu")
    (other / "ONNXRuntime_GPU-1.20.1.dist-info").mkdir()
    assert native._has_distribution_folder("onnxruntime-gpu")
    assert native._has_distribution_folder("onnxruntime.gpu")
    (other / "ONNXRuntime_GPU-1.20.1.dist-info").rmdir()
    (other / "onnxruntime_gpu-1.9.0-py3.11.egg-info").mkdir()
    assert native._has_distribution_folder("onnxruntime-gpu")


def test_a_library_that_cannot_run_is_refused_by_name(tmp_path):
    tool = _ort_tool()
    not_ort = tmp_path / "libnot.so"
    not_ort.write_bytes(b"not an ELF file")
    with pytest.raises(tool.OrtLibraryError, match=r"libnot\.so cannot be loaded: "):
        tool.install(tmp_path / "out", not_ort)
    with pytest.raises(tool.OrtLibraryError, match=r"^/nonexistent/x\.so: no such file$"):
        tool.install(tmp_path / "out", Path("/nonexistent/x.so"))
    assert not (tmp_path / "out" / "libonnxruntime.so.1").exists()


# ── dependencies, extras and the version ────────────────────────────────────────────────────

ORT_DISTRIBUTIONS = {"onnxruntime", "onnxruntime-gpu"}


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower().replace("_", "-")
            for r in requirements}


def test_base_dependencies_are_what_the_runtime_imports_and_gpu_has_one_onnx_runtime():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = _requirement_names(project["dependencies"])
    assert base == {"numpy", "huggingface-hub", "tqdm", "orjson"}
    extras = {name: _requirement_names(reqs)
              for name, reqs in project["optional-dependencies"].items()}
    assert extras["gpu"] & ORT_DISTRIBUTIONS == {"onnxruntime-gpu"}
    assert extras["cpu"] & ORT_DISTRIBUTIONS == {"onnxruntime"}
    assert "tokenizers" in extras["dev"] and "tokenizers" not in base
    # only `cpu` and `gpu` name an ONNX Runtime distribution (dev through pulpie-rt[cpu])
    assert [name for name, names in extras.items() if names & ORT_DISTRIBUTIONS] == ["gpu",
                                                                                     "cpu"]


def test_version_flag_prints_the_package_version_and_the_changelog_starts_with_it():
    done = _run([sys.executable, "-m", "pulpie_rt.cli", "--version"])
    assert done.stdout == f"pulpie-rt {__version__}\n"
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    first = re.search(r"^## (\S+)", changelog, re.M)
    assert first and first.group(1) == __version__


# ── the wheel ───────────────────────────────────────────────────────────────────────────────


def _fresh_machine_env(home: Path, **extra: str) -> dict[str, str]:
    """A new user's shell on this machine: no venv, an empty HOME and pip cache, an empty
    CARGO_HOME (the crates need no registry), none of the project's variables that point a build
    at a cache or a copy of its own (lexbor's sources, ONNX Runtime's library), no outer make's
    job server. The Rust toolchain stays where rustup installed it (RUSTUP_HOME)."""
    rustup_home = os.environ.get("RUSTUP_HOME") or str(Path.home() / ".rustup")
    env = {k: v for k, v in _env_without_venv().items()
           if not k.startswith(("PULPIE_RT_", "CARGO_", "PIP_CACHE", "XDG_"))
           and k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    for folder in ("home", "pip-cache", "cargo-home"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home / "home"), PIP_CACHE_DIR=str(home / "pip-cache"),
               CARGO_HOME=str(home / "cargo-home"), **extra)
    if Path(rustup_home).is_dir():
        env["RUSTUP_HOME"] = rustup_home
    return env


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory) -> dict[str, Path]:
    """A clone with nothing built or cached, as a new user gets it: ``make sdist`` (first, so
    it packs the clean tree), then ``make wheel`` (the README's first install step; the core,
    lexbor and ONNX Runtime's library all fetched and built from nothing), then ``pip wheel .``
    in the same clone (the core already compiled there: cargo does not build it again)."""
    if BUILD_TOOLS:
        pytest.skip(f"building the wheel needs {', '.join(BUILD_TOOLS)} on the PATH")
    root = tmp_path_factory.mktemp("fresh")
    clone = _clean_copy(root / "clone" / "pulpie-rt")
    env = _fresh_machine_env(root)
    _run(["make", "-s", "sdist"], cwd=clone, env=env, timeout=1800)
    _run(["make", "-s", "wheel"], cwd=clone, env=env, timeout=3600)
    wheels = sorted((clone / "dist").glob(f"pulpie_rt-{__version__}-*.whl"))
    assert len(wheels) == 1, wheels
    _run([str(clone / "build" / "wheel-tools" / "bin" / "python"), "-m", "pip", "wheel", "-q",
          "--no-deps", "-w", str(root / "pip-wheel"), "."], cwd=clone,
         env={**env, "PULPIE_RT_LEXBOR_CACHE": str(clone / "build" / "lexbor")}, timeout=3600)
    return {"clone": clone, "wheel": wheels[0], "env_root": root,
            "pip_wheel": next((root / "pip-wheel").glob("pulpie_rt-*.whl")),
            "sdist": clone / "dist" / f"pulpie_rt-{__version__}.tar.gz"}


@pytest.fixture(scope="module")
def wheel(fresh_clone) -> Path:
    return fresh_clone["wheel"]


@pytest.fixture(scope="module")
def checkout_records(tmp_path_factory) -> dict[str, dict]:
    """``pulpie-rt run`` of the dev pages from this checkout: what every install must give."""
    out = tmp_path_factory.mktemp("checkout") / "checkout.jsonl"
    _run([sys.executable, "-m", "pulpie_rt.cli", "run", str(DEV_PAGES), "--out", str(out)],
         cwd=REPO, timeout=1800)
    return _records(out)


def _assert_extracts_as_the_checkout(venv: Path, env: dict[str, str], tmp_path: Path,
                                     checkout_records: dict[str, dict]) -> None:
    """The venv's ``pulpie-rt run`` on the dev pages, run from outside the checkout, gives the
    checkout's records, with the ONNX Runtime library shipped beside the core and without
    importing onnxruntime."""
    env = {k: v for k, v in env.items() if k != "PULPIE_RT_ORT_LIB"}
    out = tmp_path / "installed.jsonl"
    _run([str(venv / "bin" / "pulpie-rt"), "run", str(DEV_PAGES), "--out", str(out)],
         cwd=tmp_path, env=env, timeout=1800)
    where = _run([str(venv / "bin" / "python"), "-c", _WHERE], cwd=tmp_path,
                 env=env).stdout.split()
    assert where[0].endswith("/site-packages/pulpie_rt/runtime/libonnxruntime.so.1")
    assert where[1] == "False"
    installed = _records(out)
    assert len(installed) == 254 and installed.keys() == checkout_records.keys()
    different = [pid for pid in checkout_records if installed[pid] != checkout_records[pid]]
    assert not different, f"{len(different)} of 254 pages differ: {different[:5]}"
    assert not [pid for pid, r in installed.items() if r["error"]]


def _wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _ships_only_the_package(names: set[str]) -> None:
    """Every file of the wheel is the package's or its metadata: no repository tool (bench,
    eval, parity, train: top-level or under pulpie_rt), no tests, dev pages or sources."""
    from test_layers import TOOLS

    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"pulpie_rt", f"pulpie_rt-{__version__}.dist-info"} | (
        {"pulpie_rt.libs"} & tops), sorted(tops)
    assert not [n for n in names if n.split("/")[1:2] and n.split("/")[1] in TOOLS
                and n.startswith("pulpie_rt/")]
    packages = {n.rsplit("/", 1)[0] for n in names if n.endswith(".py")}
    assert packages == {"pulpie_rt", "pulpie_rt/runtime", "pulpie_rt/runtime/stages",
                        "pulpie_rt/runtime/model", "pulpie_rt/runtime/flow",
                        "pulpie_rt/integrations", "pulpie_rt/integrations/serve",
                        "pulpie_rt/export"}, sorted(packages)


def test_pip_wheel_and_make_wheel_ship_the_package_alone(fresh_clone):
    for wheel in (fresh_clone["pip_wheel"], fresh_clone["wheel"]):
        names = _wheel_names(wheel)
        _ships_only_the_package(names)
        assert "pulpie_rt/cli.py" in names and "pulpie_rt/export/to_onnx.py" in names
        assert [n for n in names if re.fullmatch(r"pulpie_rt/runtime/_core_rs[^/]*\.so", n)]


def test_make_wheel_gives_one_py3_manylinux_wheel_with_core_onnx_runtime_and_model(
        fresh_clone, wheel):
    machine = _ort_tool().host_machine()
    tag = re.fullmatch(rf"pulpie_rt-{re.escape(__version__)}-py3-none-"
                       rf"manylinux_2_(\d+)_{machine}\.whl", wheel.name)
    assert tag, wheel.name
    show = _run([str(fresh_clone["clone"] / "build" / "wheel-tools" / "bin" / "auditwheel"),
                 "show", str(wheel)]).stdout
    assert f"manylinux_2_{tag.group(1)}_{machine}" in " ".join(show.split()), show
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"pulpie_rt-{__version__}.dist-info/METADATA").decode()
        wheel_info = archive.read(f"pulpie_rt-{__version__}.dist-info/WHEEL").decode()
        ort = archive.read("pulpie_rt/runtime/libonnxruntime.so.1")
    assert "Root-Is-Purelib: false" in wheel_info
    assert f"Tag: py3-none-manylinux_2_{tag.group(1)}_{machine}" in wheel_info
    assert [n for n in names if re.fullmatch(r"pulpie_rt/runtime/_core_rs[^/]*\.so", n)]
    assert hashlib.sha256(ort).hexdigest() == _ort_tool().WHEELS[machine][2]
    assert {"pulpie_rt/runtime/onnxruntime-LICENSE",
            "pulpie_rt/runtime/onnxruntime-ThirdPartyNotices.txt"} <= names
    model = {f"pulpie_rt/default_model/{p.name}"
             for p in (REPO / "pulpie_rt" / "default_model").iterdir() if p.is_file()}
    assert model <= names
    assert not [n for n in names if n.startswith(("tests/", "corpus/", "core/"))]
    requires = sorted(line.split(": ", 1)[1] for line in metadata.splitlines()
                      if line.startswith("Requires-Dist: ") and "extra ==" not in line)
    assert _requirement_names(requires) == {"numpy", "huggingface-hub", "tqdm", "orjson"}


@pytest.fixture(scope="module")
def wheel_venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed, from a shell whose PATH has the venv alone:
    no cargo, no C compiler (nothing can be built from source)."""
    venv = tmp_path_factory.mktemp("wheel") / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    env = _env_without_venv(PATH=str(venv / "bin"))
    for tool in ("cargo", "cc", "gcc", "rustc"):
        assert shutil.which(tool, path=env["PATH"]) is None
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--only-binary", ":all:",
          str(wheel)], env=env, timeout=1800)
    return venv


def test_the_installed_wheel_extracts_the_dev_pages_as_the_checkout_does(
        wheel_venv, tmp_path, checkout_records):
    env = _env_without_venv(PATH=str(wheel_venv / "bin"))
    installed = {line.split("==")[0].lower() for line in _run(
        [str(wheel_venv / "bin" / "python"), "-m", "pip", "freeze"], env=env).stdout.split()}
    assert not installed & (ORT_DISTRIBUTIONS | {"tokenizers"}), installed
    _assert_extracts_as_the_checkout(wheel_venv, env, tmp_path, checkout_records)


def _stub_wheel(folder: Path, name: str, version: str) -> Path:
    """A wheel of ``name`` holding nothing but its metadata."""
    info = f"{name}-{version}.dist-info"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{info}/METADATA",
                         f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: tests\n"
                         "Root-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", f"{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")
    return path


def test_the_gpu_extra_resolves_to_exactly_one_onnx_runtime_distribution(wheel, wheel_venv,
                                                                         tmp_path):
    """pip resolves ``pulpie-rt[gpu]`` from the wheel against the package index (a dry run:
    nothing installed): onnxruntime-gpu, and no onnxruntime beside it. TensorRT's package on
    the index is a stub that downloads the real wheel from NVIDIA's own index even to read its
    metadata, which this machine cannot reach: a metadata-only wheel of the pinned version
    stands in for it (a wheel is preferred to the stub's sdist; it names no ONNX Runtime either
    way)."""
    tomllib = pytest.importorskip("tomllib")
    gpu = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]["gpu"]
    name, version = next(r.split("==") for r in gpu if r.startswith("tensorrt"))
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    _stub_wheel(stubs, name.replace("-", "_"), version)
    report = tmp_path / "report.json"
    _run([str(wheel_venv / "bin" / "python"), "-m", "pip", "install", "--dry-run", "-q",
          "--ignore-installed", "--find-links", str(stubs), "--report", str(report),
          f"{wheel}[gpu]"], timeout=1800)
    names = [item["metadata"]["name"].lower().replace("_", "-")
             for item in json.loads(report.read_text())["install"]]
    assert {"pulpie-rt", "onnxruntime-gpu", name, "nvidia-cublas"} <= set(names), names
    assert [n for n in names if n in ORT_DISTRIBUTIONS] == ["onnxruntime-gpu"], names


# ── the C SDK from a clean copy ─────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def sdk_copy(tmp_path_factory) -> Path:
    """A clean copy of the working tree after ``make capi`` run from a shell with no venv
    (lexbor's C sources come from the checkout's cache, to spare the download)."""
    if BUILD_TOOLS:
        pytest.skip(f"the C SDK needs {', '.join(BUILD_TOOLS)} on the PATH")
    copy = _clean_copy(tmp_path_factory.mktemp("sdk") / "pulpie-rt")
    env = _env_without_venv()
    if (REPO / "build" / "lexbor").is_dir():
        env["PULPIE_RT_LEXBOR_CACHE"] = str(REPO / "build" / "lexbor")
    _run(["make", "capi"], cwd=copy, env=env, timeout=3600)
    assert not (copy / ".venv").exists() and not (copy / ".venv-run").exists()
    return copy


def _abi() -> int:
    header = (REPO / "core" / "include" / "pulpie_rt.h").read_text(encoding="utf-8")
    return int(re.search(r"^#define PULPIE_RT_ABI_VERSION (\d+)", header, re.M).group(1))


def _tree(root: Path) -> dict[str, str]:
    """Every file and link under ``root``: link target or 'file'."""
    return {str(p.relative_to(root)): (os.readlink(p) if p.is_symlink() else "file")
            for p in sorted(root.rglob("*")) if p.is_symlink() or p.is_file()}


def test_make_capi_fails_loudly_without_a_runnable_onnx_runtime(tmp_path):
    if BUILD_TOOLS:
        pytest.skip(f"the C SDK needs {', '.join(BUILD_TOOLS)} on the PATH")
    copy = _clean_copy(tmp_path / "pulpie-rt")
    done = subprocess.run(["make", "capi", "ORT_LIB=/nonexistent/libonnxruntime.so.1"],
                          cwd=copy, env=_env_without_venv(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode != 0
    assert ("tools/ort_library.py: /nonexistent/libonnxruntime.so.1: no such file"
            in done.stderr)
    assert not list((copy / "build" / "capi").glob("libpulpie_rt.so*"))


def test_make_install_and_pkg_config_build_a_program_that_gives_the_extractors_output(
        sdk_copy, tmp_path, dev_pages):
    from test_capi import assert_same, python_records

    from bench.capi import write_pages
    from pulpie_rt import Extractor

    abi = _abi()
    prefix = tmp_path / "prefix"
    _run(["make", "install", f"PREFIX={prefix}"], cwd=sdk_copy, env=_env_without_venv())
    tree = _tree(prefix)
    assert tree["lib/libpulpie_rt.so"] == f"libpulpie_rt.so.{abi}"
    for name in (f"lib/libpulpie_rt.so.{abi}", "lib/libonnxruntime.so.1",
                 "include/pulpie_rt.h", "lib/pkgconfig/pulpie_rt.pc"):
        assert tree.get(name) == "file", (name, tree)
    if shutil.which("readelf"):
        dynamic = _run(["readelf", "-d", str(prefix / "lib" / f"libpulpie_rt.so.{abi}")]).stdout
        assert f"Library soname: [libpulpie_rt.so.{abi}]" in dynamic
    if shutil.which("pkg-config") is None:
        pytest.skip("no pkg-config on the PATH")
    env = _env_without_venv(PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = _run(["pkg-config", "--cflags", "--libs", "pulpie_rt"], env=env).stdout.split()
    assert f"-I{prefix}/include" in [f.replace("/lib/pkgconfig/../..", "") for f in flags]
    program = tmp_path / "extract"
    _run(["cc", str(sdk_copy / "examples" / "c" / "extract.c"), *flags, "-o", str(program)],
         env=env)
    pages_path = write_pages(dev_pages, tmp_path / "dev.jsonl")
    done = subprocess.run([str(program), "--jsonl", "--threads", "2", "--batch", "4",
                           str(pages_path)], capture_output=True,
                          env={**env, "LD_LIBRARY_PATH": str(prefix / "lib")}, timeout=1800)
    assert done.returncode in (0, 2), done.stderr.decode(errors="replace")[-2000:]
    c_records = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [r["id"] for r in c_records] == [p["id"] for p in dev_pages]
    expected = python_records(Extractor(), [p["html"] for p in dev_pages])
    assert_same(c_records, expected, [p["id"] for p in dev_pages])


def test_make_capi_dist_packs_what_make_install_installs(sdk_copy, tmp_path):
    env = _env_without_venv()
    _run(["make", "install", f"PREFIX={tmp_path / 'prefix'}"], cwd=sdk_copy, env=env)
    out = _run(["make", "-s", "capi-dist"], cwd=sdk_copy, env=env).stdout.split()
    tarball = sdk_copy / out[-1]
    name = f"pulpie_rt-{__version__}-abi{_abi()}-linux-{os.uname().machine}"
    assert tarball == sdk_copy / "dist" / f"{name}.tar.gz"
    with tarfile.open(tarball) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    assert _tree(tmp_path / "unpacked" / name) == _tree(tmp_path / "prefix")
    # ORT_LIB: a library of one's own is checked and used instead of the download
    own = sdk_copy / "build" / "capi" / "libonnxruntime.so.1"
    shutil.copy(own, tmp_path / "libonnxruntime.so.1.32.0")
    done = _run(["make", "capi", f"ORT_LIB={tmp_path / 'libonnxruntime.so.1.32.0'}"],
                cwd=sdk_copy, env=env)
    assert f"from {tmp_path / 'libonnxruntime.so.1.32.0'}" in done.stdout


def test_the_sdist_holds_what_a_build_from_source_needs_and_nothing_else(fresh_clone):
    from test_layers import TOOLS

    with tarfile.open(fresh_clone["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for needed in ("setup.py", "pyproject.toml", "Cargo.toml", "Cargo.lock",
                   "tools/ort_library.py", "tools/pypi_download.py", "core/Cargo.toml",
                   "core/build.rs", "core/src/lib.rs", "core/include/pulpie_rt.h",
                   "kernels/Cargo.toml", "kernels/src/lib.rs", "THIRD_PARTY_NOTICES.md",
                   "CHANGELOG.md", "runtime/native.py", "pulpie_rt/default_model/manifest.json"):
        assert needed in names, needed
    assert not [n for n in names if re.search(r"\.so(\.\d+)*$", n)
                or n.startswith(("corpus/", "build/", "target/", "tests/"))
                or n.split("/")[0] in TOOLS]


def test_the_sdist_alone_installs_in_a_fresh_venv_and_extracts_as_the_checkout_does(
        fresh_clone, tmp_path, checkout_records):
    """pip builds the sdist (its own copy, its own isolated build environment: the core,
    lexbor and ONNX Runtime's library fetched and built from nothing) into a fresh venv, from
    a new user's shell (empty HOME and pip cache)."""
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    env = _fresh_machine_env(tmp_path / "user")
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env["PATH"]])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(fresh_clone["sdist"])],
         cwd=tmp_path, env=env, timeout=3600)
    _assert_extracts_as_the_checkout(venv, env, tmp_path, checkout_records)
