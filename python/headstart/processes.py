"""Ending the processes the tools start: a helper (Xvfb, weston, a window watcher, the launch timer,
the daemon) with SIGTERM first, so that it can remove its socket or stop what it runs, then SIGKILL;
and, when a command is interrupted, whatever it still has running."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def terminate(proc: subprocess.Popen[Any], timeout: float) -> None:
    """Ends proc: SIGTERM, then SIGKILL if it has not ended within timeout seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def process_stats() -> Iterator[tuple[int, list[bytes]]]:
    """Each process's /proc/PID/stat fields after its name (state, ppid, process group, session...),
    for the processes still there as they are read."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        yield int(entry), stat.rsplit(b")", 1)[-1].split()  # the name may hold spaces and parentheses


def end_children() -> None:
    """SIGKILL to what this process started and has not reaped: each child with the process group it
    leads (a launch runs in a session of its own, where the terminal's Ctrl-C does not reach it, and
    may be stopped at its ready line). For an interrupted command: what it measured goes with it.
    Unreaped children keep their pids, so none of them is another process's by now."""
    me = os.getpid()
    for pid, fields in process_stats():
        ppid, group = int(fields[1]), int(fields[2])
        if ppid != me:
            continue
        try:
            if group == pid:
                os.killpg(group, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
