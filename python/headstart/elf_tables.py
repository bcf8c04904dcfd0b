"""An ELF object's symbol and relocation tables, decoded in bulk from their sections' bytes.

pyelftools parses these tables one entry at a time through construct. A GTK or Qt program's closure
holds hundreds of thousands of entries, which took seconds (the bench's relocation counts,
`headstart lazy`) to twenty seconds (`headstart link` of one Qt program). Everything else (headers,
the dynamic section, packed RELR relocations, versions) stays pyelftools'."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.enums import ENUM_ST_INFO_TYPE
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import Section

_TYPE_NAMES = {v: k for k, v in ENUM_ST_INFO_TYPE.items() if isinstance(v, int)}
STB_LOCAL, STB_WEAK = 0, 2
SHN_UNDEF = 0


class Symbol(NamedTuple):
    """One entry of a symbol table, as headstart reads it."""

    name: str
    defined: bool  # st_shndx is not SHN_UNDEF
    default_visibility: bool
    bind: int  # st_info's binding: STB_LOCAL, 1 (global), STB_WEAK, 10 (unique)
    type: str  # st_info's type, named as pyelftools names it ("STT_FUNC")
    value: int
    size: int


def symbols(elf: ELFFile, table: Section) -> list[Symbol]:
    """Every entry of a symbol table (.dynsym, .symtab), index 0 included, in order."""
    strings = elf.get_section(table["sh_link"]).data()
    if elf.elfclass == 64:
        entries = _entries(table, _order(elf) + "IBBHQQ")
    else:
        fields = _entries(table, _order(elf) + "IIIBBH")
        entries = ((name, info, other, shndx, value, size) for name, value, size, info, other, shndx in fields)
    out = []
    for st_name, st_info, st_other, st_shndx, st_value, st_size in entries:
        name = strings[st_name : strings.find(b"\0", st_name)].decode("utf-8", "replace")
        kind = _TYPE_NAMES.get(st_info & 0xF, str(st_info & 0xF))
        out.append(Symbol(name, st_shndx != SHN_UNDEF, st_other & 0x7 == 0, st_info >> 4, kind, st_value, st_size))
    return out


def relocations(elf: ELFFile, section: RelocationSection) -> Iterator[tuple[int, int, int]]:
    """(r_offset, type, symbol index) of each entry of a REL or RELA section."""
    wide = elf.elfclass == 64
    layout = _order(elf) + ("Q" if wide else "I") * 2 + (("q" if wide else "i") if section.is_RELA() else "")
    shift, mask = (32, 0xFFFFFFFF) if wide else (8, 0xFF)
    for entry in _entries(section, layout):
        yield entry[0], entry[1] & mask, entry[1] >> shift


def _entries(section: Section, layout: str) -> Iterator[tuple]:
    data = section.data()
    if len(data) % struct.calcsize(layout):
        raise ELFError(f"{section.name}: {len(data)} bytes is not a whole number of entries")
    return struct.iter_unpack(layout, data)


def _order(elf: ELFFile) -> str:
    return "<" if elf.little_endian else ">"
