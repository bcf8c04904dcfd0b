"""What each corpus program is run with, and the programs the run does not launch (with why).

Every served program gets `--version` and `--help`, stdin empty; a program whose help (by exec)
says it reads standard input is a filter, and gets a sample text on stdin with no argument too."""

from __future__ import annotations

import re
from dataclasses import dataclass

SAMPLE_INPUT = (
    "The quick brown fox jumps over the lazy dog.\n"
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.\n"
    "3 1 2\nlorem ipsum dolor sit amet\n\tthe end, of course\n"
).encode()
READS_STDIN = re.compile(rb"standard input|stdin", re.IGNORECASE)

# Not launched: what they would do to the machine or the run, even as an unprivileged user, or what
# they need that the run does not give (a display server, a network peer).
SKIPPED = {
    "killall5": "signals every process of its user, the run's own among them",
    "Xvfb": "a display server: it listens until stopped",
    "Xwayland": "a display server: it listens until stopped",
    "weston": "needs a display (a Wayland compositor)",
    "X": "a display server",
}


@dataclass(frozen=True)
class Case:
    label: str
    args: tuple[str, ...]
    stdin: bytes = b""


VERSION = Case("--version", ("--version",))
HELP = Case("--help", ("--help",))
FILTER = Case("stdin", (), SAMPLE_INPUT)


def is_filter(help_stdout: bytes, help_stderr: bytes) -> bool:
    return bool(READS_STDIN.search(help_stdout) or READS_STDIN.search(help_stderr))
