"""headstart profile: where one program's launch spends its time, warm and cold.

Each timed launch runs under libheadstart-probe.so (LD_AUDIT) with LD_DEBUG=statistics; two more
launches, not timed, give the files it touches (strace) and the symbol bindings per library pair.
docs/measuring.md explains each number and its error.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from headstart.benchmark import suite
from headstart.benchmark.programs import Ready, resolve
from headstart.benchmark.results import program_dict
from headstart.commands._regex import regex
from headstart.errors import HeadstartError, UsageError
from headstart.pinning.lockers import pind_running
from headstart.pinning.plan import parse_size
from headstart.profiling import after_main, files, from_trace, summary
from headstart.profiling.launch import Launch, LaunchOptions
from headstart.profiling.launch import run as launch
from headstart.profiling.program import resolve_program
from headstart.profiling.render import render
from headstart.profiling.timeline import Timeline
from headstart.stats import summarize

ResidentPages = dict[str, int | None]  # per file, its pages in the page cache

NAME = "profile"
LOAD_COST_RUNS = 5  # processes that load the after-main objects apart (load_cost.py)
HELP = "profile a program's launches: phases, libraries, relocations, faults, files, pages, memory"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=20, help="launches of each kind (default 20)")
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
        "--ready-window", action="store_true", help="ready when its first window shows on $DISPLAY (then stopped)"
    )
    ready.add_argument("--ready-exit", action="store_true", help="ready when the program exits (the default)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds a launch may take to be ready (default 30)")
    p.add_argument("--via-daemon", action="store_true", help="also time it through headstartd, side by side")
    p.add_argument("--overhead", action="store_true", help="also time main with and without the probe")
    p.add_argument(
        "--large-read",
        type=int,
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
    p.add_argument("-o", "--output", type=Path, help="write the profile (JSON, for `headstart report`) here")
    p.add_argument(
        "--write-preload",
        type=Path,
        metavar="FILE",
        help="write the objects loaded after main as headstartd configuration (`preload = PATH` lines)",
    )
    p.add_argument(
        "--gaps",
        type=int,
        default=after_main.TOP_GAPS,
        metavar="N",
        help=f"after main: show the N longest stretches without a system call (default {after_main.TOP_GAPS})",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS...")


def _checked(result: Launch, what: str, argv: list[str]) -> Launch:
    if result.exit_status < 0 and not result.stopped_at_ready:
        sig = signal.Signals(-result.exit_status).name
        tail = f": {result.stderr_tail.splitlines()[-1]}" if result.stderr_tail else ""
        raise HeadstartError(f"{argv[0]} was killed by {sig} in the {what} launch{tail}")
    return result


class Profiler:
    def __init__(self, args: argparse.Namespace, argv: list[str], progress: Progress) -> None:
        self.args = args
        self.argv = argv
        self.progress = progress
        self.ready: re.Pattern[str] | None = args.ready
        self.pin_budget = parse_size(args.pin_budget, "--pin-budget") if args.pin_budget else None
        self.pinned_bytes: int | None = None
        kinds = 1 + args.cold + bool(args.pin_plan) + 2 * args.overhead
        self.task = progress.add_task(Path(argv[0]).name, total=args.runs * kinds + 3)

    def _launch(self, what: str, **kw: Any) -> Launch:
        opts = LaunchOptions(self.argv, self.ready, self.args.timeout, ready_window=self.args.ready_window, **kw)
        result = launch(opts)
        self.progress.advance(self.task)
        result = _checked(result, what, self.argv)
        if kw.get("probe", True) and not kw.get("wrapper") and result.timeline is None:
            raise HeadstartError(
                f"{self.argv[0]}: the probe recorded nothing (the loader ignores LD_AUDIT for setuid programs)"
            )
        return result

    def file_uses(self) -> dict[str, files.FileUse]:
        with tempfile.TemporaryDirectory(prefix="headstart-strace-") as tmp:
            out = Path(tmp) / "trace"
            self._launch("traced", probe=False, wrapper=files.strace_command(out))
            uses = files.read_trace(out)
        # The kernel maps the program itself at exec, which the trace does not show.
        program = self.argv[0]
        size = Path(program).stat().st_size
        uses.setdefault(program, files.FileUse(program, size=size, bytes_mapped=size, mapped_exec=True))
        return uses

    def after_main_trace(self) -> str | None:
        """A launch under the probe and a timed system-call trace, for what happens after main."""
        with tempfile.TemporaryDirectory(prefix="headstart-strace-") as tmp:
            out = Path(tmp) / "trace"
            self._launch("after-main trace", wrapper=after_main.trace_command(out))
            return out.read_text(errors="replace") if out.exists() else None

    def collect(self) -> dict[str, Any]:
        uses = self.file_uses()
        trace = self.after_main_trace()
        bindings = self._launch("bindings", bindings=True)
        warm = [self._launch("warm") for _ in range(self.args.runs)]
        cold, after_evict, after_launch, pinned = self._cold(sorted(uses))
        records = [summary.launch_record(w, False) for w in warm] + [summary.launch_record(c, True) for c in cold]
        pinned_records = [summary.launch_record(c, True) for c in pinned]
        file_rows = summary.files(uses, cold, after_evict, after_launch)
        return {
            "schema": summary.SCHEMA_VERSION,
            "program": self.argv,
            "ready": {"pattern": self.ready.pattern} if self.ready else "window" if self.args.ready_window else "exit",
            "runs": self.args.runs,
            "machine": summary.machine(),
            "warm": summary.aggregate(records[: len(warm)]),
            "cold": summary.aggregate(records[len(warm) :]),
            "cold_pinned": summary.aggregate(pinned_records),
            "pinned_bytes": self.pinned_bytes,
            "libraries": summary.libraries(warm, cold, bindings),
            "files": file_rows,
            "flags": summary.large_reads(file_rows, self.args.large_read),
            "overhead": self._overhead() if self.args.overhead else None,
            "after_main": self._after_main([w.timeline for w in warm if w.timeline], trace),
            "via_daemon": None,
            "launches": records,
        }

    def _after_main(self, timelines: list[Timeline], trace: str | None) -> dict[str, Any]:
        self.progress.update(self.task, description="after main: loading its objects apart")
        return after_main.analyze(timelines, trace, self.args.gaps, measure_runs=min(self.args.runs, LOAD_COST_RUNS))

    def _empty_cache(self, paths: list[str]) -> None:
        if self.args.drop_all:
            files.drop_all()
        files.evict(paths)

    def _cold(self, paths: list[str]) -> tuple[list[Launch], list[ResidentPages], list[ResidentPages], list[Launch]]:
        """Cold launches, and with --pin-plan as many with headstart-pind running, alternately."""
        cold, after_evict, after_launch, pinned = [], [], [], []
        for _ in range(self.args.runs if self.args.cold else 0):
            self._empty_cache(paths)
            after_evict.append({p: files.residency(p) for p in paths})
            cold.append(self._launch("cold"))
            after_launch.append({p: files.residency(p) for p in paths})
            if self.args.pin_plan:
                with pind_running(self.args.pin_plan, self.pin_budget) as locked:
                    self.pinned_bytes = locked
                    self._empty_cache(paths)
                    pinned.append(self._launch("cold, pinned"))
        return cold, after_evict, after_launch, pinned

    def _overhead(self) -> dict[str, Any]:
        """Time to main through libheadstart-mark-main.so, with and without the probe, alternately."""
        with_probe, without = [], []
        for _ in range(self.args.runs):
            for probe, into in ((True, with_probe), (False, without)):
                t = self._launch("overhead", probe=probe, mark_main=True).to_main_marked_ns
                if t is not None:
                    into.append(t / 1000)
        if not with_probe or not without:
            raise HeadstartError("the overhead launches did not mark main")
        a, b = summarize(with_probe), summarize(without)
        return {"with_probe_us": a.as_dict(), "without_probe_us": b.as_dict(), "added_us": a.median - b.median}


def via_daemon(argv: list[str], args: argparse.Namespace, console: Console) -> dict[str, Any]:
    """exec, warm and pool through the client library, timed side by side by `headstart bench`, ready
    as the profile's launches were (--ready, --ready-window or exit) within the same --timeout."""
    plan = suite.Plan([], args.runs, ["exec", "warm", "pool"], ["direct"], memory_launches=0)
    ready = Ready(args.ready.pattern if args.ready else None, args.ready_window, args.timeout)
    with Progress(console=console, transient=True) as progress:
        (result,) = suite.measure_programs([resolve(shlex.join(argv), ready)], plan, progress)
    failed = [m for m in result.modes.values() if m.status != "ok"]
    if len(failed) == len(result.modes):
        first = failed[0]
        why = first.errors[0] if first.errors else first.status
        raise HeadstartError(f"--via-daemon: every launch failed ({first.mode}: {why})")
    return program_dict(result)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise HeadstartError(f"cannot write {path}: {e.strerror}") from e


