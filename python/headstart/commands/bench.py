"""headstart bench: time to main and to exit, by exec and through headstartd, measured side by side."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from headstart import binaries
from headstart.daemon import RunningDaemon, private_daemon
from headstart.errors import HeadstartError, UsageError
from headstart.stats import Summary, summarize

NAME = "bench"
HELP = "time launches by exec and through headstartd, alternating, and compare them"

MODES = ("exec", "run", "direct")
MODE_TITLES = {
    "exec": "exec (fork + exec)",
    "run": "headstart-run",
    "direct": "daemon, direct request",
}
# Arguments that make each sample do a small, representative job.
SAMPLE_ARGS: dict[str, list[str]] = {
    "gtk-hello": [],
    "jpeg-encode": ["85"],
    "mp3-encode": ["1"],
    "fft": ["4096"],
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
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of exec,run,direct")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    p.add_argument("-o", "--output", type=Path, help="also write the JSON results to this file")


def _resolve(program: str) -> tuple[Path, list[str]]:
    if program in SAMPLE_ARGS:
        return binaries.find(program), SAMPLE_ARGS[program]
    path = Path(program)
    if not path.is_file():
        raise UsageError(f"{program}: no such sample app or file (samples: {', '.join(SAMPLE_ARGS)})")
    return path.resolve(), []


def _time_program(
    daemon: RunningDaemon, path: Path, args: list[str], runs: int, modes: list[str], progress: Progress
) -> list[dict[str, Any]]:
    cmd = [
        str(binaries.find("launch-timer")),
        "--runs",
        str(runs),
        "--socket",
        str(daemon.socket),
        "--run-client",
        str(binaries.find("headstart-run")),
        "--modes",
        ",".join(modes),
        "--",
        str(path),
        *args,
    ]
    task = progress.add_task(path.name, total=runs * len(modes))
    rows = []
    # A session of its own: headstart-run sends launches to exec when a controlling terminal is attached.
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            rows.append(json.loads(line))
            progress.advance(task)
    if proc.returncode != 0:
        raise HeadstartError(f"launch-timer failed for {path} (exit status {proc.returncode})")
    return rows


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


def collect(programs: list[str], runs: int, modes: list[str], console: Console) -> list[ProgramResult]:
    resolved = [_resolve(p) for p in programs]
    results = []
    with (
        private_daemon([p for p, _ in resolved]) as daemon,
        Progress(console=console, transient=True) as progress,
    ):
        for path, args in resolved:
            before = daemon.launches_started()
            rows = _time_program(daemon, path, args, runs, modes, progress)
            requested = sum(1 for r in rows if r["mode"] in ("run", "direct"))
            results.append(
                ProgramResult(
                    program=path.name,
                    argv=[str(path), *args],
                    runs=runs,
                    modes=_summarize_rows(rows, modes),
                    served=daemon.launches_started() - before,
                    requested=requested,
                )
            )
    return results


def _fmt(s: Summary | None) -> str:
    return "-" if s is None else f"{s.median:,.0f}"


def render_table(results: list[ProgramResult], file: IO[str]) -> None:
    console = Console(file=file, width=120)
    table = Table(title="Time to main, µs (median, p10 to p90), and ratio to exec, measured alternately")
    for col in ("program", "mode", "to main", "p10 to p90", "ratio", "to exit", "ratio "):
        table.add_column(col, justify="left" if col in ("program", "mode") else "right")
    for r in results:
        for mode, m in r.modes.items():
            ratio = r.ratio(mode)
            exit_ratio = r.ratio(mode, "to_exit_us")
            spread = "-" if m.to_main_us is None else f"{m.to_main_us.p10:,.0f}-{m.to_main_us.p90:,.0f}"
            table.add_row(
                r.program,
                MODE_TITLES[mode],
                _fmt(m.to_main_us),
                spread,
                "-" if ratio is None else f"{ratio:.3f}",
                _fmt(m.to_exit_us),
                "-" if exit_ratio is None else f"{exit_ratio:.3f}",
            )
        table.add_section()
    console.print(table)
    for r in results:
        run, direct = r.modes.get("run"), r.modes.get("direct")
        if run and direct and run.to_main_us and direct.to_main_us:
            cost = run.to_main_us.median - direct.to_main_us.median
            console.print(f"{r.program}: headstart-run adds {cost:,.0f} µs over a direct request (medians)")
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
            }
            for r in results
        ],
    }


def run(args: argparse.Namespace) -> int:
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise UsageError(f"unknown mode {', '.join(bad) or '(none)'}: choose from {', '.join(MODES)}")
    if args.runs < 1:
        raise UsageError("--runs must be at least 1")
    console = Console(file=sys.stderr)
    results = collect(args.programs, args.runs, modes, console)
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
