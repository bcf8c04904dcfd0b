"""Boots Debian's kernel (linux-image-amd64) under qemu-system-x86_64 with software emulation and a
serial console on a pty, and records it with `headstart boot record`. Used by the opt-in live test
and to capture the fixtures: python tests/boot/qemu_boot.py OUT.log [KERNEL ARGUMENTS...]."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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


def disk(directory: Path) -> Path:
    """An ext4 image whose /sbin/init is the same static init, for boots through Debian's initrd."""
    root = directory / "root"
    (root / "sbin").mkdir(parents=True)
    (root / "dev").mkdir()
    subprocess.run(["gcc", "-static", "-O2", "-o", str(root / "sbin" / "init"), str(HERE / "init.c")], check=True)
    image = directory / "root.ext4"
    subprocess.run(["mkfs.ext4", "-q", "-F", "-d", str(root), str(image), "16M"], check=True)
    return image


def qemu_argv(kernel_args: list[str], initrd: Path, root: Path | None, qmp: Path) -> list[str]:
    argv = ["qemu-system-x86_64", "-accel", "tcg", "-m", "512", "-smp", "1", "-display", "none", "-S"]
    argv += ["-kernel", str(kernel()), "-initrd", str(initrd), "-append", " ".join(kernel_args)]
    argv += ["-serial", "pty", "-monitor", "none", "-qmp", f"unix:{qmp},server=on,wait=off"]
    if "hs_reboot=1" not in kernel_args:
        argv.append("-no-reboot")
    if root is not None:
        argv += ["-drive", f"file={root},format=raw,if=virtio"]
    return argv


def headstart_recorder(pty: str, log: Path, timeout_s: float) -> list[str]:
    argv = [sys.executable, "-m", "headstart", "boot", "record", "--device", pty, "--stop", READY]
    return [*argv, "--timeout", str(timeout_s), "-o", str(log)]


def boot(log: Path, kernel_args: list[str], timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    """QEMU starts paused; once the recorder holds the pty, it is told to continue: time 0 of the
    log is power-on, near enough (the recorder's clock starts a few ms before)."""
    with tempfile.TemporaryDirectory(prefix="headstart-boot-") as tmp:
        with paused_qemu(Path(tmp), kernel_args) as (pty, qmp):
            recorder = subprocess.Popen(
                headstart_recorder(pty, log, timeout_s), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            _wait_for(lambda: log.exists() and log.stat().st_size > 0)
            _qmp_continue(qmp)
            out, err = recorder.communicate(timeout=timeout_s + 30)
            return subprocess.CompletedProcess(recorder.args, recorder.returncode, out, err)


@contextlib.contextmanager
def paused_qemu(tmpdir: Path, kernel_args: list[str], debian_initrd: bool = False) -> Iterator[tuple[str, Path]]:
    """QEMU started with its CPU stopped: yields its serial pty and QMP socket, kills it on the way out.
    With debian_initrd, Debian's own initramfs (initramfs-tools) runs first and mounts an ext4 root
    from a virtio disk, whose /sbin/init is the test init."""
    qmp = tmpdir / "qmp.sock"
    initrd = Path(str(kernel()).replace("vmlinuz", "initrd.img")) if debian_initrd else initramfs(tmpdir)
    root = disk(tmpdir) if debian_initrd else None
    argv = qemu_argv(kernel_args, initrd, root, qmp)
    qemu = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert qemu.stdout is not None
        for line in qemu.stdout:
            if m := re.search(r"redirected to (/dev/pts/\d+)", line):
                yield m.group(1), qmp
                break
        else:
            raise SystemExit("QEMU did not offer a pty")
    finally:
        try:  # the test init powers off once ready, unless told to reboot
            qemu.wait(timeout=0.1 if "hs_reboot=1" in kernel_args else 30)
        except subprocess.TimeoutExpired:
            qemu.kill()
            qemu.wait()


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
