"""headstart check: whether headstartd serves each program, in which modes, or why it sends it to exec.

The daemon is the authority: this asks `headstartd --check` (headstart/verdicts.py), which judges each
program with the daemon's own code (the rules, the library preloading and the binding plan).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from headstart.benchmark.program_list import MAX_LIST_BYTES
from headstart.errors import HeadstartError, UsageError
from headstart.inputfile import read_text
from headstart.reporters import check
from headstart.reporters.progress import progress
from headstart.verdicts import judge_many, programs_in_dir, programs_listed, programs_of_package

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
    p.add_argument("programs", nargs="*", metavar="PROGRAM", help="a path, or a name looked up on PATH")
    p.add_argument("--dir", action="append", default=[], type=Path, metavar="DIR",
                   help="every ELF program directly in DIR (repeatable)")  # fmt: skip
    p.add_argument("--package", action="append", default=[], metavar="PKG",
                   help="the ELF programs an installed Debian package put in bin/ or sbin/ (repeatable)")  # fmt: skip
    p.add_argument("--list", metavar="FILE",
                   help="programs, one a line ('-': standard input; # starts a comment)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="one JSON object per program, as headstartd gives it")
    p.add_argument(
        "--verbose",
        action="store_true",
        help="also print what headstartd logged while it judged (its reasons are in the table)",
    )


def _list_text(name: str) -> str:
    """The --list file ('-': standard input), read as bench reads its @FILE: UTF-8 and bounded (a binary
    file was a UnicodeDecodeError's traceback, and /dev/zero was read until memory ran out)."""
    try:
        return read_text(Path("/dev/stdin" if name == "-" else name), MAX_LIST_BYTES)
    except HeadstartError as e:
        raise UsageError(f"--list {name}: {e}") from e


def programs_from(args: argparse.Namespace) -> list[str]:
    programs = list(args.programs)
    for folder in args.dir:
        programs += programs_in_dir(folder)
    for name in args.package:
        programs += programs_of_package(name)
    if args.list:
        programs += programs_listed(_list_text(args.list).splitlines())
    if not programs and (args.dir or args.package or args.list):
        where = [
            *(str(d) for d in args.dir),
            *(f"package {p}" for p in args.package),
            *(["the list"] if args.list else []),
        ]
        raise HeadstartError(f"no program in {', '.join(where)}: nothing to check")
    if not programs:
        raise UsageError("no program to check: give PROGRAM, --dir, --package or --list")
    return list(dict.fromkeys(programs))


def run(args: argparse.Namespace) -> int:
    programs = programs_from(args)
    with progress() as bars:
        task = bars.add_task("headstartd --check", total=len(programs))
        verdicts, messages = judge_many(programs, lambda n: bars.advance(task, n))
    if args.verbose and messages.strip():
        print(messages.strip(), file=sys.stderr)
    if args.json:
        check.render_json(verdicts, sys.stdout)
    else:
        check.render(verdicts, sys.stdout)
        if len(verdicts) > 1:
            check.render_summary(verdicts, sys.stdout)
    check.render_missing(verdicts, sys.stderr)
    return 0 if all(v["mode"] != "exec" for v in verdicts) else 1
