"""The program a command line names, checked before anything is launched: found on PATH as execvp
would find it, and something the loader can run (`headstart profile`, `headstart order`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from headstart.errors import HeadstartError, UsageError


def resolve_program(command: list[str]) -> list[str]:
    """The command with its program as an absolute path, or a clear error for what cannot be profiled."""
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("name the program to profile: headstart profile [OPTIONS] -- PROGRAM ARGS...")
    name = command[0]
    found = name if "/" in name else shutil.which(name)
    if not found or not Path(found).exists():
        raise HeadstartError(f"{name}: no such program")
    path = Path(found).resolve()
    if path.is_dir():
        raise HeadstartError(f"{path}: a directory, not a program")
    if not path.is_file():
        raise HeadstartError(f"{path}: not a regular file (a device, a FIFO or a socket), not a program")
    if not os.access(path, os.X_OK):
        raise HeadstartError(f"{path}: not executable (no execute permission)")
    if not os.access(path, os.R_OK):
        raise HeadstartError(f"{path}: cannot read it (no read permission), so it cannot be profiled")
    try:
        with open(path, "rb") as f:
            interp = any(seg["p_type"] == "PT_INTERP" for seg in ELFFile(f).iter_segments())
    except (ELFError, OSError) as e:
        raise HeadstartError(f"{path}: not an ELF program ({e})") from e
    if not interp:
        raise HeadstartError(f"{path}: not dynamically linked, so there is no loader to profile")
    return [str(path), *command[1:]]
