"""headstart lazy: which of a program's libraries could be loaded on first use (docs/lazy.md).

`headstart lazy plan PROFILE.json...` reads launch profiles (`headstart profile -o`, ready at the
point that matters) and lists the program's direct dependencies that nothing used before ready,
with what forbids deferring each. `headstart lazy build` makes the stubs that defer one of them: an
archive to relink the program with, or a drop-in library for the unmodified program."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from headstart.errors import HeadstartError
from headstart.jsonfile import read_json
from headstart.lazy.build import build
from headstart.lazy.elf_facts import read_facts
from headstart.lazy.plan import host_path, plan

NAME = "lazy"
HELP = "list the libraries a program does not use before it is ready, and what forbids deferring each"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="lazy_command", required=True, metavar="COMMAND")
    pl = sub.add_parser("plan", help="the deferrable libraries, from profiles made with `headstart profile -o`")
    pl.add_argument("profiles", nargs="+", type=Path, metavar="PROFILE.json")
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    sysroot_help = "read the files the profiles name under DIR (profiles made on another device)"
    pl.add_argument("--sysroot", type=Path, metavar="DIR", help=sysroot_help)
    bu = sub.add_parser("build", help="stubs deferring one library: an archive to relink with, or a drop-in library")
    bu.add_argument("profiles", nargs="+", type=Path, metavar="PROFILE.json")
    bu.add_argument("--library", required=True, metavar="SONAME", help="the library to defer, as the plan names it")
    bu.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="where the stubs go")
    bu.add_argument(
        "--drop-in",
        action="store_true",
        help="build DIR/SONAME, a stub library the unmodified program finds first with LD_LIBRARY_PATH=DIR",
    )
    bu.add_argument("--sysroot", type=Path, metavar="DIR", help=sysroot_help)
    bu.add_argument("--cc", help="the C compiler (default: cc, or ARCH-linux-gnu-gcc for another machine's program)")


def _load(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict) or "libraries" not in data:
        raise HeadstartError(f"{path}: not a profile written by `headstart profile -o`")
    return data


def render(data: dict[str, Any], console: Console) -> None:
    t = Table(title=f"{Path(data['program'][0]).name}: its libraries before ready ({data['profiles']} profile(s))")
    for col in ("library", "KiB", "bound before ready", "verdict", "why"):
        t.add_column(col, justify="right" if col in ("KiB", "bound before ready") else "left")
    for d in data["dependencies"]:
        why = "; ".join(d["refusals"] + [f"note: {n}" for n in d["notes"]])
        t.add_row(d["soname"], f"{d['size'] / 1024:,.0f}", str(d["bindings_before_ready"]), d["verdict"], why)
    console.print(t)
    console.print(f"deferrable: {data['deferred_bytes'] / 1024:,.0f} KiB not loaded before ready")


def run_build(args: argparse.Namespace) -> int:
    data = plan([_load(p) for p in args.profiles], args.sysroot)
    dep = next((d for d in data["dependencies"] if d["soname"] == args.library), None)
    if dep is None:
        names = ", ".join(d["soname"] for d in data["dependencies"])
        raise HeadstartError(f"{args.library} is not a dependency of the program (it has {names})")
    if dep["verdict"] != "defer":
        raise HeadstartError(f"{args.library} cannot be deferred: {'; '.join(dep['refusals']) or dep['verdict']}")
    library = host_path(dep["path"], args.sysroot)
    if args.drop_in and read_facts(library).constructors:
        # Its constructors would run inside the first call, and may call its own functions, which
        # bind to the drop-in's stubs (loaded first, with the same soname) before they are resolved.
        raise HeadstartError(f"{args.library} has constructors of its own: no drop-in for it (relink instead)")
    program = Path(host_path(str(Path(data["program"][0]).resolve()), args.sysroot))
    built, count = build(program, Path(library), args.library, args.output, runtime_path=dep["path"],
                         drop_in=args.drop_in, cc=args.cc)  # fmt: skip
    loaded = f"{args.library} is then loaded at the first call of one of them"
    if args.drop_in:
        print(f"{count} functions stubbed in {built}: run the program with LD_LIBRARY_PATH={built.parent}; {loaded}")
    else:
        name = args.library.split(".so")[0].removeprefix("lib")
        print(f"{count} functions stubbed in {built}: link with {built} instead of -l{name}; {loaded}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.lazy_command == "build":
        return run_build(args)
    data = plan([_load(p) for p in args.profiles], args.sysroot)
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        render(data, Console(file=sys.stdout, width=160))
    return 0
