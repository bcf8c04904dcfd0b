"""The timeline libheadstart-probe.so writes (JSON lines, schema in docs/schema/probe-trace.schema.json),
read back into objects and phases.

Phases of one launch, each from the end of the one before:
  exec          launch requested -> the loader calls the probe (fork, exec, the loader's own start)
  load          -> the last object of the initial set is mapped (finding, opening, mapping)
  relocate      -> the set is consistent (relocation, and the loader's remaining set-up)
  constructors  -> main is entered (every constructor, libraries' and the program's)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError
from headstart.inputfile import read_text
from headstart.jsonfile import check_probe_record

PHASES = ("exec", "load", "relocate", "constructors")


@dataclass
class LoadedObject:
    index: int
    kind: str  # program, loader, vdso, library
    name: str
    path: str
    base: int
    size: int
    t: int
    needed_by: int | None
    needed_as: str | None
    map_ns: int = 0  # time since the object mapped before it: finding, opening and mapping this one


@dataclass
class Timeline:
    pid: int
    start: int  # the probe's first call, CLOCK_MONOTONIC ns
    launch_start: int | None
    objects: list[LoadedObject] = field(default_factory=list)
    relocated: int | None = None
    constructors_done: int | None = None
    main: int | None = None
    main_via: str | None = None
    exit: int | None = None
    bindings: list[dict[str, Any]] = field(default_factory=list)
    # After main, each dlopen that mapped new objects: (begin, end), mapped and relocated in between.
    loads_after_main: list[tuple[int, int]] = field(default_factory=list)

    def initial_objects(self) -> list[LoadedObject]:
        """The objects the loader mapped before the program ran (not those it dlopened later)."""
        end = self.relocated if self.relocated is not None else float("inf")
        return [o for o in self.objects if o.t <= end]

    def phases_ns(self) -> dict[str, int | None]:
        initial = self.initial_objects()
        loaded = initial[-1].t if initial else None
        points = [self.launch_start, self.start, loaded, self.relocated, self.main]
        return {
            name: (b - a if a is not None and b is not None else None)
            for name, a, b in zip(PHASES, points, points[1:], strict=False)
        }

    def to_main_ns(self) -> int | None:
        begin = self.launch_start if self.launch_start is not None else self.start
        return None if self.main is None else self.main - begin


def _object(record: dict[str, Any]) -> LoadedObject:
    return LoadedObject(
        index=record["index"],
        kind=record["kind"],
        name=record["name"],
        path=record["path"],
        base=record["base"],
        size=record["size"],
        t=record["t"],
        needed_by=record["needed_by"],
        needed_as=record["needed_as"],
    )


def parse(lines: list[str], pid: int | None = None) -> Timeline:
    """The timeline of process `pid` (by default the first process that wrote one): programs the
    launched one runs inherit the probe and append their own. A trace that is not the probe's (from
    another version, cut, or edited) is refused in one line naming the first line it cannot use."""
    records: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as e:  # not JSON, nested too deep, an integer too long
            if number == 1 and line.strip() in ("{", "["):  # a JSON document over many lines (a profile)
                raise HeadstartError(
                    "a JSON document over many lines, not the probe's output (one JSON record per line, "
                    "written where HEADSTART_PROBE_OUTPUT names)"
                ) from e
            raise HeadstartError(f"probe output line {number} is not JSON: {line[:80]!r}") from e
        check_probe_record(record, f"probe output line {number}")
        records.append((number, record))
    if pid is None:
        pid = next((r.get("pid") for _, r in records if r["event"] == "start"), None)
        if pid is None:
            raise HeadstartError("the probe wrote no timeline (was the program dynamically linked?)")
    mine = [(n, r) for n, r in records if r.get("pid") == pid]
    first = next(((n, r) for n, r in mine if r["event"] == "start"), None)
    if first is None:
        raise HeadstartError(f"the probe wrote no start record for process {pid}")
    with _record(first[0]):
        tl = Timeline(pid=pid, start=first[1]["t"], launch_start=first[1]["launch_start"])
    load_begin = None
    previous = tl.start
    for number, r in mine:
        with _record(number):
            load_begin = _apply(tl, r, load_begin)
            if r["event"] == "map":  # how long since the last one was mapped
                tl.objects[-1].map_ns = tl.objects[-1].t - previous
                previous = tl.objects[-1].t
    return tl


@contextmanager
def _record(number: int) -> Iterator[None]:
    """A record of the probe's with a field missing or of the wrong type: one line naming it."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise HeadstartError(
            f"probe output line {number} is not a probe record the way this version writes them "
            f"({type(e).__name__}: {e})"
        ) from e


def _apply(tl: Timeline, r: dict[str, Any], load_begin: int | None) -> int | None:
    """One record into the timeline; returns where an open load after main began."""
    event = r["event"]
    if event == "map":
        tl.objects.append(_object(r))
    elif event == "relocated":
        tl.relocated = r["t"]
    elif event == "constructors_done":
        tl.constructors_done = r["t"]
    elif event == "main":
        tl.main, tl.main_via = r["t"], r["via"]
    elif event == "exit":
        tl.exit = r["t"]
    elif event == "binding":
        tl.bindings.append({k: r[k] for k in ("from", "to", "before_main", "after_main")})
    elif event == "load_begin":
        return r["t"]
    elif event == "load_end" and load_begin is not None:
        tl.loads_after_main.append((load_begin, r["t"]))
        return None
    return load_begin


def read(path: Path, pid: int | None = None) -> Timeline:
    return parse(read_text(path).splitlines(), pid)
