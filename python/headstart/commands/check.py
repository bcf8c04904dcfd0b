"""headstart check: whether headstartd serves each program, in which modes, or why it sends it to exec.

The daemon is the authority: this asks `headstartd --check`, which judges each program with the
daemon's own code (the rules, the library preloading and the binding plan), in a child of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from headstart import binaries
from headstart.errors import HeadstartError

NAME = "check"
HELP = "say whether headstartd serves each program (and in which modes) or sends it to exec, and why"
# Like test(1) and grep -q, for scripts: `if headstart check PROGRAM; then ...`.
EXIT_STATUS = (
    "exit status: 0 when headstartd serves every program given; 1 when it serves only some or none of them "
    "(it sends the others to exec, or cannot find them: each has its verdict and why), or when the check "
    "could not be made; 2 on a usage error"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EXIT_STATUS
    p.add_argument("programs", nargs="+", metavar="PROGRAM", help="a path, or a name looked up on PATH")
    p.add_argument("--json", action="store_true", help="one JSON object per program, as headstartd gives it")


def judge(programs: list[str]) -> tuple[list[dict[str, Any]], str]:
    """The daemon's verdicts, and what it said on stderr (libraries it had trouble with)."""
    daemon = binaries.find("headstartd")
    # A path is bytes, not always UTF-8: headstartd writes it back as it is, and surrogateescape
    # keeps those bytes as Python keeps them in sys.argv.
    p = subprocess.run([str(daemon), "--check", *programs], capture_output=True, text=True, errors="surrogateescape")
    verdicts = []
    for line in p.stdout.splitlines():
        try:
            verdicts.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise HeadstartError(f"headstartd --check wrote something that is not JSON: {line!r}") from e
    if len(verdicts) != len(programs):
        raise HeadstartError(
            f"headstartd --check judged {len(verdicts)} of {len(programs)} programs: {p.stderr.strip()}"
        )
    return verdicts, p.stderr


def shown(text: str) -> str:
    """A path (or a reason naming one) for the terminal: a byte that is not UTF-8 as \\xff."""
    return os.fsencode(text).decode(errors="backslashreplace")


def print_table(verdicts: list[dict[str, Any]]) -> None:
    table = Table(show_lines=False)
    table.add_column("program")
    table.add_column("served")
    table.add_column("why")
    for v in verdicts:
        if v["mode"] == "exec":
            served, why = "[red]no, exec[/red]", v["reason"]
        elif v["mode"] == "warm":
            served, why = "[green]preload, warm[/green]", ""
        else:
            served, why = "[yellow]preload[/yellow]", f"not warm: {v['warm_reason']}"
        table.add_row(Text(shown(v.get("path") or v["program"])), served, Text(shown(why)))
    Console().print(table)


def run(args: argparse.Namespace) -> int:
    verdicts, messages = judge(args.programs)
    if messages.strip():
        print(messages.strip(), file=sys.stderr)
    if args.json:
        for v in verdicts:
            print(json.dumps(v))
    else:
        print_table(verdicts)
        served = sum(v["mode"] != "exec" for v in verdicts)
        print(f"{served} of {len(verdicts)} served; any served program can also start from a pool (--pool N)")
    missing = [v["program"] for v in verdicts if v.get("path") is None]
    for name in missing:
        print(f"headstart: cannot find {shown(name)}: give a path or put it on PATH", file=sys.stderr)
    return 0 if all(v["mode"] != "exec" for v in verdicts) else 1
