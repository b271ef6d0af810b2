"""Two build steps pyproject.toml cannot say (the rest of the build is declared there):

- ONNX Runtime's CPU C library goes into the package beside the compiled core
  (``pulpie_rt/runtime/libonnxruntime.so.1``, with its licence and third-party notices), so
  ``pip install pulpie-rt`` runs the default model with no ONNX Runtime distribution installed:
  the pinned release from ``tools/ort_library.py`` (``$PULPIE_RT_ORT_VENDOR``: a library file of
  one's own instead, for builds without PyPI). An editable install puts it in ``runtime/``.
- The wheel is tagged ``py3-none-<platform>``: the core is a plain shared library loaded with
  ctypes, not a CPython extension, so one wheel serves every Python 3 of a platform.
  (setuptools-rust still names the file with this Python's extension suffix; the loader,
  ``runtime/native.py``, globs ``_core_rs*.so``.) ``make wheel`` then gives it its manylinux
  tag with ``auditwheel repair``.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent
VENDOR_ENV = "PULPIE_RT_ORT_VENDOR"


def _ort_library_tool():
    spec = importlib.util.spec_from_file_location("ort_library", HERE / "tools" / "ort_library.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class build_py_with_ort(build_py):
    def run(self) -> None:
        super().run()
        tool = _ort_library_tool()
        source = os.environ.get(VENDOR_ENV)
        target = (HERE / "runtime" if self.editable_mode
                  else Path(self.build_lib) / "pulpie_rt" / "runtime")
        try:
            library = tool.install(target, Path(source) if source else None,
                                   cache=HERE / "build" / "ort")
        except tool.OrtLibraryError as exc:
            raise SystemExit(f"error: ONNX Runtime's library for the package: {exc}") from None
        self.announce(f"ONNX Runtime library: {library}", level=2)


class bdist_wheel_py3(bdist_wheel):
    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(cmdclass={"build_py": build_py_with_ort, "bdist_wheel": bdist_wheel_py3})
