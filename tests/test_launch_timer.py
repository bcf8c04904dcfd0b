"""bench/timer/launch-timer waiting on a launch: without a deadline it sleeps in poll (it once polled
with a timeout of 0, a busy loop), it stops at --timeout, and it never outlives what started it
(SIGTERM, or its parent's end through PR_SET_PDEATHSIG) nor leaves its launch running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SANITIZED, bin_path, proc_fields


def timer(*args: str) -> list[str]:
    return [str(bin_path("launch-timer")), "--runs", "1", "--run-client", str(bin_path("headstart-run")),
            "--modes", "exec", *args]  # fmt: skip


def cpu_seconds(pid: int) -> float:
    """utime + stime of /proc/PID/stat (fields 14 and 15; the name in parentheses may hold spaces)."""
    fields = proc_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def alive(pid: int) -> bool:
    """Running, not ended nor a zombie waiting for a reaper."""
    try:
        return proc_fields(pid)[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def started_child(pid: int, timeout: float = 5.0) -> int:
    deadline = time.monotonic() + timeout
    while not (found := children(pid)):
        assert time.monotonic() < deadline, "launch-timer started nothing"
        time.sleep(0.02)
    return found[0]


# A program that runs on, and one that also closes its output first (each pipe at its end polls
# readable for ever: it must leave the poll set).
WAITING = {
    "sleeping": ["/bin/sleep", "30"],
    "closed-output": ["/bin/sh", "-c", "exec >&- 2>&-; exec /bin/sleep 30"],
}


@pytest.mark.parametrize("program", list(WAITING))
def test_waiting_without_a_deadline_does_not_spin(program):
    proc = subprocess.Popen([*timer("--"), *WAITING[program]], stdout=subprocess.PIPE, text=True)
    try:
        launched = started_child(proc.pid)
        time.sleep(0.2)
        before = cpu_seconds(proc.pid)
        time.sleep(1.0)
        used = cpu_seconds(proc.pid) - before
        assert used < 0.2, f"launch-timer used {used:.2f} s of CPU in 1 s of waiting"
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert json.loads(out)["error"] == "stopped: launch-timer was terminated"
    assert proc.returncode == 0
    assert wait_gone([launched], 5) == [], "the launch outlived the timer"


def test_timeout_stops_a_launch_waiting_for_its_exit_and_ends_the_run():
    """The rounds after it would wait as long: a program that never exits (a service given no --ready)
    waited out every round of a bench, minutes for nothing."""
    start = time.monotonic()
    done = subprocess.run([*timer("--timeout", "1", "--runs", "5", "--"), "/bin/sleep", "30"], capture_output=True,
                          text=True, timeout=20)  # fmt: skip
    assert json.loads(done.stdout) == {"mode": "exec", "round": 0, "error": "not ended within 1 s"}
    assert done.returncode == 3
    assert time.monotonic() - start < 6


@pytest.mark.skipif(SANITIZED, reason="the main marker is preloaded into the timer too, which a sanitized one refuses")
def test_a_failed_launch_says_its_exit_status_and_what_it_said_last():
    """What the bench prints for a program that failed: its status and its last line of output, made
    safe inside the JSON string (quotes, backslashes, a tab)."""
    script = 'echo first; echo; printf \'%s\\n\' "no \\"display\\" \\\\ here\tat all" >&2; exit 3'
    env = dict(os.environ, LD_PRELOAD=str(bin_path("mark-main")))
    done = subprocess.run([*timer("--"), "/bin/sh", "-c", script], capture_output=True, text=True, timeout=20, env=env)
    error = json.loads(done.stdout)["error"]
    assert error == 'the program failed: exit status 3: no "display" \\ here at all'
    killed = subprocess.run([*timer("--"), "/bin/sh", "-c", "kill -KILL $$"], capture_output=True, text=True,
                            timeout=20, env=env)  # fmt: skip
    assert json.loads(killed.stdout)["error"] == f"the program failed: killed by signal {signal.SIGKILL.value}"
    # One that ends well but before its ready line says so, with what it said (was: "never ready").
    early = subprocess.run([*timer("--ready", "^ready$", "--"), "/bin/sh", "-c", "echo no display here; exit 0"],
                           capture_output=True, text=True, timeout=20, env=env)  # fmt: skip
    assert json.loads(early.stdout)["error"] == "the program ended before it was ready: exit status 0: no display here"


def test_bad_timeout_is_refused():
    done = subprocess.run([*timer("--timeout", "soon", "--"), "/bin/true"], capture_output=True, text=True, timeout=10)
    assert done.returncode == 2 and "--timeout: not a number of seconds: soon" in done.stderr


def test_waiting_for_an_unknown_daemons_prepared_child_is_refused():
    """--wait-prepared names a daemon given with --daemon; any other name is one line, not a run."""
    done = subprocess.run([*timer("--wait-prepared", "nosuch", "--"), "/bin/true"], capture_output=True, text=True,
                          timeout=10)  # fmt: skip
    assert done.returncode == 2 and done.stderr == "launch-timer: --wait-prepared: no --daemon of that name\n"
    assert done.stdout == ""


# Starts the timer as its child, says the timer's pid, and waits to be killed.
PARENT = """
import subprocess, sys, time
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
print(proc.pid, flush=True)
time.sleep(600)
"""


def test_timer_ends_with_its_parent():
    parent = subprocess.Popen([sys.executable, "-c", PARENT, *timer("--"), "/bin/sleep", "60"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        assert parent.stdout is not None
        timer_pid = int(parent.stdout.readline())
        launched = started_child(timer_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert wait_gone([timer_pid, launched], 10) == [], "launch-timer or its launch outlived the parent"
    finally:
        try:
            os.killpg(parent.pid, signal.SIGKILL)  # whatever is left of the parent's group
        except ProcessLookupError:
            pass
