"""The first-call order that libheadstart-order wrote (src/order/order-file.h), named: each
function as its object and symbol name."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from headstart.errors import HeadstartError
from headstart.ordering.symbols import load

MAGIC = b"HSORDER\0"
VERSION = 1
_HEADER = struct.Struct("<8sIIII")
_OBJECT = struct.Struct("<Q504s")
MAX_OBJECTS = 256
_FUNCTION = struct.Struct("<IIQ")
_FUNCTIONS_AT = _HEADER.size + MAX_OBJECTS * _OBJECT.size


@dataclass(frozen=True)
class Called:
    object: str  # path
    name: str


def read_order_file(path: Path) -> list[Called]:
    """The functions in the order of their first call, each once; those no symbol covers (code
    generated at run time, a stripped object) are left out."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise HeadstartError(f"cannot read {path}: {e.strerror}") from e
    if len(data) < _FUNCTIONS_AT:
        raise HeadstartError(f"{path}: cut short; not written by libheadstart-order")
    magic, version, nobjects, nfunctions, _ = _HEADER.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise HeadstartError(f"{path}: not written by this version of libheadstart-order")
    objects = []
    for i in range(min(nobjects, MAX_OBJECTS)):
        base, raw = _OBJECT.unpack_from(data, _HEADER.size + i * _OBJECT.size)
        objects.append((base, raw.split(b"\0", 1)[0].decode(errors="replace")))
    out, seen = [], set()
    for i in range(nfunctions):
        at = _FUNCTIONS_AT + i * _FUNCTION.size
        if at + _FUNCTION.size > len(data):
            break
        index, _, offset = _FUNCTION.unpack_from(data, at)
        if index >= len(objects):
            continue
        base, object_path = objects[index]
        called = _name(object_path, base, offset)
        if called and called not in seen:
            seen.add(called)
            out.append(called)
    return out


def _name(object_path: str, base: int, offset: int) -> Called | None:
    path = object_path or "/proc/self/exe"
    if not Path(path).exists():
        return None
    symbols = load(path)
    vaddr = base + offset if symbols.executable_file else offset
    f = symbols.function_at(vaddr)
    return Called(str(Path(path).resolve()), f.name) if f else None
