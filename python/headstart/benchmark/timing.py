"""Time to main, to ready and to exit of each program, by exec and through headstartd, measured
alternately.

One launch-timer run per program takes every mode in turn, round after round, so that machine noise
falls on all modes alike. A mode is a launcher and a daemon: `run@warm` is headstart-run asking a
daemon that holds the program warm, `direct@pool` the client library asking one with a pool.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.progress import Progress

from headstart import binaries
from headstart.benchmark.programs import Program
from headstart.daemon import RunningDaemon
from headstart.errors import HeadstartError
from headstart.processes import terminate
from headstart.stats import Summary, summarize

LAUNCHERS = {"run": "headstart-run", "direct": "client library"}
# What each daemon mode is called in tables (benchmark/daemons.py says how each is started).
MODE_NAMES = {
    "preload": "preload",
    "warm": "warm",
    "pool": "pool",
    "learned": "pool + learned",
    "warm-up": "pool + learned + warm-up",
    "prepared": "warm-up + display prepared",
}
MODES = ("exec", *MODE_NAMES)
# Opt-in, as the daemon's --prepare-display is: the pause it needs between launches lengthens a run.
DEFAULT_MODES = tuple(m for m in MODES if m != "prepared")
# Between launches when the prepared mode is timed on a program its daemon prepares: time for it to
# ready the next child (100 ms after a launch, then the toolkit's start), so that this happens
# between launches, as when a user opens an app after another, and not during another mode's launch.
PREPARED_PAUSE_MS = 600
STOP_WAIT_S = 10.0  # for the timer to stop its launch (SIGTERM, SIGKILL 5 s later) and end
NOT_READY_STATUS = 3  # launch-timer's exit status when a launch was not ready in time: it ended the run


def mode_keys(modes: list[str], clients: list[str]) -> list[str]:
    """exec, then each daemon mode through each launcher: ['exec', 'run@warm', 'direct@warm', ...]."""
    return [m if m == "exec" else f"{c}@{m}" for m in modes for c in (["exec"] if m == "exec" else clients)]


def daemon_mode(key: str) -> str:
    """'run@warm' -> 'warm'; 'exec' -> 'exec'."""
    return key.partition("@")[2] or key


def mode_title(key: str) -> str:
    """'run@warm' -> 'warm, headstart-run'."""
    if key == "exec":
        return "exec (fork + exec)"
    launcher, _, daemon = key.partition("@")
    return f"{MODE_NAMES[daemon]}, {LAUNCHERS[launcher]}"


@dataclass
class ModeResult:
    mode: str
    # "ok"; "failed": launches failed; "unavailable": its part is missing or did not start; "preload":
    # served, but in preload mode by a daemon asked to hold it warm (not a failure: errors say why)
    status: str
    launches: int = 0  # made, whether they succeeded or not
    to_main_us: Summary | None = None
    to_ready_us: Summary | None = None
    to_exit_us: Summary | None = None  # None when the program was stopped once ready
    # From main to ready, launch by launch: the program's own work, which starting it faster never
    # shortens; only what a daemon takes over after main (learned preload, warm-ups) does.
    after_main_us: Summary | None = None
    errors: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list, repr=False)  # launch-timer's, one per launch


def prepares(daemons: dict[str, RunningDaemon], program: Program) -> bool:
    """Whether the prepared mode's daemon starts program's toolkit ahead (not refused): its launches
    then need the pause, whether the program is ready at its window or at a line it prints."""
    daemon = daemons.get("prepared")
    line = daemon.prepared_line(str(program.path)) if daemon else None
    return line is not None and not line.startswith("refused")


def run_launch_timer(
    program: Program,
    keys: list[str],
    runs: int,
    daemons: dict[str, RunningDaemon],
    env: dict[str, str],
    progress: Progress | None = None,
    linger_ms: int = 0,
    preexec: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """One JSON row per launch, the keys taken in turn for `runs` rounds."""
    cmd = [str(binaries.find("launch-timer")), "--runs", str(runs), "--run-client", str(binaries.find("headstart-run"))]
    for name, d in daemons.items():
        cmd += ["--daemon", f"{name}={d.socket}"]
    cmd += ["--modes", ",".join(keys), *program.ready.timer_args()]
    if linger_ms:
        cmd += ["--linger-ms", str(linger_ms)]
    if any(daemon_mode(k) == "prepared" for k in keys) and prepares(daemons, program):
        cmd += ["--pause-ms", str(PREPARED_PAUSE_MS), "--wait-prepared", "prepared"]
    cmd += ["--", *program.argv]
    task = progress.add_task(program.name, total=runs * len(keys)) if progress else None
    rows = []
    # A session of its own: headstart-run sends launches to exec when a controlling terminal is attached.
    with subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=dict(env, **program.env),
        preexec_fn=preexec,  # joins a memory-limited cgroup (benchmark/pressure.py)
    ) as proc:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                rows.append(json.loads(line))
                if progress and task is not None:
                    progress.advance(task)
        except BaseException:
            _stop_timer(proc)
            raise
    if progress and task is not None:
        progress.remove_task(task)
    if proc.returncode == NOT_READY_STATUS and rows and "error" in rows[-1]:
        # Every launch would wait as long: one line, rather than the timeout times every launch.
        last = rows[-1]
        raise HeadstartError(f"{program.label}, {mode_title(last['mode'])}: {last['error']}; the bench stopped there")
    if proc.returncode != 0:
        raise HeadstartError(f"launch-timer failed for {program.path} (exit status {proc.returncode})")
    return rows


def _stop_timer(proc: subprocess.Popen[str]) -> None:
    """When we stop reading (an error, or Ctrl-C, which does not reach the timer's session): the timer
    stops the launch under way at SIGTERM and ends; Popen's exit would otherwise wait for its whole
    run. (If we are killed instead, the timer gets its SIGTERM from the kernel: PR_SET_PDEATHSIG.)"""
    terminate(proc, timeout=STOP_WAIT_S)


def _summary(rows: list[dict[str, Any]], key: str) -> Summary | None:
    values = [r[key] / 1000 for r in rows if r.get(key) is not None]
    return summarize(values) if values else None


def _after_main(rows: list[dict[str, Any]]) -> Summary | None:
    values = [(r["to_ready_ns"] - r["to_main_ns"]) / 1000 for r in rows
              if r.get("to_ready_ns") is not None and r.get("to_main_ns") is not None]  # fmt: skip
    return summarize(values) if values else None


def summarize_rows(rows: list[dict[str, Any]], keys: list[str]) -> dict[str, ModeResult]:
    results = {}
    for key in keys:
        mine = [r for r in rows if r["mode"] == key]
        ok = [r for r in mine if "error" not in r]
        errors = sorted({r["error"] for r in mine if "error" in r})
        exits = [r for r in ok if not r["stopped"]]
        results[key] = ModeResult(
            key,
            "failed" if errors else "ok",
            len(mine),
            _summary(ok, "to_main_ns"),
            _summary(ok, "to_ready_ns"),
            _summary(exits, "to_exit_ns"),
            _after_main(ok),
            errors,
            mine,
        )
    return results


def time_program(
    program: Program,
    keys: list[str],
    runs: int,
    running: dict[str, RunningDaemon],
    unavailable: dict[str, str],
    env: dict[str, str],
    progress: Progress | None = None,
) -> dict[str, ModeResult]:
    """Every key timed alternately; those whose daemon is unavailable are reported so, not run."""
    available = [k for k in keys if daemon_mode(k) not in unavailable]
    modes = summarize_rows(run_launch_timer(program, available, runs, running, env, progress), available)
    for key in keys:
        if key not in modes:
            why = unavailable[daemon_mode(key)]
            modes[key] = ModeResult(key, "unavailable", errors=[f"{daemon_mode(key)} daemon: {why}"])
    return {k: modes[k] for k in keys}
