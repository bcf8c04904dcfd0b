"""The text pages a cold launch touches, per object, counted exactly: the page cache emptied first
(drop_caches, root) and the device's readahead turned off for that launch, so that a fault reads
only its own page and fault-around finds no cached neighbour to map (docs/measuring.md). Without
root, only the program is evicted and readahead stays: the count is then rounded up to the
fault-around blocks (64 KiB)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from headstart import binaries
from headstart.errors import HeadstartError
from headstart.ordering.symbols import load
from headstart.profiling import files
from headstart.profiling.launch import LaunchOptions, checked, run
from headstart.profiling.memory import PAGE_SIZE


@dataclass
class TextPages:
    path: str
    total: int  # pages of the file that executable segments map
    touched: set[int]  # of those, present in the process at ready (or copied)
    exact: bool  # readahead was off and the cache empty


def _read_ahead_knob(path: str) -> Path | None:
    st = os.stat(path)
    block = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    for knob in (block / "queue/read_ahead_kb", block / "../queue/read_ahead_kb"):
        if knob.exists():
            return knob
    return None


@contextmanager
def read_ahead(path: str, kib: int | None) -> Iterator[None]:
    """The read_ahead_kb of the device holding path set to kib for the block (root); None: as is."""
    knob = _read_ahead_knob(path) if kib is not None else None
    if knob is None:
        yield
        return
    before = knob.read_text().strip()
    try:
        knob.write_text(f"{kib}\n")
    except OSError as e:
        raise HeadstartError(f"cannot set {knob} (root is needed): {e.strerror}") from e
    try:
        yield
    finally:
        knob.write_text(f"{before}\n")


def empty_cache(paths: list[str]) -> bool:
    """Everything as root (True), else these files' pages that no other process maps."""
    if os.geteuid() == 0:
        files.drop_all()
        return True
    files.evict(paths)
    return False


def cold_text_pages(opts: LaunchOptions) -> dict[str, TextPages]:
    """Per object the launch maps, its text pages touched by ready."""
    program = opts.argv[0]
    exact = empty_cache([program])
    with read_ahead(program, 0 if exact else None):
        launch = checked(run(opts), "cold")
    if launch.memory is None:
        raise HeadstartError(f"{program}: its memory could not be read at ready")
    found = {}
    probe = str(binaries.find("probe").resolve())  # our own: it only stops the program for us
    for path in launch.memory.file_pages.keys() | launch.memory.copied_pages.keys():
        if str(Path(path).resolve()) == probe:
            continue
        pages = launch.memory.file_pages.get(path, set()) | launch.memory.copied_pages.get(path, set())
        try:
            text = load(path).text_pages(PAGE_SIZE)
        except HeadstartError:
            continue  # not an ELF object: data, fonts
        if text:
            found[str(Path(path).resolve())] = TextPages(path, len(text), pages & text, exact)
    return found
