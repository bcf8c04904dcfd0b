"""Traces that open in Perfetto (ui.perfetto.dev) and chrome://tracing: Chrome's JSON trace event
format, written with the standard library (docs/traces.md says what each holds and why this format).

Every time is kept in integer nanoseconds and written in microseconds with three decimals, which
Perfetto rounds back to the same nanosecond: a slice nested in another (an object's mapping in the
load phase) stays inside it. Slices on one thread nest or follow each other, never overlap (the
format allows nothing else); a parent is written before its children, so that one starting at the
same time is still read as the parent.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from headstart.profiling.after_main_trace import main_call, relocations, started
from headstart.profiling.syscalls import AddressMap, Call
from headstart.profiling.timeline import PHASES

if TYPE_CHECKING:  # types only: importing them takes pyelftools, which `boot` has no use for
    from headstart.boot.analysis import Analysis
    from headstart.profiling.launch import Launch
    from headstart.profiling.profiler import Recorded

ARG_TEXT = 200  # a system call's arguments and result, as strace printed them, cut to this


def _us(ns: int) -> float:
    return ns / 1000


@dataclass
class Trace:
    """Trace events in the order written: metadata (names), then slices, instants and counters."""

    events: list[dict[str, Any]] = field(default_factory=list)
    about: dict[str, Any] = field(default_factory=dict)  # otherData: what made the trace

    def process(self, pid: int, name: str, order: int | None = None) -> None:
        self.events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": pid, "args": {"name": name}})
        if order is not None:
            self.events.append(
                {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": pid, "args": {"sort_index": order}}
            )

    def thread(self, pid: int, tid: int, name: str, order: int | None = None) -> None:
        self.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        if order is not None:
            self.events.append(
                {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": order}}
            )

    def slice(
        self, pid: int, tid: int, name: str, begin_ns: int, end_ns: int, args: dict[str, Any] | None = None
    ) -> None:
        event = {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": _us(begin_ns), "dur": _us(end_ns - begin_ns)}
        self.events.append(event | ({"args": args} if args else {}))

    def instant(self, pid: int, tid: int, name: str, at_ns: int, args: dict[str, Any] | None = None) -> None:
        event = {"ph": "i", "s": "t", "name": name, "pid": pid, "tid": tid, "ts": _us(at_ns)}
        self.events.append(event | ({"args": args} if args else {}))

    def counter(self, pid: int, name: str, at_ns: int, values: dict[str, int | float]) -> None:
        self.events.append({"ph": "C", "name": name, "pid": pid, "tid": pid, "ts": _us(at_ns), "args": values})

    def as_dict(self) -> dict[str, Any]:
        return {"traceEvents": self.events, "displayTimeUnit": "ms", "otherData": self.about}

    def write(self, file: TextIO) -> None:
        file.write(text(self))


def text(trace: Trace) -> str:
    """The trace as the file holds it: one line of JSON (a trace may hold thousands of events)."""
    return json.dumps(trace.as_dict(), separators=(",", ":")) + "\n"


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


# --- headstart profile --trace ---


def _launch_labels(records: list[dict[str, Any]], pinned: int) -> list[str]:
    counts: dict[str, int] = {}
    labels = []
    for kind in ["cold" if r["cold"] else "warm" for r in records] + ["cold, pinned"] * pinned:
        counts[kind] = counts.get(kind, 0) + 1
        labels.append(f"{kind} launch {counts[kind]}")
    return labels


class _Pids:
    """Each process its own pid in the trace: the real one, unless a launch before had it."""

    def __init__(self) -> None:
        self.used: set[int] = set()
        self.next_free = 1 << 22  # above the kernel's pid_max default

    def take(self, pid: int | None) -> int:
        if pid is None or pid in self.used:
            pid = self.next_free
            self.next_free += 1
        self.used.add(pid)
        return pid


def _timed_launch(trace: Trace, pid: int, launch: Launch, record: dict[str, Any]) -> None:
    """One launch under the probe, from its request (time 0): the phases to main, each object of the
    initial set mapped (inside the load phase), main to ready with the objects loaded after main,
    main and ready as instants, the page faults as counters."""
    tl = launch.timeline
    ready = launch.to_ready_ns
    if tl is not None:
        begin = tl.launch_start if tl.launch_start is not None else tl.start
        initial = tl.initial_objects()
        points = [tl.launch_start, tl.start, initial[-1].t if initial else None, tl.relocated, tl.main]
        for name, a, b in zip(PHASES, points, points[1:], strict=False):
            if a is None or b is None:
                continue
            trace.slice(pid, pid, name, a - begin, b - begin, {"phase": name})
            if name == "load":
                for o in initial:
                    args = {"path": o.path, "kind": o.kind, "size": o.size, "needed_by": o.needed_by}
                    trace.slice(pid, pid, f"map {o.name}", o.t - o.map_ns - begin, o.t - begin, args)
        main = tl.main - begin if tl.main is not None else None
        if main is not None and ready is not None and ready >= main:
            trace.slice(pid, pid, "main to ready", main, ready)
        for load_begin, load_end in tl.loads_after_main:
            if ready is not None and main is not None and load_end - begin > ready:
                continue  # after ready: outside the launch as measured
            objects = [o for o in tl.objects if load_begin <= o.t <= load_end]
            name = f"dlopen {objects[0].name}" if objects else "dlopen"
            args = {"objects": [o.path for o in objects]}
            trace.slice(pid, pid, name, load_begin - begin, load_end - begin, args)
        if main is not None:
            trace.instant(pid, pid, "main", main, {"via": tl.main_via})
    if ready is not None:
        trace.instant(pid, pid, "ready", ready)
    if record["minor_faults"] is not None and record["major_faults"] is not None:
        # The kernel's counts for the whole process (getrusage at its end), drawn at ready: when in
        # the launch each fault happened is not measured.
        end = ready if ready is not None else 0
        trace.counter(pid, "page faults", 0, {"minor": 0, "major": 0})
        trace.counter(pid, "page faults", end, {"minor": record["minor_faults"], "major": record["major_faults"]})


def _owners(calls: list[Call]) -> dict[int, int]:
    """The process of each thread id strace saw: a thread (clone with CLONE_THREAD) belongs to the
    process of the thread that started it; anything else is a process of its own."""
    owner: dict[int, int] = {}
    for s in started(calls, 0.0):
        owner[s["id"]] = owner.get(s["by"], s["by"]) if s["kind"] == "thread" else s["id"]
    for c in calls:
        owner.setdefault(c.pid, c.pid)
    return owner


def _traced_launch(trace: Trace, calls: list[Call], program: str, pids: _Pids, order: int) -> None:
    """The launch traced with strace -f -ttt -T: every system call of every thread, named by the call
    and the file it names, from the program's execve (time 0); the loader relocating each object
    (from the end of the call before to its RELRO made read-only); main (the probe opening its output)
    and the end of the trace. Tracing slows every call: times are inflated."""
    if not calls:
        return
    zero = calls[0].start
    owner = _owners(calls)
    executed = {s["id"]: s["executed"] for s in started(calls, 0.0) if s["kind"] == "process"}
    in_trace = {p: pids.take(p) for p in dict.fromkeys(owner.values())}
    main_pid = owner[calls[0].pid]
    for n, (real, pid) in enumerate(in_trace.items()):
        what = f"{program}: traced launch (strace: times inflated)" if real == main_pid else f"process {real}"
        ran = executed.get(real)
        trace.process(pid, f"{what}, running {ran}" if ran else what, order + n)
    by_thread: dict[int, list[Call]] = {}
    for c in calls:
        by_thread.setdefault(c.pid, []).append(c)
    for tid in by_thread:
        pid = in_trace[owner[tid]]
        trace.thread(pid, tid if tid != owner[tid] else pid, "main thread" if tid == owner[tid] else f"thread {tid}")
    mapped = AddressMap(calls)
    for tid, mine in by_thread.items():
        pid = in_trace[owner[tid]]
        track = tid if tid != owner[tid] else pid
        for i, c in enumerate(mine):
            begin = _ns(c.start - zero)
            end = _ns(c.end - zero)
            if i + 1 < len(mine):  # strace's microseconds may make a call end after the next begins
                end = min(end, _ns(mine[i + 1].start - zero))
            path = c.path() or mapped.object_of(c)
            name = f"{c.name} {os.path.basename(path)}" if path else c.name
            args = {"file": path} if path else {}
            trace.slice(pid, track, name, begin, max(begin, end), args | {"call": (c.name + c.rest)[:ARG_TEXT]})
    main_track = in_trace[main_pid]
    for begin, end, path in relocations(by_thread[calls[0].pid], mapped):
        name = f"relocate {os.path.basename(path)}"
        trace.slice(main_track, main_track, name, _ns(begin - zero), _ns(end - zero), {"object": path})
    main = main_call(calls)
    if main is not None:
        trace.instant(main_track, main_track, "main", _ns(main.start - zero))
    trace.instant(main_track, main_track, "end of trace", _ns(max(c.end for c in calls) - zero))


def profile_trace(profile: dict[str, Any], recorded: Recorded) -> Trace:
    """Every timed launch as a process of its own, each from its request, and the launch traced with
    strace with its threads and processes."""
    trace = Trace(about={"source": "headstart profile", "program": profile["program"]})
    program = os.path.basename(profile["program"][0])
    launches = recorded.launches + recorded.pinned
    records = profile["launches"] + [None] * len(recorded.pinned)
    labels = _launch_labels(profile["launches"], len(recorded.pinned))
    pids = _Pids()
    for n, (launch, record, label) in enumerate(zip(launches, records, labels, strict=True)):
        pid = pids.take(launch.timeline.pid if launch.timeline else None)
        trace.process(pid, f"{program}: {label}", n)
        trace.thread(pid, pid, "main thread (probe)")
        faults = {"minor_faults": launch.minor_faults, "major_faults": launch.major_faults}
        _timed_launch(trace, pid, launch, record or faults)
    _traced_launch(trace, recorded.calls, program, pids, len(launches))
    return trace


# --- headstart boot analyze --trace ---

BOOT_PID = 1


def _lanes(spans: list[tuple[int, int, Any]]) -> list[list[tuple[int, int, Any]]]:
    """Spans that may overlap (asynchronous initcalls) in as few lanes as keep each lane's apart."""
    lanes: list[list[tuple[int, int, Any]]] = []
    for span in sorted(spans, key=lambda s: (s[0], -s[1])):
        lane = next((lane for lane in lanes if lane[-1][1] <= span[0]), None)
        if lane is None:
            lanes.append([span])
        else:
            lane.append(span)
    return lanes


