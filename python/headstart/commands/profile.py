"""headstart profile: where one program's launch spends its time, warm and cold.

The launches and what is read from them: headstart/profiling/profiler.py; the tables:
headstart/reporters/profile.py. docs/measuring.md explains each number and its error.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import Any

from headstart.benchmark import via_daemon
from headstart.benchmark.display import private_display_here
from headstart.benchmark.programs import Ready
from headstart.commands._regex import MAX_RUNS, regex, seconds, whole_number, writable_file
from headstart.errors import HeadstartError, UsageError
from headstart.pinning.lockers import pind_running
from headstart.pinning.plan import parse_size
from headstart.profiling import after_main, from_trace
from headstart.profiling.profiler import ProfileOptions, Profiler, Recorded
from headstart.profiling.program import resolve_program
from headstart.reporters import json_out, trace
from headstart.reporters.profile import render
from headstart.reporters.progress import progress

NAME = "profile"
HELP = "profile a program's launches: phases, libraries, relocations, faults, files, pages, memory"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=whole_number(1, MAX_RUNS), default=20, help="launches of each kind (default 20)")
    p.add_argument("--cold", action="store_true", help="also launch with the program's files evicted from the cache")
    p.add_argument("--drop-all", action="store_true", help="with --cold: drop the whole page cache (root)")
    p.add_argument(
        "--pin-plan",
        type=Path,
        metavar="PLAN",
        help="with --cold: also launch cold with headstart-pind keeping this plan's pages locked, alternately",
    )
    p.add_argument("--pin-budget", metavar="SIZE", help="headstart-pind's --budget for --pin-plan (default all)")
    ready = p.add_mutually_exclusive_group()
    ready.add_argument(
        "--ready", type=regex, metavar="REGEX", help="ready when a line of output matches (then stopped)"
    )
    ready.add_argument(
        "--ready-window",
        action="store_true",
        help="ready when its first window shows (then stopped): mapped on $DISPLAY, or its first frame on "
        "$WAYLAND_DISPLAY",
    )
    ready.add_argument("--ready-exit", action="store_true", help="ready when the program exits (the default)")
    p.add_argument("--timeout", type=seconds, default=30.0, help="seconds a launch may take to be ready (default 30)")
    p.add_argument(
        "--display",
        choices=("wayland", "x11"),
        help="run it on a display of its own, as bench does: wayland (a private weston, kiosk shell) or x11 (a "
        "private Xvfb), each with a session bus; default: the session's ($WAYLAND_DISPLAY, $DISPLAY)",
    )
    p.add_argument("--via-daemon", action="store_true", help="also time it through headstartd, side by side")
    p.add_argument("--overhead", action="store_true", help="also time main with and without the probe")
    p.add_argument(
        "--large-read",
        type=whole_number(1, 1 << 40),
        default=1 << 20,
        metavar="BYTES",
        help="flag data files read with read() from this many bytes (default 1 MiB)",
    )
    p.add_argument(
        "--from",
        dest="from_trace",
        type=Path,
        metavar="TRACE",
        help="read a probe trace recorded elsewhere (HEADSTART_PROBE_OUTPUT=TRACE LD_AUDIT=libheadstart-probe.so "
        "PROGRAM on a device) instead of launching",
    )
    p.add_argument("--json", action="store_true", help="print the whole profile as JSON")
    p.add_argument("-o", "--output", type=writable_file, help="write the profile (JSON, for `headstart report`) here")
    p.add_argument(
        "--trace",
        type=writable_file,
        metavar="FILE",
        help="write the launches as a trace for Perfetto (ui.perfetto.dev) or chrome://tracing: Chrome's JSON "
        "trace format, one process per launch (phases, objects mapped, faults) and the strace'd launch's system "
        "calls per thread (docs/traces.md)",
    )
    p.add_argument(
        "--write-preload",
        type=writable_file,
        metavar="FILE",
        help="write the objects loaded after main as headstartd configuration (`preload = PATH` lines)",
    )
    p.add_argument(
        "--gaps",
        type=whole_number(0, 10_000),
        default=after_main.TOP_GAPS,
        metavar="N",
        help=f"after main: show the N longest stretches without a system call (default {after_main.TOP_GAPS})",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS...")


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise HeadstartError(f"cannot write {path}: {e.strerror}") from e


def run(args: argparse.Namespace) -> int:
    if args.from_trace:
        if args.command and args.command != ["--"]:
            raise UsageError("--from reads a recorded launch: give no program")
        return output(args, *from_trace.load(args.from_trace))
    argv = resolve_program(args.command, loader_env=True)
    if args.drop_all and not args.cold:
        raise UsageError("--drop-all goes with --cold")
    if (args.pin_plan or args.pin_budget) and not args.cold:
        raise UsageError("--pin-plan goes with --cold")
    if args.pin_budget and not args.pin_plan:
        raise UsageError("--pin-budget goes with --pin-plan")
    if args.pin_plan and not args.pin_plan.is_file():
        raise UsageError(f"--pin-plan: no such file: {args.pin_plan}")
    budget = parse_size(args.pin_budget, "--pin-budget") if args.pin_budget is not None else None
    options = ProfileOptions(
        argv,
        runs=args.runs,
        ready=args.ready,
        ready_window=args.ready_window,
        timeout=args.timeout,
        cold=args.cold,
        drop_all=args.drop_all,
        pinned=partial(pind_running, args.pin_plan, budget) if args.pin_plan else None,
        overhead=args.overhead,
        large_read=args.large_read,
        gaps=args.gaps,
    )
    with private_display_here(args.display) if args.display else nullcontext(), progress() as bars:
        profiler = Profiler(options, bars)
        profile = profiler.collect()
        if args.via_daemon:
            ready = Ready(args.ready.pattern if args.ready else None, args.ready_window, args.timeout)
            profile["via_daemon"] = via_daemon.measure(argv, args.runs, ready, bars)
    return output(args, profile, profiler.recorded)


def output(args: argparse.Namespace, profile: dict[str, Any], recorded: Recorded) -> int:
    """The profile to the files asked for, and as tables or JSON on stdout."""
    if args.output:
        _write(args.output, json_out.text(profile))
    if args.trace:
        _write(args.trace, trace.text(trace.profile_trace(profile, recorded)))
    if args.write_preload:
        _write(args.write_preload, after_main.preload_lines(profile["after_main"]))
    if args.json:
        json_out.write(profile, sys.stdout)
    else:
        render(profile, sys.stdout)
    return 0
