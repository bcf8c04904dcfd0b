"""Boot logs read into lines with their times: a serial console recorded by `headstart boot record`
(host time, and printk time when the kernel printed one), `dmesg` or `journalctl -o short-monotonic`
output (printk time), and `systemd-analyze` / `systemd-analyze blame` output (durations)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from headstart.boot.record import HEADER
from headstart.errors import HeadstartError

_PRINTK = re.compile(r"^\s*\[\s*(\d+\.\d+)\]\s?(.*)$")
_RECORDED = re.compile(r"^(-?\d+\.\d+)\t(.*)$")
_BAUD = re.compile(r"\bbaud=(\d+)")
_FINISHED = re.compile(r"Startup finished in (.*?)(?:= .*)?$")
_DURATION_PART = re.compile(r"([\d.]+(?:min|ms|us|s|h)\s*)+\((\w+)\)")
_BLAME = re.compile(r"^\s*((?:[\d.]+(?:h|min|s|ms|us)\s*)+)\s+(\S+)$")
_UNIT = re.compile(r"([\d.]+)(h|min|ms|us|s)")
_SECONDS = {"h": 3600.0, "min": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}


@dataclass
class Line:
    source: str  # file:line, for evidence
    text: str
    host_s: float | None = None  # from the recording's time base
    kernel_s: float | None = None  # printk time: from the kernel's first message


@dataclass
class BootLog:
    lines: list[Line] = field(default_factory=list)
    baud: int | None = None
    systemd_phases: dict[str, float] = field(default_factory=dict)  # firmware, loader, kernel, initrd, userspace
    systemd_blame: list[tuple[str, float, str]] = field(default_factory=list)  # unit, seconds, source
    recorded: bool = False  # a host-timestamped serial log is among the sources


def duration_s(text: str) -> float:
    """'1min 2.345s' -> 62.345."""
    return sum(float(n) * _SECONDS[unit] for n, unit in _UNIT.findall(text))


def read(paths: list[Path]) -> BootLog:
    log = BootLog()
    for path in paths:
        try:
            text = path.read_text(errors="replace")
        except OSError as e:
            raise HeadstartError(f"cannot read {path}: {e.strerror}") from e
        before = (len(log.lines), len(log.systemd_phases), len(log.systemd_blame))
        _read_one(path.name, text, log)
        if before == (len(log.lines), len(log.systemd_phases), len(log.systemd_blame)):
            raise HeadstartError(
                f"{path}: no boot lines found (expected a `headstart boot record` log, dmesg output with "
                "printk times, or systemd-analyze output)"
            )
    return log


def _read_one(name: str, text: str, log: BootLog) -> None:
    recorded = text.startswith(HEADER)
    if recorded:
        log.recorded = True
        m = _BAUD.search(text.splitlines()[0])
        log.baud = int(m.group(1)) if m else log.baud
    for number, raw in enumerate(text.splitlines(), 1):
        source = f"{name}:{number}"
        host = None
        body = raw
        if recorded:
            m = _RECORDED.match(raw)
            if not m:
                continue  # the header, or a line cut short
            host, body = float(m.group(1)), m.group(2)
        printk = _PRINTK.match(body)
        if printk:
            log.lines.append(Line(source, printk.group(2), host, float(printk.group(1))))
        elif recorded:
            log.lines.append(Line(source, body, host))
        elif finished := _FINISHED.search(body):
            for part in _DURATION_PART.finditer(finished.group(1)):
                log.systemd_phases[part.group(2)] = duration_s(part.group(0))
        elif blame := _BLAME.match(body):
            log.systemd_blame.append((blame.group(2), duration_s(blame.group(1)), source))
