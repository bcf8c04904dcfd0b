"""headstart order: pack the functions a launch runs into few pages (docs/ordering.md).

`record` writes which functions a launch runs, in order; `emit` writes that order for a linker;
`check` counts the text pages a cold launch touches and times cold launches, before and after."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from headstart.commands._launch_args import add_launch_arguments, add_read_ahead_argument, launch_options
from headstart.commands._regex import check_runs
from headstart.errors import HeadstartError
from headstart.jsonfile import read_json
from headstart.ordering.check import check
from headstart.ordering.emit import LINKERS, emit, match_names
from headstart.ordering.record import record
from headstart.ordering.symbols import load
from headstart.profiling.program import resolve_program
from headstart.reporters import json_out
from headstart.reporters.order import render_check, render_flags, render_matched, render_recorded

NAME = "order"
HELP = "order a program's startup functions together: record them, write the order for a linker, check it"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="order_command", required=True, metavar="COMMAND")
    rec = sub.add_parser("record", help="record the functions a launch runs up to ready, in order")
    rec.add_argument("--runs", type=int, default=3, help="launches to merge (default 3)")
    rec.add_argument(
        "--pages",
        action="store_true",
        help="the build is not instrumented: take the functions in the text pages a cold launch touches",
    )
    rec.add_argument("-o", "--output", type=Path, required=True, help="the order (JSON)")
    add_launch_arguments(rec)
    em = sub.add_parser("emit", help="write a recorded order for a linker")
    em.add_argument("order", type=Path, metavar="ORDER.json")
    em.add_argument("--linker", required=True, choices=LINKERS)
    em.add_argument("--object", help="the object to order, by path or file name (default: the program)")
    em.add_argument("--match", type=Path, metavar="BINARY", help="keep only names this build defines; say how many")
    em.add_argument("--no-pie", action="store_true", help="gnu-ld: the script for a link without -pie")
    em.add_argument("-o", "--output", type=Path, help="the order file (default: standard output)")
    ch = sub.add_parser("check", help="text pages a cold launch touches and cold time to ready, before and after")
    ch.add_argument("--after", type=Path, metavar="PROGRAM", help="another build, launched with the same arguments")
    ch.add_argument("--runs", type=int, default=10, help="cold launches of each build (default 10)")
    add_read_ahead_argument(ch)
    ch.add_argument("--json", action="store_true", help="print the result as JSON")
    add_launch_arguments(ch)


def _write(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text)
    except OSError as e:
        raise HeadstartError(f"cannot write {output}: {e.strerror}") from e


def _load_order(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = read_json(path, "order")
    return data


def _pick_object(data: dict[str, Any], wanted: str | None) -> dict[str, Any]:
    objects = data["objects"]
    if not objects:
        raise HeadstartError("the order holds no function")
    program = str(Path(data["program"][0]).resolve())
    for o in objects:
        if (wanted is None and o["path"] == program) or (wanted and wanted in (o["path"], Path(o["path"]).name)):
            return o
    names = ", ".join(Path(o["path"]).name for o in objects)
    raise HeadstartError(f"no object {wanted or program} in the order (it has {names}): choose one with --object")


def run_emit(args: argparse.Namespace) -> int:
    chosen = _pick_object(_load_order(args.order), args.object)
    names = chosen["functions"]
    if args.match:
        names, missing = match_names(names, [f.name for f in load(str(args.match)).functions])
        if not names:
            # An empty order links like none: a stripped build (Debian's programs) or another program.
            raise HeadstartError(
                f"{args.match} defines none of the order's {len(chosen['functions'])} functions: it is stripped "
                "(no symbol table) or not the program recorded; match against the build you link, with its symbols"
            )
        render_matched(len(chosen["functions"]), missing, args.match, sys.stderr)
    emitted = emit(names, args.linker, pie=not args.no_pie)
    _write(emitted.text, args.output)
    render_flags(emitted.link_flags, args.output, sys.stderr)
    return 0


def run_record(args: argparse.Namespace) -> int:
    check_runs(args.runs)
    # --pages reads the launch's memory through the probe (LD_AUDIT), which a secure-mode program ignores.
    data = record(launch_options(args, resolve_program(args.command, loader_env=args.pages)), args.runs, args.pages)
    _write(json_out.text(data), args.output)
    render_recorded(data, args.output, sys.stderr)
    return 0


def run_check(args: argparse.Namespace) -> int:
    check_runs(args.runs)
    argv = resolve_program(args.command, loader_env=True)  # its pages are read through the probe
    builds = [launch_options(args, argv)]
    if args.after:
        after = resolve_program(["--", str(args.after.absolute())], loader_env=True)
        builds.append(launch_options(args, [*after, *argv[1:]]))
    data = check(builds, args.runs, args.read_ahead_kb)
    if args.json:
        json_out.write(data, sys.stdout)
    else:
        render_check(data, sys.stdout)
    return 0


def run(args: argparse.Namespace) -> int:
    return {"record": run_record, "emit": run_emit, "check": run_check}[args.order_command](args)
