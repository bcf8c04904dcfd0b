"""What decides whether a library can be loaded on first use instead of at start, read from the
ELF files (pyelftools): who needs whom, the data and TLS symbols a program imports, versions,
constructors, TLS and NODELETE."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

from headstart import elf_tables
from headstart.constructors import own_constructors
from headstart.errors import HeadstartError

# Where the stubs of `headstart lazy build` name the library they defer (resolver.c's table), so that
# a profile can tell a deferred load from another dlopen.
LAZY_SECTION = ".headstart.lazy"
DF_1_NOW = 0x1
DF_1_NODELETE = 0x8
DF_BIND_NOW = 0x8
DF_STATIC_TLS = 0x10
# Relocations that bind a symbol's address when the object is loaded, by machine: copy, GOT entry,
# absolute word; and those that need the defining object's TLS block. A copy relocation's symbol is
# defined in the program (the copy), the others' are undefined there.
COPY_RELOCS = {"EM_X86_64": {5}, "EM_AARCH64": {1024}}
DATA_RELOCS = {"EM_X86_64": {5, 6, 1}, "EM_AARCH64": {1024, 1025, 257}}
TLS_RELOCS = {"EM_X86_64": {16, 17, 18}, "EM_AARCH64": {1028, 1029, 1030, 1031}}


@dataclass
class ObjectFacts:
    path: str
    soname: str | None
    needed: list[str]
    defined: set[str]  # dynamic symbols it defines
    data_imports: dict[str, str] = field(default_factory=dict)  # symbol -> "copy/GOT" or "TLS"
    versions_needed: dict[str, list[str]] = field(default_factory=dict)  # soname -> version names
    constructors: int = 0  # DT_INIT_ARRAY entries beyond the first (frame_dummy, from the C runtime)
    tls: bool = False
    static_tls: bool = False  # DF_STATIC_TLS: initial-exec TLS, which dlopen may find no room for
    nodelete: bool = False
    # Linked with -z now (DT_BIND_NOW, DF_BIND_NOW or DF_1_NOW): the loader binds all its symbols at
    # start, so a binding says nothing about a call.
    bind_now: bool = False
    stubs_for: list[str] = field(default_factory=list)  # sonames its lazy stubs load (LAZY_SECTION)


def _dynamic(elf: ELFFile) -> DynamicSection | None:
    for section in elf.iter_sections():
        if isinstance(section, DynamicSection):
            return section
    return None


def _imports(elf: ELFFile, tables: dict[str, list[elf_tables.Symbol]]) -> dict[str, str]:
    """The data and TLS symbols the object's relocations bind at load. `tables`: the symbol tables
    already decoded, by section name; those decoded here join them."""
    machine = elf["e_machine"]
    data, tls = DATA_RELOCS.get(machine, set()), TLS_RELOCS.get(machine, set())
    copy = COPY_RELOCS.get(machine, set())
    found: dict[str, str] = {}
    for section in elf.iter_sections():
        if not isinstance(section, RelocationSection) or section.name.endswith(".plt"):
            continue
        linked = elf.get_section(section["sh_link"])
        if linked.name not in tables:
            tables[linked.name] = elf_tables.symbols(elf, linked)
        symbols = tables[linked.name]
        for _offset, kind, index in elf_tables.relocations(elf, section):
            if not 0 < index < len(symbols) or kind not in data | tls:
                continue
            sym = symbols[index]
            if sym.defined and kind not in copy:
                continue
            if kind in tls or sym.type == "STT_TLS":
                found[sym.name] = "TLS"
            elif sym.type == "STT_OBJECT":
                found.setdefault(sym.name, "data")
    return found


@lru_cache(maxsize=256)
def read_facts(path: str) -> ObjectFacts:
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            dynamic = _dynamic(elf)
            tags = list(dynamic.iter_tags()) if dynamic else []
            facts = ObjectFacts(
                path,
                next((t.soname for t in tags if t.entry.d_tag == "DT_SONAME"), None),
                [t.needed for t in tags if t.entry.d_tag == "DT_NEEDED"],
                set(),
            )
            for t in tags:
                if t.entry.d_tag == "DT_FLAGS_1":
                    facts.nodelete = bool(t.entry.d_val & DF_1_NODELETE)
                    facts.bind_now |= bool(t.entry.d_val & DF_1_NOW)
                elif t.entry.d_tag == "DT_FLAGS":
                    facts.static_tls = bool(t.entry.d_val & DF_STATIC_TLS)
                    facts.bind_now |= bool(t.entry.d_val & DF_BIND_NOW)
                elif t.entry.d_tag == "DT_BIND_NOW":
                    facts.bind_now = True
            facts.tls = any(seg["p_type"] == "PT_TLS" for seg in elf.iter_segments())
            dynsym = elf.get_section_by_name(".dynsym")
            tables = {".dynsym": elf_tables.symbols(elf, dynsym)} if dynsym else {}
            facts.defined = {s.name for s in tables.get(".dynsym", []) if s.defined and s.name}
            facts.data_imports = _imports(elf, tables)
            imported = {s.name for s in tables.get(".dynsym", []) if not s.defined and s.name}
            facts.constructors = own_constructors(elf, tags, imported)
            marks = elf.get_section_by_name(LAZY_SECTION)
            if marks:
                facts.stubs_for = [n.decode() for n in marks.data().split(b"\0") if n]
            verneed = elf.get_section_by_name(".gnu.version_r")
            if verneed:
                for need, auxes in verneed.iter_versions():
                    facts.versions_needed[need.name] = [aux.name for aux in auxes]
            return facts
    except (OSError, ELFError) as e:
        raise HeadstartError(f"{path}: cannot read it as an ELF object ({e})") from e
