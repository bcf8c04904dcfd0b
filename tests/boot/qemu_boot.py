"""Boots Debian's kernel (linux-image-amd64) under qemu-system-x86_64 with software emulation and a
serial console on a pty, and records it with `headstart boot record`. Used by the opt-in live test
and to capture the fixtures: python tests/boot/qemu_boot.py OUT.log [KERNEL ARGUMENTS...]."""

from __future__ import annotations

import glob
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
READY = "headstart-ready"
# earlyprintk: the kernel's setup code and its first messages reach the serial line as they happen.
BASE_ARGS = ["console=ttyS0", "earlyprintk=serial,ttyS0,115200", "printk.time=1", "rdinit=/init", "panic=-1"]
VERBOSE_ARGS = ["initcall_debug", "loglevel=8"]


def kernel() -> Path:
    found = sorted(glob.glob("/boot/vmlinuz-*"))
    if not found:
        raise SystemExit("no /boot/vmlinuz-*: install linux-image-amd64")
    return Path(found[-1])


def _cpio_entry(name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0), ino: int = 1) -> bytes:
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name) + 1, 0]
    header = b"070701" + b"".join(f"{f:08x}".encode() for f in fields)
    out = header + name.encode() + b"\0"
    out += b"\0" * (-len(out) % 4) + data
    return out + b"\0" * (-len(out) % 4)


def initramfs(directory: Path) -> Path:
    """A newc archive of /dev/console and a static /init."""
    init = directory / "init"
    subprocess.run(["gcc", "-static", "-O2", "-o", str(init), str(HERE / "init.c")], check=True)
    archive = (
        _cpio_entry("dev", 0o040755, ino=1)
        + _cpio_entry("dev/console", 0o020600, rdev=(5, 1), ino=2)
        + _cpio_entry("init", 0o100755, init.read_bytes(), ino=3)
        + _cpio_entry("TRAILER!!!", 0, ino=0)
    )
    path = directory / "initramfs.cpio"
    path.write_bytes(archive)
    return path


def boot(log: Path, kernel_args: list[str], timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    """QEMU starts paused; once the recorder holds the pty, it is told to continue: time 0 of the
    log is power-on, near enough (the recorder's clock starts a few ms before)."""
    with tempfile.TemporaryDirectory(prefix="headstart-boot-") as tmp:
        tmpdir = Path(tmp)
        qmp = tmpdir / "qmp.sock"
        qemu = subprocess.Popen(
            [
                "qemu-system-x86_64",
                "-accel",
                "tcg",
                "-m",
                "512",
                "-smp",
                "1",
                "-display",
                "none",
                "-no-reboot",
                "-S",
                "-kernel",
                str(kernel()),
                "-initrd",
                str(initramfs(tmpdir)),
                "-append",
                " ".join(kernel_args),
                "-serial",
                "pty",
                "-monitor",
                "none",
                "-qmp",
                f"unix:{qmp},server=on,wait=off",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert qemu.stdout is not None
        pty = None
        for line in qemu.stdout:
            m = re.search(r"redirected to (/dev/pts/\d+)", line)
            if m:
                pty = m.group(1)
                break
        if pty is None:
            qemu.kill()
            raise SystemExit("QEMU did not offer a pty")
        recorder = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headstart",
                "boot",
                "record",
                "--device",
                pty,
                "--stop",
                READY,
                "--timeout",
                str(timeout_s),
                "-o",
                str(log),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_for(lambda: log.exists() and log.stat().st_size > 0)
        _qmp_continue(qmp)
        out, err = recorder.communicate(timeout=timeout_s + 30)
        try:
            qemu.wait(timeout=60)
        except subprocess.TimeoutExpired:
            qemu.kill()
        return subprocess.CompletedProcess(recorder.args, recorder.returncode, out, err)


def _wait_for(condition, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("the recorder did not start")
        time.sleep(0.01)


def _qmp_continue(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(path))
        f = s.makefile("rw")
        f.readline()  # greeting
        for command in ("qmp_capabilities", "cont"):
            f.write(json.dumps({"execute": command}) + "\n")
            f.flush()
            f.readline()


if __name__ == "__main__":
    out = Path(sys.argv[1])
    args = BASE_ARGS + (sys.argv[2:] or VERBOSE_ARGS)
    done = boot(out, args)
    print(done.stdout, done.stderr, f"recorder exit {done.returncode}", file=sys.stderr)
    os._exit(done.returncode)
