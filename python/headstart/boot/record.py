"""Recording a serial console with host timestamps, as grabserial does: each line is stamped with the
moment its first byte arrived, so that a line the kernel takes long to print shows when it began.
A line redrawn after a carriage return (systemd's start jobs) is a line of its own from there.

The log is text: a header line, then one line per console line, `SECONDS<TAB>TEXT`, seconds from the
time base (the start of recording, or the line matching --start) with microseconds. The log is
flushed line by line, so whatever was recorded survives a device that goes away.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import serial

HEADER = "# headstart boot record"


@dataclass
class RecordOptions:
    device: str
    baud: int
    start: re.Pattern[str] | None
    stop: re.Pattern[str] | None
    timeout_s: float | None
    output: Path


@dataclass
class Recording:
    lines: int
    started: bool  # the --start line was seen (true when there is none)
    stopped: bool  # the --stop line was seen
    error: str | None  # why recording ended early: the device went away, the timeout passed
    written: bool = True  # the log was (re)written; not when the device could not be opened


class LineStamper:
    """Bytes in, stamped lines out: a line's time is when its first byte of text arrived. Terminal
    escape sequences and control bytes do not count: SeaBIOS clears the screen (ESC c, ESC [2J) and
    leaves the line open, and the kernel's first line, or a quiet boot's ready line 45 s later, came
    after it on the same line."""

    def __init__(self, out: IO[str], options: RecordOptions, base: float) -> None:
        self.out, self.options, self.base = out, options, base
        self.partial = bytearray()
        self.escape = b""  # an escape sequence begun and not ended
        self.first_byte_at: float | None = None
        self.returned = False  # the last byte was a carriage return
        self.lines = 0
        self.started = options.start is None
        self.stopped = False
        self.before_start: list[tuple[float, str]] = []  # written once the time base is known

    def feed(self, data: bytes, now: float) -> None:
        for byte in data:
            if byte == 0x0D:
                self.returned = True
                continue
            if byte != 0x0A and self.returned and self.partial:
                # A carriage return without a newline redraws the line (systemd's "A start job is
                # running ... (4s / no limit)", then "[  OK  ] Started ..."): what follows is a line of
                # its own, stamped when it began, and the one it replaced is kept as it was.
                self._line_done()
                if self.stopped:
                    return
            self.returned = False
            if self.first_byte_at is None and self._is_text(byte):
                self.first_byte_at = now
            if byte == 0x0A:
                self._line_done()
                if self.stopped:
                    return
            else:
                self.partial.append(byte)

    def _is_text(self, byte: int) -> bool:
        """Whether the byte is text, following escape sequences: ESC then one byte, or ESC [ then
        parameters up to a final byte (0x40-0x7E)."""
        if self.escape:
            ended = (len(self.escape) == 1 and byte != 0x5B) or (len(self.escape) > 1 and 0x40 <= byte <= 0x7E)
            self.escape = b"" if ended else self.escape + bytes([byte])
            return False
        if byte == 0x1B:
            self.escape = b"\x1b"
            return False
        return byte >= 0x20 and byte != 0x7F

    def finish(self) -> None:
        """A last line without its newline is kept too, and lines held for a start never seen."""
        if self.partial:
            self._line_done()
        self._write_held()

    def _line_done(self) -> None:
        text = self.partial.decode("utf-8", errors="replace")
        at = self.first_byte_at if self.first_byte_at is not None else time.monotonic()
        self.partial.clear()
        self.first_byte_at = None
        if not self.started:
            if not (self.options.start and self.options.start.search(text)):
                self.before_start.append((at, text))
                return
            self.started = True
            self.base = at
            self._write_held()  # before the start: negative times
        self._write(at, text)
        if self.options.stop and self.options.stop.search(text):
            self.stopped = True

    def _write_held(self) -> None:
        for at, text in self.before_start:
            self._write(at, text)
        self.before_start.clear()

    def _write(self, at: float, text: str) -> None:
        self.out.write(f"{at - self.base:.6f}\t{text}\n")
        self.out.flush()
        self.lines += 1


def record(options: RecordOptions) -> Recording:
    """Records until --stop, the timeout, or the device going away; the log is kept in every case."""
    try:
        port = serial.Serial(options.device, options.baud, timeout=0.05)
    except (serial.SerialException, OSError) as e:
        return Recording(0, False, False, f"cannot open {options.device}: {_reason(e)}", written=False)
    base = time.monotonic()
    deadline = base + options.timeout_s if options.timeout_s else None
    error = None
    with port, open(options.output, "w") as out:
        out.write(f"{HEADER} device={options.device} baud={options.baud}")
        out.write(f" start={options.start.pattern if options.start else ''}\n")
        out.flush()
        stamper = LineStamper(out, options, base)
        while not stamper.stopped:
            if deadline is not None and time.monotonic() > deadline:
                # Without --stop the timeout is how recording ends; with it, the stop line never came.
                if options.stop is not None:
                    error = f"no line matched --stop within {options.timeout_s:g} s"
                break
            try:
                data = port.read(port.in_waiting or 1)
            except (serial.SerialException, OSError) as e:
                error = f"{options.device} went away: {_reason(e)}"
                break
            if data:
                stamper.feed(data, time.monotonic())
        stamper.finish()
    return Recording(stamper.lines, stamper.started, stamper.stopped, error)


def _reason(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
