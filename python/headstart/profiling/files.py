"""The files a launch opens, reads and maps (from a system-call trace), and their pages in the page
cache: evicting them before a cold launch and counting what is resident after it.

The trace comes from strace, in a launch of its own: tracing slows every system call, so the timed
launches are never traced.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from headstart.errors import HeadstartError
from headstart.profiling.memory import PAGE_SIZE

READS = ("read", "pread64", "readv", "preadv", "preadv2")
TRACED = ",".join(("open", "openat", "openat2", *READS, "mmap"))
# `PID name(args) = result`; -y annotates each descriptor with its path: 3</usr/lib/libc.so.6>.
_CALL = re.compile(r"^(?:(\d+)\s+)?(\w+)\((.*)\)\s+=\s+(-?\d+|0x[0-9a-f]+)(?:<(.*?)>)?")
_FD = re.compile(r"^\d+<(.*?)>")


@dataclass
class FileUse:
    path: str
    size: int = 0
    opens: int = 0
    reads: int = 0  # read() and friends
    bytes_read: int = 0
    bytes_mapped: int = 0  # of the process's address space, each byte once
    mapped_exec: bool = False  # code: a program or a library

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "size": self.size,
            "opens": self.opens,
            "reads": self.reads,
            "bytes_read": self.bytes_read,
            "bytes_mapped": self.bytes_mapped,
            "code": self.mapped_exec,
        }


def strace_command(output: Path) -> list[str]:
    strace = shutil.which("strace")
    if strace is None:
        raise HeadstartError("strace is needed to trace files: install it (apt-get install strace)")
    return [strace, "-f", "-qq", "-y", "-s", "0", "-e", f"trace={TRACED}", "-e", "signal=none", "-o", str(output)]


def _split_args(args: str) -> list[str]:
    """Top-level arguments; flags contain no commas. A string may (the after-main trace keeps 16
    characters of each), so only the arguments before the first string are relied on."""
    out, depth, current = [], 0, []
    for ch in args:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    out.append("".join(current).strip())
    return out


def parse_trace(text: str) -> dict[str, FileUse]:
    files: dict[str, FileUse] = {}
    judged: dict[str, bool] = {}  # one stat per path, not one per system call

    def _is_file(path: str) -> bool:
        if path not in judged:
            judged[path] = (
                path.startswith("/") and not path.startswith(("/dev/", "/proc/", "/sys/")) and os.path.isfile(path)
            )
        return judged[path]

    def use(path: str) -> FileUse:
        if path not in files:
            files[path] = FileUse(path, size=os.path.getsize(path))
        return files[path]

    # The address ranges each process mapped of each file: the loader maps an object's whole span,
    # then its segments over it (MAP_FIXED), which are counted once.
    ranges: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for line in text.splitlines():
        m = _CALL.match(line)
        if not m:
            continue  # unfinished, resumed and failed calls
        pid, name, args, result, result_path = m.groups()
        if result.startswith("-"):
            continue
        if name.startswith("open"):
            if result_path and _is_file(result_path):
                use(result_path).opens += 1
            continue
        parts = _split_args(args)
        if name == "mmap":
            fd = _FD.match(parts[4]) if len(parts) > 4 else None
            if fd and _is_file(fd.group(1)):
                f = use(fd.group(1))
                start = int(result, 0)
                ranges.setdefault((pid or "", f.path), []).append((start, start + int(parts[1])))
                f.mapped_exec |= "PROT_EXEC" in parts[2]
            continue
        # A trace of every call (the after-main one) has others on files too: lseek's result is an offset.
        fd = _FD.match(parts[0]) if name in READS else None
        if fd and _is_file(fd.group(1)):
            f = use(fd.group(1))
            f.reads += 1
            f.bytes_read += int(result)
    for (_, path), spans in ranges.items():
        files[path].bytes_mapped += _covered(spans)
    return files


def _covered(spans: list[tuple[int, int]]) -> int:
    """Bytes in the union of the [start, end) ranges."""
    total, reached = 0, 0
    for start, end in sorted(spans):
        if end > reached:
            total += end - max(start, reached)
            reached = end
    return total


def read_trace(path: Path) -> dict[str, FileUse]:
    try:
        return parse_trace(path.read_text(errors="replace"))
    except OSError as e:
        raise HeadstartError(f"cannot read the system-call trace {path}: {e.strerror}") from e


def evict(paths: list[str]) -> None:
    """Drops the files' clean pages from the page cache. Pages that some process maps stay: the
    kernel keeps them, which residency() afterwards shows."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            # Dirty pages (a program just built or copied) are not dropped until written back.
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def drop_all() -> None:
    """Every clean page of the page cache, for everyone (root only)."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as e:
        raise HeadstartError(f"--drop-all needs root: cannot write /proc/sys/vm/drop_caches ({e.strerror})") from e


_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_MAP_FAILED = ctypes.c_void_p(-1).value


def _mincore(path: str) -> bytes | None:
    """One byte per page of the file, bit 0 set when the page is in the page cache now (mincore over
    a mapping that touches none)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return b""
        addr = _libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, _MAP_FAILED):
            return None
        try:
            vec = ctypes.create_string_buffer((size + PAGE_SIZE - 1) // PAGE_SIZE)
            return vec.raw if _libc.mincore(addr, size, vec) == 0 else None
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


def residency(path: str) -> int | None:
    """Pages of the file in the page cache now."""
    vec = _mincore(path)
    return None if vec is None else sum(b & 1 for b in vec)


def resident_pages(path: str) -> set[int]:
    """Which pages of the file are in the page cache now."""
    return {i for i, b in enumerate(_mincore(path) or b"") if b & 1}
