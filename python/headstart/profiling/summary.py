"""Launches turned into the profile: medians with p10/p90 per phase and per counter, the libraries in
load order with what they cost, the files with bytes and pages, and flags on what looks wasteful.
The result is plain JSON (schema: docs/schema/profile.schema.json); `headstart report` reads it."""

from __future__ import annotations

import os
import statistics
from typing import Any

from headstart.profiling.files import FileUse
from headstart.profiling.launch import Launch
from headstart.profiling.memory import PAGE_SIZE, page_ranges
from headstart.profiling.timeline import PHASES
from headstart.stats import summarize

SCHEMA_VERSION = 1


def _summary(values: list[float]) -> dict[str, float] | None:
    return summarize(values).as_dict() if values else None


def _us(ns: int | None) -> float | None:
    return None if ns is None else ns / 1000


def launch_record(launch: Launch, cold: bool, loader: dict[str, int] | None = None) -> dict[str, Any]:
    """One launch's figures; `loader`: the loader's counts to give instead of the launch's own (those
    of a launch without the probe, under which the loader looks up more)."""
    tl = launch.timeline
    counts = launch.loader if loader is None else loader
    phases = tl.phases_ns() if tl else {}
    return {
        "cold": cold,
        "exit_status": launch.exit_status,
        "to_main_us": _us(tl.to_main_ns()) if tl else None,
        "to_ready_us": _us(launch.to_ready_ns),
        "main_via": tl.main_via if tl else None,
        "phases_us": {p: _us(phases.get(p)) for p in PHASES},
        "minor_faults": launch.minor_faults,
        "major_faults": launch.major_faults,
        "symbol_lookups": counts.get("relocations"),
        "lookups_from_cache": counts.get("from_cache"),
        "relative_relocations": counts.get("relative"),
        "pss_kb": launch.memory.pss_kb if launch.memory else None,
        "private_dirty_kb": launch.memory.private_dirty_kb if launch.memory else None,
    }


