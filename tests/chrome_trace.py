"""Reading back the traces headstart writes (Chrome's JSON trace event format, docs/traces.md) as
Perfetto reads them: no Python library parses this format (Perfetto's own parser is the native
trace_processor, which its Python package downloads at first use), so the file is read with json and
held to the rules Perfetto applies: the fields each event kind needs, times in microseconds rounded to
the nanosecond, and slices on one thread that nest or follow each other, never overlap."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

NEEDS = {"X": {"name", "pid", "tid", "ts", "dur"}, "i": {"name", "pid", "tid", "ts", "s"}, "C": {"name", "pid", "ts"}}
NEEDS["M"] = {"name", "pid", "tid", "args"}


def ns(us: float) -> int:
    return round(us * 1000)  # Perfetto: llround(ts * 1000)


def read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data["traceEvents"], list) and data["displayTimeUnit"] == "ms"
    for e in data["traceEvents"]:
        assert e["ph"] in NEEDS and NEEDS[e["ph"]] <= e.keys(), e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
    check_nesting(data)
    return data


def check_nesting(data: dict[str, Any]) -> None:
    """Per thread, in Perfetto's order (by time, stable): each slice inside the one open, or after it."""
    threads: dict[tuple[int, int], list[tuple[int, int, str]]] = defaultdict(list)
    for e in data["traceEvents"]:
        if e["ph"] == "X":
            threads[e["pid"], e["tid"]].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]))
    for thread, slices in threads.items():
        stack: list[tuple[int, int, str]] = []
        for s in sorted(slices, key=lambda s: s[0]):
            while stack and stack[-1][1] <= s[0]:
                stack.pop()
            assert not stack or s[1] <= stack[-1][1], f"{s} overlaps {stack[-1]} on {thread}"
            stack.append(s)


def processes(data: dict[str, Any]) -> dict[str, int]:
    """Process name -> pid."""
    return {e["args"]["name"]: e["pid"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}


def threads(data: dict[str, Any], pid: int) -> dict[str, int]:
    """Thread name -> tid, in one process."""
    return {
        e["args"]["name"]: e["tid"]
        for e in data["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == pid
    }


def events(data: dict[str, Any], ph: str, pid: int | None = None, tid: int | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in data["traceEvents"]
        if e["ph"] == ph and (pid is None or e["pid"] == pid) and (tid is None or e["tid"] == tid)
    ]
