"""headstart bench: the seed paper's comparison on real programs, on this machine."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from headstart import binaries
from headstart.benchmark import cold, program_list, suite
from headstart.benchmark.display import display_env, parse_displays, private_display
from headstart.benchmark.programs import Ready
from headstart.benchmark.results import BenchResult, as_json
from headstart.benchmark.timing import DEFAULT_MODES, LAUNCHERS, MODES, PREPARED_PAUSE_MS, mode_keys
from headstart.commands._regex import MAX_RUNS, regex, seconds, whole_number, writable_folder
from headstart.errors import HeadstartError, UsageError
from headstart.pinning.plan import parse_size
from headstart.reporters import bench, bench_page, figures, json_out, trace
from headstart.reporters.progress import progress

NAME = "bench"
HELP = "time launches by exec and through headstartd in every mode, alternating, and compare them"

# Unmodified Debian programs timed beside the samples: command-line ones (C++, many libraries) with a
# small job, ready at exit; GUI ones (a GTK 3 calculator, a Qt 5 editor, GNOME's GTK 4 font viewer, a
# Qt 6 maze game), ready when their window shows. Tried for GTK 4 and Qt 6 and left out: Debian 12's
# gnome-text-editor (fails to build its own UI template even by exec), gnome-calculator (fetches
# currency rates over the network as it starts). pentobi, a Qt 6 Quick game, went to exec until
# issue 30 (it copies std::cerr, a library variable holding pointers into itself); it is served now
# and still left out, to keep make demo's time.
DEBIAN_PROGRAMS = {
    "/usr/bin/exiv2 --version": Ready(),
    "/usr/bin/xmllint --version": Ready(),
    "/usr/bin/galculator": Ready(window=True),
    "/usr/bin/featherpad": Ready(window=True),
    "/usr/bin/gnome-font-viewer": Ready(window=True),
    "/usr/games/cutemaze": Ready(window=True),
}


# Cold launches: the GUI samples, and Debian's GTK calculator and a command-line program.
COLD_PROGRAMS = {
    "gtk-hello": Ready(),
    "qt-widgets": Ready(),
    "/usr/bin/galculator": Ready(window=True),
    "/usr/bin/exiv2 --version": Ready(),
}


def default_programs() -> dict[str, Ready]:
    """The samples (a source checkout's: the packages have none) and the Debian programs installed."""
    found = {p: r for p, r in DEBIAN_PROGRAMS.items() if Path(p.split()[0]).is_file()}
    # Listed in a checkout even when not built, so that the bench says to build them.
    samples = {s: Ready() for s in binaries.SAMPLE_APPS if binaries.in_checkout() or binaries.is_built(s)}
    if not samples and not found:
        raise UsageError(
            "no program to bench by default: the samples come with a source checkout (`make build`), and "
            f"none of {', '.join(p.split()[0] for p in DEBIAN_PROGRAMS)} is installed; name programs with --programs"
        )
    return {**samples, **found}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="fewer launches and preload points: a few minutes")
    p.add_argument(
        "--programs",
        nargs="+",
        metavar="PROGRAM",
        help="sample names, or paths of programs with their arguments in one word ('/usr/bin/lame --version'), "
        "or @FILE: the programs FILE lists, one a line (bench/programs/); "
        "default: every sample and a few Debian programs",
    )
    ready = p.add_mutually_exclusive_group()
    ready.add_argument(
        "--ready",
        type=regex,
        metavar="REGEX",
        help="the programs given by path are ready at a line of output matching REGEX",
    )
    ready.add_argument(
        "--ready-window",
        action="store_true",
        help="the programs given by path are ready when their first window shows (then stopped): mapped on X, "
        "its first frame on Wayland",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="the programs given by path must be ready within this, or the bench stops (default 30)",
    )
    p.add_argument(
        "--warm-up",
        default="fontconfig",
        metavar="STEP,...",
        help="the steps the warm-up mode's daemon runs in its zygote (headstartd --warm-up: fontconfig, "
        "gdk-pixbuf, gtk4-classes, LIBRARY:FUNCTION); default fontconfig",
    )
    p.add_argument(
        "--display",
        metavar="KIND",
        help="where programs that show a window run: x11 (a private Xvfb), wayland (a private weston), both, "
        "or an X server (:N); default: the session's kind (WAYLAND_DISPLAY, else DISPLAY), else x11 if Xvfb is "
        "installed, else wayland",
    )
    p.add_argument(
        "--runs", type=whole_number(1, MAX_RUNS), help="launches per mode and program (default 200, 12 with --quick)"
    )
    p.add_argument(
        "--modes",
        default=",".join(DEFAULT_MODES),
        help=f"comma-separated subset of {','.join(MODES)} (default all but prepared, which pauses "
        f"{PREPARED_PAUSE_MS} ms between the launches of a program with a window); exec, the baseline of "
        "every ratio, is always timed",
    )
    p.add_argument(
        "--clients",
        default=",".join(LAUNCHERS),
        help="how daemon modes are asked: run (headstart-run), direct (libheadstart-client); default both",
    )
    p.add_argument(
        "--shared-daemon",
        action="store_true",
        help="one daemon per mode for all programs, as on a device, instead of one per program",
    )
    cold = p.add_argument_group("cold launches (instead of the comparison above; root, or files evicted one by one)")
    cold.add_argument(
        "--cold",
        action="store_true",
        help="time launches from an empty page cache: alone, with headstart-pind, with vmtouch -l, and warm "
        f"(default programs: {', '.join(COLD_PROGRAMS)}; modes exec,pool; client run)",
    )
    cold.add_argument("--pin-plan", type=Path, metavar="PLAN", help="headstart-pind's plan (default: made here)")
    cold.add_argument("--pin-budget", metavar="SIZE", help="headstart-pind's --budget (default: the whole plan)")
    cold.add_argument(
        "--memory-max",
        metavar="SIZE",
        help="also time launches inside a cgroup with this memory limit (memory pressure), with and without pinning",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")
    p.add_argument(
        "-o",
        "--output",
        type=writable_folder,
        default=Path("bench-results"),
        metavar="DIR",
        help="where bench.json, report.html and trace.json (each launch per mode, for Perfetto: docs/traces.md) "
        "go; with --cold, cold.json and cold-trace.json (default ./bench-results)",
    )


def _choices(text: str, allowed: tuple[str, ...] | list[str], what: str) -> list[str]:
    # Each once, in the order given: `pool,pool` timed pool twice per round and printed four columns.
    chosen = list(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))
    bad = [c for c in chosen if c not in allowed]
    if bad or not chosen:
        raise UsageError(f"unknown {what} {', '.join(bad) or '(none)'}: choose from {', '.join(allowed)}")
    return chosen


