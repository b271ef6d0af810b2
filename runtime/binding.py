"""The compiled core's ctypes declarations, generated from its headers.

``core/include/pulpie_rt.h`` (the C SDK's) and ``core/include/pulpie_rt_internal.h`` (the
Python package's entry points) are the one declaration of the core's ABI. The library carries
their text (``pulpie_rt_py_header``, the one function declared here by hand), so a binding and
a library cannot come from two versions of them: ``declare`` reads the text into ctypes
structs, function signatures and constants, and sets the signatures on the library.
``tests/test_binding.py`` checks each struct's size and field offsets against the library's
own layout (``pulpie_rt_py_layouts``), and that every function it exports is declared.

The headers are written in the small C this reader knows (pulpie_rt_internal.h says which);
anything else is refused with the line, never guessed.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Declarations", "HeaderError", "parse", "declare", "new"]


class HeaderError(ValueError):
    """A header this reader cannot read (the message quotes the declaration)."""


_SCALARS: dict[str, Any] = {
    "void": None, "char": ctypes.c_char, "int": ctypes.c_int, "double": ctypes.c_double,
    "float": ctypes.c_float, "size_t": ctypes.c_size_t, "int8_t": ctypes.c_int8,
    "uint8_t": ctypes.c_uint8, "int16_t": ctypes.c_int16, "uint16_t": ctypes.c_uint16,
    "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
}


@dataclass
class Declarations:
    """What the headers declare: ``structs`` (ctypes Structures by their C name, fields in
    order), ``opaque`` handle names, ``functions`` (name: ``(argtypes, restype)``), and
    ``constants`` (the ``#define``\\ d integers)."""

    structs: dict[str, type[ctypes.Structure]] = field(default_factory=dict)
    opaque: set[str] = field(default_factory=set)
    functions: dict[str, tuple[list[Any], Any]] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DEFINE = re.compile(r"#\s*define\s+(\w+)"
                     r"(?:[ \t]+(-?(?:0x[0-9a-fA-F]+|\d+))(?:[uU]?(?:ll|LL|l|L)?))?[ \t]*$")
_CPLUSPLUS = re.compile(r"#\s*ifdef\s+__cplusplus.*?#\s*endif", re.S)
_OPAQUE = re.compile(r"typedef\s+struct\s+(\w+)\s+(\w+)$")
_STRUCT = re.compile(r"typedef\s+struct\s*(\w*)\s*\{(.*)\}\s*(\w+)$", re.S)
_FUNCTION = re.compile(r"(.+?)\b(\w+)\s*\((.*)\)$", re.S)
# a field or parameter: its type, then its name (and array length) at the end; matched whole
# from the end (a search for the name alone tried each place in the text: 37% of parsing the
# headers, at every start of a process)
_DECLARATOR = re.compile(r"(.*\W|)(\w+)\s*(?:\[\s*(\d+)\s*\])?", re.S)
# a statement: up to its semicolon, a struct's braces (fields and their semicolons) inside
_STATEMENT = re.compile(r"[^;{}]*(?:\{[^{}]*\}[^;{}]*)?;|[^;{}]*(?:\{[^{}]*\}[^;{}]*)?$")


def parse(text: str) -> Declarations:
    """The declarations of header ``text`` (several headers may be joined)."""
    found = Declarations()
    text = _CPLUSPLUS.sub("", _COMMENT.sub(" ", text))
    body = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            body.append(line)
            continue
        define = _DEFINE.match(stripped)
        if define and define.group(2) is not None:
            found.constants[define.group(1)] = int(define.group(2), 0)
        elif not (define or re.match(r"#\s*(ifndef|endif|include)\b", stripped)):
            raise HeaderError(f"a preprocessor line this binding cannot read: {stripped!r}")
    for statement in _split_structs(" ".join(body)):
        statement = " ".join(statement.split())
        if not statement:
            continue
        if opaque := _OPAQUE.match(statement):
            found.opaque.add(opaque.group(2))
        elif struct := _STRUCT.match(statement):
            _struct(found, struct.group(3), struct.group(2))
        elif function := _FUNCTION.match(statement):
            restype, name, params = function.groups()
            found.functions[name] = (_params(found, params, statement),
                                     _type(found, restype, statement, returned=True))
        else:
            raise HeaderError(f"a declaration this binding cannot read: {statement!r}")
    return found


def _split_structs(text: str) -> list[str]:
    """The header's statements, a struct's body kept whole."""
    return [m.group().rstrip(";") for m in _STATEMENT.finditer(text) if m.group()]


def _declarator(text: str) -> tuple[str, str, str | None] | None:
    """``(type, name, array length)`` of a field or parameter, or None."""
    found = _DECLARATOR.fullmatch(text)
    if found is None:
        return None
    return found.group(1), found.group(2), found.group(3)


def _struct(found: Declarations, name: str, body: str) -> None:
    fields = []
    for member in body.split(";"):
        member = " ".join(member.split())
        if not member:
            continue
        declarator = _declarator(member)
        if declarator is None or not declarator[0].strip():
            raise HeaderError(f"{name}: a field this binding cannot read: {member!r}")
        spelling, field_name, length = declarator
        kind = _type(found, spelling, f"{name}.{member}")
        if length:
            kind = kind * int(length)
        fields.append((field_name, kind))
    found.structs[name] = type(name, (ctypes.Structure,), {"_fields_": fields})


def _params(found: Declarations, params: str, statement: str) -> list[Any]:
    params = params.strip()
    if params in ("", "void"):
        return []
    types = []
    for param in params.split(","):
        declarator = _declarator(param.strip())
        if declarator is None or not declarator[0].strip():
            raise HeaderError(f"a parameter this binding cannot read: {param!r} in {statement!r}")
        types.append(_type(found, declarator[0], statement))
    return types


def _type(found: Declarations, spelling: str, where: str, returned: bool = False) -> Any:
    """The ctypes type of a C type: a NUL-terminated ``const char *`` reads as bytes
    (``c_char_p``); a ``char *`` the caller must free stays a pointer (``c_void_p``); a pointer
    to a struct is a ``POINTER`` to it; a handle or data pointer is ``c_void_p`` (ctypes takes
    an address, bytes or an array for it); ``char **`` is a ``POINTER(c_char_p)``, any other
    pointer to a pointer a ``POINTER(c_void_p)``."""
    stars = spelling.count("*")
    words = spelling.replace("*", " ").split()
    const_target = bool(words) and words[0] == "const"
    base = [w for w in words if w not in ("const", "struct")]
    if len(base) != 1:
        raise HeaderError(f"a type this binding cannot read: {spelling.strip()!r} in {where!r}")
    base_name = base[0]
    if base_name in _SCALARS:
        scalar = _SCALARS[base_name]
    elif base_name in found.structs:
        scalar = found.structs[base_name]
    elif base_name in found.opaque:
        scalar = "opaque"
    else:
        raise HeaderError(f"unknown type {base_name!r} in {where!r}")
    if stars == 0:
        if scalar == "opaque" or (scalar is None and not returned):
            raise HeaderError(f"{base_name!r} by value in {where!r}")
        return scalar
    if stars == 1:
        if base_name == "char":
            return ctypes.c_char_p if const_target else ctypes.c_void_p
        if base_name in found.structs:
            return ctypes.POINTER(scalar)
        return ctypes.c_void_p
    if stars == 2:
        return ctypes.POINTER(ctypes.c_char_p if base_name == "char" else ctypes.c_void_p)
    raise HeaderError(f"a type this binding cannot read: {spelling.strip()!r} in {where!r}")


def declare(lib: ctypes.CDLL, declarations: Declarations) -> None:
    """Sets every declared function's signature on ``lib`` (those ``lib`` exports)."""
    for name, (argtypes, restype) in declarations.functions.items():
        function = getattr(lib, name, None)
        if function is not None:
            function.argtypes, function.restype = argtypes, restype


def new(struct: type[ctypes.Structure], **values: Any) -> ctypes.Structure:
    """An instance of ``struct`` with ``values`` set by field name: ``struct_size`` set when
    it has one, a ``has_<name>`` flag set for each value given that has one (a value of None
    leaves both unset), booleans as 0/1, a sequence into an array field. An unknown name is a
    ``TypeError`` naming the fields."""
    instance = struct()
    names = [name for name, _ in struct._fields_]
    if "struct_size" in names:
        instance.struct_size = ctypes.sizeof(struct)
    for name, value in values.items():
        if name not in names or name == "struct_size" or name.startswith("has_"):
            raise TypeError(f"{struct.__name__} has no field {name!r} (it has "
                            f"{', '.join(n for n in names if n != 'struct_size')})")
        if value is None:
            continue
        if f"has_{name}" in names:
            setattr(instance, f"has_{name}", 1)
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, (tuple, list)):
            array = getattr(instance, name)
            for index, item in enumerate(value):
                array[index] = item
        else:
            setattr(instance, name, value)
    return instance
