"""headstart order: pack the functions a launch runs into few pages (docs/ordering.md).

`record` writes which functions a launch runs, in order; `emit` writes that order for a linker;
`check` counts the text pages a cold launch touches and times cold launches, before and after."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from headstart.commands._launch_args import add_launch_arguments, add_read_ahead_argument, launch_options
from headstart.errors import HeadstartError, UsageError
from headstart.jsonfile import read_json
from headstart.ordering.check import check
from headstart.ordering.emit import COMPILE_FLAGS, LINKERS, emit
from headstart.ordering.record import record
from headstart.ordering.symbols import load
from headstart.profiling.program import resolve_program

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


def run_emit(args: argparse.Namespace) -> int:
    chosen = _pick_object(_load_order(args.order), args.object)
    names = chosen["functions"]
    if args.match:
        names, missing = match_names(names, [f.name for f in load(str(args.match)).functions])
        found = len(chosen["functions"]) - len(missing)
        print(f"{found} of {len(chosen['functions'])} names are functions of {args.match}", file=sys.stderr)
        if missing:
            shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
            print(f"not in it (inlined or renamed in this build), left out: {shown}", file=sys.stderr)
    emitted = emit(names, args.linker, pie=not args.no_pie)
    _write(emitted.text, args.output)
    where = str(args.output) if args.output else "FILE"
    print(f"compile with {COMPILE_FLAGS}; link with {emitted.link_flags.replace('FILE', where)}", file=sys.stderr)
    return 0


def run_record(args: argparse.Namespace) -> int:
    if args.runs < 1:
        raise UsageError("--runs must be at least 1")
    data = record(launch_options(args, resolve_program(args.command)), args.runs, args.pages)
    _write(json.dumps(data, indent=1) + "\n", args.output)
    counts = ", ".join(f"{len(o['functions'])} in {Path(o['path']).name}" for o in data["objects"])
    print(f"{data['method']}: {counts or 'no function'} -> {args.output}", file=sys.stderr)
    return 0


def render_check(data: dict[str, Any], console: Console) -> None:
    t = Table(title=f"Cold launches: startup text pages and time to ready ({data['runs']} each, alternately)")
    for col in ("build", "object", "text pages", "touched", "cold ms to ready"):
        t.add_column(col, justify="left" if col in ("build", "object") else "right")
    for b in data["builds"]:
        ms = b["cold_ready_ms"]
        for i, o in enumerate(b["objects"]):
            first = i == 0
            t.add_row(
                Path(b["program"][0]).name if first else "",
                Path(o["path"]).name,
                str(o["text_pages"]),
                str(o["touched"]) + ("" if b["exact"] else " ~"),
                f"{ms['median']:.1f} ({ms['p10']:.1f}-{ms['p90']:.1f})" if first else "",
            )
        t.add_section()
    console.print(t)
    if not all(b["exact"] for b in data["builds"]):
        console.print("~ not root: counted with readahead on, so up to a fault-around block (64 KiB) per touch")


def run_check(args: argparse.Namespace) -> int:
    if args.runs < 1:
        raise UsageError("--runs must be at least 1")
    argv = resolve_program(args.command)
    builds = [launch_options(args, argv)]
    if args.after:
        builds.append(launch_options(args, [*resolve_program(["--", str(args.after.absolute())]), *argv[1:]]))
    data = check(builds, args.runs, args.read_ahead_kb)
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        render_check(data, Console(file=sys.stdout, width=140))
    return 0


def run(args: argparse.Namespace) -> int:
    return {"record": run_record, "emit": run_emit, "check": run_check}[args.order_command](args)