def _compared_modes(text: str) -> list[str]:
    """The modes asked for, after exec: every table is a ratio to exec's times, so exec is always
    timed, and first (`--modes prepared` ran every launch and then ended in a traceback; `--modes
    pool,exec` printed exec as one of the daemon modes and left one of pool's out)."""
    return ["exec", *(m for m in _choices(text, MODES, "mode") if m != "exec")]


def _ready(args: argparse.Namespace) -> Ready:
    """When the programs given by path are ready (--ready was compiled as it was parsed)."""
    return Ready(args.ready.pattern if args.ready else None, args.ready_window, args.timeout, stop_at_line=True)


def plan_from(args: argparse.Namespace) -> suite.Plan:
    modes = _compared_modes(args.modes)
    clients = _choices(args.clients, list(LAUNCHERS), "client")
    if args.programs:
        given = _ready(args)
        if args.display and not given.window:
            # A new user's trial: `--display wayland` alone ran gcolor3 with no display, silently.
            print(
                "headstart bench: --display is where programs shown by --ready-window run; without it the "
                "programs given are timed to their exit, with no display",
                file=sys.stderr,
            )
        ready = {p: given for p in program_list.expand(args.programs)}
        # Every program given must exist before anything runs or bench-results/ is written: found
        # after an hour of launches, a typo would leave nothing but an empty result over the last one.
        _, missing = suite.resolve_programs(list(ready), ready)
        if missing:
            first, *others = missing
            also = f"; not found either: {', '.join(others)}" if others else ""
            raise UsageError(f"{missing[first]}{also}")
    else:
        ready = default_programs()
    displays, x_server = parse_displays(args.display)
    plan = suite.Plan(
        list(ready),
        args.runs or (12 if args.quick else 200),
        modes,
        clients,
        shared_daemon=args.shared_daemon,
        ready=ready,
        displays=tuple(displays),
        x_server=x_server,
        warm_up=args.warm_up,
    )
    return suite.quick_plan(plan) if args.quick else plan


