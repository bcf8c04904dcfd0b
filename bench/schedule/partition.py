#!/usr/bin/env python3
"""`make schedule-demo`: a periodic task launched through headstartd while CPU hogs keep every core
busy, with and without its --schedule: the launch latency (from spawning headstart-run to the
task's main) and the period jitter (how late each 1 ms wake-up comes), medians with p10-p90 over
the launches, the arms alternating launch by launch.

Arms: `exec` (headstart-run --exec, no schedule), `served` (no schedule), then served with
`fifo` (policy=fifo priority=50), `fifo+partition` (the same on the last CPU, in a cpuset of its
own), and `deadline` (policy=deadline, 300 us every 1 ms); `pool` and `fifo+partition, pool` (on
the first CPU: exclusive cpusets may not overlap) are served by a child forked ahead (--pool 1). Needs root (real-time policies, cgroups).

usage: partition.py BUILD_DIR [LAUNCHES]"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from headstart.daemon import RunningDaemon, private_daemon
from headstart.stats import summarize

PERIODS, PERIOD_US, WORK_US = "500", "1000", "100"
LAST = max(os.sched_getaffinity(0))
FIRST = min(os.sched_getaffinity(0))
# Exclusive cpusets may not overlap: the pool's partition is on another CPU.
PARTITION, PARTITION_POOL = (f"policy=fifo priority=50 cpus={cpu} cpuset={cpu}" for cpu in (LAST, FIRST))
# Arm: its --schedule settings (None: none), and whether children are forked ahead.
ARMS = {
    "served": (None, False),
    "pool": (None, True),
    "fifo": ("policy=fifo priority=50", False),
    "fifo+partition": (PARTITION, False),
    "fifo+partition, pool": (PARTITION_POOL, True),
    "deadline": ("policy=deadline runtime=300us deadline=1ms period=1ms", False),
}


@contextlib.contextmanager
def hogs() -> Iterator[None]:
    """One busy loop per CPU, at the default policy: the load the task competes with."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in os.sched_getaffinity(0)]
    try:
        time.sleep(0.5)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def launch(client: list[str], periodic: Path) -> tuple[float, list[float]]:
    """Launch latency in ms, and the task's jitter percentiles (p50, p99, max) in us."""
    start = time.monotonic_ns()
    out = subprocess.run([*client, str(periodic), PERIODS, PERIOD_US, WORK_US], capture_output=True, text=True,
                         check=True, start_new_session=True).stdout  # fmt: skip
    main = int(re.search(r"^main (\d+)$", out, re.M).group(1))  # type: ignore[union-attr]
    late = re.search(r"late_us p50 (\S+) p99 (\S+) max (\S+)", out)
    return (main - start) / 1e6, [float(x) for x in late.groups()]  # type: ignore[union-attr]


def main() -> int:
    build, runs = Path(sys.argv[1]).resolve(), int(sys.argv[2]) if len(sys.argv) > 2 else 20
    periodic, run = build / "bench/periodic", str(build / "headstart-run")
    results: dict[str, list[tuple[float, list[float]]]] = {}
    with contextlib.ExitStack() as stack:
        daemons: dict[str, RunningDaemon] = {}
        for arm, (settings, pool) in ARMS.items():
            args = (["--schedule", f"{periodic} {settings}"] if settings else []) + (["--pool", "1"] if pool else [])
            daemons[arm] = stack.enter_context(private_daemon([periodic], extra_args=args))
        clients = {"exec": [run, "--exec"]} | {arm: [run, "--socket", str(d.socket)] for arm, d in daemons.items()}
        stack.enter_context(hogs())
        for _ in range(runs):
            for arm, client in clients.items():
                results.setdefault(arm, []).append(launch(client, periodic))
        served = {arm: d.launches_started() for arm, d in daemons.items()}
    print(
        f"{runs} launches per arm, alternating; {len(os.sched_getaffinity(0))} CPU hogs; a {PERIOD_US} us period, "
        f"{WORK_US} us of work, {PERIODS} periods per launch; served launches: {served}"
    )
    base = summarize([lat for lat, _ in results["served"]]).median
    base_p99 = summarize([j[1] for _, j in results["served"]]).median
    print(
        f"{'arm':22} {'launch ms, median (p10-p90)':>30} {'ratio':>6} {'jitter p99 us, median (p10-p90)':>34} "
        f"{'ratio':>6} {'worst max us':>13}"
    )
    for arm, rows in results.items():
        lat = summarize([r[0] for r in rows])
        p99 = summarize([r[1][1] for r in rows])
        worst = max(r[1][2] for r in rows)
        print(
            f"{arm:16} {f'{lat.median:.2f} ({lat.p10:.2f}-{lat.p90:.2f})':>30} {lat.median / base:6.2f} "
            f"{f'{p99.median:.1f} ({p99.p10:.1f}-{p99.p90:.1f})':>34} {p99.median / base_p99:6.2f} {worst:13.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
