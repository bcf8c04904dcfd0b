"""The functions of an ELF object (pyelftools): each one's extent, to name an address inside it, and
the object's executable segments, to tell text pages from others."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import lru_cache

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from headstart import elf_tables
from headstart.errors import HeadstartError

PF_X = 1


@dataclass(frozen=True)
class Function:
    start: int  # virtual address in the file
    size: int
    name: str


@dataclass
class ObjectSymbols:
    path: str
    executable_file: bool  # ET_EXEC: addresses are absolute, not offsets from a load base
    functions: list[Function]  # sorted by start
    text: list[tuple[int, int, int]]  # executable segments: (vaddr, memsz, file offset)

    def function_at(self, vaddr: int) -> Function | None:
        i = bisect.bisect_right(self._starts, vaddr) - 1
        if i >= 0:
            f = self.functions[i]
            if vaddr < f.start + max(f.size, 1):
                return f
        return None

    def file_offset(self, vaddr: int) -> int | None:
        for start, size, offset in self.text:
            if start <= vaddr < start + size:
                return offset + vaddr - start
        return None

    def text_pages(self, page_size: int) -> set[int]:
        """Indexes of the file's pages that executable segments map."""
        return {
            p
            for start, size, offset in self.text
            for p in range(offset // page_size, (offset + size - 1) // page_size + 1)
        }

    def functions_in_pages(self, pages: set[int], page_size: int) -> list[Function]:
        """Functions whose code lies, at least in part, in the given file pages, by address."""
        found = []
        for f in self.functions:
            first = self.file_offset(f.start)
            if first is None:
                continue
            last = first + max(f.size, 1) - 1
            if any(p in pages for p in range(first // page_size, last // page_size + 1)):
                found.append(f)
        return found

    def __post_init__(self) -> None:
        self._starts = [f.start for f in self.functions]


@lru_cache(maxsize=64)
def load(path: str) -> ObjectSymbols:
    """Function symbols from .symtab (or .dynsym when stripped), one per address (the longest name
    kept out of aliases is not wanted: the first defined, which for GCC is the real one)."""
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            text = [
                (seg["p_vaddr"], seg["p_memsz"], seg["p_offset"])
                for seg in elf.iter_segments()
                if seg["p_type"] == "PT_LOAD" and seg["p_flags"] & PF_X
            ]
            table = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
            by_start: dict[int, Function] = {}
            for sym in elf_tables.symbols(elf, table) if table else []:
                if sym.type == "STT_FUNC" and sym.defined and sym.value:
                    by_start.setdefault(sym.value, Function(sym.value, sym.size, sym.name))
            return ObjectSymbols(
                path, elf["e_type"] == "ET_EXEC", sorted(by_start.values(), key=lambda f: f.start), text
            )
    except (OSError, ELFError) as e:
        raise HeadstartError(f"{path}: cannot read its symbols ({e})") from e
