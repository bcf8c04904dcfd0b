"""Whether loading a library starts threads: its constructors (or its dependencies') run in a
throwaway process that loads it alone, as headstartd tests the objects it learned. Deferred, such a
library would start them at the first call, in the middle of the program instead of before main."""

from __future__ import annotations

import subprocess
import sys

# ctypes loads with RTLD_NOW. Threads are counted a moment after, live in /proc/self/task.
_PROBE = """
import ctypes, os, sys, time
before = len(os.listdir("/proc/self/task"))
ctypes.CDLL(sys.argv[1])
time.sleep(0.05)
print(len(os.listdir("/proc/self/task")) - before)
"""


def threads_started(path: str) -> int | str:
    """The threads loading it alone started, or why that could not be told."""
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, path], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "loading it alone did not finish in 30 s"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return f"it could not be loaded alone ({lines[-1] if lines else f'status {done.returncode}'})"
    return int(done.stdout)
