"""What one traced launch does from main to ready: the files it uses, the threads and processes it
starts, the longest stretches of its main thread without a system call and in one, and the
fontconfig files it reads.

Alignment: as main starts, the probe looks up a path that cannot exist (MAIN_MARK), which marks main
in the trace, and every call that starts after it is after main (a trace from before that mark:
the probe's first open of its output file, which a program that loads hundreds of libraries also
makes before main, as the probe's buffer fills); the end of the trace is ready
(the program exits, or is terminated at its ready line). Times are ms after main on strace's clock.
Tracing slows every system call (tens of µs each), so times in and around calls are inflated and
only ranked; the stretches between calls are computation, which tracing barely slows.
"""

from __future__ import annotations

import itertools
import os
import re
from collections import defaultdict
from typing import Any

from headstart.profiling import files
from headstart.profiling.syscalls import AddressMap, Call, as_text

PROBE_OUTPUT = "probe.jsonl"
MAIN_MARK = "/dev/null/headstart-probe-main"  # src/probe/probe.c
# fontconfig's configuration (/etc/fonts/fonts.conf, conf.d/*.conf, /usr/share/fontconfig/conf.avail)
# and its caches (/var/cache/fontconfig/*.cache-N, ~/.cache/fontconfig): what FcInit reads. Font
# files themselves are read when text is drawn, which a warm-up does not do.
FONTCONFIG = re.compile(r"(^/etc/fonts/|/fontconfig/|\.cache-\d+$|fonts\.conf$)")
_CLONED = re.compile(r"\)\s+=\s+(\d+)$")
_EXECVE = re.compile(r'^\("([^"]*)",.*\)\s+=\s+(-?\d+)')
_RELRO = re.compile(r"^\(0x[0-9a-f]+, \d+, PROT_READ\)\s+=\s+0")
TOP_FILES = 10


def _probes_own(call: Call) -> bool:
    """A call of the probe's at main: its mark, or one on its output file (-y names it)."""
    return MAIN_MARK in call.rest or PROBE_OUTPUT + ">" in call.rest


def main_call(calls: list[Call]) -> Call | None:
    """The call that marks main in the trace, or None."""
    marked = next((c for c in calls if MAIN_MARK in c.rest), None)
    return marked or next((c for c in calls if c.name.startswith("open") and _probes_own(c)), None)


def after_main(calls: list[Call]) -> list[Call]:
    """The calls from main to the end of the launch."""
    main = main_call(calls)
    return [] if main is None else [c for c in calls if c.start >= main.start]


def _ms(t: float, main: float) -> float:
    return (t - main) * 1000


def file_rows(calls: list[Call], main: float) -> list[dict[str, Any]]:
    """Files used after main with their bytes (files.parse_trace), when each was first used and the
    time spent in the calls that name it, most time first."""
    spent: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    first: dict[str, float] = {}
    for c in calls:
        if (path := c.path()) is not None:
            spent[path] += c.ms
            count[path] += 1
            first.setdefault(path, c.start)
    # Not the probe's own output.
    rows = [u.as_dict() for p, u in files.parse_trace(as_text(calls)).items() if not p.endswith("/" + PROBE_OUTPUT)]
    for row in rows:
        p = row["path"]
        row.update(first_ms=_ms(first.get(p, main), main), calls=count[p], syscall_ms=spent[p])
    return sorted(rows, key=lambda r: (-r["syscall_ms"], -(r["bytes_read"] + r["bytes_mapped"])))


def _executed(calls: list[Call], pid: int) -> dict[str, Any]:
    """The program a new process ran: its first execve that worked, else the last one it tried."""
    tried = [m for c in calls if c.pid == pid and c.name == "execve" and (m := _EXECVE.match(c.rest))]
    done = next((m.group(1) for m in tried if m.group(2) == "0"), None)
    if done or not tried:
        return {"executed": done, "exec_failed": False}
    return {"executed": tried[-1].group(1), "exec_failed": True}


def started(calls: list[Call], main: float) -> list[dict[str, Any]]:
    """Threads and processes started after main (clone, clone3, fork, vfork), in order."""
    out = []
    for c in calls:
        if c.name in ("clone", "clone3", "fork", "vfork") and (m := _CLONED.search(c.rest)):
            tid = int(m.group(1))
            thread = "CLONE_THREAD" in c.rest
            ran = {"executed": None, "exec_failed": False} if thread else _executed(calls, tid)
            out.append(
                {
                    "id": tid,
                    "kind": "thread" if thread else "process",
                    "at_ms": _ms(c.start, main),
                    "by": c.pid,
                    **ran,
                    "system_calls": sum(1 for x in calls if x.pid == tid),
                }
            )
    return out


