"""An order written for a linker, with the flags that use it.

- lld: `--symbol-ordering-file`, one symbol name a line. mold has no such option (rui314/mold#1231,
  open; mold 1.10 in Debian 12 refuses it): asked for mold, emit says so.
- gold: `--section-ordering-file`, one input section a line (`.text.NAME` with -ffunction-sections).
- GNU ld 2.43 and later: `--section-ordering-file`, a SECTIONS fragment placing those sections
  first in `.text`.
- GNU ld before 2.43 (Debian 12 has 2.40): the linker's own default script (`ld --verbose`, for a
  PIE or not) with those sections placed first in `.text`, given with -T.

GCC puts a function NAME in `.text.NAME`, or `.text.unlikely.NAME`, `.text.startup.NAME`,
`.text.hot.NAME` when it guesses how often it runs; every variant is named, so that the order holds
whatever the guess."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from headstart.errors import HeadstartError

LINKERS = ("lld", "gold", "gnu-ld", "gnu-ld-2.43", "mold")
COMPILE_FLAGS = "-ffunction-sections"
_VARIANTS = ("", "unlikely.", "startup.", "hot.")
_TEXT_OPENS = "*(.text.unlikely .text.*_unlikely .text.unlikely.*)"


def match_names(names: list[str], defined: list[str]) -> tuple[list[str], list[str]]:
    """The names as the release build has them, and those it has not. GCC renames what it clones
    or splits (foo.isra.0, foo.constprop.0, foo.part.0): each such function stands where its name
    does; a foo.cold part (code GCC judged unlikely) is left where it is."""
    exact = set(defined)
    variants: dict[str, list[str]] = {}
    for d in defined:
        base, dot, rest = d.partition(".")
        if dot and not rest.startswith("cold"):
            variants.setdefault(base, []).append(d)
    kept, missing = [], []
    for n in names:
        found = ([n] if n in exact else []) + sorted(variants.get(n, []))
        kept += found
        if not found:
            missing.append(n)
    return list(dict.fromkeys(kept)), missing


@dataclass
class Emitted:
    text: str
    link_flags: str  # FILE stands for where the text is written


def _sections(name: str) -> str:
    return " ".join(f".text.{v}{name}" for v in _VARIANTS)


def default_script(pie: bool) -> str:
    """GNU ld's built-in script for this kind of link, as `ld --verbose` prints it."""
    ld = shutil.which("ld.bfd") or shutil.which("ld")
    if ld is None:
        raise HeadstartError("GNU ld is not installed (binutils)")
    args = [ld, "--verbose", *(["-pie"] if pie else []), "-z", "relro"]
    out = subprocess.run(args, capture_output=True, text=True, check=False).stdout
    parts = out.split("==================================================")
    if len(parts) < 3 or _TEXT_OPENS not in parts[1]:
        raise HeadstartError(f"{ld} --verbose printed no default script with a .text section to order")
    return parts[1].strip("\n") + "\n"


def emit(names: list[str], linker: str, pie: bool = True) -> Emitted:
    if linker == "lld":
        return Emitted("".join(f"{n}\n" for n in names), "-fuse-ld=lld -Wl,--symbol-ordering-file=FILE")
    if linker == "mold":
        raise HeadstartError(
            "mold cannot order functions: it has no --symbol-ordering-file (rui314/mold#1231); "
            "link the ordered build with lld, gold or GNU ld"
        )
    if linker == "gold":
        text = "".join(f".text.{v}{n}\n" for n in names for v in _VARIANTS)
        return Emitted(text, "-fuse-ld=gold -Wl,--section-ordering-file=FILE")
    placed = "".join(f"    *({_sections(n)})\n" for n in names)
    if linker == "gnu-ld-2.43":
        return Emitted(f".text : {{\n{placed}}}\n", "-fuse-ld=bfd -Wl,--section-ordering-file=FILE")
    if linker == "gnu-ld":
        script = default_script(pie)
        return Emitted(
            script.replace(_TEXT_OPENS, placed.lstrip() + "    " + _TEXT_OPENS, 1), "-fuse-ld=bfd -Wl,-T,FILE"
        )
    raise HeadstartError(f"unknown linker {linker!r}: choose from {', '.join(LINKERS)}")
