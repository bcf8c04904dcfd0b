"""The pool (--pool N): children forked ahead of time take requests, and are replaced off the
launch path. That pool children behave exactly as exec is checked by the whole launcher suite,
which runs against a pooled daemon too (conftest.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import base_env, bin_path, proc_fields, run_served, waiting_children
from headstart.daemon import RunningDaemon, private_daemon


@contextmanager
def pooled_daemon(size: int) -> Iterator[RunningDaemon]:
    with private_daemon([], extra_args=["--warm", str(bin_path("observe")), "--pool", str(size)]) as d:
        yield d
    assert d.process.returncode == 0, d.log_text()


def observe(*args: str) -> list[str]:
    return [str(bin_path("observe")), *args]


def test_launches_come_from_the_pool_and_it_refills():
    with pooled_daemon(3) as d:
        first = waiting_children(d, 3)
        assert len(first) == 3
        for pid in first:
            # A waiting child holds its channel to the daemon and nothing else of the daemon's (once
            # it has closed the rest, the first thing it does: one just forked still has them).
            deadline = time.monotonic() + 10
            while len(os.listdir(f"/proc/{pid}/fd")) != 1:
                assert time.monotonic() < deadline, os.listdir(f"/proc/{pid}/fd")
                time.sleep(0.02)
        for i in range(5):
            waiting_children(d, 3)  # the pool refills a few ms after each hand-over
            got = run_served(d, observe("exit", str(i)))
            assert (got.returncode, got.stdout) == (i, f"exiting with {i}\n".encode())
        assert d.log_text().count("(warm, from the pool)") == 5
        again = waiting_children(d, 3)
        assert len(again) == 3 and not set(again) & set(first)


def test_a_burst_larger_than_the_pool_is_served_by_fork_too():
    """Ten programs running at once from a pool of two: all served, at least two from the pool. How
    many of the others are forked depends on how fast they arrive, as the pool refills between."""
    with pooled_daemon(2) as d:
        waiting_children(d, 2)
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        procs = [
            subprocess.Popen(
                [*client, *observe("cat")],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=base_env(),
                start_new_session=True,
            )
            for _ in range(10)
        ]
        deadline = time.monotonic() + 30
        while d.launches_started() < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
        results = [p.communicate(f"program {i}".encode(), timeout=60) for i, p in enumerate(procs)]
        assert [out for out, _ in results] == [f"program {i}".encode() for i in range(10)]
        assert [p.returncode for p in procs] == [0] * 10
        log = d.log_text()
        pooled, forked = log.count("(warm, from the pool)"), log.count("(warm)\n")
        assert pooled >= 2 and pooled + forked == 10, log


def test_a_waiting_child_that_dies_is_replaced():
    with pooled_daemon(2) as d:
        victim = waiting_children(d, 2)[0]
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while "ended unexpectedly" not in d.log_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert f"waiting child {victim} ended unexpectedly" in d.log_text()
        kids = waiting_children(d, 2)
        assert len(kids) == 2 and victim not in kids
        got = run_served(d, observe("exit", "7"))
        assert got.returncode == 7


def test_stopping_the_daemon_lets_the_waiting_children_go():
    with pooled_daemon(4) as d:
        kids = waiting_children(d, 4)
        assert len(kids) == 4
    # The daemon's stop returns at once; each waiting child, told to go, ends on its own moments later.
    deadline = time.monotonic() + 10
    for pid in kids:
        while not _ended(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _ended(pid), f"waiting child {pid} still running 10 s after the daemon stopped"


def _ended(pid: int) -> bool:
    try:
        return proc_fields(pid)[0] == "Z"
    except FileNotFoundError:
        return True


def test_the_zygote_is_named_headstartd():
    # It is started from /proc/self/exe, which named it "exe": pgrep headstartd missed it.
    with pooled_daemon(1) as d:
        assert Path(f"/proc/{d.zygote_pid()}/comm").read_text() == "headstartd\n"
