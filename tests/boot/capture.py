"""Captures the serial logs under tests/boot/fixtures/ by booting Debian's kernel under QEMU and
reading its console with the tools people already use: `ts` from moreutils (Debian's moreutils)
and grabserial (Debian's grabserial), besides `headstart boot record`. Needs qemu-system-x86,
linux-image-amd64, moreutils, grabserial and e2fsprogs. Run as: python tests/boot/capture.py [NAME...]
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import qemu_boot
from qemu_boot import BASE_ARGS

FIXTURES = Path(__file__).parent / "fixtures"
DEBIAN_ROOT = ["root=/dev/vda", "ro"]  # initramfs-tools' /init mounts it, then runs its /sbin/init


def ts(*options: str) -> str:
    return "ts " + " ".join(shlex.quote(o) for o in options)


def grabserial(pty: str) -> str:
    return f"grabserial -S -t -d {pty}"


# name: (kernel arguments, how the pty is read, readies before it stops, through Debian's initrd)
CAPTURES = {
    "ts-default": ([*BASE_ARGS, "hs_ansi=1"], lambda pty: _piped(pty, ts()), 1, False),
    "ts-since-start": ([*BASE_ARGS, "hs_ansi=1"], lambda pty: _piped(pty, ts("-s", "%H:%M:%.S")), 1, False),
    "ts-incremental": ([*BASE_ARGS], lambda pty: _piped(pty, ts("-i", "%H:%M:%.S")), 1, False),
    "grabserial": ([*BASE_ARGS, "hs_ansi=1"], grabserial, 1, False),
    "grabserial-two-boots": ([*BASE_ARGS, "hs_reboot=1", "quiet"], grabserial, 2, False),
    "initrd-root": ([*BASE_ARGS, *DEBIAN_ROOT], None, 1, True),
}


def _piped(pty: str, tool: str) -> str:
    """A raw pty read by cat, as a terminal program or a script would, into the tool."""
    return f"stty -F {pty} raw -echo && cat {pty} | {tool}"


def capture(name: str, timeout_s: float = 300) -> Path:
    args, reader, readies, debian_initrd = CAPTURES[name]
    log = FIXTURES / f"qemu-{name}.log"
    with tempfile.TemporaryDirectory(prefix="headstart-capture-") as tmp:
        with qemu_boot.paused_qemu(Path(tmp), args, debian_initrd) as (pty, qmp):
            if reader is None:
                argv = qemu_boot.headstart_recorder(pty, log, timeout_s)
            else:
                argv = ["sh", "-c", f"exec > {shlex.quote(str(log))}; {reader(pty)}"]
            proc = subprocess.Popen(argv, start_new_session=True)
            time.sleep(1.0)  # the reader has the pty open
            qemu_boot._qmp_continue(qmp)
            deadline = time.monotonic() + timeout_s
            while proc.poll() is None and _readies(log) < readies and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(0.5)  # the power-off line after the ready one
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
    return log


def _readies(log: Path) -> int:
    return log.read_bytes().count(b"-ready: init running") if log.exists() else 0


if __name__ == "__main__":
    for name in sys.argv[1:] or CAPTURES:
        path = capture(name)
        print(f"{path}: {path.stat().st_size} bytes, {_readies(path)} ready lines", file=sys.stderr)
