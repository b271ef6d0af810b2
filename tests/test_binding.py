"""The Python binding is generated from the core's headers (``runtime/binding.py``): every
struct's size and field offsets against the compiled library's own layout, every function the
library exports declared, the headers the library carries the checkout's, and the binding's
refusals."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from eval.report import REPO_ROOT
from pulpie_rt.runtime import binding, native

pytestmark = pytest.mark.skipif(not native.available(), reason="the compiled core is not built")

HEADERS = [REPO_ROOT / "core" / "include" / name
           for name in ("pulpie_rt.h", "pulpie_rt_internal.h")]


def library_layouts() -> dict[str, tuple[int, dict[str, tuple[int, int]]]]:
    """``pulpie_rt_py_layouts``: per struct, its size and each field's (offset, size)."""
    text = native.engine_abi().pulpie_rt_py_layouts().decode()
    layouts: dict[str, tuple[int, dict[str, tuple[int, int]]]] = {}
    for line in text.splitlines():
        if not line.startswith(" "):
            name, size = line.split()
            layouts[name] = (int(size), {})
        else:
            field, offset, size = line.split()
            layouts[name][1][field] = (int(offset), int(size))
    return layouts


def test_every_struct_is_laid_out_as_the_library_lays_it_out():
    structs = native.declarations().structs
    layouts = library_layouts()
    assert sorted(structs) == sorted(layouts)
    assert len(structs) >= 16
    for name, struct in structs.items():
        size, fields = layouts[name]
        ours = {field: (getattr(struct, field).offset, getattr(struct, field).size)
                for field, _ in struct._fields_}
        assert (ctypes.sizeof(struct), ours) == (size, fields), name


def test_every_exported_function_is_declared_and_every_declared_one_exported():
    if shutil.which("nm") is None:
        pytest.skip("nm is not on the PATH")
    done = subprocess.run(["nm", "-D", "--defined-only", str(native.library_path())],
                          capture_output=True, text=True, check=True)
    exported = {line.split()[-1] for line in done.stdout.splitlines()
                if line.split()[-1].startswith("pulpie_rt_")}
    assert len(exported) >= 75
    assert exported == set(native.declarations().functions)


def test_the_library_carries_the_checkouts_headers():
    text = "\n".join(path.read_text(encoding="utf-8") for path in HEADERS)
    assert native.engine_abi().pulpie_rt_py_header().decode() == text
    declared = native.declarations()
    assert declared.constants["PULPIE_RT_ABI_VERSION"] == \
        native.engine_abi().pulpie_rt_abi_version()
    # the core's Rust constants are generated from the same #defines (core/build.rs)
    for code in range(5):
        name = native.engine_abi().pulpie_rt_status_string(code).decode().split(":")[0]
        assert declared.constants[name] == code


def test_an_options_struct_of_another_size_is_refused_naming_both():
    settings = native.new("pulpie_rt_decoding", margins=True, threshold=0.5)
    page = native.new("pulpie_rt_sep_outputs", n_blocks=0)
    settings.struct_size -= 8
    status, text = native._message_call(native.engine_abi().pulpie_rt_decide_blocks, None,
                                        ctypes.byref(settings), ctypes.byref(page),
                                        np.zeros(1, np.uint64).ctypes.data)
    size = ctypes.sizeof(settings)
    assert (status, text) == (
        native.declarations().constants["PULPIE_RT_FAILED"],
        f"pulpie_rt_decoding.struct_size is {size - 8}, this library's pulpie_rt_decoding is "
        f"{size} bytes: the binding and the library are from two builds (rebuild: make core)")


def test_new_sets_fields_by_name_with_their_has_flags():
    struct = native.declarations().structs["pulpie_rt_decoding"]
    settings = binding.new(struct, margins=True, threshold=None, container_prior=(0.6, 0.5))
    assert settings.struct_size == ctypes.sizeof(struct)
    assert (settings.margins, settings.has_threshold, settings.has_container_prior) == (1, 0, 1)
    assert list(settings.container_prior) == [0.6, 0.5]
    with pytest.raises(TypeError, match=r"^pulpie_rt_decoding has no field 'story' \(it has "
                                        r"margins, has_threshold, threshold, keep_best, "):
        binding.new(struct, story=True)


@pytest.mark.parametrize(("header", "message"), [
    ("#if FOO\n", "a preprocessor line this binding cannot read: '#if FOO'"),
    ("typedef struct { long double x; } t;", "a type this binding cannot read: 'long double' "
                                             "in 't.long double x'"),
    ("void f(struct_t *x);", "unknown type 'struct_t' in 'void f(struct_t *x)'"),
    ("typedef struct h h; void f(h x);", "'h' by value in 'void f(h x)'"),
    ("int x[3];", "a declaration this binding cannot read: 'int x[3]'"),
])
def test_a_header_it_cannot_read_is_refused_with_the_declaration(header, message):
    with pytest.raises(binding.HeaderError) as caught:
        binding.parse(header)
    assert str(caught.value) == message


def test_a_bundles_decoding_is_the_decoding_structs_fields():
    """The core reads the manifest (``pulpie_rt_py_bundle_info``) and gives its decoding by
    ``pulpie_rt_decoding``'s field names: a field the header adds reaches the tools as is."""
    from pulpie_rt.runtime.model.bundle import load_bundle
    from pulpie_rt.runtime.model.resolve import embedded_model_dir

    fields = {name for name, _ in native.declarations().structs["pulpie_rt_decoding"]._fields_
              if name != "struct_size" and not name.startswith("has_")}
    for profile in ("fast", "accurate"):
        decoding = load_bundle(embedded_model_dir(), profile).decoding
        assert set(decoding) == fields, profile
        native.new("pulpie_rt_decoding", **decoding)
    fast = load_bundle(embedded_model_dir(), "fast")
    written = fast.manifest["profiles"]["fast"]["decoding"]
    prior = written["container_prior"]
    said = {"margins": True, "threshold": written["main_margin"],
            "keep_best": written["keep_best_block"], "expected_f1": True,
            "container_prior": [prior["share"], prior["shift"]],
            "continue_story": written["continue_story"]}
    assert {name: fast.decoding[name] for name in said} == said
