"""One boot of the virtual device: QEMU started with its CPUs stopped, the serial console recorded
by `headstart boot record` (time 0 is when the CPUs start: power-on), commands to the device's app
agent over a virtio serial port, the device's marks read back from the recorded console.

The disk is shaped like eMMC with QEMU's own throttling: Samsung's first eMMC 5.1 parts (KLMxGxJETD,
announced February 2015: 250 MB/s sequential read, 125 MB/s write, 11,000 random read and 13,000
random write IOPS). Boots run on a snapshot of the image (-snapshot): every boot is the first after
the image was made, unless provisioning writes to it on purpose.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from headstart.boot.console import clean

MARK = "headstart-device: "
# systemd's console lines for a unit that failed, or that could not start because one it needs failed.
UNIT_FAILED = re.compile(r"(Failed to start .*|Dependency failed for .*)$")
EMMC = ",".join(
    [
        "throttling.bps-read=250000000",
        "throttling.bps-write=125000000",
        "throttling.iops-read=11000",
        "throttling.iops-write=13000",
    ]
)
ARCH = {
    "arm64": {
        "qemu": "qemu-system-aarch64",
        "machine": ["-M", "virt", "-cpu", "cortex-a72"],
        "console": "ttyAMA0",
        "early": "earlycon=pl011,0x9000000",
    },
    "amd64": {
        "qemu": "qemu-system-x86_64",
        "machine": ["-M", "q35", "-vga", "none"],
        "console": "ttyS0",
        "early": "earlyprintk=serial,ttyS0,115200",
    },
}
# What every measured boot passes: the root, the console, and what analysis needs (printk times and
# each initcall's duration at a log level the console prints).
BASE_ARGS = ["root=/dev/vda", "rw", "printk.time=1"]
VERBOSE_ARGS = ["initcall_debug", "loglevel=8"]
# What an emulated board passes so that its boot costs what the board's would. QEMU's TCG keeps one
# address space ID and flushes its whole TLB whenever the guest switches to another (target/arm,
# vmsa_ttbr_write), and Debian's arm64 kernel, given a KASLR seed, forces page table isolation on, which
# switches it at every kernel entry and exit: on a Cortex-A72 a tagged register write, under TCG two
# whole TLB flushes per system call and interrupt. Two boots of the stock image each way (2026-11-28):
# the home screen's frame at 33.8 and 34.1 s with it, 23.0 and 24.7 s without (docs/device.md).
# TCG also keeps the code it translated by virtual address and physical page: a program exec'd again
# at the addresses ASLR draws anew pays the translation of all it runs at every launch, where one forked
# from a zygote (at the zygote's addresses) pays it once. A board translates nothing: with norandmaps
# exec'd launches pay it once too. The same galculator exec'd five times after its first launch, two
# boots each way (2026-11-28): arm64 1,535-1,674 ms with ASLR, 1,092-1,308 ms without; amd64
# 1,355-1,603 and 910-1,207 ms (docs/device.md). x86's emulated CPU is not page-table isolated.
TCG_ARGS = {"arm64": ["kpti=0", "norandmaps"], "amd64": ["norandmaps"]}


class DeviceError(Exception):
    """A boot that failed: one line naming what."""


@dataclass
class BootFiles:
    kernel: Path
    initrd: Path | None
    image: Path


def accelerator(arch: str, cache: Path) -> str:
    """KVM when it really boots a guest here (a guest of the host's own architecture that prints
    its first kernel line within 30 s), else TCG; the verdict is kept in CACHE."""
    if arch != _host_arch() or not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    if cache.exists():
        return cache.read_text().strip()
    files = BootFiles(cache.parent / "boot/vmlinuz", cache.parent / "boot/initrd.img", cache.parent / "stock.img")
    if not all(f.exists() for f in (files.kernel, files.image)):
        return "tcg"  # nothing to try it with yet; tried once the images are there
    verdict = "tcg"
    with contextlib.suppress(DeviceError):
        with booted(arch, files, "kvm", [], timeout_s=30, stop=r"Linux version|Booting Linux") as boot:
            banner = re.compile(r"Linux version|Booting Linux")
            _wait(lambda: any(banner.search(text) for _, text in boot.lines()), 30, "no kernel line under KVM")
            verdict = "kvm"
    cache.write_text(verdict + "\n")
    return verdict


def _host_arch() -> str:
    return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()


def board_args(arch: str, accel: str) -> list[str]:
    """The kernel arguments every boot of this board gets from the emulator it runs on (TCG_ARGS)."""
    return TCG_ARGS.get(arch, []) if accel == "tcg" else []


def describe(arch: str, accel: str) -> str:
    """One line on how the device is emulated, for a run's output."""
    line = f"QEMU accelerator: {accel}" + (" (KVM does not boot a guest here)" if accel == "tcg" else "")
    extra = board_args(arch, accel)
    return line + (f"; every boot gets {' '.join(extra)}, for the emulator (docs/device.md)" if extra else "")


