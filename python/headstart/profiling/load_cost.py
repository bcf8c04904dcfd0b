"""What loading each object a program dlopens after main costs, measured untraced: what a preload
takes over (mapping, relocation and constructors, all done once in the zygote). And what
fontconfig's FcInit costs, which headstartd's `warm-up = fontconfig` does once in the zygote
(src/launcher/preload/warm-up.c), measured the same way.

The probe times only the mapping of a dlopen (its audit events come before relocation), and the
traced launch inflates relocation, so the objects are loaded again apart: in a fresh process (this
Python), which first loads the program's own libraries with RTLD_GLOBAL so that symbol lookups search
a scope like the program's, then times dlopen(RTLD_LAZY) of each object the program asked for, in
the program's order. Each measurement is a process of its own; the first is dropped (it warms the
page cache). Errors: Python's own objects come first in the scope (a few more to search per lookup);
the program may have used other dlopen flags; constructors run without the program's state (no
display connection, for one).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

TIMEOUT = 60.0


def _worker(initial: list[str], asked: list[str]) -> list[float]:
    """In the fresh process: the program's libraries, then each asked-for object, timed (ms)."""
    import ctypes

    for path in initial:
        ctypes.CDLL(path, mode=os.RTLD_LAZY | os.RTLD_GLOBAL)
    out = []
    for path in asked:
        t = time.perf_counter_ns()
        ctypes.CDLL(path, mode=os.RTLD_LAZY)
        out.append((time.perf_counter_ns() - t) / 1e6)
    return out


def _fc_init(library: str) -> float:
    """In the fresh process: FcInit of this libfontconfig (ms): its configuration and caches read."""
    import ctypes

    fc = ctypes.CDLL(library)
    t = time.perf_counter_ns()
    fc.FcInit()
    return (time.perf_counter_ns() - t) / 1e6


def _once(initial: list[str], asked: list[str]) -> list[float] | None:
    return _run("load", [initial, asked])


def _run(job: str, args: list[Any]) -> Any:
    argv = [sys.executable, "-m", __name__, job, json.dumps(args)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return json.loads(done.stdout.splitlines()[-1])


def measure(initial: list[str], asked: list[str], runs: int) -> list[float | None]:
    """The median time to dlopen each object over `runs` processes; None for all when the objects
    cannot be loaded outside the program (a constructor that fails or crashes)."""
    if not asked:
        return []
    results = [_once(initial, asked) for _ in range(runs + 1)][1:]
    if not results or any(r is None for r in results):
        return [None] * len(asked)
    return [statistics.median(r[i] for r in results if r is not None) for i in range(len(asked))]


def fontconfig_ms(library: str, runs: int) -> float | None:
    """The median time of FcInit in a fresh process, the first dropped; None if it cannot run."""
    results = [_run("fontconfig", [library]) for _ in range(runs + 1)][1:]
    if not results or any(r is None for r in results):
        return None
    return statistics.median(float(r) for r in results)


if __name__ == "__main__":
    job, args = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(_worker(*args) if job == "load" else _fc_init(*args)))
