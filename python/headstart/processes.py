"""Ending the helper processes the tools start (Xvfb, weston, a window watcher, the launch timer,
the daemon): SIGTERM first, so that each can remove its socket or stop what it runs, then SIGKILL."""

from __future__ import annotations

import subprocess
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
