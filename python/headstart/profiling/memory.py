"""A process's memory, read from /proc while it still runs: PSS and private dirty in all (smaps), and
the distinct pages of each file mapped into it (maps and pagemap: a page present and backed by the
file; a file mapped twice counts each page once), and apart the pages it holds as private copies of
a file's pages (relocated data: the file's page was read to make them)."""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_HEADER = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) \S+ ([0-9a-f]+) \S+ (\d+)\s*(.*)$")
_PRESENT = 1 << 63
_FILE_PAGE = 1 << 61


@dataclass
class Memory:
    pss_kb: int = 0
    private_dirty_kb: int = 0
    rss_kb: int = 0
    file_pages: dict[str, set[int]] = field(default_factory=dict)  # indexes of the pages mapped, per file
    copied_pages: dict[str, set[int]] = field(default_factory=dict)  # ... of the file's pages copied


def read_memory(pid: int) -> Memory | None:
    """None when the process is gone or not ours to read."""
    try:
        with open(f"/proc/{pid}/smaps") as f:
            text = f.read()
    except OSError:
        return None
    if not text:  # a process that has exited (a zombie) has no mappings left: not measured, not 0
        return None
    memory = Memory()
    for line in text.splitlines():
        if _HEADER.match(line):
            continue
        key, _, value = line.partition(":")
        if not value.strip().endswith("kB"):
            continue
        kb = int(value.split()[0])
        if key == "Pss":
            memory.pss_kb += kb
        elif key == "Private_Dirty":
            memory.private_dirty_kb += kb
        elif key == "Rss":
            memory.rss_kb += kb
    memory.file_pages, memory.copied_pages = _file_pages(pid, text)
    return memory


def _file_pages(pid: int, smaps: str) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    pages: dict[str, set[int]] = {}
    copied: dict[str, set[int]] = {}
    try:
        with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
            for line in smaps.splitlines():
                m = _HEADER.match(line)
                if not m or m.group(4) == "0" or not m.group(5).startswith("/"):
                    continue
                start, end, offset = int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16)
                pagemap.seek(start // PAGE_SIZE * 8)
                entries = pagemap.read((end - start) // PAGE_SIZE * 8)
                first = offset // PAGE_SIZE
                present = pages.setdefault(m.group(5), set())
                copies = copied.setdefault(m.group(5), set())
                for i, (entry,) in enumerate(struct.iter_unpack("<Q", entries)):
                    if entry & _PRESENT:
                        (present if entry & _FILE_PAGE else copies).add(first + i)
    except OSError:
        return {}, {}
    return pages, copied


def page_ranges(pages: set[int]) -> list[list[int]]:
    """[[first page, count], ...] of consecutive page indexes."""
    ranges: list[list[int]] = []
    for page in sorted(pages):
        if ranges and ranges[-1][0] + ranges[-1][1] == page:
            ranges[-1][1] += 1
        else:
            ranges.append([page, 1])
    return ranges
