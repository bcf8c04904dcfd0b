"""How many constructors an ELF object has of its own: what the loader runs as it loads the object,
beyond what the toolchain puts into every one. Deferring a library (`headstart lazy`) moves its own
to its first call; dropping it (`headstart link`'s --as-needed) means they no longer run."""

from __future__ import annotations

from collections.abc import Iterable

from elftools.elf.dynamic import DynamicTag
from elftools.elf.elffile import ELFFile

# GCC's crtbeginS.o puts frame_dummy first in .init_array and refers weakly to this name; crti.o's
# _init begins the .init section and calls only a profiler's __gmon_start__.
_CRTBEGIN_MARK = "_ITM_registerTMCloneTable"


def own_constructors(elf: ELFFile, tags: Iterable[DynamicTag], imported: Iterable[str]) -> int:
    word = 8 if elf.elfclass == 64 else 4
    init = elf.get_section_by_name(".init")
    count = 0
    for t in tags:
        if t.entry.d_tag in ("DT_INIT_ARRAYSZ", "DT_PREINIT_ARRAYSZ"):
            count += t.entry.d_val // word
        elif t.entry.d_tag == "DT_INIT" and (init is None or t.entry.d_val != init["sh_addr"]):
            count += 1  # -Wl,-init=FUNCTION
    if _CRTBEGIN_MARK in imported:
        count -= 1
    return max(0, count)
