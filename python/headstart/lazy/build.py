"""`headstart lazy build`: stubs that defer one library to its first call, in one of two forms.

- An archive to relink a program built here with, instead of the library: the program no longer
  needs it at start, and the stubs, linked into it, dlopen it by its soname at the first call.
- A drop-in: a small shared library with the library's soname and the versions the program binds
  to, found first through LD_LIBRARY_PATH by the unmodified program; its stubs dlopen the real
  library by its full path at the first call.

The stubs take the functions the program imports from the library, each with the version it binds
to (assembly.py); the resolver (resolver.c) fills their slots at the first call. The machine is the
program's (x86-64 or aarch64); another machine's is built with its cross compiler."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from pathlib import Path

from elftools.elf.elffile import ELFFile

from headstart.errors import HeadstartError
from headstart.lazy.assembly import WRITERS, stubs
from headstart.lazy.elf_facts import LAZY_SECTION, read_facts

RESOLVER = Path(__file__).with_name("resolver.c")
MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64"}
Functions = list[tuple[str, str | None]]  # name, version


def arch_of(path: Path) -> str:
    with open(path, "rb") as f:
        machine = ELFFile(f)["e_machine"]
    if machine not in MACHINES:
        raise HeadstartError(f"{path}: lazy stubs are built for {' and '.join(WRITERS)}, not {machine}")
    return MACHINES[machine]


def default_cc(arch: str) -> str:
    return "cc" if arch == platform.machine() else f"{arch}-linux-gnu-gcc"


def imported_functions(program: Path, library: Path) -> Functions:
    """The functions program imports that library defines, with the version each binds to."""
    lib = read_facts(str(library))
    soname = lib.soname or library.name
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
            if sym["st_shndx"] == "SHN_UNDEF" and sym["st_info"]["type"] == "STT_FUNC" and sym.name in lib.defined:
                ndx = versym.get_symbol(i)["ndx"] if versym else 0
                found.append((sym.name, versions.get(ndx) if isinstance(ndx, int) else None))
    return sorted(found)


def exported_functions(library: Path) -> Functions:
    """The functions library exports, each under its default version (none for an unversioned one)."""
    with open(library, "rb") as f:
        elf = ELFFile(f)
        names: dict[int, str] = {}
        verdef = elf.get_section_by_name(".gnu.version_d")
        for definition, auxes in verdef.iter_versions() if verdef else []:
            if definition["vd_ndx"] > 1:  # 1 is the file's own name, which no symbol is bound to
                names[definition["vd_ndx"]] = next(iter(auxes)).name
        versym = elf.get_section_by_name(".gnu.version")
        dynsym = elf.get_section_by_name(".dynsym")
        found = []
        for i, sym in enumerate(dynsym.iter_symbols() if dynsym else []):
            info = sym["st_info"]
            if (sym["st_shndx"] == "SHN_UNDEF" or info["type"] not in ("STT_FUNC", "STT_GNU_IFUNC")
                    or info["bind"] == "STB_LOCAL" or sym["st_other"]["visibility"] != "STV_DEFAULT"
                    or sym.name in ("", "_init", "_fini")):  # fmt: skip
                continue
            ndx = versym.get_symbol(i)["ndx"] if versym else 0
            if isinstance(ndx, int) and ndx & 0x8000:  # an older version kept for old programs: not the default
                continue
            found.append((sym.name, names.get(ndx) if isinstance(ndx, int) else None))
    return sorted(found)


def tag_of(soname: str) -> str:
    return "hs_lazy_" + re.sub(r"[^A-Za-z0-9]", "_", soname)


def table(tag: str, soname: str, target: str, functions: Functions) -> str:
    """The C table resolver.c is compiled with: what to dlopen, the names, versions and slots."""

    def c(s: str | None) -> str:
        return "NULL" if s is None else '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    thunks = "".join(f"extern char {tag}_thunk_{i}[];\n" for i in range(len(functions)))
    return (
        f"#define HS_LAZY(x) {tag}_##x\n"
        f'__attribute__((used, section("{LAZY_SECTION}"))) static const char hs_lazy_soname[] = {c(soname)};\n'
        f"static const char hs_lazy_target[] = {c(target)};\n"
        f"static const char *const hs_lazy_names[] = {{ {', '.join(c(n) for n, _ in functions)} }};\n"
        f"static const char *const hs_lazy_versions[] = {{ {', '.join(c(v) for _, v in functions)} }};\n"
        f"{thunks}"
        f'__attribute__((visibility("hidden"))) void *{tag}_slots[] = {{ '
        f"{', '.join(f'{tag}_thunk_{i}' for i in range(len(functions)))} }};\n"
    )


def version_script(functions: Functions) -> str:
    """Each stub under the version the program binds it to, so that the loader's version check of
    the drop-in passes; unversioned ones go with the first node. Nothing else is exported."""
    nodes: dict[str | None, list[str]] = {}
    for name, version in functions:
        nodes.setdefault(version, []).append(name)
    versioned = [v for v in nodes if v is not None]
    if not versioned:
        return "{ global: " + " ".join(f"{n};" for n in nodes[None]) + " local: *; };\n"
    out = []
    for i, version in enumerate(versioned):
        names = nodes[version] + (nodes.get(None, []) if i == 0 else [])
        local = " local: *;" if i == 0 else ""
        out.append(f"{version} {{ global: {' '.join(f'{n};' for n in names)}{local} }};")
    return "\n".join(out) + "\n"


def _run(cmd: list[str]) -> None:
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        lines = (e.stderr or "").strip().splitlines()
        said = next((line for line in lines if "error" in line), lines[-1] if lines else "no message")
        raise HeadstartError(f"building the stubs failed ({cmd[0]}): {said}") from e


def build(
    program: Path, library: Path, soname: str, out: Path, *, runtime_path: str, drop_in: bool, cc: str | None = None
) -> tuple[Path, int]:
    """Writes and compiles the stubs into OUT: lib<name>-lazy.a, or, as a drop-in, OUT/<soname>.
    library is the file read here; runtime_path is where the drop-in finds it on the device.
    Returns what was built and the number of functions stubbed."""
    arch = arch_of(program)
    cc = cc or default_cc(arch)
    if shutil.which(cc) is None:
        raise HeadstartError(f"no C compiler {cc!r} to build the {arch} stubs with (--cc names one)")
    functions = imported_functions(program, library)
    if not functions:
        raise HeadstartError(f"{program} calls no function of {soname}: nothing to stub")
    if drop_in:
        # Found first by the soname, the drop-in stands for the library for every object of the
        # process: a plugin loaded later binds to it whatever it calls.
        imported = {name for name, _ in functions}
        functions = sorted(functions + [f for f in exported_functions(library) if f[0] not in imported])
    out = out.resolve()  # the table is included by its path, from resolver.c's folder
    if out.exists() and not out.is_dir():
        raise HeadstartError(f"-o {out}: not a directory (the stubs' sources and library go into one)")
    out.mkdir(parents=True, exist_ok=True)
    tag = tag_of(soname)
    source = out / f"stubs-{arch}.S"
    source.write_text(stubs(arch, tag, [n for n, _ in functions]))
    (out / "table.h").write_text(table(tag, soname, runtime_path if drop_in else soname, functions))
    flags = ["-O2", "-fPIC", "-Wall", "-Werror", f'-DHS_LAZY_TABLE="{out / "table.h"}"']
    if drop_in:
        (out / "stubs.map").write_text(version_script(functions))
        built = out / soname
        _run([cc, "-shared", *flags, str(source), str(RESOLVER), "-o", str(built), f"-Wl,-soname,{soname}",
              f"-Wl,--version-script={out / 'stubs.map'}", "-Wl,-z,noexecstack", "-pthread", "-ldl"])  # fmt: skip
        return built, len(functions)
    built = out / f"lib{soname.split('.so')[0].removeprefix('lib')}-lazy.a"
    _run([cc, "-c", str(source), "-o", str(out / "stubs.o")])
    _run([cc, "-c", *flags, str(RESOLVER), "-o", str(out / "resolver.o")])
    built.unlink(missing_ok=True)
    ar = "ar" if arch == platform.machine() else f"{arch}-linux-gnu-ar"
    _run([ar, "rcs", str(built), str(out / "stubs.o"), str(out / "resolver.o")])
    return built, len(functions)
