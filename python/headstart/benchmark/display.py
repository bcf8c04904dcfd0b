"""An X server for programs that show a window: a private Xvfb (a real X server drawing into
memory, with Mesa's software GL), started for the run and stopped after it, or one the user names."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from headstart.errors import HeadstartError

START_TIMEOUT_S = 15.0
SCREEN = "1280x800x24"


@contextmanager
def x_display(display: str | None = None) -> Iterator[str]:
    """The DISPLAY to use: `display` itself, or a fresh Xvfb on a free display number."""
    if display:
        yield display
        return
    xvfb = shutil.which("Xvfb")
    if not xvfb:
        raise HeadstartError(
            "no X server for the programs that show a window: install xvfb (make deps) or pass --display"
        )
    read_end, write_end = os.pipe()
    try:
        # -displayfd: Xvfb picks a free display number and writes it here once it accepts clients.
        proc = subprocess.Popen(
            [xvfb, "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0", SCREEN],
            pass_fds=(write_end,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], START_TIMEOUT_S)
        number = os.read(read_end, 32).decode().strip() if ready else ""
        if not number.isdigit():
            raise HeadstartError(f"Xvfb did not start within {START_TIMEOUT_S:.0f} s")
        yield f":{number}"
    finally:
        os.close(read_end)
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
