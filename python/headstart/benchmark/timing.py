"""Time to main and to exit of each program, by exec and through headstartd, measured alternately.

One launch-timer run per program takes every mode in turn, round after round, so that machine noise
falls on all modes alike. A mode is a launcher and a daemon: `run@warm` is headstart-run asking a
daemon that holds the program warm, `direct@pool` the client library asking one with a pool.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import Progress

from headstart import binaries
from headstart.daemon import RunningDaemon, private_daemon
from headstart.errors import HeadstartError, UsageError
from headstart.stats import Summary, summarize

# How the daemon holds each program: registered with --app (its libraries preloaded), with --warm
# (the program loaded too), and warm with a pool of children forked ahead of time.
DAEMON_MODES: dict[str, list[str]] = {"preload": [], "warm": [], "pool": ["--pool", "4"]}
LAUNCHERS = {"run": "headstart-run", "direct": "client library"}
MODES = ("exec", *DAEMON_MODES)

# Arguments that make each sample do a small, representative job.
SAMPLE_ARGS: dict[str, list[str]] = {
    "gtk-hello": [],
    "jpeg-encode": ["85"],
    "mp3-encode": ["1"],
    "fft": ["4096"],
    "many-globals": [],
    "qt-widgets": [],
}


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
    return f"{daemon}, {LAUNCHERS[launcher]}"


@dataclass
class ModeResult:
    mode: str
    status: str  # "ok"; "failed": launches failed; "unavailable": its part is missing or did not start
    launches: int = 0  # made, whether they succeeded or not
    to_main_us: Summary | None = None
    to_exit_us: Summary | None = None
    errors: list[str] = field(default_factory=list)


@dataclass
class Program:
    """A program to launch: a sample's name, or a path and its arguments in one word."""

    name: str
    path: Path
    args: list[str]

    @property
    def argv(self) -> list[str]:
        return [str(self.path), *self.args]


def resolve(program: str) -> Program:
    """Samples mark main themselves (bench/apps/mark.h); other programs are marked by a preloaded
    library (see mark_main_env)."""
    if program in SAMPLE_ARGS:
        path = binaries.find(program)
        return Program(program, path, SAMPLE_ARGS[program])
    path, *args = shlex.split(program)
    if not Path(path).is_file():
        raise UsageError(f"{path}: no such sample app or file (samples: {', '.join(SAMPLE_ARGS)})")
    return Program(Path(path).name, Path(path).resolve(), args)


def mark_main_env(programs: list[Program]) -> dict[str, str]:
    """The environment under which every program of the run marks main. A program that is not one of
    our samples cannot mark it itself: libheadstart-mark-main.so, preloaded into it by exec and into
    the daemons (so that the loader environments still match), marks it for it. It then runs in
    every mode, exec included, so the ratios stay side by side."""
    if all(p.name in SAMPLE_ARGS for p in programs):
        return dict(os.environ)
    return dict(os.environ, LD_PRELOAD=str(binaries.find("mark-main")))


@dataclass
class Daemons:
    """The daemons of one run, one per daemon mode, and the modes whose daemon could not start."""

    running: dict[str, RunningDaemon] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # mode -> why

    def launches_started(self) -> int:
        return sum(d.launches_started() for d in self.running.values())


def start_daemons(stack: ExitStack, modes: list[str], programs: list[Path], env: dict[str, str]) -> Daemons:
    """A daemon per mode holding every program; a mode whose daemon is missing or fails to start is
    recorded as unavailable and the others go on."""
    daemons = Daemons()
    for mode in modes:
        if mode == "exec":
            continue
        flag = "--app" if mode == "preload" else "--warm"
        extra = [arg for p in programs for arg in (flag, str(p))] + DAEMON_MODES[mode]
        try:
            daemons.running[mode] = stack.enter_context(private_daemon([], extra_args=extra, env=env))
        except HeadstartError as e:
            daemons.unavailable[mode] = last_line(str(e))
    return daemons


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else text


def run_launch_timer(
    program: Program,
    keys: list[str],
    runs: int,
    daemons: dict[str, RunningDaemon],
    env: dict[str, str],
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """One JSON row per launch, the keys taken in turn for `runs` rounds."""
    cmd = [str(binaries.find("launch-timer")), "--runs", str(runs), "--run-client", str(binaries.find("headstart-run"))]
    for name, d in daemons.items():
        cmd += ["--daemon", f"{name}={d.socket}"]
    cmd += ["--modes", ",".join(keys), "--", *program.argv]
    task = progress.add_task(program.name, total=runs * len(keys)) if progress else None
    rows = []
    # A session of its own: headstart-run sends launches to exec when a controlling terminal is attached.
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            rows.append(json.loads(line))
            if progress and task is not None:
                progress.advance(task)
    if progress and task is not None:
        progress.remove_task(task)
    if proc.returncode != 0:
        raise HeadstartError(f"launch-timer failed for {program.path} (exit status {proc.returncode})")
    return rows


def summarize_rows(rows: list[dict[str, Any]], keys: list[str]) -> dict[str, ModeResult]:
    results = {}
    for key in keys:
        mine = [r for r in rows if r["mode"] == key]
        ok = [r for r in mine if "error" not in r]
        errors = sorted({r["error"] for r in mine if "error" in r})
        results[key] = ModeResult(
            key,
            "failed" if errors else "ok",
            len(mine),
            summarize([r["to_main_ns"] / 1000 for r in ok]) if ok else None,
            summarize([r["to_exit_ns"] / 1000 for r in ok]) if ok else None,
            errors,
        )
    return results


def time_program(
    program: Program,
    keys: list[str],
    runs: int,
    daemons: Daemons,
    env: dict[str, str],
    progress: Progress | None = None,
) -> dict[str, ModeResult]:
    """Every key timed alternately; those whose daemon is unavailable are reported so, not run."""
    available = [k for k in keys if daemon_mode(k) not in daemons.unavailable]
    modes = summarize_rows(run_launch_timer(program, available, runs, daemons.running, env, progress), available)
    for key in keys:
        if key not in modes:
            why = daemons.unavailable[daemon_mode(key)]
            modes[key] = ModeResult(key, "unavailable", errors=[f"{daemon_mode(key)} daemon: {why}"])
    return {k: modes[k] for k in keys}
