"""Relocation work each launch mode leaves to the launched process, counted from the ELF files.

A process started by exec relocates every object of its closure: relative relocations (no symbol
lookup) and symbol relocations (each one a lookup), with PLT slots bound lazily on first call
unless the object asks for immediate binding. Through headstartd in preload mode the libraries were
relocated, PLT slots included (RTLD_NOW), in the daemon, so the child relocates the program image
alone; a warm program is relocated in the daemon too, so the child relocates nothing.

These are counts of relocation entries in the objects each mode loads, not counters read from the
loader: docs/measuring.md says what that leaves out (symbol-lookup cache hits, dlopen done by the
program itself).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection, RelrRelocationSection

from headstart import elf_tables
from headstart.errors import HeadstartError

# R_X86_64_RELATIVE, R_X86_64_IRELATIVE; R_AARCH64_RELATIVE, R_AARCH64_IRELATIVE.
RELATIVE_TYPES = {"EM_X86_64": {8, 37}, "EM_AARCH64": {1027, 1032}}
DF_BIND_NOW = 0x8
DF_1_NOW = 0x1


@dataclass(frozen=True)
class Relocations:
    relative: int = 0  # no lookup: base address added
    symbolic: int = 0  # one symbol lookup each, at load
    lazy_plt: int = 0  # PLT slots bound on first call (a lookup each, after main)

    def __add__(self, other: Relocations) -> Relocations:
        return Relocations(
            self.relative + other.relative, self.symbolic + other.symbolic, self.lazy_plt + other.lazy_plt
        )

    def as_dict(self) -> dict[str, int]:
        return {"relative": self.relative, "symbolic": self.symbolic, "lazy_plt": self.lazy_plt}


def _binds_now(elf: ELFFile) -> bool:
    for section in elf.iter_sections():
        if isinstance(section, DynamicSection):
            for tag in section.iter_tags():
                if tag.entry.d_tag == "DT_BIND_NOW":
                    return True
                if tag.entry.d_tag == "DT_FLAGS" and tag.entry.d_val & DF_BIND_NOW:
                    return True
                if tag.entry.d_tag == "DT_FLAGS_1" and tag.entry.d_val & DF_1_NOW:
                    return True
    return False


def count_object(path: Path) -> Relocations:
    """The dynamic relocations of one object (those in allocated sections, which the loader reads)."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        relative_types = RELATIVE_TYPES.get(elf["e_machine"], set())
        now = _binds_now(elf)
        relative = symbolic = plt = 0
        for section in elf.iter_sections():
            if not section["sh_flags"] & 0x2:  # SHF_ALLOC
                continue
            if isinstance(section, RelrRelocationSection):
                relative += sum(1 for _ in section.iter_relocations())
            elif isinstance(section, RelocationSection):
                if section.name in (".rela.plt", ".rel.plt"):
                    plt += section.num_relocations()
                    continue
                for _offset, kind, _symbol in elf_tables.relocations(elf, section):
                    if kind in relative_types:
                        relative += 1
                    else:
                        symbolic += 1
        return Relocations(relative, symbolic + (plt if now else 0), 0 if now else plt)


def closure(program: Path) -> list[Path]:
    """The libraries the system loader maps for `program`, as `ld.so --list` reports them."""
    with open(program, "rb") as f:
        elf = ELFFile(f)
        interp = next((seg.get_interp_name() for seg in elf.iter_segments() if seg["p_type"] == "PT_INTERP"), None)
    if interp is None:
        raise HeadstartError(f"{program}: not dynamically linked")
    out = subprocess.run([interp, "--list", str(program)], capture_output=True, text=True)
    if out.returncode != 0:
        raise HeadstartError(f"{program}: the loader cannot list its libraries: {out.stderr.strip()}")
    libs = [Path(m.group(1)) for m in re.finditer(r"=> (/\S+) \(0x", out.stdout)]
    return [*libs, Path(interp)]


def per_mode(program: Path) -> dict[str, Relocations]:
    """What the launched process relocates itself before main, per mode (the adaptive modes load the
    program as pool does; what they add is loaded after main)."""
    own = count_object(program)
    libs = sum((count_object(lib) for lib in closure(program)), Relocations())
    none = Relocations()
    return {"exec": own + libs, "preload": own, "warm": none, "pool": none, "learned": none, "warm-up": none}


def loader_statistics(argv: list[str], timeout: float = 60.0) -> dict[str, int]:
    """The loader's own start-up counts for one exec of argv (LD_DEBUG=statistics), to check the
    counts above against. The loader writes them before main, so the program is stopped once they
    are written: one that shows a window does not end by itself."""
    with tempfile.TemporaryDirectory(prefix="headstart-ld-") as tmp:
        out = Path(tmp) / "stats"
        env = dict(os.environ, LD_DEBUG="statistics", LD_DEBUG_OUTPUT=str(out))
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        own = Path(tmp) / f"stats.{proc.pid}"
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None and time.monotonic() < deadline:
                if own.exists() and len(parse_loader_statistics(own.read_text())) == STARTUP_FIELDS:
                    break
                time.sleep(0.01)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        return parse_loader_statistics("".join(p.read_text() for p in Path(tmp).glob("stats.*")))


STARTUP_FIELDS = 3  # what parse_loader_statistics finds in a complete start-up report


def parse_loader_statistics(text: str) -> dict[str, int]:
    """What LD_DEBUG=statistics reports: symbol lookups (`relocations`, of which `from_cache` hit the
    lookup cache) and `relative` relocations (the loader counts only those its DT_RELACOUNT hint
    announces)."""
    fields = {
        "relocations": r"\s number of relocations: (\d+)",
        "from_cache": r"\s number of relocations from cache: (\d+)",
        "relative": r"number of relative relocations: (\d+)",
    }
    found = {k: re.search(pattern, text) for k, pattern in fields.items()}
    return {k: int(m.group(1)) for k, m in found.items() if m}
