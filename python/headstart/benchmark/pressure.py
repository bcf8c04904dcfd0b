"""Memory pressure for `headstart bench --cold --memory-max`: a cgroup with a memory limit that the
launches and the daemons run in, so that the page cache they can keep is what the limit leaves
(as on a device with little memory). cgroup v2 (memory.max) where its memory controller is
enabled, else v1 (memory.limit_in_bytes). Root only."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from headstart.errors import HeadstartError

V2 = Path("/sys/fs/cgroup")
V1 = Path("/sys/fs/cgroup/memory")


class MemoryCgroup:
    def __init__(self, path: Path) -> None:
        self.path = path

    def join(self) -> None:
        """Moves the calling process in (a subprocess's preexec_fn: what it starts stays in)."""
        (self.path / "cgroup.procs").write_text("0\n")

    def add_tree(self, pid: int) -> None:
        """Moves a running process and its descendants in (a daemon, its zygote, its pool)."""
        for p in [pid, *_descendants(pid)]:
            try:
                (self.path / "cgroup.procs").write_text(f"{p}\n")
            except OSError:
                continue  # gone meanwhile


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _base() -> tuple[Path, str]:
    controllers = V2 / "cgroup.controllers"
    if controllers.exists() and "memory" in controllers.read_text().split():
        return V2, "memory.max"
    if (V1 / "memory.limit_in_bytes").exists():
        return V1, "memory.limit_in_bytes"
    raise HeadstartError("--memory-max: no cgroup memory controller is mounted (/sys/fs/cgroup)")


@contextmanager
def memory_limited(limit: int) -> Iterator[MemoryCgroup]:
    if os.geteuid() != 0:
        raise HeadstartError("--memory-max needs root (it makes a cgroup)")
    base, knob = _base()
    path = base / f"headstart-bench-{os.getpid()}"
    try:
        path.mkdir()
        (path / knob).write_text(f"{limit}\n")
    except OSError as e:
        raise HeadstartError(f"--memory-max: cannot make the cgroup {path}: {e.strerror}") from e
    try:
        yield MemoryCgroup(path)
    finally:
        for pid in (path / "cgroup.procs").read_text().split():
            try:
                (base / "cgroup.procs").write_text(f"{pid}\n")  # back to the top, so that it can go
            except OSError:
                continue
        try:
            path.rmdir()
        except OSError:
            pass  # busy a little longer; harmless, and named after our pid
