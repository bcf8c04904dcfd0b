"""The daemon's verdicts on programs, for `headstart check`: headstartd is the authority, and
`headstartd --check` judges each program with the daemon's own code (the rules, the library
preloading and the binding plan), in a child of its own; one JSON object a program."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from headstart import binaries
from headstart.errors import HeadstartError, UsageError

# Programs per `headstartd --check`: far below ARG_MAX, and a bar moves between batches.
BATCH = 200
ELF_MAGIC = b"\x7fELF"
# Where a package's programs are (dpkg -L lists every file it installed).
PROGRAM_DIRS = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/games/", "/usr/local/bin/")


def is_elf_program(path: Path) -> bool:
    """A regular file we may execute that starts with the ELF magic (scripts and links to
    directories are not programs; a symlink to a program is, once)."""
    try:
        if not path.is_file() or not os.access(path, os.X_OK):
            return False
        with open(path, "rb") as f:
            return f.read(4) == ELF_MAGIC
    except OSError:
        return False


def programs_in_dir(folder: Path) -> list[str]:
    if not folder.is_dir():
        raise UsageError(f"--dir {folder}: not a folder")  # a bad argument, as --list's (status 2)
    return _each_program_once(sorted(folder.iterdir()))


def programs_of_package(name: str) -> list[str]:
    """The programs a package installs, each file once (ssh and its slogin link are one program)."""
    done = subprocess.run(["dpkg", "-L", name], capture_output=True, text=True)
    if done.returncode != 0 and "ambiguous package name" in done.stderr and ":" not in name:
        # Installed for two architectures (libc6 and libc6:arm64): ours is the one we serve.
        native = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
        return programs_of_package(f"{name}:{native}")
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        raise UsageError(f"--package {name}: not an installed Debian package ({said[0] if said else 'dpkg -L failed'})")
    return _each_program_once(Path(line) for line in done.stdout.splitlines() if line.startswith(PROGRAM_DIRS))


def _each_program_once(paths: Iterable[Path]) -> list[str]:
    """The ELF programs among `paths`, a file reached by several names (links) once, by its first."""
    found, seen = [], set()
    for path in paths:
        real = path.resolve()
        if real not in seen and is_elf_program(path):
            seen.add(real)
            found.append(str(path))
    return found


def programs_listed(lines: Iterable[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def judge_many(programs: list[str], advance: Callable[[int], None]) -> tuple[list[dict[str, Any]], str]:
    """judge() in batches, calling advance(n) after each."""
    verdicts: list[dict[str, Any]] = []
    messages = []
    for start in range(0, len(programs), BATCH):
        batch = programs[start : start + BATCH]
        got, said = judge(batch)
        verdicts += got
        messages.append(said)
        advance(len(batch))
    return verdicts, "".join(messages)


def judge(programs: list[str]) -> tuple[list[dict[str, Any]], str]:
    """The daemon's verdicts, and what it said on stderr (libraries it had trouble with)."""
    daemon = binaries.find("headstartd")
    # A path is bytes, not always UTF-8: headstartd writes it back as it is, and surrogateescape
    # keeps those bytes as Python keeps them in sys.argv.
    p = subprocess.run([str(daemon), "--check", *programs], capture_output=True, text=True, errors="surrogateescape")
    verdicts = []
    for line in p.stdout.splitlines():
        try:
            verdicts.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise HeadstartError(f"headstartd --check wrote something that is not JSON: {line!r}") from e
    if len(verdicts) != len(programs):
        raise HeadstartError(
            f"headstartd --check judged {len(verdicts)} of {len(programs)} programs: {p.stderr.strip()}"
        )
    return verdicts, p.stderr