def qemu_argv(arch: str, files: BootFiles, accel: str, kernel_args: list[str], tmp: Path, snapshot: bool) -> list[str]:
    a = ARCH[arch]
    args = [f"console={a['console']}", a["early"], *BASE_ARGS, *board_args(arch, accel), *kernel_args]
    argv = [a["qemu"], *a["machine"], "-accel", accel, "-smp", "2", "-m", "1024", "-S", "-nographic"]
    argv += ["-kernel", str(files.kernel), "-append", " ".join(args)]
    if files.initrd is not None:
        argv += ["-initrd", str(files.initrd)]
    argv += ["-drive", f"file={files.image},format=raw,if=none,id=root,{EMMC}", "-device", "virtio-blk-pci,drive=root"]
    argv += ["-device", "virtio-gpu-pci", "-nic", "none", "-monitor", "none"]
    argv += ["-serial", "pty", "-qmp", f"unix:{tmp / 'qmp.sock'},server=on,wait=off"]
    argv += ["-device", "virtio-serial-pci", "-chardev", f"socket,id=cmd,path={tmp / 'cmd.sock'},server=on,wait=off"]
    argv += ["-device", "virtserialport,chardev=cmd,name=headstart.commands", "-no-reboot"]
    return argv + (["-snapshot"] if snapshot else [])


@dataclass(frozen=True)
class Screen:
    """The emulated display at one moment: how many colours it shows (what tells a text console from
    a compositor's output: scenario.TEXT_CONSOLE_COLOURS) and a digest of its pixels."""

    colours: int
    digest: str


class Boot:
    """A running boot: its console log (as the recorder writes it) and its command port."""

    def __init__(self, log: Path, tmp: Path, qemu: subprocess.Popen[str], recorder: subprocess.Popen[str]) -> None:
        self.log, self.tmp, self.qemu, self.recorder = log, tmp, qemu, recorder
        self.commands_path = tmp / "cmd.sock"
        self._commands: socket.socket | None = None

    def lines(self) -> list[tuple[float, str]]:
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            seconds, _, text = line.partition("\t")
            with contextlib.suppress(ValueError):
                out.append((float(seconds), text))
        return out

    def marks(self) -> list[tuple[float, str]]:
        return [(t, text.split(MARK, 1)[1]) for t, text in self.lines() if MARK in text]

    def wait_for(self, pattern: str, timeout_s: float, after: int = 0) -> tuple[float, str]:
        """The first mark from index AFTER on that matches; a boot that ends or fails first is an error."""
        regex, deadline = re.compile(pattern), time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for t, text in self.marks()[after:]:
                if regex.search(text):
                    return t, text
                if "failed" in text:
                    raise DeviceError(f"the device says: {text}")
            for _, text in self.lines():
                if MARK not in text and (m := UNIT_FAILED.search(text)):
                    raise DeviceError(f"a unit failed before {pattern!r}: {clean(m.group(1)).strip()}")
            if self.qemu.poll() is not None:
                raise DeviceError(f"QEMU ended (status {self.qemu.returncode}) before {pattern!r}{self._last_line()}")
            time.sleep(0.1)
        raise DeviceError(f"no {pattern!r} on the console within {timeout_s:.0f} s{self._last_line()}")

    def _last_line(self) -> str:
        lines = self.lines()
        return f"; the console's last line: {lines[-1][1].strip()!r}" if lines else "; the console printed nothing"

    def connect(self) -> None:
        _wait(self.commands_path.exists, 30, "QEMU's command socket did not appear")
        self._commands = socket.socket(socket.AF_UNIX)
        self._commands.connect(str(self.commands_path))

    def send(self, command: str) -> int:
        """Sends a command to the app agent; returns how many marks there were before it."""
        before = len(self.marks())
        assert self._commands is not None
        self._commands.sendall(command.encode() + b"\n")
        return before

    def screen(self) -> Screen:
        """What the emulated display shows now (QEMU's screendump)."""
        path = self.tmp / "screen.ppm"
        path.unlink(missing_ok=True)
        _qmp(self.tmp / "qmp.sock", "screendump", {"filename": str(path)})
        pixels = _ppm_pixels(path.read_bytes())
        colours = {pixels[i : i + 3] for i in range(0, len(pixels), 3)}
        return Screen(len(colours), hashlib.sha256(pixels).hexdigest())

    def close(self) -> None:
        if self._commands is not None:
            self._commands.close()


