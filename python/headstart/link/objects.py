"""What the loader has to do for one object, read from its ELF file (pyelftools): its relocations by
kind (relative, packed relative, symbolic, PLT, IRELATIVE, TLS, copy), the symbols it exports and
imports, its hash tables, binding mode, DT_NEEDED, constructors, and the pages its relocations write.

Numbers are for x86-64 and aarch64, the machines headstart runs on."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection, RelrRelocationSection

from headstart.constructors import own_constructors
from headstart.elf_tables import STB_LOCAL, STB_WEAK, relocations, symbols
from headstart.errors import HeadstartError

PAGE = 4096
RELA_SIZE = 24  # bytes of one Elf64_Rela entry
DF_BIND_NOW, DF_TEXTREL = 0x8, 0x4
DF_1_NOW, DF_1_PIE = 0x1, 0x08000000


@dataclass(frozen=True)
class Kinds:
    """Relocation types by machine: relative, IRELATIVE, PLT slot, copy, TLS, and none."""

    relative: int
    irelative: int
    jump_slot: int
    copy: int
    tls: frozenset[int]
    none: int = 0


KINDS = {
    "EM_X86_64": Kinds(8, 37, 7, 5, frozenset({16, 17, 18, 19, 36})),
    "EM_AARCH64": Kinds(1027, 1032, 1026, 1024, frozenset({1028, 1029, 1030, 1031})),
}


@dataclass
class SymbolReloc:
    """A relocation that names a symbol: the loader looks the symbol up (or takes it from its cache)."""

    symbol: str
    own: bool  # the object defines the symbol itself, with default visibility: it may bind to itself
    data: bool  # an object (variable) rather than a function
    kind: str  # "data" (GOT entry or absolute word), "plt", "copy", "tls"


@dataclass
class ObjectFacts:
    path: str
    soname: str | None
    is_program: bool  # an executable (PIE or not), as opposed to a shared library
    pie: bool
    needed: list[str]
    runpath: list[str]
    size: int  # bytes of the file
    hash_styles: list[str]  # "gnu", "sysv"
    bind_now: bool
    textrel: bool
    relr: bool  # has DT_RELR already (packed relative relocations)
    relative: int = 0  # relative relocations, in RELA or RELR form
    relative_in_rela: int = 0  # of them, in RELA entries (24 bytes each): what packing would shrink
    relr_bytes_now: int = 0  # bytes of .relr.dyn
    relr_bytes_if_packed: int = 0  # what .relr.dyn would take with every relative relocation in it
    irelative: int = 0
    tls: int = 0  # TLS relocations (module and offset)
    has_tls: bool = False
    copies: list[str] = field(default_factory=list)  # symbols it copies into itself (copy relocations)
    symbolic: list[SymbolReloc] = field(default_factory=list)  # bound at load (not PLT slots, unless now)
    plt: list[SymbolReloc] = field(default_factory=list)  # PLT slots
    exported: dict[str, str] = field(default_factory=dict)  # defined default-visibility dynamic symbols -> type
    exported_weak: set[str] = field(default_factory=set)
    imported: set[str] = field(default_factory=set)  # undefined dynamic symbols it refers to
    dynsym_bytes: int = 0
    dynstr_bytes: int = 0
    bloom_fill: float | None = None  # share of the GNU hash bloom filter's bits set
    constructors: int = 0  # of its own (headstart.constructors): not the toolchain's frame_dummy and _init
    dirty_pages: int = 0  # distinct pages its load-time relocations write (copied on write)
    rela_dyn_bytes: int = 0
    rela_plt_bytes: int = 0

    @property
    def name(self) -> str:
        return self.soname or Path(self.path).name


def _dynamic(elf: ELFFile) -> DynamicSection | None:
    return next((s for s in elf.iter_sections() if isinstance(s, DynamicSection)), None)


def relr_size(offsets: list[int], word: int = 8) -> int:
    """Bytes of the RELR encoding of these relative relocation offsets: an address entry, then
    bitmap entries of word*8-1 bits, each bit one word after the last address covered."""
    bits = word * 8 - 1
    entries = 0
    todo = sorted(set(offsets))
    i = 0
    while i < len(todo):
        base = todo[i]  # an address entry
        entries += 1
        i += 1
        base += word
        while i < len(todo):
            # A bitmap entry covers [base, base + bits * word); skip it when nothing falls there.
            if todo[i] >= base + bits * word:
                break
            while i < len(todo) and todo[i] < base + bits * word:
                if (todo[i] - base) % word:
                    break  # not word-aligned: would need an address entry of its own
                i += 1
            entries += 1
            base += bits * word
            if i < len(todo) and (todo[i] - base) % word and todo[i] < base + bits * word:
                break
    return entries * word


def _bloom_fill(elf: ELFFile) -> float | None:
    gnu = elf.get_section_by_name(".gnu.hash")
    if gnu is None:
        return None
    data = gnu.data()
    if len(data) < 16:
        return None
    nbuckets, _symoffset, bloom_size, _shift = (int.from_bytes(data[i : i + 4], "little") for i in range(0, 16, 4))
    del nbuckets
    words = data[16 : 16 + bloom_size * 8]
    if not words:
        return None
    return sum(bin(b).count("1") for b in words) / (len(words) * 8)


def _read(path: str) -> ObjectFacts:
    with open(path, "rb") as f:
        elf = ELFFile(f)
        kinds = KINDS.get(elf["e_machine"])
        if kinds is None:
            raise HeadstartError(f"{path}: {elf['e_machine']} is not a machine headstart link knows")
        dynamic = _dynamic(elf)
        tags = list(dynamic.iter_tags()) if dynamic else []
        flags = next((t.entry.d_val for t in tags if t.entry.d_tag == "DT_FLAGS"), 0)
        flags_1 = next((t.entry.d_val for t in tags if t.entry.d_tag == "DT_FLAGS_1"), 0)
        has_interp = any(seg["p_type"] == "PT_INTERP" for seg in elf.iter_segments())
        is_program = (
            elf["e_type"] == "ET_EXEC"
            or bool(flags_1 & DF_1_PIE)
            or (has_interp and not any(t.entry.d_tag == "DT_SONAME" for t in tags))
        )
        runpath = [
            p
            for t in tags
            if t.entry.d_tag in ("DT_RUNPATH", "DT_RPATH")
            for p in (t.runpath if t.entry.d_tag == "DT_RUNPATH" else t.rpath).split(":")
        ]
        facts = ObjectFacts(
            path=path,
            soname=next((t.soname for t in tags if t.entry.d_tag == "DT_SONAME"), None),
            is_program=is_program,
            pie=is_program and elf["e_type"] == "ET_DYN",
            needed=[t.needed for t in tags if t.entry.d_tag == "DT_NEEDED"],
            runpath=runpath,
            size=Path(path).stat().st_size,
            hash_styles=[
                s for s, tag in (("gnu", "DT_GNU_HASH"), ("sysv", "DT_HASH")) if any(t.entry.d_tag == tag for t in tags)
            ],
            bind_now=bool(
                flags & DF_BIND_NOW or flags_1 & DF_1_NOW or any(t.entry.d_tag == "DT_BIND_NOW" for t in tags)
            ),
            textrel=bool(flags & DF_TEXTREL or any(t.entry.d_tag == "DT_TEXTREL" for t in tags)),
            relr=any(t.entry.d_tag == "DT_RELR" for t in tags),
            has_tls=any(seg["p_type"] == "PT_TLS" for seg in elf.iter_segments()),
        )
        dynsym = elf.get_section_by_name(".dynsym")
        table = symbols(elf, dynsym) if dynsym else []
        if dynsym:
            facts.dynsym_bytes = dynsym["sh_size"]
            dynstr = elf.get_section_by_name(".dynstr")
            facts.dynstr_bytes = dynstr["sh_size"] if dynstr else 0
        for s in table:
            if not s.name:
                continue
            if not s.defined:
                facts.imported.add(s.name)
            elif s.default_visibility and s.bind != STB_LOCAL:
                facts.exported[s.name] = s.type
                if s.bind == STB_WEAK:
                    facts.exported_weak.add(s.name)
        facts.constructors = own_constructors(elf, tags, facts.imported)
        facts.bloom_fill = _bloom_fill(elf)
        written: set[int] = set()
        relative_offsets: list[int] = []
        for section in elf.iter_sections():
            if not section["sh_flags"] & 0x2:  # SHF_ALLOC: what the loader reads
                continue
            if isinstance(section, RelrRelocationSection):
                facts.relr_bytes_now += section["sh_size"]
                for rel in section.iter_relocations():
                    facts.relative += 1
                    relative_offsets.append(rel["r_offset"])
                    written.add(rel["r_offset"] // PAGE)
                continue
            if not isinstance(section, RelocationSection):
                continue
            plt = section.name.endswith(".plt") and not section.name.endswith(".iplt")
            if plt:
                facts.rela_plt_bytes += section["sh_size"]
            else:
                facts.rela_dyn_bytes += section["sh_size"]
            for offset, kind, index in relocations(elf, section):
                written.add(offset // PAGE)  # lazy PLT slots are written too (base added)
                if kind == kinds.relative:
                    facts.relative += 1
                    facts.relative_in_rela += 1
                    relative_offsets.append(offset)
                    continue
                if kind == kinds.irelative:
                    facts.irelative += 1
                    continue
                if kind == kinds.none:
                    continue
                sym = table[index] if 0 < index < len(table) else None
                if kind in kinds.tls:
                    facts.tls += 1
                if sym is None:
                    continue
                own = sym.defined and sym.default_visibility
                data = sym.type in ("STT_OBJECT", "STT_TLS", "STT_COMMON")
                what = (
                    "tls"
                    if kind in kinds.tls
                    else "copy"
                    if kind == kinds.copy
                    else "plt"
                    if kind == kinds.jump_slot
                    else "data"
                )
                entry = SymbolReloc(sym.name, own, data, what)
                if what == "copy":
                    facts.copies.append(sym.name)
                (facts.plt if what == "plt" else facts.symbolic).append(entry)
        facts.relr_bytes_if_packed = relr_size(relative_offsets) if relative_offsets else 0
        facts.dirty_pages = len(written)
        return facts


@lru_cache(maxsize=512)
def read_object(path: str) -> ObjectFacts:
    """The facts of one ELF object (cached by path: the objects of a launch are read once)."""
    try:
        return _read(path)
    except (OSError, ELFError) as e:
        raise HeadstartError(f"{path}: cannot read it as an ELF object ({e})") from e
