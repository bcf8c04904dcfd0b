"""Starting and stopping a private headstartd, for benchmarks and tests."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from headstart import binaries
from headstart.errors import HeadstartError
from headstart.processes import terminate

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def prepared_pending(line: str) -> bool:
    """Whether a `prepared` status line (docs/protocol.md) names a child still to come: due to be
    forked, or starting its toolkit. Read by whatever must not measure beside that start."""
    return line.split(" ", 1)[0] in ("due", "starting")


@dataclass
class RunningDaemon:
    process: subprocess.Popen[bytes]
    socket: Path
    runtime_dir: Path
    log: Path
    ready_after_s: float = 0.0  # from spawn to listening, seen by polling the log every 2 ms

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def launches_started(self) -> int:
        # The line's own word, not a reason quoted in another line ("... started a thread").
        return self.log_text().count("]: started ")

    def launches_prepared(self) -> int:
        """Launches taken by a child whose toolkit was started ahead (--prepare-display), over all
        the daemon's zygotes."""
        return int(self.status().get("launches-prepared", ["0"])[0])

    def prepared_lines(self) -> dict[str, str]:
        """The daemon's status line on each --prepare-display program's child, by program: `STATE
        TOOLKIT PROGRAM LAUNCHES-TAKEN -- WHY` (docs/protocol.md)."""
        lines = {}
        for line in self.status().get("prepared", []):
            _state, _toolkit, path, *_ = line.split(" ", 3)
            lines[path] = line
        return lines

    def prepared_line(self, program: str) -> str | None:
        """The daemon's status line on program's prepared child, or None when it names no such program."""
        return self.prepared_lines().get(program)

    def status(self) -> dict[str, list[str]]:
        """The daemon's answer to `headstart-run --status`: each key with its values in order."""
        out = subprocess.run(
            [str(binaries.find("headstart-run")), "--socket", str(self.socket), "--status"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if out.returncode != 0:
            raise HeadstartError(f"no status from headstartd: {out.stderr.strip()}")
        fields: dict[str, list[str]] = {}
        for line in out.stdout.splitlines():
            key, _, value = line.partition(": ")
            fields.setdefault(key, []).append(value)
        return fields

    def zygote_pid(self) -> int:
        """The process that serves launches now (the supervisor, `process`, only starts it)."""
        return int(self.status()["pid"][0])


@contextmanager
def private_daemon(
    apps: list[Path],
    extra_args: list[str] | None = None,
    timeout: float = 60.0,
    binary: Path | None = None,
    env: dict[str, str] | None = None,
    wait_ready: bool = True,
    runtime_dir: Path | None = None,
) -> Iterator[RunningDaemon]:
    """A daemon on a socket of its own in a temporary runtime directory (or runtime_dir, kept, as a
    service's is from one start to the next), stopped on exit. `binary` is another build of
    headstartd (an aarch64 one run by qemu-user, say); `env` replaces ours; without `wait_ready` it
    is handed over as soon as it runs."""
    kept = contextlib.nullcontext(str(runtime_dir)) if runtime_dir else None
    with kept or tempfile.TemporaryDirectory(prefix="headstart-") as tmp:
        runtime = Path(tmp)
        runtime.chmod(0o700)
        socket = runtime / "headstart" / "socket"
        log = runtime / "daemon.log"
        args = [str(binary or binaries.find("headstartd")), "--socket", str(socket), "--verbose"]
        for app in apps:
            args += ["--app", str(app)]
        if os.geteuid() == 0:
            args.append("--allow-root")
        args += extra_args or []
        env = dict(env if env is not None else os.environ, XDG_RUNTIME_DIR=str(runtime))
        started = time.monotonic()
        with open(log, "wb") as logf:
            proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=env, preexec_fn=_end_with_parent
            )
        daemon = RunningDaemon(proc, socket, runtime, log)
        try:
            if wait_ready:
                _wait_ready(daemon, timeout)
            daemon.ready_after_s = time.monotonic() - started
            yield daemon
        finally:
            stop(daemon)


def _end_with_parent() -> None:
    """In the daemon's child before exec: a SIGTERM when we end, even killed (PR_SET_PDEATHSIG), so
    that a private daemon never outlives the bench or profile that started it."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _wait_ready(daemon: RunningDaemon, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "ready: listening" in daemon.log_text():
            return
        if daemon.process.poll() is not None:
            raise HeadstartError(f"headstartd did not start: {daemon.log_text().strip()}")
        time.sleep(0.002)
    raise HeadstartError(f"headstartd was not ready after {timeout:.0f} s")


def stop(daemon: RunningDaemon, timeout: float = 10.0) -> None:
    terminate(daemon.process, timeout)
