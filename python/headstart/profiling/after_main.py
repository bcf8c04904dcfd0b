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

Trace: one more launch, under the probe and `strace -f -ttt -T`, read by after_main_trace.py (files,
threads, gaps, fontconfig), which says how it is aligned with main.
"""

from __future__ import annotations

import os
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError
from headstart.lazy.elf_facts import read_facts
from headstart.profiling import after_main_shares, after_main_trace, files, load_cost, syscalls
from headstart.profiling.syscalls import AddressMap, Call
from headstart.profiling.timeline import Timeline

TOP_GAPS = 5


def trace_command(output: Path) -> list[str]:
    """strace with wall-clock times and durations, every system call, descriptors shown as paths.
    Arrays up to 16 entries (strace's -s limits them as it does strings): a toolkit's main loop
    polls several descriptors at once, its display's socket among them (with -s 0, `[...]`)."""
    strace = files.strace_command(output)[0]
    return [strace, "-f", "-ttt", "-T", "-qq", "-y", "-s", "16", "-e", "signal=none", "-o", str(output)]


_MPROTECT_RO = re.compile(r"^\((0x[0-9a-f]+), \d+, PROT_READ\)\s+=\s+0")


def relocated_at(calls: list[Call], mapped: AddressMap) -> dict[str, float]:
    """When the loader made each object's RELRO read-only, by real path: relocation done."""
    done: dict[str, float] = {}
    for c in calls:
        if c.name == "mprotect" and _MPROTECT_RO.match(c.rest) and (path := mapped.object_of(c)):
            done[path] = c.end
    return done


def opened_at(calls: list[Call]) -> dict[str, float]:
    """When each file was first opened, by real path."""
    found: dict[str, float] = {}
    for c in calls:
        if c.name.startswith("open") and (path := c.path()):
            found.setdefault(path, c.start)
    return found


Span = tuple[float, float]
# A stretch without a system call shorter than this is not worth a line of advice (the table lists it).
GAP_ADVICE_MS = 1.0


def with_relocation(rows: list[dict[str, Any]], calls: list[Call], mapped: AddressMap) -> dict[str, Span]:
    """Adds to each load the traced time from its first open to its last object relocated; returns
    those spans by object, for their union (a plugin loaded by another's constructor is inside it)."""
    opened, relocated = opened_at(calls), relocated_at(calls, mapped)
    spans: dict[str, Span] = {}
    for row in rows:
        paths = [os.path.realpath(p) for p in [row["object"], *row["with"]]]
        begin = opened.get(paths[0])
        ends = [relocated[p] for p in paths if p in relocated]
        row["relocated_traced_ms"] = (max(ends) - begin) * 1000 if begin is not None and ends else None
        if begin is not None and ends:
            spans[row["object"]] = (begin, max(ends))
    return spans


def union_ms(spans: list[Span]) -> float:
    """The time inside any of the spans, each counted once."""
    total, reached = 0.0, float("-inf")
    for begin, end in sorted(spans):
        if end > reached:
            total += end - max(begin, reached)
            reached = end
    return total * 1000


def _requester(tl: Timeline, index: int | None) -> tuple[str | None, str | None]:
    """The object that called dlopen (the loader's la_objsearch names it): its name and path."""
    found = next((o for o in tl.objects if o.index == index), None) if index is not None else None
    return (found.name, found.path) if found else (None, None)


def deferred_by_stubs(requester: str | None, loaded: str) -> bool:
    """Whether the requester's lazy stubs (`headstart lazy build`) asked for the object at a first call."""
    try:
        return bool(requester) and read_facts(loaded).soname in read_facts(str(requester)).stubs_for
    except HeadstartError:  # gone or not ELF: a dlopen like any other
        return False


def loads(timelines: list[Timeline]) -> list[dict[str, Any]]:
    """Each dlopen after main that mapped new objects, by the object it asked for: who asked, when
    (ms after main) and how long mapping took, medians over the launches."""
    seen: dict[str, dict[str, Any]] = {}
    costs: dict[str, list[float]] = defaultdict(list)
    starts: dict[str, list[float]] = defaultdict(list)
    for tl in timelines:
        if tl.main is None:
            continue
        for begin, end in tl.loads_after_main:
            objects = [o for o in tl.objects if begin <= o.t <= end]
            if not objects:
                continue
            first = objects[0]
            by, by_path = _requester(tl, first.needed_by)
            row = {"object": first.path, "with": [o.path for o in objects[1:]], "requested_by": by,
                   "deferred_by_stubs": deferred_by_stubs(by_path, first.path)}  # fmt: skip
            seen.setdefault(first.path, dict(row, requested_as=first.needed_as))
            costs[first.path].append((end - begin) / 1e6)
            starts[first.path].append((begin - tl.main) / 1e6)
    rows = [
        dict(row, at_ms=statistics.median(starts[key]), cost_ms=statistics.median(costs[key]), launches=len(costs[key]))
        for key, row in seen.items()
    ]
    return sorted(rows, key=lambda r: r["at_ms"])


def objects_loaded(rows: list[dict[str, Any]]) -> list[str]:
    """Every object loaded after main, in load order, each once."""
    return list(dict.fromkeys(path for r in rows for path in [r["object"], *r["with"]]))


def preloadable(load_rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The loads a daemon can preload, and the objects of those it cannot: loaded apart, in a process
    holding the program's libraries but not the program, they failed (PHP's extensions need symbols
    of the php program itself), and so would they in headstartd. Loads not tried apart (--from) are
    taken."""
    ok = [r for r in load_rows if r.get("loads_apart") is not False]
    taken = set(objects_loaded(ok))
    return ok, [o for o in objects_loaded([r for r in load_rows if r.get("loads_apart") is False]) if o not in taken]


def saving_ms(rows: list[dict[str, Any]]) -> tuple[float, str]:
    """What preloading the loads (those a daemon can preload) saves per launch, and what that figure is."""
    if rows and all(r["dlopen_ms"] is not None for r in rows):
        return sum(r["dlopen_ms"] for r in rows), "loading them apart, untraced: mapping, relocation, constructors"
    return sum(r["cost_ms"] for r in rows), "their mapping alone, a lower bound"


def _preload_advice(load_rows: list[dict[str, Any]], spans: dict[str, Span]) -> str:
    rows, left_out = preloadable(load_rows)
    if not rows:
        return (
            f"the {len(left_out)} objects loaded after main could not be loaded outside the program (they need "
            "its own symbols): no daemon can preload them"
        )
    saving, how = saving_ms(rows)
    relocated = union_ms([spans[r["object"]] for r in rows if r["object"] in spans])
    cannot = (
        f"; {len(left_out)} more could not be loaded outside the program (they need its own symbols) and are left out"
        if left_out
        else ""
    )
    return (
        f"preload these {len(objects_loaded(rows))} objects, saving about {saving:.1f} ms per launch "
        f"({how}; median. Mapping and relocating them took {relocated:.1f} ms in the traced launch{cannot}): "
        "learned automatically by headstartd's adaptive preload (on by default), or add them as "
        "`preload = PATH` lines (`headstart profile --write-preload FILE`, then headstartd --config FILE)"
    )


def _fontconfig_advice(font: dict[str, Any], main_thread: int | None) -> str:
    where = (
        "on the main thread"
        if main_thread in font["threads"]
        else f"on another thread, the main thread {font['main_thread_in_calls_ms']:.1f} ms in system calls meanwhile"
    )
    saving = (
        f"saving about {font['fc_init_ms']:.1f} ms per launch (FcInit measured apart, untraced)"
        if font.get("fc_init_ms") is not None
        else "saving at most that"
    )
    return (
        f"warm-up = fontconfig: the program reads {font['files']} fontconfig files after main (configuration "
        f"and caches), {font['ms']:.1f} ms from the first to the last in the traced launch ({where}); "
        f"headstartd can read them once in its zygote (`warm-up = fontconfig`, --warm-up fontconfig), {saving}"
    )


def _started_advice(begun: list[dict[str, Any]]) -> str:
    threads = sum(1 for s in begun if s["kind"] == "thread")
    runs = sorted({s["executed"] + " (exec failed)" * s["exec_failed"] for s in begun if s["executed"]})
    ran = f" (running {', '.join(runs)})" if runs else ""
    processes = len(begun) - threads
    return (
        f"{threads} thread{'s' * (threads != 1)} and {processes} process{'es' * (processes != 1)}{ran} start "
        "after main: the daemon cannot "
        "start them ahead (it forks a single thread), so their cost stays in every launch"
    )


def advice(load_rows: list[dict[str, Any]], traced: dict[str, Any], spans: dict[str, Span]) -> list[str]:
    """What headstartd can take over, with the numbers behind it, and what it cannot."""
    out = [_preload_advice(load_rows, spans)] if load_rows else []
    font = traced.get("fontconfig")
    if font and font["files"]:
        out.append(_fontconfig_advice(font, traced.get("main_thread")))
    if traced.get("started"):
        out.append(_started_advice(traced["started"]))
    if traced.get("gaps") and traced["gaps"][0]["ms"] >= GAP_ADVICE_MS:
        out.append(_gap_advice(traced["gaps"][0]))
    return out


def _gap_advice(g: dict[str, Any]) -> str:
    head = f"the longest stretch of the main thread without a system call is {g['ms']:.1f} ms"
    if g["relocating"]:
        return f"{head}, the loader relocating {g['relocating']}: preloading it removes that from the launch"
    return f"{head}, after {g['after']}: computation in the program or its libraries, which no preloading removes"


def with_load_cost(rows: list[dict[str, Any]], timelines: list[Timeline], runs: int) -> None:
    """Adds to each load its dlopen measured apart, untraced (load_cost.py); None when not measured."""
    initial = [o.path for o in timelines[0].initial_objects() if o.kind == "library"] if timelines else []
    measured = load_cost.measure(initial, [r["object"] for r in rows], runs) if runs else [None] * len(rows)
    for row, ms in zip(rows, measured, strict=True):
        row["dlopen_ms"] = ms
        row["loads_apart"] = ms is not None if runs else None


def _fc_init_ms(timelines: list[Timeline], traced: dict[str, Any], runs: int) -> float | None:
    """FcInit measured apart with the program's own libfontconfig, when it reads fontconfig's files."""
    paths = [o.path for tl in timelines[:1] for o in tl.objects if o.name.startswith("libfontconfig.so")]
    if not runs or not paths or not traced["fontconfig"]["files"]:
        return None
    return load_cost.fontconfig_ms(paths[0], runs)


def analyze(
    timelines: list[Timeline], trace_text: str | None, top_gaps: int = TOP_GAPS, measure_runs: int = 0
) -> dict[str, Any]:
    load_rows = loads(timelines)
    with_load_cost(load_rows, timelines, measure_runs)
    calls = syscalls.parse(trace_text) if trace_text is not None else []
    spans = with_relocation(load_rows, after_main_trace.after_main(calls), AddressMap(calls))
    traced = after_main_trace.summary(calls, top_gaps)
    traced["fontconfig"]["fc_init_ms"] = _fc_init_ms(timelines, traced, measure_runs)
    return {
        "loads": load_rows,
        "objects": objects_loaded(load_rows),
        "load_ms": sum(r["cost_ms"] for r in load_rows),
        "trace": traced,
        "shares": after_main_shares.shares(after_main_trace.after_main(calls), calls),
        "advice": advice(load_rows, traced, spans),
    }


def preload_lines(after_main: dict[str, Any]) -> str:
    """The objects a daemon can preload as headstartd configuration (packaging/headstart.conf.example),
    and those it cannot as comments."""
    rows, left_out = preloadable(after_main["loads"])
    head = "# Objects the program loaded after main (headstart profile), preloaded by headstartd.\n"
    lines = [f"preload = {path}\n" for path in objects_loaded(rows)]
    if left_out:
        lines.append("# Loaded after main too, but not outside the program (they need its own symbols):\n")
        lines += [f"# {path}\n" for path in left_out]
    return head + "".join(lines)
