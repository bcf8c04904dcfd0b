"""The total time of N repeated launches of one program, N from 1 to 100 (the seed paper's Figure 8).

A daemon mode pays once to start its daemon (for this program alone: preloading, loading it warm,
filling the pool) and then each launch; exec pays each launch in full. The total of N launches is
the daemon's start plus the first N times to ready (to exit for a program that has no ready point of
its own) of one alternating run of 100 rounds, so every
mode's launches share the same moments of machine noise.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from itertools import accumulate

from rich.progress import Progress

from headstart.benchmark.daemons import start_daemons
from headstart.benchmark.programs import Program
from headstart.benchmark.timing import daemon_mode, run_launch_timer

MAX_LAUNCHES = 100


@dataclass
class RepeatedLaunches:
    program: str
    startup_ms: dict[str, float]  # per daemon mode: from spawning the daemon to its listening
    total_ms: dict[str, list[float]]  # per key: total time of the first N launches, N = 1..100
    errors: dict[str, str]  # per key or daemon mode that did not run

    def total_at(self, key: str, n: int) -> float | None:
        totals = self.total_ms.get(key)
        return totals[n - 1] if totals and len(totals) >= n else None

    def as_dict(self) -> dict[str, object]:
        return {
            "program": self.program,
            "startup_ms": self.startup_ms,
            "total_ms": self.total_ms,
            "errors": self.errors,
        }


def measure(
    program: Program,
    modes: list[str],
    keys: list[str],
    env: dict[str, str],
    progress: Progress | None,
    launches: int = MAX_LAUNCHES,
) -> RepeatedLaunches:
    with ExitStack() as stack:
        daemons = start_daemons(stack, modes, [program], env)
        available = [k for k in keys if daemon_mode(k) not in daemons.unavailable]
        rows = run_launch_timer(program, available, launches, daemons.running, env, progress)
    startup = {mode: d.ready_after_s * 1000 for mode, d in daemons.running.items()}
    totals, errors = {}, dict(daemons.unavailable)
    for key in available:
        mine = sorted((r for r in rows if r["mode"] == key), key=lambda r: r["round"])
        if any("error" in r for r in mine):
            errors[key] = next(r["error"] for r in mine if "error" in r)
            continue
        start = startup.get(daemon_mode(key), 0.0)
        totals[key] = [start + t for t in accumulate(r["to_ready_ns"] / 1e6 for r in mine)]
    return RepeatedLaunches(program.label, startup, totals, errors)