def boot_trace(analysis: Analysis) -> Trace:
    """One boot on one timeline (the analysis's axis, in seconds from its zero): the phases between
    the moments the logs show, systemd's own account of its phases, the initcalls (in lanes where they
    overlap), and each systemd unit on a track of its own, from the start of user space: blame gives
    a unit's duration, not its start."""
    t = analysis.timeline
    zero = "power-on" if t.axis == "host" else "the kernel's first message"
    trace = Trace(about={"source": "headstart boot analyze", "logs": analysis.sources, "axis": t.axis})
    trace.process(BOOT_PID, f"boot (time from {zero})", 0)
    tracks = ["phases", "systemd's account"]
    for n, name in enumerate(tracks):
        trace.thread(BOOT_PID, n + 1, name, n)
    for p in t.phases:
        track = 2 if p.name.startswith("systemd: ") else 1
        trace.slice(BOOT_PID, track, p.name, _ns(p.start_s), _ns(p.end_s), {"evidence": p.evidence})
    for name, m in t.moments.items():
        trace.instant(BOOT_PID, 1, t.chain.get(name, name), _ns(m.at_s), {"moment": name})
    spans = []
    for c in t.initcalls:
        end = t.time_of(c.evidence)
        begin = c.start_s if c.start_s is not None else (end - c.duration_s if end is not None else None)
        if begin is not None:
            spans.append((_ns(begin), _ns(begin) + _ns(c.duration_s), c))
    tid = len(tracks) + 1
    for n, lane in enumerate(_lanes(spans)):
        trace.thread(BOOT_PID, tid, "initcalls" if n == 0 else f"initcalls ({n + 1})", tid)
        for begin, end, c in lane:
            trace.slice(BOOT_PID, tid, c.name, begin, end, {"evidence": c.evidence.source})
        tid += 1
    user_space = next((p.start_s for p in t.phases if p.name == "systemd: userspace"), t.at("init"))
    for unit, seconds, source in t.services:
        trace.thread(BOOT_PID, tid, unit, tid)
        at = _ns(user_space or 0.0)
        args = {"evidence": source, "start": "not in the log: drawn from the start of user space"}
        trace.slice(BOOT_PID, tid, unit, at, at + _ns(seconds), args)
        tid += 1
    trace.about["initcalls_without_a_time"] = len(t.initcalls) - len(spans)
    return trace