# Options that only a --cold run reads: given without it (even empty), they are refused.
COLD_ONLY = ("pin_plan", "pin_budget", "memory_max")


def cold_plan_from(args: argparse.Namespace) -> cold.ColdPlan:
    for option in COLD_ONLY:
        if getattr(args, option) is not None and not args.cold:
            raise UsageError(f"--{option.replace('_', '-')} goes with --cold")
    modes = _choices(args.modes if args.modes != ",".join(DEFAULT_MODES) else "exec,pool", MODES, "mode")
    clients = _choices(args.clients if args.clients != ",".join(LAUNCHERS) else "run", list(LAUNCHERS), "client")
    if args.pin_plan and not args.pin_plan.is_file():
        raise UsageError(f"--pin-plan: no such file: {args.pin_plan}")
    wanted = {p: _ready(args) for p in program_list.expand(args.programs)} if args.programs else COLD_PROGRAMS
    programs, missing = suite.resolve_programs(list(wanted), wanted)
    if missing:
        raise UsageError(next(iter(missing.values())))
    return cold.ColdPlan(
        programs,
        args.runs or (3 if args.quick else 10),
        mode_keys(modes, clients),
        budget=parse_size(args.pin_budget, "--pin-budget") if args.pin_budget is not None else None,
        pin_plan=args.pin_plan,
        memory_max=parse_size(args.memory_max, "--memory-max") if args.memory_max is not None else None,
    )


def run_cold(args: argparse.Namespace) -> int:
    plan = cold_plan_from(args)
    displays, x_server = parse_displays(args.display)
    # One display: x11 where it is among those chosen (the cold figures so far are X11's), else wayland.
    kind = "x11" if "x11" in displays else displays[0]
    with ExitStack() as stack, progress() as bars:
        env = dict(os.environ)
        if any(p.needs_display for p in plan.programs):
            env = display_env(env, kind, stack.enter_context(private_display(kind, x_server)))
            plan.programs = [p.on_display(kind) if p.needs_display else p for p in plan.programs]
        data, launches = cold.measure(plan, env, bars)
    results = _write(args.output, "cold.json", json_out.text(data))
    groups = [trace.LaunchRows(program, f"{key} {arm}", rows) for (program, key, arm), rows in launches.rows.items()]
    traced = _write(args.output, "cold-trace.json", trace.text(trace.bench_trace(groups, "headstart bench --cold")))
    _show(data, args.json, f"\nresults: {results}\ntrace:   {traced}")
    failed = any(a["errors"] for p in data["programs"] for m in p["modes"].values() for a in m.values())
    return 1 if failed else 0


def _write(directory: Path, name: str, text: str) -> Path:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    except OSError as e:
        raise HeadstartError(f"cannot write to {directory}: {e.strerror}") from e
    return directory / name


def _show(data: dict[str, Any], as_json: bool, footer: str) -> None:
    """The results as JSON on standard output, or as tables followed by where they were written."""
    if as_json:
        json_out.write(data, sys.stdout)
    else:
        bench.render(data, sys.stdout)
        print(footer)


def write_outputs(data: dict[str, object], result: BenchResult, directory: Path) -> tuple[str, Path]:
    """bench.json, report.html and trace.json; where the report is (or why it is not) and the trace.
    The measurements are kept on a machine that cannot draw charts."""
    _write(directory, "bench.json", json_out.text(data))
    groups = [trace.LaunchRows(p.program, key, m.rows) for p in result.programs for key, m in p.modes.items()]
    traced = _write(directory, "trace.json", trace.text(trace.bench_trace(groups, "headstart bench")))
    if why := figures.missing():
        return f"not drawn: {why}", traced
    return str(_write(directory, "report.html", bench_page.build(data).render())), traced


def run(args: argparse.Namespace) -> int:
    if args.cold or any(getattr(args, option) is not None for option in COLD_ONLY):
        return run_cold(args)
    plan = plan_from(args)
    with progress() as bars:
        result = suite.run(plan, bars)
    data = as_json(result)
    report, traced = write_outputs(data, result, args.output)
    _show(data, args.json, f"\nresults: {args.output / 'bench.json'}\nreport:  {report}\ntrace:   {traced}")
    return 1 if result.failed() else 0