@contextlib.contextmanager
def booted(
    arch: str,
    files: BootFiles,
    accel: str,
    kernel_args: list[str],
    timeout_s: float,
    stop: str = MARK + "done",
    log: Path | None = None,
    snapshot: bool = True,
) -> Iterator[Boot]:
    """QEMU started paused, the recorder on its serial pty, then the CPUs started. Everything is
    killed on the way out, whatever happened: a broken image never leaves a QEMU behind."""
    for f in (files.kernel, files.image, *([files.initrd] if files.initrd else [])):
        if not f.exists():
            raise DeviceError(f"{f} is missing: run make device")
    with tempfile.TemporaryDirectory(prefix="headstart-device-") as tmpdir:
        tmp = Path(tmpdir)
        log = log or tmp / "console.log"
        log.unlink(missing_ok=True)
        qemu = subprocess.Popen(
            qemu_argv(arch, files, accel, kernel_args, tmp, snapshot),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        recorder = None
        try:
            pty = _pty_of(qemu)
            recorder = subprocess.Popen(
                [sys.executable, "-m", "headstart", "boot", "record", "--device", pty, "--stop", stop,
                 "--timeout", str(timeout_s), "-o", str(log)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            _wait(lambda: log.exists() and log.stat().st_size > 0, 30, "the recorder did not start")
            boot = Boot(log, tmp, qemu, recorder)
            boot.connect()  # before the device boots: its agent reads end of file while nobody is connected
            _qmp(tmp / "qmp.sock", "cont")
            try:
                yield boot
            finally:
                boot.close()
        finally:
            for p in (recorder, qemu):
                if p is not None and p.poll() is None:
                    p.kill()
                if p is not None:
                    p.wait()
            if qemu.stdout is not None:
                qemu.stdout.close()


def _pty_of(qemu: subprocess.Popen[str]) -> str:
    assert qemu.stdout is not None
    said = []
    for line in qemu.stdout:
        if m := re.search(r"redirected to (/dev/pts/\d+)", line):
            return m.group(1)
        said.append(line.strip())
    raise DeviceError(f"QEMU did not start: {' '.join(said)[-300:] or 'no output'}")


def _wait(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise DeviceError(what)
        time.sleep(0.01)


def _qmp(path: Path, command: str, arguments: dict[str, str] | None = None) -> None:
    _wait(path.exists, 30, "QEMU's QMP socket did not appear")
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(30)  # a QEMU that stopped answering ends the run, not the host's patience
            s.connect(str(path))
            f = s.makefile("rw")
            f.readline()
            for c, a in (("qmp_capabilities", {}), (command, arguments or {})):
                f.write(json.dumps({"execute": c, "arguments": a}) + "\n")
                f.flush()
                # Events (a line without "return" or "error") may come before the answer.
                while not ((answer := json.loads(f.readline() or "{}")).keys() & {"return", "error"}):
                    if not answer:
                        raise DeviceError(f"QEMU closed its QMP socket at {c}")
                if "error" in answer:
                    raise DeviceError(f"QEMU refused {c}: {answer['error'].get('desc', answer['error'])}")
    except (OSError, ValueError) as e:  # a timeout is an OSError; a line that is not JSON a ValueError
        raise DeviceError(f"QEMU's QMP socket failed at {command}: {e}") from e


def _ppm_pixels(ppm: bytes) -> bytes:
    """The pixels of a binary PPM (P6, 8 bits a channel, 3 bytes a pixel), QEMU's screendump format."""
    header = re.match(rb"P6\s+(\d+)\s+(\d+)\s+255\s", ppm)  # one whitespace byte, then the pixels
    if header is None:
        raise DeviceError(f"QEMU's screendump is not an 8-bit PPM: {ppm[:20]!r}")
    width, height = int(header[1]), int(header[2])
    pixels = ppm[header.end() : header.end() + width * height * 3]
    if len(pixels) != width * height * 3:
        raise DeviceError(f"QEMU's screendump is cut short: {len(pixels)} bytes of {width}x{height} pixels")
    return pixels


def require(arch: str) -> None:
    if shutil.which(ARCH[arch]["qemu"]) is None:
        raise DeviceError(f"{ARCH[arch]['qemu']} is not installed: run make device")
