"""What a launch does between main and ready, where most of a GUI program's launch goes: the objects
it loads (from the probe's timeline), the files it reads, the threads it starts and the longest
stretches without a system call (from a system-call trace with times), and what headstartd can
take over.

Objects: after main the probe records, for each dlopen that maps new objects, when the mapping began
and ended (LA_ACT_ADD to LA_ACT_CONSISTENT, which glibc 2.36 reports for a dlopen once its objects
are mapped, before it relocates them): the mapping cost, attributed to the object the dlopen asked
for (the first one mapped), its dependencies listed with it. Relocation has no audit event, so it is
taken from the trace: from the dlopen's first open to the last object's RELRO made read-only (the
loader's last step of relocating each object), inflated by tracing. Constructors run after both.

Trace: one more launch, under the probe and `strace -f -ttt`. The probe writes its output file when
main starts, so the first open of that file in the trace marks main; ready is the end of the trace
(the program exits, or is terminated when it printed its ready line). Tracing slows every system
call, so times from the trace are inflated and only ranked; the gaps between system calls are
computation, which tracing barely slows.
"""

from __future__ import annotations

import itertools
import os
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headstart.profiling import files
from headstart.profiling.timeline import Timeline

# `PID SECONDS.MICROS name(args) = result`, the result possibly annotated `<path>` (-y).
_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(?:<\.\.\. )?(\w+)(.*)$")
_RESULT_PATH = re.compile(r"=\s+-?\w+<([^>]*)>")
PROBE_OUTPUT = "probe.jsonl"
FONTCONFIG = re.compile(r"(/fonts/|/fontconfig/|\.cache-\d+$|fonts\.conf$)")
TOP_GAPS = 5


def trace_command(output: Path) -> list[str]:
    """strace with wall-clock times, every system call, descriptors shown as paths."""
    strace = files.strace_command(output)[0]
    return [strace, "-f", "-ttt", "-qq", "-y", "-s", "0", "-e", "signal=none", "-o", str(output)]


@dataclass
class Call:
    pid: int
    t: float  # seconds
    name: str
    rest: str  # arguments and result as strace printed them

    def describe(self) -> str:
        m = _RESULT_PATH.search(self.rest)
        return f"{self.name} {m.group(1)}" if m else self.name


_MMAP = re.compile(r"^\(\w+, (\d+), [^,]*, [^,]*, \d+<([^>]*)>, \w+\)\s+=\s+(0x[0-9a-f]+)")
_MPROTECT_RO = re.compile(r"^\((0x[0-9a-f]+), \d+, PROT_READ\)\s+=\s+0")


def relocated_at(calls: list[Call]) -> dict[str, float]:
    """When the loader made each object's RELRO read-only, by real path: relocation done."""
    ranges: list[tuple[int, int, str]] = []
    done: dict[str, float] = {}
    for c in calls:
        if c.name == "mmap" and (m := _MMAP.match(c.rest)):
            start = int(m.group(3), 16)
            ranges.append((start, start + int(m.group(1)), m.group(2)))
        elif c.name == "mprotect" and (m := _MPROTECT_RO.match(c.rest)):
            addr = int(m.group(1), 16)
            path = next((p for lo, hi, p in reversed(ranges) if lo <= addr < hi), None)
            if path:
                done[path] = c.t
    return done


def opened_at(calls: list[Call]) -> dict[str, float]:
    """When each file was first opened, by real path."""
    found: dict[str, float] = {}
    for c in calls:
        if c.name.startswith("open") and (m := _RESULT_PATH.search(c.rest)):
            found.setdefault(m.group(1), c.t)
    return found


def with_relocation(rows: list[dict[str, Any]], calls: list[Call]) -> None:
    """Adds to each load the traced time from its first open to its last object relocated."""
    opened, relocated = opened_at(calls), relocated_at(calls)
    for row in rows:
        paths = [os.path.realpath(p) for p in [row["object"], *row["with"]]]
        begin = opened.get(paths[0])
        ends = [relocated[p] for p in paths if p in relocated]
        row["relocated_traced_ms"] = (max(ends) - begin) * 1000 if begin is not None and ends else None


def parse_calls(text: str) -> list[Call]:
    calls = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            calls.append(Call(int(m.group(1)), float(m.group(2)), m.group(3), m.group(4)))
    return calls


def after_main_calls(calls: list[Call]) -> list[Call]:
    """The calls from main (the probe opening its output) to the end of the launch."""
    start = next((i for i, c in enumerate(calls) if c.name.startswith("open") and PROBE_OUTPUT + ">" in c.rest), None)
    return [] if start is None else calls[start:]


