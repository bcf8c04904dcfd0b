"""What keeps pages resident while cold launches are timed: headstart-pind with a plan, or vmtouch
locking whole files (the usual tool, for comparison). Each runs for the length of a `with` block
and gives the bytes it locked."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from headstart import binaries
from headstart.errors import HeadstartError

START_TIMEOUT_S = 120.0  # locking reads what is not cached: a slow disk takes its time


def locked_bytes(pid: int) -> int:
    """VmLck of the process: what it holds locked."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmLck:"):
            return int(line.split()[1]) * 1024
    return 0


@contextmanager
def pind_running(plan: Path, budget: int | None) -> Iterator[int]:
    """headstart-pind pinning plan within budget (all of it by default); yields the bytes locked.
    It counts no launches here: the plan's counts rank the ranges."""
    with tempfile.NamedTemporaryFile(prefix="headstart-pind-", suffix=".log") as log:
        cmd = [str(binaries.find("headstart-pind")), "--plan", str(plan), "--launch-socket", "none"]
        cmd += ["--budget", str(budget or 1 << 40), "--interval", "3600"]
        proc = subprocess.Popen(cmd, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while b"ready: pinning" not in Path(log.name).read_bytes():
                if proc.poll() is not None or time.monotonic() > deadline:
                    text = Path(log.name).read_text(errors="replace").strip()
                    raise HeadstartError(f"headstart-pind did not start: {text.splitlines()[-1] if text else '?'}")
                time.sleep(0.02)
            yield locked_bytes(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@contextmanager
def vmtouch_locking(files: list[str]) -> Iterator[int]:
    """vmtouch -l holding every page of the files; yields the bytes locked."""
    vmtouch = shutil.which("vmtouch")
    if vmtouch is None:
        raise HeadstartError("vmtouch is not installed (apt-get install vmtouch)")
    proc = subprocess.Popen([vmtouch, "-l", "-q", "-m", "4G", *files], stderr=subprocess.DEVNULL)
    try:
        # It locks file after file, then waits to be stopped: done when VmLck stops growing.
        deadline, last, since = time.monotonic() + START_TIMEOUT_S, -1, time.monotonic()
        while time.monotonic() - since < 0.5:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise HeadstartError("vmtouch -l did not lock the files (RLIMIT_MEMLOCK?)")
            now = locked_bytes(proc.pid)
            if now != last:
                last, since = now, time.monotonic()
            time.sleep(0.05)
        yield last
    finally:
        proc.terminate()
        proc.wait(timeout=30)
