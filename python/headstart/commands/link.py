"""headstart link: what the loader does for each object of a program launched by exec, and the
link-time changes that would cut it, each where its conditions hold (docs/linking.md).

`headstart link PROGRAM ARGS...` launches the program by exec: once under the loader's own account
(LD_DEBUG=bindings,statistics) and --runs times under the probe, alternately with LD_BIND_NOW=1.
`headstart link check` relinks our samples with the advice applied, in a folder of its own, and times
exec launches of both builds to main, alternating, with the daemon's warm mode beside them;
`headstart link check --after BUILD -- PROGRAM ARGS` does the same for two builds of yours."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from headstart import binaries
from headstart.commands._regex import check_runs, regex, seconds
from headstart.errors import UsageError
from headstart.link.analysis import analyse
from headstart.link.check import check_builds, check_samples
from headstart.link.relink import SAMPLES
from headstart.profiling.program import resolve_program
from headstart.reporters import json_out
from headstart.reporters.link import render, render_check

NAME = "link"
HELP = "what the loader does for each object of an exec'd launch, and the link changes that would cut it"
DEFAULT_SAMPLES = ["many-globals", "catalog", "gtk-hello", "qt-widgets"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, help="timed launches (default 10; link check: 100 of each)")
    p.add_argument(
        "--ready",
        type=regex,
        metavar="REGEX",
        help="ready at a line of output matching REGEX (default: exit); the program is stopped there",
    )
    p.add_argument("--timeout", type=seconds, default=60.0, help="seconds a launch may take (default 60)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--samples",
        metavar="NAMES",
        help=f"link check: the samples, comma-separated (default {','.join(DEFAULT_SAMPLES)}; of {', '.join(SAMPLES)})",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="DIR",
        help="link check: the folder of the relinked builds (default: link-check in the build folder)",
    )
    p.add_argument(
        "--after",
        type=Path,
        metavar="PROGRAM",
        help="link check: your relinked build, timed against PROGRAM (the build before)",
    )
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="PROGRAM ARGS... | check",
        help="the program to analyse, or `check`",
    )


def run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if command[:1] == ["check"]:
        # Options may come after `check` too (REMAINDER took them): parsed again, over those before it.
        again = argparse.ArgumentParser(prog="headstart link check")
        add_arguments(again)
        later = again.parse_args(command[1:])
        for key, value in vars(later).items():
            if key != "command" and value != again.get_default(key):
                setattr(args, key, value)
        return _check(args, later.command)
    if args.samples or args.output or args.after:
        raise UsageError("--samples, --output and --after are for `headstart link check`")
    runs = 10 if args.runs is None else args.runs
    check_runs(runs)
    argv = resolve_program(command, loader_env=True)
    data = analyse(argv, args.ready, args.timeout, runs)
    if args.json:
        json_out.write(data, sys.stdout)
    else:
        render(data, sys.stdout)
    return 0


def _check(args: argparse.Namespace, rest: list[str]) -> int:
    runs = 100 if args.runs is None else args.runs  # `--runs 10` ran 100: it looked like the default
    check_runs(runs)  # given after `check`, it was not checked at all: 0 reached launch-timer
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if args.after:
        if not rest:
            raise UsageError("link check --after BUILD needs the build before: -- PROGRAM ARGS")
        if not args.after.is_file():
            raise UsageError(f"--after {args.after}: no such file")
        data = check_builds(resolve_program(rest, loader_env=True), args.after, args.ready, args.timeout, runs)
    else:
        if rest:
            raise UsageError("link check relinks our samples (--samples); for your own builds give --after BUILD")
        names = args.samples.split(",") if args.samples else DEFAULT_SAMPLES
        unknown = [n for n in names if n not in SAMPLES]
        if unknown:
            raise UsageError(f"--samples: {', '.join(unknown)}: not a sample (of {', '.join(SAMPLES)})")
        build = binaries.apps_build_dir()
        folder = (args.output or build / "link-check").resolve()
        data = check_samples(names, build, folder, runs, 5, args.timeout)
    if args.json:
        json_out.write(data, sys.stdout)
    else:
        render_check(data, sys.stdout)
    return 0