def loads(timelines: list[Timeline]) -> list[dict[str, Any]]:
    """Each dlopen after main that mapped new objects, by the object it asked for: when (ms after
    main) and how long mapping and relocating took, medians over the launches."""
    seen: dict[str, dict[str, Any]] = {}
    costs: dict[str, list[float]] = defaultdict(list)
    starts: dict[str, list[float]] = defaultdict(list)
    for tl in timelines:
        if tl.main is None:
            continue
        for begin, end in tl.loads_after_main:
            objects = [o.path for o in tl.objects if begin <= o.t <= end]
            if not objects:
                continue
            seen.setdefault(objects[0], {"object": objects[0], "with": objects[1:]})
            costs[objects[0]].append((end - begin) / 1e6)
            starts[objects[0]].append((begin - tl.main) / 1e6)
    rows = [
        dict(row, at_ms=statistics.median(starts[key]), cost_ms=statistics.median(costs[key]), launches=len(costs[key]))
        for key, row in seen.items()
    ]
    return sorted(rows, key=lambda r: r["at_ms"])


def objects_loaded(rows: list[dict[str, Any]]) -> list[str]:
    """Every object loaded after main, in load order, each once."""
    return list(dict.fromkeys(path for r in rows for path in [r["object"], *r["with"]]))


def gaps(calls: list[Call], pid: int) -> list[dict[str, Any]]:
    """The longest stretches of the main thread without a system call."""
    mine = [c for c in calls if c.pid == pid]
    found = [
        {"at_ms": (b.t - mine[0].t) * 1000, "ms": (b.t - a.t) * 1000, "after": a.describe(), "before": b.describe()}
        for a, b in itertools.pairwise(mine)
    ]
    return sorted(found, key=lambda g: -g["ms"])[:TOP_GAPS]


def trace_summary(calls: list[Call]) -> dict[str, Any]:
    """Files, threads and gaps of the traced launch, from main on."""
    after = after_main_calls(calls)
    if not after:
        return {"found_main": False, "files": [], "threads_started": 0, "gaps": [], "fontconfig_files": 0}
    text = "\n".join(f"{c.pid} {c.name}{c.rest}" for c in after)
    uses = files.parse_trace(text)
    rows = sorted((u.as_dict() for u in uses.values()), key=lambda f: -(f["bytes_read"] + f["bytes_mapped"]))
    threads = sum(1 for c in after if c.name in ("clone", "clone3") and re.search(r"=\s+\d+", c.rest))
    return {
        "found_main": True,
        "traced_ms": (after[-1].t - after[0].t) * 1000,
        "files": rows,
        "threads_started": threads,
        "gaps": gaps(after, after[0].pid),
        "fontconfig_files": sum(1 for f in rows if FONTCONFIG.search(f["path"])),
    }


def advice(load_rows: list[dict[str, Any]], traced: dict[str, Any]) -> list[str]:
    """What headstartd can take over, with the numbers behind it."""
    out = []
    if load_rows:
        mapped = sum(r["cost_ms"] for r in load_rows)
        relocated = sum(r["relocated_traced_ms"] or 0 for r in load_rows)
        count = len(objects_loaded(load_rows))
        out.append(
            f"preload the {count} objects loaded after main: mapping them costs {mapped:.1f} ms per launch "
            f"(median), mapping and relocating them {relocated:.1f} ms in the traced launch. headstartd "
            "learns and preloads them by itself (adaptive preload, on by default); "
            "`--write-preload FILE` writes them as `preload =` lines for a daemon run with --no-learn"
        )
    if traced.get("fontconfig_files"):
        out.append(
            f"warm-up = fontconfig: the program reads {traced['fontconfig_files']} fontconfig files after main "
            "(configuration and caches); the daemon can do that once in its zygote (--warm-up fontconfig)"
        )
    if traced.get("threads_started"):
        out.append(
            f"{traced['threads_started']} threads start after main: the daemon cannot start them ahead (it forks), "
            "so their work stays in every launch"
        )
    if traced.get("gaps"):
        g = traced["gaps"][0]
        out.append(
            f"the longest stretch without a system call is {g['ms']:.1f} ms (traced) after {g['after']}: "
            "computation in the program or its libraries, which no preloading removes"
        )
    return out


def analyze(timelines: list[Timeline], trace_text: str | None) -> dict[str, Any]:
    load_rows = loads(timelines)
    calls = parse_calls(trace_text) if trace_text is not None else []
    with_relocation(load_rows, after_main_calls(calls))
    traced = trace_summary(calls)
    return {
        "loads": load_rows,
        "objects": objects_loaded(load_rows),
        "load_ms": sum(r["cost_ms"] for r in load_rows),
        "trace": traced,
        "advice": advice(load_rows, traced),
    }


def preload_lines(after_main: dict[str, Any]) -> str:
    """The objects as headstartd configuration (packaging/headstart.conf.example)."""
    head = "# Objects the program loaded after main (headstart profile), preloaded by headstartd.\n"
    return head + "".join(f"preload = {path}\n" for path in after_main["objects"])
