"""A private headstartd for a batch of corpus programs, each registered with --warm (loaded in the
daemon, the mode `headstart check` names first) or --app (preload: the program loaded in each
child), run as the identity the launches run as."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from headstart import binaries
from headstart.corpus.launch import Identity
from headstart.daemon import RunningDaemon, _end_with_parent, _wait_ready, stop


@contextmanager
def batch_daemon(
    programs: list[str], who: Identity, timeout: float = 120.0, register: str = "--warm"
) -> Iterator[RunningDaemon]:
    with tempfile.TemporaryDirectory(prefix="headstart-corpus-daemon-") as tmp:
        runtime = Path(tmp)
        runtime.chmod(0o700)
        who.own(runtime)
        socket = runtime / "headstart" / "socket"
        log = runtime / "daemon.log"
        # No learning: what one program loads after main must not change how the next is served.
        args = [str(binaries.find("headstartd")), "--socket", str(socket), "--verbose", "--no-learn"]
        if who.uid == 0:
            args.append("--allow-root")
        for program in programs:
            args += [register, program]
        env = {"PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": str(runtime), "LC_ALL": "C.UTF-8"}
        with open(log, "wb") as logf:
            proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=env, preexec_fn=_end_with_parent,
                **who.popen_args(),  # type: ignore[arg-type]
            )  # fmt: skip
        daemon = RunningDaemon(proc, socket, runtime, log)
        try:
            _wait_ready(daemon, timeout)
            yield daemon
        finally:
            stop(daemon)
