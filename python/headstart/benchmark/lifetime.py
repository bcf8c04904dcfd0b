"""The private servers a run starts (Xvfb, weston, the session bus) end with the process that started
them, even when that process is killed (a test's timeout, kill -9) and never stops them itself: the
kernel sends each SIGTERM as its parent goes (PR_SET_PDEATHSIG), where it would otherwise run on,
orphaned, with the services it started. The parent is the thread that started it: start them from
the thread that runs the whole measurement (the main thread)."""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def ends_with_parent() -> None:
    """subprocess's preexec_fn: in the child, between fork and exec (the setting survives exec).
    A parent already gone by then is not waited for."""
    parent = os.getppid()
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)
