"""Logs of different boots told apart, never merged: a capture that ran across a reboot holds
several boots (the printk clock restarts, a new kernel banner), and a dmesg may come from another
boot than the serial log given with it (another kernel, or no kernel line in common).

Several boots in one log are an error unless --boot N names the one to read; logs of different
boots given together are an error. Both are one line that says where and what to do.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

from headstart.boot.line import Line
from headstart.errors import HeadstartError

BANNER = re.compile(r"^Linux version (\S+)")
SETUP = re.compile(r"Probing EDD|Decompressing Linux|Booting the kernel|Starting kernel \.\.\.")
# The first lines of common boot firmware: U-Boot and its SPL, Rockchip's DDR init, TF-A, coreboot,
# SeaBIOS, iPXE, GRUB.
FIRMWARE = re.compile(r"U-Boot|DDR Version|NOTICE:\s+BL\d|coreboot-|SeaBIOS|iPXE|GNU GRUB")
_BACKWARDS_S = 0.1  # printk times may step back a little between CPUs, never this much


def split(lines: list[Line]) -> list[list[Line]]:
    """The boots in one log's lines, in order. A later boot's host times count from the previous
    boot's last line (its restart), which is as near to its power-on as the log tells."""
    starts = [0]
    last_kernel: Line | None = None
    last_host: float | None = None
    for i, line in enumerate(lines):
        if _restarts(lines, i, last_kernel, last_host):
            starts.append(_back_to_setup(lines, starts[-1], i))
        if line.kernel_s is not None:
            last_kernel = line
        last_host = line.host_s if line.host_s is not None else last_host
    return [_rebased(lines, a, b) for a, b in zip(starts, [*starts[1:], len(lines)], strict=False)]


def _restarts(lines: list[Line], at: int, last_kernel: Line | None, last_host: float | None) -> bool:
    line = lines[at]
    if line.host_s is not None and last_host is not None and line.host_s < last_host - 1.0:
        return True  # a second recording appended to the first
    if line.kernel_s is None or last_kernel is None or last_kernel.kernel_s is None:
        return False
    # The banner starts a boot only after a later line: arm64 prints "Booting Linux on physical
    # CPU" before it, both at 0.000000.
    if BANNER.search(line.text):
        return line.kernel_s < last_kernel.kernel_s
    if line.kernel_s >= last_kernel.kernel_s - _BACKWARDS_S:
        return False
    # A step back that the next line of another time undoes is a stray line, not a new boot: x86
    # prints a secondary CPU's first lines ("calibrate_delay_direct() failed", under emulation) at
    # 0.000000 as it comes up, between lines at 0.4 and 0.5 s. A new boot's next lines stay near 0.
    following = next((x for x in lines[at + 1 :] if x.kernel_s is not None and x.kernel_s != line.kernel_s), None)
    return following is None or following.kernel_s < last_kernel.kernel_s - _BACKWARDS_S


def _back_to_setup(lines: list[Line], since: int, at: int) -> int:
    """A new boot starts at its firmware's first line, or its setup code's, if it printed one after
    the last kernel line (a panic's "Rebooting in 5 seconds" is the old boot's last)."""
    i = at
    while i > since and lines[i - 1].kernel_s is None:
        i -= 1
    first = next((j for j in range(i, at) if FIRMWARE.search(lines[j].text) or SETUP.search(lines[j].text)), None)
    return at if first is None else first


def _rebased(lines: list[Line], start: int, end: int) -> list[Line]:
    if start == 0:
        return lines[start:end]
    base = next((x.host_s for x in reversed(lines[:start]) if x.host_s is not None), None)
    if base is None:
        return lines[start:end]
    return [replace(x, host_s=None if x.host_s is None else x.host_s - base) for x in lines[start:end]]


def choose(name: str, boots: list[list[Line]], boot: int | None) -> list[Line]:
    if len(boots) == 1:
        if boot not in (None, 1):
            raise HeadstartError(f"{name} holds 1 boot: there is no boot {boot} (leave --boot out, or give --boot 1)")
        return boots[0]
    if boot is None or not 1 <= boot <= len(boots):
        starts = ", ".join(f"boot {n} from line {b[0].source.rsplit(':', 1)[1]}" for n, b in enumerate(boots, 1) if b)
        how = f"--boot {boot} is not one of them" if boot is not None else "they are not merged"
        raise HeadstartError(
            f"{name} holds {len(boots)} boots ({starts}); {how}: choose one with --boot 1..{len(boots)}"
        )
    return boots[boot - 1]


def check_same_boot(logs: list[tuple[str, list[Line]]]) -> None:
    """Two logs with kernel lines must show the same boot: the same kernel banner, and where their
    printk times overlap, at least one line with the same time and text."""
    with_kernel = [(name, [x for x in lines if x.kernel_s is not None]) for name, lines in logs]
    with_kernel = [(name, lines) for name, lines in with_kernel if lines]
    for (name_a, a), (name_b, b) in itertools.pairwise(with_kernel):
        why = _different(a, b)
        if why:
            raise HeadstartError(f"{name_a} and {name_b} are from different boots ({why}); give the logs of one boot")


def _different(a: list[Line], b: list[Line]) -> str | None:
    banner_a, banner_b = _banner(a), _banner(b)
    if banner_a and banner_b and banner_a != banner_b:
        return f"kernel {banner_a} and {banner_b}"
    lo = max(a[0].kernel_s or 0.0, b[0].kernel_s or 0.0)
    hi = min(a[-1].kernel_s or 0.0, b[-1].kernel_s or 0.0)
    if hi < lo:
        return None  # no common stretch of time (a wrapped dmesg): nothing to compare
    # Lines at 0.000000 (the banner, the command line, the memory map) read the same in every boot.
    seen: dict[float | None, list[str]] = {}
    for x in a:
        if x.kernel_s:
            seen.setdefault(x.kernel_s, []).append(x.text.strip())
    within = [x for x in b if x.kernel_s and lo <= x.kernel_s <= hi]
    if not seen or not within:
        return None
    for x in within:
        text = x.text.strip()
        if any(t.endswith(text) or text.endswith(t) for t in seen.get(x.kernel_s, []) if t and text):
            return None
    return "no kernel line with the same printk time and text"


def _banner(lines: list[Line]) -> str | None:
    return next((m.group(1) for x in lines if (m := BANNER.search(x.text))), None)
