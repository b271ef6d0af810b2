"""ONNX Runtime's CPU C library, taken out of the ``onnxruntime`` wheel on PyPI.

The core loads ONNX Runtime's C library at run time (``core/src/ort/library.rs``). Two things
ship it: the Python wheel (``libonnxruntime.so.1`` beside the core, ``setup.py``) and the C SDK
(``make capi``). Both take it from here: the release pinned below, the wheel checked against its
sha256 and the library file against its own, with ONNX Runtime's licence and third-party notices
beside it. Standard library only, and no pip (``tools/pypi_download.py`` reads the package
index): it runs before any virtual environment exists, and in a build's isolated environment,
which has no pip.

    python3 tools/ort_library.py --out DIR [--from FILE] [--machine aarch64]

writes ``DIR/libonnxruntime.so.1`` (the SONAME the core looks for beside itself),
``DIR/onnxruntime-LICENSE`` and ``DIR/onnxruntime-ThirdPartyNotices.txt``, and checks that the
library loads and gives the C API version the core asks for; ``--from`` takes a library of
one's own instead of the download (checked the same way). It exits non-zero, saying why,
rather than leave a library that cannot run.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

ORT_VERSION = "1.32.0"
# The C API table version the core asks for (API_VERSION in core/src/ort/sys.rs).
ORT_API_VERSION = 11
# Per machine: the wheel (one Python ABI's; the C library inside is the same for each), its
# sha256 on PyPI and the sha256 of the library inside it.
WHEELS = {
    "x86_64": ("onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_x86_64.whl",
               "5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d",
               "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f"),
    "aarch64": ("onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_aarch64.whl",
                "2303372a85299b6757b0e11e1cbf13e410ddf7e10c37f4b37e99d1c90e7daf7c",
                "49852228a93995158b2a813d4df487d47a1b76b0eaa894507ef49e91b6d7954a"),
}
SONAME = "libonnxruntime.so.1"
LIBRARY_MEMBER = f"onnxruntime/capi/libonnxruntime.so.{ORT_VERSION}"
# ONNX Runtime's MIT licence and the notices of what it includes, kept beside the library
NOTICES = {"onnxruntime/LICENSE": "onnxruntime-LICENSE",
           "onnxruntime/ThirdPartyNotices.txt": "onnxruntime-ThirdPartyNotices.txt"}


class OrtLibraryError(RuntimeError):
    pass


def _pypi_download():
    """tools/pypi_download.py, the module beside this file (loaded by path: setup.py loads this
    file by path too, so ``tools`` is no importable package)."""
    import importlib.util

    path = Path(__file__).resolve().parent / "pypi_download.py"
    spec = importlib.util.spec_from_file_location("pypi_download", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PYPI = _pypi_download()
sha256 = _PYPI.sha256


def host_machine() -> str:
    machine = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)


def fetch(cache: Path, machine: str | None = None) -> Path:
    """The pinned release's library for ``machine`` (default: this one), downloaded once into
    ``cache/onnxruntime-<version>-<machine>/`` with its notices; its path."""
    machine = machine or host_machine()
    if machine not in WHEELS:
        raise OrtLibraryError(f"no onnxruntime {ORT_VERSION} wheel pinned for {machine} "
                              f"(pinned: {', '.join(WHEELS)}): pass a library with --from")
    wheel, wheel_sha, library_sha = WHEELS[machine]
    folder = cache / f"onnxruntime-{ORT_VERSION}-{machine}"
    library = folder / SONAME
    if library.is_file() and sha256(library) == library_sha:
        return library
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        tmp = Path(tmp)
        try:
            _PYPI.download("onnxruntime", wheel, wheel_sha, tmp)
        except _PYPI.DownloadError as exc:
            raise OrtLibraryError(
                f"onnxruntime {ORT_VERSION} ({wheel}): {exc}. Without the package index, "
                f"download {wheel} elsewhere (sha256 {wheel_sha}), take {LIBRARY_MEMBER} out "
                "of it and pass it with --from (ORT_LIB=... for make capi, "
                "PULPIE_RT_ORT_VENDOR=... for a Python build)") from None
        staged = tmp / "out"
        staged.mkdir()
        with zipfile.ZipFile(tmp / wheel) as archive:
            for member, name in [(LIBRARY_MEMBER, SONAME), *NOTICES.items()]:
                with archive.open(member) as src, open(staged / name, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        found = sha256(staged / SONAME)
        if found != library_sha:
            raise OrtLibraryError(f"{LIBRARY_MEMBER} in {wheel}: sha256 {found}, "
                                  f"expected {library_sha}")
        (staged / SONAME).chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)
        os.rename(staged, folder)  # whole or not at all: a concurrent build sees no half copy
    return library


def check_loadable(library: Path) -> str:
    """Loads ``library`` and asks it for the C API table the core uses; its version string.
    Raises, saying why, when it cannot run here."""
    try:
        handle = ctypes.CDLL(str(library))
    except OSError as exc:
        raise OrtLibraryError(f"{library} cannot be loaded: {exc}") from None
    try:
        get_api_base = handle.OrtGetApiBase
    except AttributeError:
        raise OrtLibraryError(f"{library} is not ONNX Runtime (no OrtGetApiBase)") from None

    class ApiBase(ctypes.Structure):
        _fields_ = [("GetApi", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)),
                    ("GetVersionString", ctypes.CFUNCTYPE(ctypes.c_char_p))]

    get_api_base.restype = ctypes.POINTER(ApiBase)
    base = get_api_base().contents
    version = base.GetVersionString().decode()
    if not base.GetApi(ORT_API_VERSION):
        raise OrtLibraryError(f"{library}: ONNX Runtime {version} does not give C API version "
                              f"{ORT_API_VERSION}, which the core needs (1.11 or later)")
    return version


def install(out: Path, source: Path | None = None, cache: Path | None = None,
            machine: str | None = None) -> Path:
    """``out/libonnxruntime.so.1`` from ``source`` or the pinned download (with its notices),
    checked to load here unless it is for another machine; its path."""
    machine = machine or host_machine()
    if source is not None:
        if not source.is_file():
            raise OrtLibraryError(f"{source}: no such file")
        library, notices = source, []
    else:
        library = fetch(cache or out / ".cache", machine)
        notices = [library.parent / name for name in NOTICES.values()]
    if machine == host_machine():
        check_loadable(library)
    out.mkdir(parents=True, exist_ok=True)
    target = out / SONAME
    if target.resolve() != library.resolve():
        partial = out / f".{SONAME}.partial"
        shutil.copyfile(library, partial)  # follows links: the file itself
        partial.chmod(0o755)
        os.replace(partial, target)
    for notice in notices:
        shutil.copyfile(notice, out / notice.name)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True,
                        help="folder to write libonnxruntime.so.1 (and the notices) into")
    parser.add_argument("--from", dest="source", type=Path,
                        help="a libonnxruntime.so of one's own instead of the download")
    parser.add_argument("--cache", type=Path, help="download cache (default OUT/.cache)")
    parser.add_argument("--machine", help=f"one of {', '.join(WHEELS)} (default: this one)")
    args = parser.parse_args(argv)
    try:
        target = install(args.out, args.source, args.cache, args.machine)
    except OrtLibraryError as exc:
        print(f"tools/ort_library.py: {exc}", file=sys.stderr)
        return 1
    machine = args.machine or host_machine()
    origin = args.source or f"onnxruntime {ORT_VERSION} wheel ({WHEELS[machine][0]})"
    print(f"ONNX Runtime: {target} from {origin}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