# --- headstart bench: trace.json beside bench.json ---


@dataclass
class LaunchRows:
    """The launches of one program in one mode (or mode and arm), as launch-timer wrote them."""

    program: str
    track: str
    rows: list[dict[str, Any]]


def bench_trace(groups: list[LaunchRows], source: str) -> Trace:
    """Each program a process, each of its modes a thread, each launch two nested slices (to ready,
    and to main inside it) from the launch request. The launches did not run at these times: round
    r of every mode of a program starts at the same point, one round after the other, so that modes
    line up for comparison; a failed launch is an instant with its error."""
    trace = Trace(about={"source": source, "time axis": "round r of every mode starts at the same point"})
    programs = list(dict.fromkeys(g.program for g in groups))
    tid = 0
    for n, program in enumerate(programs, 1):
        pid = n
        trace.process(pid, program, n)
        mine = [g for g in groups if g.program == program]
        longest = max(
            (r.get(k) or 0 for g in mine for r in g.rows for k in ("to_main_ns", "to_ready_ns")),
            default=0,
        )
        slot = max(longest + longest // 4, 1000)  # a quarter of the longest launch between rounds
        for group in mine:
            tid += 1
            track = n * 1000 + tid
            trace.thread(pid, track, group.track, tid)
            for i, row in enumerate(group.rows):
                at = i * slot  # the i-th launch of the mode (bench --cold times one per launch-timer run)
                if "error" in row:
                    trace.instant(pid, track, "failed", at, {"error": row["error"]})
                    continue
                to_main, to_ready = row["to_main_ns"], row.get("to_ready_ns")
                args = {"launch": i + 1, "mode": group.track}
                if to_ready is not None and to_ready >= to_main:
                    trace.slice(pid, track, "to ready", at, at + to_ready, args)
                trace.slice(pid, track, "to main", at, at + to_main, args)
    return trace
