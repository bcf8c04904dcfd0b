"""System calls from `strace -f -ttt -T -y`, each with its start and end.

strace prints a call when it returns; with -f, a call that another thread's output interrupts is
split in two lines, `name(args <unfinished ...>` at its start and `<... name resumed>rest` at its
end. A thread has at most one call under way, so the two halves are joined by thread id. -ttt is
the call's start (the resumed line's own time is its end) and -T its duration, so each call becomes
one interval: the time between two intervals of a thread is time that thread spent without a system
call, the time inside one is time spent in the kernel (often blocked: futex, poll).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# `PID SECONDS.MICROS rest`
_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")
_COMPLETE = re.compile(r"^(\w+)(\(.*)$")
_UNFINISHED = " <unfinished ...>"
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")
_DURATION = re.compile(r"\s+<(\d+\.\d+)>$")
# `= 3</usr/lib/libc.so.6>` (-y names the descriptor a call returns) and `(3</path>, ...` (its first argument).
_RESULT_PATH = re.compile(r"\)\s+=\s+\d+<([^>]*)>")
_ARG_PATH = re.compile(r"^\(\d+<([^>]*)>")
# mmap(addr, length, prot, flags, fd<path>, offset) = address; mprotect(address, length, prot) = 0.
_MMAP = re.compile(r"^\(\w+, (\d+), [^,]*, [^,]*, \d+<([^>]*)>, \w+\)\s+=\s+(0x[0-9a-f]+)")
_ADDRESS = re.compile(r"^\((0x[0-9a-f]+), ")


@dataclass
class Call:
    pid: int  # the thread's id
    start: float  # seconds (the clock strace -ttt prints: wall-clock time)
    end: float
    name: str
    rest: str  # `(arguments) = result` as strace printed them, without the duration

    @property
    def ms(self) -> float:
        return (self.end - self.start) * 1000

    def path(self) -> str | None:
        """The file the call names: the descriptor it returns (open) or its first argument."""
        m = _RESULT_PATH.search(self.rest) or _ARG_PATH.match(self.rest)
        return m.group(1) if m else None

    def describe(self, mapped: AddressMap | None = None) -> str:
        """The call's name and the file it names, or the object (by name) whose memory it changes."""
        obj = mapped.object_of(self) if mapped else None
        path = self.path() or (obj and obj.rsplit("/", 1)[-1])
        return f"{self.name} {path}" if path else self.name


class AddressMap:
    """Which file each address belongs to, from the file mappings seen so far: names the object an
    mprotect works on (the loader makes each object's RELRO read-only once it is relocated)."""

    def __init__(self, calls: list[Call]) -> None:
        self.ranges: list[tuple[float, int, int, str]] = []  # when mapped, first, last + 1, file
        for c in calls:
            if c.name == "mmap" and (m := _MMAP.match(c.rest)):
                first = int(m.group(3), 16)
                self.ranges.append((c.start, first, first + int(m.group(1)), m.group(2)))

    def object_of(self, call: Call) -> str | None:
        m = _ADDRESS.match(call.rest) if call.name in ("mprotect", "munmap", "madvise") else None
        if not m:
            return None
        addr = int(m.group(1), 16)
        # The latest mapping of that address made before the call: addresses are reused.
        return next((p for t, lo, hi, p in reversed(self.ranges) if t <= call.start and lo <= addr < hi), None)


def _duration(rest: str) -> tuple[str, float]:
    m = _DURATION.search(rest)
    return (rest[: m.start()], float(m.group(1))) if m else (rest, 0.0)


def parse(text: str) -> list[Call]:
    """Every call in the trace, halves joined, in the order of their starts."""
    calls: list[Call] = []
    pending: dict[int, tuple[str, float, str]] = {}  # thread -> (name, start, arguments so far)
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        pid, t, body = int(m.group(1)), float(m.group(2)), m.group(3)
        if body.endswith(_UNFINISHED) and (c := _COMPLETE.match(body)):
            pending[pid] = (c.group(1), t, c.group(2)[: -len(_UNFINISHED)])
        elif (r := _RESUMED.match(body)) and pid in pending:
            name, start, head = pending.pop(pid)
            rest, seconds = _duration(r.group(2))
            calls.append(Call(pid, start, start + seconds if seconds else t, name, head + rest))
        elif c := _COMPLETE.match(body):
            rest, seconds = _duration(c.group(2))
            calls.append(Call(pid, t, t + seconds, c.group(1), rest))
    return sorted(calls, key=lambda c: c.start)


def as_text(calls: list[Call]) -> str:
    """The calls as `PID name(args) = result` lines, as files.parse_trace reads them."""
    return "\n".join(f"{c.pid} {c.name}{c.rest}" for c in calls)
