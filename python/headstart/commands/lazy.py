"""headstart lazy: which of a program's libraries could be loaded on first use (docs/lazy.md).

`headstart lazy plan PROFILE.json...` reads launch profiles (`headstart profile -o`, ready at the
point that matters) and lists the program's direct dependencies that nothing used before ready,
with what forbids deferring each. `headstart lazy build` makes the stubs that defer one of them: an
archive to relink the program with, or a drop-in library for the unmodified program.
`headstart lazy check` times cold launches with and without them, alternately."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from headstart.commands._launch_args import add_launch_arguments, add_read_ahead_argument, launch_options
from headstart.commands._regex import check_runs
from headstart.errors import HeadstartError, UsageError
from headstart.jsonfile import read_json
from headstart.lazy.build import build
from headstart.lazy.compare import compare
from headstart.lazy.elf_facts import read_facts
from headstart.lazy.plan import host_path, plan
from headstart.ordering.check import check
from headstart.profiling.program import resolve_program
from headstart.relocations import closure
from headstart.reporters import json_out
from headstart.reporters.lazy import render_built, render_check, render_plan

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
    ch = sub.add_parser("check", help="cold time to ready and objects loaded by then, with the stubs and without")
    with_stubs = ch.add_mutually_exclusive_group(required=True)
    with_stubs.add_argument("--drop-in", type=Path, metavar="DIR", help="run the program with LD_LIBRARY_PATH=DIR")
    with_stubs.add_argument("--after", type=Path, metavar="PROGRAM", help="the build relinked with the stubs")
    ch.add_argument("--runs", type=int, default=10, help="cold launches of each (default 10)")
    add_read_ahead_argument(ch)
    ch.add_argument("--json", action="store_true", help="print the result as JSON")
    add_launch_arguments(ch)


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = read_json(path, "profile")
    return data


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
    render_built(built, count, args.library, args.drop_in, sys.stdout)
    return 0


def run_check(args: argparse.Namespace) -> int:
    check_runs(args.runs)
    if args.drop_in and not any(args.drop_in.glob("*.so*")):
        # LD_LIBRARY_PATH with nothing in it runs the program as it is: a result, but not of the stubs.
        what = "holds no library" if args.drop_in.is_dir() else "is not a directory"
        raise UsageError(f"--drop-in {args.drop_in} {what}: give the DIR of `headstart lazy build --drop-in -o DIR`")
    eager = launch_options(args, resolve_program(args.command, loader_env=True))  # the probe; LD_LIBRARY_PATH
    if args.drop_in:
        _check_drop_in_applies(args.drop_in, Path(eager.argv[0]))
    if args.after:
        lazy = replace(
            eager, argv=[*resolve_program(["--", str(args.after.absolute())], loader_env=True), *eager.argv[1:]]
        )
    else:
        path = ":".join(p for p in (str(args.drop_in.resolve()), os.environ.get("LD_LIBRARY_PATH")) if p)
        lazy = replace(eager, env={"LD_LIBRARY_PATH": path})
    result = compare(check([eager, lazy], args.runs, args.read_ahead_kb))
    if args.json:
        json_out.write(result.data, sys.stdout)
    else:
        render_check(result, sys.stdout)
    return 0


def _check_drop_in_applies(drop_in: Path, program: Path) -> None:
    """Stubs for a library the program does not load change nothing: timing them would give a ratio
    of noise (curl against a drop-in of another library: 1.33)."""
    loads = {lib.name for lib in closure(program)}
    offered = sorted(p.name for p in drop_in.glob("*.so*"))
    if not loads & set(offered):
        raise UsageError(
            f"--drop-in {drop_in}: {program.name} loads none of its libraries ({', '.join(offered)}): "
            "its stubs would change nothing"
        )


def run(args: argparse.Namespace) -> int:
    if args.lazy_command == "build":
        return run_build(args)
    if args.lazy_command == "check":
        return run_check(args)
    data = plan([_load(p) for p in args.profiles], args.sysroot)
    if args.json:
        json_out.write(data, sys.stdout)
    else:
        render_plan(data, sys.stdout)
    return 0