def run(args: argparse.Namespace) -> int:
    if args.from_trace:
        if args.command and args.command != ["--"]:
            raise UsageError("--from reads a recorded launch: give no program")
        return output(args, from_trace.profile(args.from_trace))
    argv = resolve_program(args.command)
    if args.runs < 1:
        raise UsageError("--runs must be at least 1")
    if args.gaps < 0:
        raise UsageError("--gaps must be 0 or more")
    if args.drop_all and not args.cold:
        raise UsageError("--drop-all goes with --cold")
    if (args.pin_plan or args.pin_budget) and not args.cold:
        raise UsageError("--pin-plan goes with --cold")
    if args.pin_budget and not args.pin_plan:
        raise UsageError("--pin-budget goes with --pin-plan")
    if args.pin_plan and not args.pin_plan.is_file():
        raise UsageError(f"--pin-plan: no such file: {args.pin_plan}")
    err = Console(file=sys.stderr)
    with Progress(console=err, transient=True) as progress:
        profile = Profiler(args, argv, progress).collect()
    if args.via_daemon:
        profile["via_daemon"] = via_daemon(argv, args, err)
    return output(args, profile)


def output(args: argparse.Namespace, profile: dict[str, Any]) -> int:
    """The profile to the files asked for, and as tables or JSON on stdout."""
    if args.output:
        _write(args.output, json.dumps(profile, indent=1) + "\n")
    if args.write_preload:
        _write(args.write_preload, after_main.preload_lines(profile["after_main"]))
    if args.json:
        json.dump(profile, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        render(profile, Console(file=sys.stdout, width=120))
    return 0
