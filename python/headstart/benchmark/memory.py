"""The memory of a launched program as it enters main, per mode: PSS and private dirty.

The program marks main with HEADSTART_MARK_STOP=1 (bench/apps/mark.h): it writes the time and its
pid, then stops itself. We read /proc/PID/smaps while it is stopped and continue it. A child of the
daemon shares the daemon's pages, so its PSS counts a share of them and its private dirty only what
it has written since the fork; an exec'd program owns all of its own.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from headstart import binaries
from headstart.benchmark.programs import Program
from headstart.errors import HeadstartError
from headstart.profiling.memory import read_memory
from headstart.stats import summarize

TIMEOUT_S = 30.0


@dataclass(frozen=True)
class MemoryAtMain:
    pss_kb: float  # medians over the launches
    private_dirty_kb: float
    launches: int

    def as_dict(self) -> dict[str, float]:
        return {"pss_kb": self.pss_kb, "private_dirty_kb": self.private_dirty_kb, "launches": self.launches}


def measure(program: Program, socket: Path | None, env: dict[str, str], launches: int = 3) -> MemoryAtMain:
    """By exec when `socket` is None, else through headstart-run and that daemon."""
    pss, dirty = [], []
    for _ in range(launches):
        kb = _one_launch(program, socket, env)
        pss.append(kb[0])
        dirty.append(kb[1])
    return MemoryAtMain(summarize(pss).median, summarize(dirty).median, launches)


def _one_launch(program: Program, socket: Path | None, env: dict[str, str]) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    cmd = (
        program.argv
        if socket is None
        else [str(binaries.find("headstart-run")), "--socket", str(socket), *program.argv]
    )
    launch_env = dict(env, **program.env, HEADSTART_MARK_FD=str(write_end), HEADSTART_MARK_STOP="1")
    try:
        proc = subprocess.Popen(
            cmd,
            env=launch_env,
            pass_fds=(write_end,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # no controlling terminal, as in the timed launches
        )
    finally:
        os.close(write_end)
    try:
        pid = _read_pid(read_end)
        _wait_stopped(pid)
        memory = read_memory(pid)
        os.kill(pid, signal.SIGCONT)
        if program.ready.stops:  # it would run on (a window, a service)
            proc.terminate()
            proc.wait(timeout=TIMEOUT_S)
        elif _wait_exit(proc, program) != 0:
            raise HeadstartError(f"{program.name} failed (exit status {proc.returncode}) after its memory was read")
        if memory is None:
            raise HeadstartError(f"cannot read the memory of {program.name} (pid {pid})")
        return memory.pss_kb, memory.private_dirty_kb
    finally:
        os.close(read_end)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_exit(proc: subprocess.Popen[bytes], program: Program) -> int:
    """Its exit status, within the program's timeout (30 s without one)."""
    timeout = program.ready.timeout or TIMEOUT_S
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise HeadstartError(f"{program.name} did not exit within {timeout:g} s (give --ready or --timeout)") from None


def _read_pid(fd: int) -> int:
    ready, _, _ = select.select([fd], [], [], TIMEOUT_S)
    line = os.read(fd, 64).decode() if ready else ""
    fields = line.split()
    if len(fields) != 2:
        raise HeadstartError("the program did not mark main with its pid")
    return int(fields[1])


def _wait_stopped(pid: int) -> None:
    """The mark is written just before the program stops itself: wait until it has."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError as e:
            raise HeadstartError(f"process {pid} ended before its memory was read") from e
        if stat.rpartition(")")[2].split()[0] == "T":
            return
        time.sleep(0.001)
    raise HeadstartError(f"process {pid} did not stop at main")
