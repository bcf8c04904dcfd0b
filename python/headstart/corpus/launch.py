"""One launch of a corpus program, by exec or through a daemon's headstart-run, with no terminal
(a session of its own, stdin a pipe), stopped after a timeout: what it wrote, how it ended, and
whether the daemon served it (from the daemon's log, which names every launch it started)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from headstart import binaries
from headstart.daemon import RunningDaemon
from headstart.processes import process_stats

STARTED = re.compile(rb"started (.+) as (\d+) \((\w+)\)\n")
DECLINED = re.compile(rb"declined: (.*)\n")


@dataclass
class Identity:
    """Who the launches run as: root's programs in /usr/sbin would act on the machine, so as root
    the run takes an unprivileged user (nobody), whom the daemon serves as itself."""

    uid: int | None = None
    gid: int | None = None

    def popen_args(self) -> dict[str, object]:
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    def own(self, path: Path) -> None:
        if self.uid is not None:
            os.chown(path, self.uid, self.gid if self.gid is not None else -1)


@dataclass
class Outcome:
    status: int | None  # None: stopped after the timeout
    stdout: bytes
    stderr: bytes
    left_running: bool = False  # processes of its session were still there after it ended
    served: str | None = None  # the daemon's mode when it started it
    declined: str | None = None  # the daemon's reason when it did not

    def same_as(self, other: Outcome) -> bool:
        return (self.status, self.stdout, self.stderr) == (other.status, other.stdout, other.stderr)


def session_members(sid: int) -> list[int]:
    """The processes whose session is sid (field 6 of /proc/PID/stat)."""
    # A zombie has ended; its parent (the zygote, for a served one) reaps it.
    return [pid for pid, fields in process_stats() if len(fields) > 3 and int(fields[3]) == sid and fields[0] != b"Z"]


def stop_session(sid: int) -> bool:
    """SIGKILL to every process left in the session; whether there was one."""
    members = session_members(sid)
    for pid in members:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return bool(members)


def _run(argv: list[str], stdin: bytes, env: dict[str, str], who: Identity, timeout: float,
         daemon: RunningDaemon | None) -> Outcome:  # fmt: skip
    # The same fresh, empty folder for both ways, as working directory and HOME: a program that
    # prints where it is, or keeps a file there from a first run, sees the same in each.
    cwd = Path(env["HOME"])
    shutil.rmtree(cwd, ignore_errors=True)
    cwd.mkdir(mode=0o700)
    who.own(cwd)
    log_from = daemon.log.stat().st_size if daemon else 0
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
        start_new_session=True, **who.popen_args(),  # type: ignore[arg-type]
    )  # fmt: skip
    status: int | None
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        status = None
    said = _daemon_said(daemon, log_from)
    served_sid = int(said[1]) if said and said[0] == "started" else None
    if status is None:
        # The served program is the daemon's child, in a session of its own: stop it there.
        for sid in filter(None, (served_sid, proc.pid)):
            stop_session(sid)
        proc.kill()
        out, err = proc.communicate()
        said = _daemon_said(daemon, log_from)
    left = any([stop_session(sid) for sid in filter(None, (served_sid, proc.pid))])
    outcome = Outcome(status, out, err, left_running=left)
    if said and said[0] == "started":
        outcome.served = said[2]
    elif said:
        outcome.declined = said[1]
    return outcome


def _daemon_said(daemon: RunningDaemon | None, offset: int) -> tuple[str, ...] | None:
    """What the daemon logged about the launch since offset: ('started', pid, mode) or ('declined', why)."""
    if daemon is None:
        return None
    with open(daemon.log, "rb") as f:
        f.seek(offset)
        text = f.read()
    started = STARTED.search(text)
    if started:
        return ("started", started.group(2).decode(), started.group(3).decode())
    declined = DECLINED.search(text)
    if declined:
        return ("declined", declined.group(1).decode(errors="replace"))
    return None


def run_exec(argv: list[str], stdin: bytes, env: dict[str, str], who: Identity, timeout: float) -> Outcome:
    return _run(argv, stdin, env, who, timeout, None)


def run_served(daemon: RunningDaemon, argv: list[str], stdin: bytes, env: dict[str, str], who: Identity,
               timeout: float) -> Outcome:  # fmt: skip
    client = [str(binaries.find("headstart-run")), "--socket", str(daemon.socket), "--"]
    return _run(client + argv, stdin, env, who, timeout, daemon)