def relocations(calls: list[Call], mapped: AddressMap) -> list[tuple[float, float, str]]:
    """On one thread's calls, each object the loader relocated: from the end of the call before to
    the one making the object's RELRO read-only (its last step of relocating it), with its path."""
    return [
        (min(a.end, b.start), b.start, path)
        for a, b in itertools.pairwise(calls)
        if b.name == "mprotect" and _RELRO.match(b.rest) and (path := mapped.object_of(b))
    ]


def _describe(call: Call, mapped: AddressMap) -> str:
    """The call as the tables name it; the probe's own calls as what they are, not the program's."""
    if MAIN_MARK in call.rest:
        return "main (the probe's mark)"
    if _probes_own(call):  # whenever its buffer fills, and at exit
        return "the probe writing its record"
    return call.describe(mapped)


def gaps(calls: list[Call], pid: int, main: float, top: int, mapped: AddressMap) -> list[dict[str, Any]]:
    """The longest stretches of one thread without a system call: from one call's end to the next's
    start. One that ends with an object's RELRO made read-only was the loader relocating it."""
    mine = [c for c in calls if c.pid == pid]
    found = [
        {
            "at_ms": _ms(a.end, main),
            "ms": (b.start - a.end) * 1000,
            "after": _describe(a, mapped),
            "before": _describe(b, mapped),
            "relocating": mapped.object_of(b) if b.name == "mprotect" and _RELRO.match(b.rest) else None,
        }
        for a, b in itertools.pairwise(mine)
    ]
    return sorted(found, key=lambda g: -g["ms"])[:top]


def waits(calls: list[Call], pid: int, main: float, top: int, mapped: AddressMap) -> list[dict[str, Any]]:
    """The longest system calls of one thread: mostly blocked, waiting for another thread, a child
    or the X server."""
    mine = sorted((c for c in calls if c.pid == pid), key=lambda c: -c.ms)[:top]
    return [{"at_ms": _ms(c.start, main), "ms": c.ms, "call": c.describe(mapped)} for c in mine]


def _overlap_ms(calls: list[Call], pid: int, begin: float, end: float) -> float:
    """How long one thread spent in system calls between two moments."""
    return sum(max(0.0, min(c.end, end) - max(c.start, begin)) for c in calls if c.pid == pid) * 1000


def fontconfig(calls: list[Call], main: float, pid: int) -> dict[str, Any]:
    """fontconfig's files read after main, and the span from the first of them used to the last
    call on any of them: reading and parsing them (traced, so an upper bound). When that runs on
    another thread, how long the main thread spent in system calls meanwhile (mostly waiting)."""
    mine = [c for c in calls if (p := c.path()) is not None and FONTCONFIG.search(p)]
    paths = {p for c in mine if c.name.startswith("open") and (p := c.path()) and os.path.isfile(p)}
    if not paths:
        return {"files": 0, "ms": 0.0, "at_ms": None, "threads": [], "main_thread_in_calls_ms": 0.0}
    begin, end = mine[0].start, max(c.end for c in mine)
    return {
        "files": len(paths),
        "ms": (end - begin) * 1000,
        "at_ms": _ms(begin, main),
        "threads": sorted({c.pid for c in mine}),
        "main_thread_in_calls_ms": _overlap_ms(calls, pid, begin, end),
    }


def summary(all_calls: list[Call], top: int) -> dict[str, Any]:
    """Files, threads, processes, gaps and waits of the traced launch, from main on."""
    calls = after_main(all_calls)
    if not calls:
        empty: dict[str, Any] = {"files": [], "threads_started": 0, "started": [], "gaps": [], "waits": []}
        font = fontconfig([], 0.0, 0)
        return dict(empty, found_main=False, main_thread=None, traced_ms=None, fontconfig=font, fontconfig_files=0)
    main, pid = calls[0].start, calls[0].pid
    mapped = AddressMap(all_calls)
    begun = started(calls, main)
    font = fontconfig(calls, main, pid)
    return {
        "found_main": True,
        "main_thread": pid,
        "traced_ms": _ms(max(c.end for c in calls), main),
        "files": file_rows(calls, main),
        "threads_started": sum(1 for s in begun if s["kind"] == "thread"),
        "started": begun,
        "gaps": gaps(calls, pid, main, top, mapped),
        "waits": waits(calls, pid, main, top, mapped),
        "fontconfig": font,
        "fontconfig_files": font["files"],
    }
