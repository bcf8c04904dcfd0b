"""headstart bench: time to main and to exit, by exec and through headstartd, measured side by side."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from headstart import binaries, relocations
from headstart.daemon import RunningDaemon, private_daemon
from headstart.errors import HeadstartError, UsageError
from headstart.relocations import Relocations
from headstart.stats import Summary, summarize

NAME = "bench"
HELP = "time launches by exec and through headstartd, alternating, and compare them"

# How the daemon holds each program: registered with --app (its libraries preloaded), with --warm
# (the program loaded too), and warm with a pool of children forked ahead of time.
DAEMON_MODES: dict[str, list[str]] = {"preload": [], "warm": [], "pool": ["--pool", "4"]}
LAUNCHERS = {"run": "headstart-run", "direct": "client library"}
MODES = ("exec", *DAEMON_MODES)
POOL_SIZE = DAEMON_MODES["pool"][1]


def mode_title(key: str) -> str:
    """'run@warm' -> 'warm, headstart-run'."""
    if key == "exec":
        return "exec (fork + exec)"
    launcher, _, daemon = key.partition("@")
    return f"{daemon}, {LAUNCHERS[launcher]}"


# Arguments that make each sample do a small, representative job.
SAMPLE_ARGS: dict[str, list[str]] = {
    "gtk-hello": [],
    "jpeg-encode": ["85"],
    "mp3-encode": ["1"],
    "fft": ["4096"],
    "many-globals": [],
    "qt-widgets": [],
}


@dataclass
class ModeResult:
    mode: str
    to_main_us: Summary | None
    to_exit_us: Summary | None
    errors: list[str] = field(default_factory=list)


@dataclass
class ProgramResult:
    program: str
    argv: list[str]
    runs: int
    modes: dict[str, ModeResult]
    served: int  # launches the daemon started (the rest fell back to exec)
    requested: int  # launches that asked the daemon
    relocations: dict[str, Relocations]  # per daemon mode (or exec): what the launched process relocates
    loader: dict[str, int]  # the loader's own counts for one exec, to check `relocations["exec"]` against

    def relocations_of(self, mode_key: str) -> Relocations | None:
        return self.relocations.get(mode_key.partition("@")[2] or mode_key)

    def ratio(self, mode: str, metric: str = "to_main_us") -> float | None:
        base = getattr(self.modes["exec"], metric) if "exec" in self.modes else None
        this = getattr(self.modes[mode], metric) if mode in self.modes else None
        if base is None or this is None or base.median == 0:
            return None
        return this.median / base.median


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--programs",
        nargs="+",
        default=list(binaries.SAMPLE_APPS),
        metavar="PROGRAM",
        help="sample app names or paths of programs that mark main (default: all samples)",
    )
    p.add_argument("--runs", type=int, default=200, help="launches per mode and program (default 200)")
    p.add_argument(
        "--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)} (default all)"
    )
    p.add_argument(
        "--clients",
        default=",".join(LAUNCHERS),
        help="how daemon modes are asked: run (headstart-run), direct (libheadstart-client); default both",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    p.add_argument("-o", "--output", type=Path, help="also write the JSON results to this file")


def _resolve(program: str) -> tuple[Path, list[str]]:
    """A sample's name, or a program's path with its arguments in one word ("/usr/bin/lame --version").
    Samples mark main themselves (bench/apps/mark.h); other programs are marked by a preloaded
    library (see mark_main_env)."""
    if program in SAMPLE_ARGS:
        return binaries.find(program), SAMPLE_ARGS[program]
    path, *args = shlex.split(program)
    if not Path(path).is_file():
        raise UsageError(f"{path}: no such sample app or file (samples: {', '.join(SAMPLE_ARGS)})")
    return Path(path).resolve(), args


def _time_program(
    daemons: dict[str, RunningDaemon],
    path: Path,
    args: list[str],
    runs: int,
    modes: list[str],
    progress: Progress,
    env: dict[str, str],
) -> list[dict[str, Any]]:
    cmd = [str(binaries.find("launch-timer")), "--runs", str(runs), "--run-client", str(binaries.find("headstart-run"))]
    for name, d in daemons.items():
        cmd += ["--daemon", f"{name}={d.socket}"]
    cmd += ["--modes", ",".join(modes), "--", str(path), *args]
    task = progress.add_task(path.name, total=runs * len(modes))
    rows = []
    # A session of its own: headstart-run sends launches to exec when a controlling terminal is attached.
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            rows.append(json.loads(line))
            progress.advance(task)
    if proc.returncode != 0:
        raise HeadstartError(f"launch-timer failed for {path} (exit status {proc.returncode})")
    return rows


def mark_main_env(names: list[str]) -> dict[str, str]:
    """The environment under which every program of the run marks main. A program that is not one of
    our samples cannot mark it itself: libheadstart-mark-main.so, preloaded into it by exec and into
    the daemons (so that the loader environments still match), marks it for it. It then runs in
    every mode, exec included, so the ratios stay side by side."""
    if all(name in SAMPLE_ARGS for name in names):
        return dict(os.environ)
    return dict(os.environ, LD_PRELOAD=str(binaries.find("mark-main")))


def _start_daemons(
    stack: ExitStack, modes: list[str], programs: list[Path], env: dict[str, str]
) -> dict[str, RunningDaemon]:
    daemons = {}
    for mode in modes:
        if mode == "exec":
            continue
        flag = "--app" if mode == "preload" else "--warm"
        extra = [arg for p in programs for arg in (flag, str(p))] + DAEMON_MODES[mode]
        daemons[mode] = stack.enter_context(private_daemon([], extra_args=extra, env=env))
    return daemons


def _summarize_rows(rows: list[dict[str, Any]], modes: list[str]) -> dict[str, ModeResult]:
    results = {}
    for mode in modes:
        ok = [r for r in rows if r["mode"] == mode and "error" not in r]
        errors = sorted({r["error"] for r in rows if r["mode"] == mode and "error" in r})
        results[mode] = ModeResult(
            mode,
            summarize([r["to_main_ns"] / 1000 for r in ok]) if ok else None,
            summarize([r["to_exit_ns"] / 1000 for r in ok]) if ok else None,
            errors,
        )
    return results


def collect(
    programs: list[str], runs: int, modes: list[str], clients: list[str], console: Console
) -> list[ProgramResult]:
    resolved = [_resolve(p) for p in programs]
    keys = [m if m == "exec" else f"{c}@{m}" for m in modes for c in (["exec"] if m == "exec" else clients)]
    results = []
    env = mark_main_env(programs)
    with ExitStack() as stack:
        daemons = _start_daemons(stack, modes, [p for p, _ in resolved], env)
        progress = stack.enter_context(Progress(console=console, transient=True))
        for path, args in resolved:
            before = sum(d.launches_started() for d in daemons.values())
            rows = _time_program(daemons, path, args, runs, keys, progress, env)
            results.append(
                ProgramResult(
                    program=path.name,
                    argv=[str(path), *args],
                    runs=runs,
                    modes=_summarize_rows(rows, keys),
                    served=sum(d.launches_started() for d in daemons.values()) - before,
                    requested=sum(1 for r in rows if r["mode"] != "exec"),
                    relocations=relocations.per_mode(path),
                    loader=relocations.loader_statistics([str(path), *args]),
                )
            )
    return results


def _fmt(s: Summary | None) -> str:
    return "-" if s is None else f"{s.median:,.0f}"


def _relocation_cells(rel: Relocations | None) -> tuple[str, str]:
    return ("-", "-") if rel is None else (f"{rel.symbolic:,}", f"{rel.relative:,}")


def render_table(results: list[ProgramResult], file: IO[str]) -> None:
    console = Console(file=file, width=120)
    table = Table(title="Time to main, µs (median, p10 to p90), and ratio to exec, measured alternately")
    for col in ("program", "mode", "to main", "p10 to p90", "ratio", "to exit", "ratio ", "lookups", "relative"):
        table.add_column(col, justify="left" if col in ("program", "mode") else "right")
    for r in results:
        for mode, m in r.modes.items():
            ratio = r.ratio(mode)
            exit_ratio = r.ratio(mode, "to_exit_us")
            spread = "-" if m.to_main_us is None else f"{m.to_main_us.p10:,.0f}-{m.to_main_us.p90:,.0f}"
            table.add_row(
                r.program,
                mode_title(mode),
                _fmt(m.to_main_us),
                spread,
                "-" if ratio is None else f"{ratio:.3f}",
                _fmt(m.to_exit_us),
                "-" if exit_ratio is None else f"{exit_ratio:.3f}",
                *_relocation_cells(r.relocations_of(mode)),
            )
        table.add_section()
    console.print(table)
    console.print(
        "lookups, relative: relocations the launched process does itself before main, counted from the "
        "ELF files each mode loads in it (symbol lookups and relative relocations; docs/measuring.md)"
    )
    for r in results:
        if r.loader:
            console.print(
                f"{r.program}: the loader itself counts {r.loader.get('relocations', 0):,} lookups "
                f"(+{r.loader.get('from_cache', 0):,} from its cache) and {r.loader.get('relative', 0):,} "
                "relative relocations for one exec"
            )
    for r in results:
        run, direct = r.modes.get("run@warm"), r.modes.get("direct@warm")
        if run and direct and run.to_main_us and direct.to_main_us:
            cost = run.to_main_us.median - direct.to_main_us.median
            console.print(f"{r.program}: headstart-run adds {cost:,.0f} µs over the client library (warm, medians)")
        if r.requested and r.served != r.requested:
            console.print(
                f"[bold red]{r.program}: only {r.served} of {r.requested} daemon launches were served; "
                "the rest fell back to exec[/]"
            )
        for m in r.modes.values():
            for e in m.errors:
                console.print(f"[red]{r.program} ({m.mode}): {e}[/]")


def as_json(results: list[ProgramResult]) -> dict[str, Any]:
    def mode_dict(m: ModeResult) -> dict[str, Any]:
        return {
            "to_main_us": m.to_main_us.as_dict() if m.to_main_us else None,
            "to_exit_us": m.to_exit_us.as_dict() if m.to_exit_us else None,
            "errors": m.errors,
        }

    return {
        "machine": {"cpus": os.cpu_count(), "uname": " ".join(os.uname())},
        "programs": [
            {
                "program": r.program,
                "argv": r.argv,
                "runs": r.runs,
                "served": r.served,
                "requested": r.requested,
                "modes": {k: mode_dict(v) for k, v in r.modes.items()},
                "ratio_to_exec": {k: r.ratio(k) for k in r.modes},
                "relocations_in_child": {k: rel.as_dict() for k in r.modes if (rel := r.relocations_of(k))},
                "loader_statistics_exec": r.loader,
            }
            for r in results
        ],
    }


def run(args: argparse.Namespace) -> int:
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise UsageError(f"unknown mode {', '.join(bad) or '(none)'}: choose from {', '.join(MODES)}")
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    bad = [c for c in clients if c not in LAUNCHERS]
    if bad or not clients:
        raise UsageError(f"unknown client {', '.join(bad) or '(none)'}: choose from {', '.join(LAUNCHERS)}")
    if args.runs < 1:
        raise UsageError("--runs must be at least 1")
    console = Console(file=sys.stderr)
    results = collect(args.programs, args.runs, modes, clients, console)
    data = as_json(results)
    if args.output:
        args.output.write_text(json.dumps(data, indent=2) + "\n")
    if args.json:
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_table(results, sys.stdout)
    failed = any(r.served != r.requested or any(m.errors for m in r.modes.values()) for r in results)
    return 1 if failed else 0