def aggregate(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not records:
        return None

    def values(key: str) -> list[float]:
        return [r[key] for r in records if r[key] is not None]

    return {
        "launches": len(records),
        "to_main_us": _summary(values("to_main_us")),
        "to_ready_us": _summary(values("to_ready_us")),
        "phases_us": {
            p: _summary([r["phases_us"][p] for r in records if r["phases_us"][p] is not None]) for p in PHASES
        },
        **{
            key: _summary(values(key))
            for key in (
                "minor_faults",
                "major_faults",
                "symbol_lookups",
                "lookups_from_cache",
                "relative_relocations",
                "pss_kb",
                "private_dirty_kb",
            )
        },
    }


def libraries(warm: list[Launch], cold: list[Launch], bindings: Launch | None) -> list[dict[str, Any]]:
    """The objects of the initial load in load order, with the median time each took to find and map
    (warm and cold) and when it was mapped, from the launch request."""
    timelines = [launch.timeline for launch in warm if launch.timeline]
    if not timelines:
        return []
    first = timelines[0].initial_objects()

    def median_over(launches: list[Launch], index: int, what: str) -> float | None:
        found = []
        for launch in launches:
            tl = launch.timeline
            objs = tl.initial_objects() if tl else []
            if index < len(objs) and objs[index].path == first[index].path:
                o = objs[index]
                begin = tl.launch_start if tl and tl.launch_start is not None else (tl.start if tl else 0)
                found.append((o.map_ns if what == "map" else o.t - begin) / 1000)
        return statistics.median(found) if found else None

    calls_from: dict[int, int] = {}
    calls_to: dict[int, int] = {}
    from_others: dict[str, int] = {}  # what `headstart lazy plan` asks: used by another object, by path
    for (source, target), n in (bindings.loader_bindings if bindings else {}).items():
        if source != target:
            from_others[target] = from_others.get(target, 0) + n
    # The probe writes its binding counts as the program exits: one stopped at ready never does.
    counted = bool(bindings and bindings.timeline and not bindings.stopped_at_ready)
    if bindings and bindings.timeline:
        for b in bindings.timeline.bindings:
            n = b["before_main"] + b["after_main"]
            if b["from"] is not None:
                calls_from[b["from"]] = calls_from.get(b["from"], 0) + n
                calls_to[b["to"]] = calls_to.get(b["to"], 0) + n
    return [
        {
            "index": o.index,
            "name": o.name,
            "path": o.path,
            "kind": o.kind,
            "size": o.size,
            "needed_by": o.needed_by,
            "needed_as": o.needed_as,
            "map_us": median_over(warm, i, "map"),
            "map_us_cold": median_over(cold, i, "map"),
            "mapped_at_us": median_over(warm, i, "at"),
            "bindings_from": calls_from.get(o.index, 0) if counted else None,
            "bindings_to": calls_to.get(o.index, 0) if counted else None,
            "bindings_from_others": from_others.get(o.path, 0),
        }
        for i, o in enumerate(first)
    ]


def _union(a: dict[str, set[int]], b: dict[str, set[int]]) -> dict[str, set[int]]:
    return {path: a.get(path, set()) | b.get(path, set()) for path in a.keys() | b.keys()}


def files(
    uses: dict[str, FileUse],
    cold: list[Launch],
    after_evict: list[dict[str, int | None]],
    after_launch: list[dict[str, int | None]],
) -> list[dict[str, Any]]:
    """Each file with its bytes, and in cold launches its pages: still resident after eviction (kept by
    other processes), mapped by the program at ready, resident after the launch."""

    def med(samples: list[int | None]) -> float | None:
        known = [s for s in samples if s is not None]
        return statistics.median(known) if known else None

    pages = [launch.memory.file_pages if launch.memory else None for launch in cold]
    # What the launch read of each file: its pages mapped, and those copied (relocated data).
    needed = [_union(launch.memory.file_pages, launch.memory.copied_pages) for launch in cold if launch.memory]
    rows = []
    for path, use in sorted(uses.items(), key=lambda kv: (-kv[1].bytes_read, -kv[1].bytes_mapped)):
        row: dict[str, Any] = use.as_dict()
        row["pages"] = (use.size + PAGE_SIZE - 1) // PAGE_SIZE
        row["cold"] = (
            {
                "resident_after_evict": med([r.get(path) for r in after_evict]),
                "mapped": med([len(mapped.get(path, ())) if mapped is not None else None for mapped in pages]),
                # Every page some cold launch had mapped at ready, or copied (relocated): what
                # `headstart pin plan` pins.
                "mapped_ranges": page_ranges(set().union(*(m.get(path, set()) for m in needed))),
                "resident_after_launch": med([r.get(path) for r in after_launch]),
            }
            if cold
            else None
        )
        rows.append(row)
    return rows


def large_reads(file_rows: list[dict[str, Any]], threshold: int) -> list[dict[str, Any]]:
    """Data files (not code) read with read() in amounts of `threshold` bytes or more."""
    flags = []
    for f in file_rows:
        if f["code"] or f["bytes_read"] < threshold:
            continue
        pages_read = (f["bytes_read"] + PAGE_SIZE - 1) // PAGE_SIZE
        flags.append(
            {
                "path": f["path"],
                "bytes_read": f["bytes_read"],
                "reads": f["reads"],
                "size": f["size"],
                "message": (
                    f"{f['path']}: {f['bytes_read'] / 1024:,.0f} KiB read with {f['reads']} read() calls at "
                    f"start-up ({pages_read:,} pages copied into the program, of a {f['size'] / 1024:,.0f} KiB "
                    "file); mapping it (mmap) would read only the pages the program then touches, and share "
                    "them with other processes instead of copying"
                ),
            }
        )
    return flags


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "uname": " ".join(os.uname())}
