"""The host time a capture tool puts before each console line, read back into seconds.

Formats, recognised by the lines themselves (the first that fits nearly every line of a file wins):
- `headstart boot record`: its header, then `SECONDS<TAB>TEXT`;
- grabserial `-t`: `[ABSOLUTE DELTA] TEXT`, seconds from its time base (the first byte, or `-m`);
- moreutils `ts`, by default `Mon DD HH:MM:SS TEXT` (whole seconds), or with `%.S` fractions;
- `ts -s` / `ts -i` (and `ts '%H:%M:%.S'`): `HH:MM:SS[.frac] TEXT`, since ts started or since the
  line before; incremental when the times ever go back;
- `ts '%.s'` / `ts -s '%.s'`: `SECONDS TEXT`.
Absolute clocks count from the first line; elapsed times are kept (their 0 is when the tool started).
A file none of them fits is read as it is (dmesg, journalctl, systemd-analyze).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from headstart.boot.record import HEADER

ELAPSED_BELOW_S = 3600.0  # a first stamp under an hour is time since the tool started, not a clock
_SAMPLE = 200
_FIT = 0.9
_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


@dataclass(frozen=True)
class Format:
    name: str
    pattern: re.Pattern[str]  # the stamp as group 1.., the console text as the last group
    seconds: Callable[[re.Match[str]], float]


def _clock(m: re.Match[str], first: int = 1) -> float:
    h, mi, s = m.group(first), m.group(first + 1), m.group(first + 2)
    return int(h) * 3600 + int(mi) * 60 + float(s)


def _dated(m: re.Match[str]) -> float:
    return (_MONTHS.index(m.group(1)) * 31 + int(m.group(2))) * 86400 + _clock(m, 3)


HEADSTART = Format("headstart", re.compile(r"^(-?\d+\.\d+)\t(.*)$"), lambda m: float(m.group(1)))
FORMATS = [
    Format("grabserial", re.compile(r"^\[\s*(\d+\.\d+)\s+-?\d+\.\d+\]\s?(.*)$"), lambda m: float(m.group(1))),
    Format(
        "ts",
        re.compile(rf"^({'|'.join(_MONTHS)}) ([ \d]\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?) (.*)$"),
        _dated,
    ),
    Format("ts-clock", re.compile(r"^(\d\d):(\d\d):(\d\d(?:\.\d+)?) (.*)$"), _clock),
    Format("ts-seconds", re.compile(r"^(\d+\.\d+) (.*)$"), lambda m: float(m.group(1))),
]


# journalctl's default output and its -o short-precise / short-iso / short-full: a wall-clock stamp
# (to the second or microsecond), then "HOST IDENTIFIER[PID]: ". It looks like ts over a console, but
# its times are when journald says each line was logged, kernel lines without their printk time.
_ISO_STAMP = r"(?:\w{3} )?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d\S*"  # short-iso, short-full
_SYSLOG_STAMP = rf"(?:{'|'.join(_MONTHS)}) [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?"  # short, short-precise
_JOURNAL_WALL_CLOCK = re.compile(rf"^(?:{_ISO_STAMP}|{_SYSLOG_STAMP})(?: \w+)? \S+ [^\s:\[\]]+(?:\[\d+\])?: ")


# dmesg -T: "[Sun Nov 29 08:50:52 2026] text", a wall clock made from the printk time, to the second.
_DMESG_WALL_CLOCK = re.compile(rf"^\[\w{{3}} (?:{'|'.join(_MONTHS)}) [ \d]\d \d\d:\d\d:\d\d \d{{4}}\] ")


def _fits(pattern: re.Pattern[str], lines: list[str]) -> bool:
    """Whether nearly every non-blank line of the file's first ones matches (journalctl's "-- Boot"
    separators left out)."""
    sample = [line for line in lines if line.strip() and not line.startswith("-- ")][:_SAMPLE]
    return bool(sample) and sum(1 for line in sample if pattern.match(line)) >= _FIT * len(sample)


def dmesg_wall_clock(lines: list[str]) -> bool:
    """Whether the lines are `dmesg -T` output."""
    return _fits(_DMESG_WALL_CLOCK, lines)


def journal_wall_clock(lines: list[str]) -> bool:
    """Whether the lines are journalctl's output with wall-clock times (not -o short-monotonic)."""
    return _fits(_JOURNAL_WALL_CLOCK, lines)


@dataclass
class Stamped:
    number: int  # 1-based line number in the file
    host_s: float | None
    text: str


def detect(lines: list[str]) -> Format | None:
    if lines and lines[0].startswith(HEADER):
        return HEADSTART
    sample = [line for line in lines if line.strip()][:_SAMPLE]
    for f in FORMATS:
        if sample and sum(1 for line in sample if f.pattern.match(line)) >= _FIT * len(sample):
            return f
    return None


def stamp(lines: list[str]) -> tuple[Format | None, list[Stamped]]:
    """Each line with its host time on one clock; without a format, every line without one."""
    f = detect(lines)
    if f is None:
        return None, [Stamped(n, None, line) for n, line in enumerate(lines, 1)]
    out = []
    for n, line in enumerate(lines, 1):
        if m := f.pattern.match(line):  # else the header, or a line cut short
            out.append(Stamped(n, f.seconds(m), m.group(m.re.groups)))
    return f, _on_one_clock(f, out)


def _on_one_clock(f: Format, lines: list[Stamped]) -> list[Stamped]:
    times = [s.host_s or 0.0 for s in lines]
    if f.name == "ts-clock" and any(b < a for a, b in itertools.pairwise(times)):
        total = 0.0  # ts -i: each stamp is the time since the line before
        for s in lines:
            total += s.host_s or 0.0
            s.host_s = total
    elif f is not HEADSTART and f.name != "grabserial" and times and times[0] >= ELAPSED_BELOW_S:
        for s in lines:  # a wall clock: from the first line
            s.host_s = (s.host_s or 0.0) - times[0]
    return lines
