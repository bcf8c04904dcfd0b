"""headstart lazy: which of a program's libraries could be loaded on first use (docs/lazy.md).

`headstart lazy plan PROFILE.json...` reads launch profiles (`headstart profile -o`, ready at the
point that matters) and lists the program's direct dependencies that nothing used before ready,
with what forbids deferring each. The stubs that would defer them are not built yet."""

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
from headstart.lazy.plan import plan

NAME = "lazy"
HELP = "list the libraries a program does not use before it is ready, and what forbids deferring each"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="lazy_command", required=True, metavar="COMMAND")
    pl = sub.add_parser("plan", help="the deferrable libraries, from profiles made with `headstart profile -o`")
    pl.add_argument("profiles", nargs="+", type=Path, metavar="PROFILE.json")
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    bu = sub.add_parser("build", help="a stub archive deferring one library, to relink the program with (x86-64)")
    bu.add_argument("profiles", nargs="+", type=Path, metavar="PROFILE.json")
    bu.add_argument("--library", required=True, metavar="SONAME", help="the library to defer, as the plan names it")
    bu.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="where the stubs and archive go")
    bu.add_argument("--cc", default="cc", help="the C compiler (default cc)")


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
    data = plan([_load(p) for p in args.profiles])
    dep = next((d for d in data["dependencies"] if d["soname"] == args.library), None)
    if dep is None:
        names = ", ".join(d["soname"] for d in data["dependencies"])
        raise HeadstartError(f"{args.library} is not a dependency of the program (it has {names})")
    if dep["verdict"] != "defer":
        raise HeadstartError(f"{args.library} cannot be deferred: {'; '.join(dep['refusals']) or dep['verdict']}")
    archive, count = build(Path(data["program"][0]), Path(dep["path"]), args.library, args.output, args.cc)
    name = args.library.split(".so")[0].removeprefix("lib")
    print(
        f"{count} functions stubbed in {archive}: link with {archive} instead of -l{name}; "
        f"{args.library} is then loaded at the first call of one of them"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    if args.lazy_command == "build":
        return run_build(args)
    data = plan([_load(p) for p in args.profiles])
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        render(data, Console(file=sys.stdout, width=160))
    return 0
