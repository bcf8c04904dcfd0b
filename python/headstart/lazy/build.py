"""`headstart lazy build`: a stub archive that defers one library to its first call, for relinking
a program that is built here (x86-64). The stubs take the functions the program imports from the
library, each with the version it binds to; calls go through a slot that a resolver (resolver.c)
fills at the first call of any of them, after loading the library once. Linked instead of the
library, the program no longer needs it at start."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from pathlib import Path

from elftools.elf.elffile import ELFFile

from headstart.errors import HeadstartError

RESOLVER = Path(__file__).with_name("resolver.c")

# The registers that carry arguments (integer, and vector for floating point and varargs' count
# in %al) are saved around the resolver, so that the real function gets the call as it was made.
_COMMON = (
    """\
        .p2align 4
{tag}_common:
        endbr64
        push %rdi
        push %rsi
        push %rdx
        push %rcx
        push %r8
        push %r9
        push %rax
        sub $128, %rsp
"""
    + "".join(f"        movdqu %xmm{i}, {16 * i}(%rsp)\n" for i in range(8))
    + """\
        mov %r11, %rdi
        call {tag}_resolve
        mov %rax, %r11
"""
    + "".join(f"        movdqu {16 * i}(%rsp), %xmm{i}\n" for i in range(8))
    + """\
        add $128, %rsp
        pop %rax
        pop %r9
        pop %r8
        pop %rcx
        pop %rdx
        pop %rsi
        pop %rdi
        jmp *%r11
"""
)


def imported_functions(program: Path, library: Path) -> list[tuple[str, str | None]]:
    """The functions program imports that library defines, with the version each binds to."""
    with open(library, "rb") as f:
        lib = ELFFile(f)
        dynsym = lib.get_section_by_name(".dynsym")
        defined = {s.name for s in dynsym.iter_symbols() if s["st_shndx"] != "SHN_UNDEF"} if dynsym else set()
        soname = next((t.soname for s in lib.iter_sections() if s["sh_type"] == "SHT_DYNAMIC"
                       for t in s.iter_tags() if t.entry.d_tag == "DT_SONAME"), library.name)  # fmt: skip
    with open(program, "rb") as f:
        elf = ELFFile(f)
        versions: dict[int, str] = {}
        verneed = elf.get_section_by_name(".gnu.version_r")
        for need, auxes in verneed.iter_versions() if verneed else []:
            for aux in auxes:
                if need.name == soname:
                    versions[aux["vna_other"]] = aux.name
        versym = elf.get_section_by_name(".gnu.version")
        found = []
        for i, sym in enumerate(elf.get_section_by_name(".dynsym").iter_symbols()):
            if sym["st_shndx"] == "SHN_UNDEF" and sym["st_info"]["type"] == "STT_FUNC" and sym.name in defined:
                ndx = versym.get_symbol(i)["ndx"] if versym else 0
                found.append((sym.name, versions.get(ndx) if isinstance(ndx, int) else None))
    return sorted(found)


def tag_of(soname: str) -> str:
    return "hs_lazy_" + re.sub(r"[^A-Za-z0-9]", "_", soname)


def assembly(tag: str, functions: list[tuple[str, str | None]]) -> str:
    out = ["        .text"]
    for i, (name, _) in enumerate(functions):
        out.append(f"""\
        .globl {name}
        .type {name}, @function
        .p2align 4
{name}:
        endbr64
        jmp *{tag}_slots+{8 * i}(%rip)
        .size {name}, .-{name}
        .globl {tag}_thunk_{i}
        .hidden {tag}_thunk_{i}
{tag}_thunk_{i}:
        endbr64
        mov ${i}, %r11
        jmp {tag}_common""")
    out.append(_COMMON.format(tag=tag))
    out.append('        .section .note.GNU-stack,"",@progbits')
    return "\n".join(out) + "\n"


def table(tag: str, soname: str, functions: list[tuple[str, str | None]]) -> str:
    def c(s: str | None) -> str:
        return "NULL" if s is None else '"' + s + '"'

    thunks = "".join(f"extern char {tag}_thunk_{i}[];\n" for i in range(len(functions)))
    return (
        f"#define HS_LAZY(x) {tag}_##x\n"
        f"static const char hs_lazy_soname[] = {c(soname)};\n"
        f"static const char *const hs_lazy_names[] = {{ {', '.join(c(n) for n, _ in functions)} }};\n"
        f"static const char *const hs_lazy_versions[] = {{ {', '.join(c(v) for _, v in functions)} }};\n"
        f"{thunks}"
        f'__attribute__((visibility("hidden"))) void *{tag}_slots[] = {{ '
        f"{', '.join(f'{tag}_thunk_{i}' for i in range(len(functions)))} }};\n"
    )


def build(program: Path, library: Path, soname: str, out: Path, cc: str = "cc") -> tuple[Path, int]:
    """Writes and compiles the stubs into OUT/lib<name>-lazy.a; returns it and the function count."""
    if platform.machine() != "x86_64":
        raise HeadstartError(f"lazy stubs are built for x86-64 only so far, not {platform.machine()}")
    if shutil.which(cc) is None:
        raise HeadstartError(f"no C compiler {cc!r} to build the stubs with")
    functions = imported_functions(program, library)
    if not functions:
        raise HeadstartError(f"{program} calls no function of {soname}: nothing to stub")
    out.mkdir(parents=True, exist_ok=True)
    tag = tag_of(soname)
    (out / "stubs-x86_64.S").write_text(assembly(tag, functions))
    (out / "table.h").write_text(table(tag, soname, functions))
    archive = out / f"lib{soname.split('.so')[0].removeprefix('lib')}-lazy.a"
    try:
        subprocess.run([cc, "-c", str(out / "stubs-x86_64.S"), "-o", str(out / "stubs.o")],
                       check=True, capture_output=True, text=True)  # fmt: skip
        flags = ["-c", "-O2", "-fPIC", "-Wall", "-Werror", f'-DHS_LAZY_TABLE="{out / "table.h"}"']
        subprocess.run([cc, *flags, str(RESOLVER), "-o", str(out / "resolver.o")], check=True, capture_output=True,
                       text=True)  # fmt: skip
        archive.unlink(missing_ok=True)
        subprocess.run(["ar", "rcs", str(archive), str(out / "stubs.o"), str(out / "resolver.o")],
                       check=True, capture_output=True, text=True)  # fmt: skip
    except subprocess.CalledProcessError as e:
        raise HeadstartError(f"building the stubs failed: {(e.stderr or '').strip().splitlines()[-1:]}") from e
    return archive, len(functions)
