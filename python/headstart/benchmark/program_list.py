"""--programs @FILE: the programs to time listed in a file, one a line (a sample's name, or a path with
its arguments in one word, as on the command line), `#` starting a comment; beside programs given
on the command line. bench/programs/ holds such lists (wider-gui.txt: GUI programs we never tuned on)."""

from __future__ import annotations

from pathlib import Path

from headstart.errors import HeadstartError, UsageError
from headstart.inputfile import read_text

MAX_LIST_BYTES = 1 << 20  # thousands of programs; a list is never larger


def expand(words: list[str]) -> list[str]:
    """`words` with each @FILE replaced by the programs it lists, in order."""
    return [program for word in words for program in (_read(Path(word[1:])) if word.startswith("@") else [word])]


def _read(path: Path) -> list[str]:
    try:
        text = read_text(path, MAX_LIST_BYTES)
    except HeadstartError as e:
        raise UsageError(f"--programs @{path}: {e}") from e
    programs = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    programs = [p for p in programs if p]
    if not programs:
        raise UsageError(f"--programs @{path}: lists no program")
    return programs
