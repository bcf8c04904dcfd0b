"""The symbol and relocation tables read in bulk (python/headstart/elf_tables.py), held to
pyelftools' own parse of the same files, and a relocation table cut short refused in one line."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from conftest import SANITIZED
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from headstart import elf_tables
from headstart.errors import HeadstartError
from headstart.lazy.elf_facts import read_facts
from headstart.link.objects import read_object

pytestmark = pytest.mark.skipif(SANITIZED, reason="no daemon here: run in the normal pass")

BULK_DECODED = ["libQt5Core.so.5", "libgtk-3.so.0", "libc.so.6", "libstdc++.so.6", "libjpeg.so.62"]


@pytest.mark.parametrize("name", BULK_DECODED)
def test_symbols_and_relocations_decoded_in_bulk_are_pyelftools_ones(name):
    """Each entry decoded in bulk is what pyelftools parses one at a time (which took 20 s of a
    `headstart link` of a Qt program), on Debian's x86-64 libraries and, where the aarch64 sysroot
    is set up, its arm64 ones."""
    paths = list(Path("/usr/lib").glob(f"*-linux-gnu/{name}"))
    sysroot = os.environ.get("HEADSTART_AARCH64_SYSROOT")
    if sysroot:
        paths += [p for d in ("lib", "usr/lib") for p in Path(sysroot, d, "aarch64-linux-gnu").glob(name)]
    if not paths:
        pytest.skip(f"{name} is not installed")
    for path in paths:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            dynsym = elf.get_section_by_name(".dynsym")
            got = elf_tables.symbols(elf, dynsym)
            want = list(dynsym.iter_symbols())
            assert len(got) == len(want) > 100
            for g, w in zip(got, want, strict=True):
                assert g.name == w.name and g.type == w["st_info"]["type"], (path, w.name)
                assert g.defined == (w["st_shndx"] != "SHN_UNDEF")
                assert (g.value, g.size) == (w["st_value"], w["st_size"])
                assert g.default_visibility == (w["st_other"]["visibility"] == "STV_DEFAULT")
                assert g.bind == {"STB_LOCAL": 0, "STB_GLOBAL": 1, "STB_WEAK": 2}.get(w["st_info"]["bind"], 10)
            sections = [s for s in elf.iter_sections() if isinstance(s, RelocationSection)]
            assert sections
            for section in sections:
                want_rel = [(r["r_offset"], r["r_info_type"], r["r_info_sym"]) for r in section.iter_relocations()]
                assert list(elf_tables.relocations(elf, section)) == want_rel, (path, section.name)


def test_a_relocation_table_cut_short_is_one_clear_error(tmp_path):
    """A relocation table whose size is not a whole number of entries (a damaged file, which
    pyelftools itself lets through) is refused by link's and lazy's readers with one error naming
    the file and the table, not a traceback."""
    (lib,) = Path("/usr/lib").glob("x86_64-linux-gnu/libjpeg.so.62")
    damaged = tmp_path / "libdamaged.so"
    shutil.copy(lib, damaged)
    with open(damaged, "rb") as f:
        elf = ELFFile(f)
        index = next(i for i, s in enumerate(elf.iter_sections()) if s.name == ".rela.dyn")
        at = elf["e_shoff"] + index * elf["e_shentsize"] + 32  # Elf64_Shdr's sh_size
        size = elf.get_section(index)["sh_size"]
    with open(damaged, "r+b") as f:
        f.seek(at)
        f.write(struct.pack("<Q", size - 5))
    with pytest.raises(HeadstartError, match=r"libdamaged.so: cannot read it as an ELF object \(.rela.dyn: "):
        read_object(str(damaged))
    with pytest.raises(HeadstartError, match="not a whole number of entries"):
        read_facts(str(damaged))
