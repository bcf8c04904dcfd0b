"""The daemons of a benchmark run, one per daemon mode: how each is started, how the adaptive
preload is trained before it is timed, and the memory the daemon itself holds.

Every mode but the adaptive ones runs with --no-learn, so that it stays as it started while it is
timed. `learned` is first trained: each program is launched through it a few times and left
running for a second (time for the daemon to see what it loads after main), then the bench waits
until a fresh zygote has preloaded what was learned."""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from headstart.benchmark.programs import Program
from headstart.benchmark.timing import run_launch_timer
from headstart.daemon import RunningDaemon, prepared_pending, private_daemon
from headstart.errors import HeadstartError
from headstart.profiling.memory import read_memory

POOL = ["--pool", "4"]


@dataclass(frozen=True)
class DaemonMode:
    flag: str  # how the programs are registered: --app (libraries preloaded) or --warm (the program too)
    args: list[str]
    trained: bool = False  # learns what its programs load after main before it is timed
    prepared: bool = False  # --prepare-display for each program: its toolkit started ahead


# How the daemon holds each program: its libraries preloaded; the program loaded too; that with a pool
# of children forked ahead of time; that with what the programs load after main learned and preloaded;
# that with fontconfig initialised in the zygote as well; and that with each GTK program's toolkit
# started ahead of its next launch (--prepare-display).
DAEMON_MODES: dict[str, DaemonMode] = {
    "preload": DaemonMode("--app", ["--no-learn"]),
    "warm": DaemonMode("--warm", ["--no-learn"]),
    "pool": DaemonMode("--warm", ["--no-learn", *POOL]),
    "learned": DaemonMode("--warm", POOL, trained=True),
    "warm-up": DaemonMode("--warm", [*POOL, "--warm-up", "fontconfig"], trained=True),
    "prepared": DaemonMode("--warm", [*POOL, "--warm-up", "fontconfig"], trained=True, prepared=True),
}

TRAINING_LAUNCHES = 2
TRAINING_LINGER_MS = 1000  # longer than the daemon's first look at a running child (500 ms)
SETTLE_TIMEOUT_S = 60.0
PREPARED_TIMEOUT_S = 20.0


@dataclass
class Daemons:
    """The daemons of one run, one per daemon mode, and the modes whose daemon could not start."""

    running: dict[str, RunningDaemon] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # mode -> why

    def launches_started(self) -> int:
        return sum(d.launches_started() for d in self.running.values())


WARM_UP = "fontconfig"  # the warm-up mode's steps unless bench --warm-up names others


def mode_args(mode: str, warm_up: str = WARM_UP) -> list[str]:
    """headstartd's options for a daemon mode; the warm-up mode runs `warm_up`'s steps."""
    args = DAEMON_MODES[mode].args
    return [warm_up if a == WARM_UP and mode in ("warm-up", "prepared") else a for a in args]


def start_daemons(
    stack: ExitStack, modes: list[str], programs: list[Program], env: dict[str, str], warm_up: str = WARM_UP
) -> Daemons:
    """A daemon per mode holding every program; a mode whose daemon is missing, fails to start or
    to learn is recorded as unavailable and the others go on."""
    daemons = Daemons()
    for mode in modes:
        if mode == "exec":
            continue
        spec = DAEMON_MODES[mode]
        flags = [spec.flag, "--prepare-display"] if spec.prepared else [spec.flag]
        extra = [arg for p in programs for flag in flags for arg in (flag, str(p.path))] + mode_args(mode, warm_up)
        try:
            daemon = stack.enter_context(private_daemon([], extra_args=extra, env=env))
            if spec.trained:
                train(daemon, mode, programs, env)
            daemons.running[mode] = daemon
        except HeadstartError as e:
            daemons.unavailable[mode] = last_line(str(e))
    return daemons


def not_warm(daemons: Daemons) -> dict[str, dict[str, str]]:
    """For each daemon that registered its programs with --warm, those it serves in preload mode
    instead (its constructors change shared data, a thread...), by path, with the daemon's reason."""
    found: dict[str, dict[str, str]] = {}
    for mode, daemon in daemons.running.items():
        if DAEMON_MODES[mode].flag != "--warm":
            continue
        for line in daemon.status().get("program", []):
            served, _, rest = line.partition(" ")
            path, _, why = rest.partition(" -- ")
            if served == "preload":
                found.setdefault(mode, {})[path] = why or "no reason given"
    return found


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else text


def train(daemon: RunningDaemon, mode: str, programs: list[Program], env: dict[str, str]) -> None:
    """Launches each program through the daemon, then waits until what it learned is preloaded."""
    for program in programs:
        rows = run_launch_timer(
            program, [f"direct@{mode}"], TRAINING_LAUNCHES, {mode: daemon}, env, linger_ms=TRAINING_LINGER_MS
        )
        # A program the daemon declines (and so does not learn) leaves the others to train: its own
        # timed launches say that they were not served.
        errors = [r["error"] for r in rows if "error" in r and not r["error"].startswith("declined: ")]
        if errors:
            raise HeadstartError(f"training launches of {program.name} failed: {errors[0]}")
    wait_settled(daemon)


def wait_settled(daemon: RunningDaemon) -> dict[str, list[str]]:
    """Until the zygote that answers has preloaded everything learned and filled its pool."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        status = daemon.status()
        pending = [v for v in status.get("learned", []) if v.startswith("next-zygote ")]
        if not pending and status.get("pool-waiting") == status.get("pool-size"):
            return status
        time.sleep(0.05)
    raise HeadstartError(f"the daemon did not preload what it learned within {SETTLE_TIMEOUT_S:.0f} s")


def wait_prepared(daemon: RunningDaemon) -> None:
    """Until each child of --prepare-display due after the last launch was forked and started its
    toolkit (fonts, GL programs), so that what it holds is counted whole; the timings do not wait."""
    deadline = time.monotonic() + PREPARED_TIMEOUT_S
    while any(prepared_pending(line) for line in daemon.prepared_lines().values()):
        if time.monotonic() > deadline:
            raise HeadstartError(f"a prepared child was not ready {PREPARED_TIMEOUT_S:.0f} s after the last launch")
        time.sleep(0.05)


def daemon_memory(daemon: RunningDaemon) -> dict[str, Any]:
    """PSS of the zygote and of its waiting children (prepared ones once ready), once no program
    runs: what the daemon costs."""
    wait_prepared(daemon)
    zygote = daemon.zygote_pid()
    try:
        children = [int(p) for p in open(f"/proc/{zygote}/task/{zygote}/children").read().split()]
    except OSError as e:
        raise HeadstartError(f"cannot read the daemon's children: {e.strerror}") from e
    zygote_memory = read_memory(zygote)
    pool = [m.pss_kb for c in children if (m := read_memory(c)) is not None]
    if zygote_memory is None:
        raise HeadstartError(f"cannot read the memory of the daemon (pid {zygote})")
    return {"zygote_pss_kb": zygote_memory.pss_kb, "pool_pss_kb": sum(pool), "pool_children": len(pool)}
