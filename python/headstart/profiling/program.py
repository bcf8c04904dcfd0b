"""The program a command line names, checked before anything is launched: found on PATH as execvp
would find it, and something the loader can run (`headstart profile`, `headstart order`)."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from functools import cache
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from headstart.errors import HeadstartError, UsageError


def resolve_program(command: list[str], loader_env: bool = False) -> list[str]:
    """The command with its program as an absolute path, or a clear error for what cannot be profiled.
    loader_env: the command loads our libraries into the program (LD_AUDIT, LD_PRELOAD) and reads the
    loader's account (LD_DEBUG)."""
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
            elf = ELFFile(f)
            kind = (elf.elfclass, elf["e_machine"])
            interp = any(seg["p_type"] == "PT_INTERP" for seg in elf.iter_segments())
    except (ELFError, OSError) as e:
        raise HeadstartError(f"{path}: not an ELF program ({e})") from e
    if loader_env and kind != _own_kind():  # another machine's runs (qemu-user), but not with our probe
        bits, machine = kind
        raise HeadstartError(
            f"{path}: a {bits}-bit {machine.removeprefix('EM_')} program; headstart's probe and daemon are built "
            f"for {_own_kind()[1].removeprefix('EM_')} programs"
        )
    if not interp:
        raise HeadstartError(f"{path}: not dynamically linked, so there is no loader to profile")
    if loader_env and (why := _secure_mode(path)):
        raise HeadstartError(
            f"{path}: {why}, so the loader runs it in secure mode and ignores LD_AUDIT and LD_DEBUG, which this "
            "command needs; use a copy without the bit"
        )
    return [str(path), *command[1:]]


@cache
def _own_kind() -> tuple[int, str]:
    """The ELF class and machine headstart's own programs are built for: this Python's."""
    with open(os.path.realpath(sys.executable), "rb") as f:
        elf = ELFFile(f)
        return elf.elfclass, elf["e_machine"]


def _secure_mode(path: Path) -> str | None:
    """Why exec would give the program other rights than ours (glibc's AT_SECURE), or None."""
    st = path.stat()
    if os.statvfs(path).f_flag & os.ST_NOSUID:  # exec ignores the bits there
        return None
    if st.st_mode & stat.S_ISUID and st.st_uid != os.getuid():
        return "set-user-ID"
    if st.st_mode & stat.S_ISGID and st.st_gid != os.getgid():
        return "set-group-ID"
    return None
