"""`headstart lazy plan`: the program's direct dependencies that nothing used before ready in any of
the given profiles, each with what forbids deferring it (a refusal) or needs care (a note).

Used before ready: a symbol bound to it by then (the loader's account of the profile's `bindings`
launch, stopped at ready). A program linked with -z now binds everything at start, so there a
binding says nothing: a library is used before ready when it is called by then, as a run with its
stubs in place shows (calls.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError
from headstart.lazy.calls import called_before_ready
from headstart.lazy.elf_facts import read_facts
from headstart.lazy.load_check import threads_started

SCHEMA = "headstart-lazy-plan 1"


def host_path(path: str, sysroot: Path | None) -> str:
    """Where the file a profile names is read here: in the sysroot of the device it was profiled on
    (for a profile made there), else where it is."""
    if sysroot is not None and (sysroot / path.lstrip("/")).exists():
        return str(sysroot / path.lstrip("/"))
    return path


@dataclass
class Dependency:
    soname: str
    path: str | None
    size: int
    bindings: int  # symbols bound to it before ready, over all profiles
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # For a program linked with -z now, where bindings tell nothing: whether a run with its stubs
    # called it before ready (None: not run, for a refusal found first, or not told: a refusal says why).
    called: bool | None = None
    bind_now: bool = False

    @property
    def verdict(self) -> str:
        if self.path is None:
            return "not loaded"
        if self.called if self.bind_now else self.bindings:
            return "used before ready"
        return "refused" if self.refusals else "defer"


def _profile_program(profile: dict[str, Any]) -> str:
    program = profile.get("program")
    if not isinstance(program, list) or not program:
        raise HeadstartError("not a profile written by `headstart profile -o`")
    return str(Path(program[0]).resolve())


def _loaded(profile: dict[str, Any], sysroot: Path | None) -> dict[str, dict[str, Any]]:
    """The objects of the launch by soname (their file name when they have none)."""
    found = {}
    for lib in profile.get("libraries", []):
        if lib["kind"] in ("program", "loader", "vdso") or not lib.get("path"):
            continue
        facts = read_facts(host_path(lib["path"], sysroot))
        found[facts.soname or Path(lib["path"]).name] = lib
    return found


def dependencies(profiles: list[dict[str, Any]], sysroot: Path | None = None) -> list[Dependency]:
    programs = {_profile_program(p) for p in profiles}
    if len(programs) != 1:
        raise HeadstartError(f"the profiles are of different programs: {', '.join(sorted(programs))}")
    program = read_facts(host_path(programs.pop(), sysroot))
    loaded = [_loaded(p, sysroot) for p in profiles]
    out = []
    for soname in program.needed:
        libs = [by_name[soname] for by_name in loaded if soname in by_name]
        lib = libs[0] if libs else None
        # The file's bytes: the profile's size is the span the loader mapped, alignment gaps included.
        size = os.stat(host_path(lib["path"], sysroot)).st_size if lib else 0
        dep = Dependency(soname, lib["path"] if lib else None, size,
                         sum(entry.get("bindings_from_others", entry["bindings_to"]) for entry in libs))  # fmt: skip
        dep.bind_now = program.bind_now
        if lib:
            _hazards(dep, program, [lp for by_name in loaded for lp in by_name.values()], sysroot)
            if dep.bind_now and dep.bindings and not dep.refusals:
                _calls(dep, profiles, program.path, sysroot)
            if not dep.refusals and not (dep.called if dep.bind_now else dep.bindings):
                _thread_hazard(dep, host_path(dep.path, sysroot), sysroot)
            _notes(dep, program, sysroot)
        out.append(dep)
    return out


def _hazards(dep: Dependency, program: Any, others: list[dict[str, Any]], sysroot: Path | None) -> None:
    assert dep.path is not None
    lib = read_facts(host_path(dep.path, sysroot))
    data = sorted(s for s, kind in program.data_imports.items() if kind == "data" and s in lib.defined)
    tls = sorted(s for s, kind in program.data_imports.items() if kind == "TLS" and s in lib.defined)
    if data:
        dep.refusals.append(f"the program imports data from it ({', '.join(data[:5])}): bound at start, no stub")
    if tls:
        dep.refusals.append(f"the program uses its thread-local variables ({', '.join(tls[:3])})")
    if lib.static_tls:
        dep.refusals.append("initial-exec TLS (DF_STATIC_TLS): loaded later it may find no room for it")
    needers = sorted({Path(o["path"]).name for o in others if o["path"] != dep.path
                      and dep.soname in read_facts(host_path(o["path"], sysroot)).needed})  # fmt: skip
    if needers:
        dep.refusals.append(f"loaded anyway: {', '.join(needers[:3])} need{'s' if len(needers) == 1 else ''} it")


def _calls(dep: Dependency, profiles: list[dict[str, Any]], program: str, sysroot: Path | None) -> None:
    """-z now: whether it is called before ready, from runs with its stubs in place."""
    assert dep.path is not None
    if sysroot is not None:
        dep.refusals.append("-z now: bound at start, and whether it is called before ready is not run here "
                            "(another machine's program)")  # fmt: skip
        return
    calls = called_before_ready(profiles, Path(program), dep.soname, dep.path)
    dep.called = calls.called
    if calls.called is None:
        dep.refusals.append(f"-z now: bound at start, and whether it is called before ready is not known: {calls.why}")
    else:
        dep.notes.append(calls.why)


def _notes(dep: Dependency, program: Any, sysroot: Path | None) -> None:
    assert dep.path is not None
    lib = read_facts(host_path(dep.path, sysroot))
    if lib.constructors:
        dep.notes.append(f"{lib.constructors} constructor(s) of its own would run at the first call, not at start")
    if lib.nodelete:
        dep.notes.append("DF_1_NODELETE")
    if dep.soname in program.versions_needed:
        dep.notes.append(f"versioned symbols ({', '.join(program.versions_needed[dep.soname][:3])}): stubs keep them")


def _thread_hazard(dep: Dependency, path: str, sysroot: Path | None) -> None:
    if sysroot is not None:
        dep.notes.append("whether loading it starts threads is not checked (another machine's library)")
        return
    started = threads_started(path)
    if isinstance(started, str):
        dep.notes.append(f"whether loading it starts threads is not known: {started}")
    elif started:
        dep.refusals.append(f"loading it starts {started} thread(s), which would start at the first call instead")


def _as_dict(d: Dependency) -> dict[str, Any]:
    return {
        "soname": d.soname,
        "path": d.path,
        "size": d.size,
        "bindings_before_ready": d.bindings,
        "called_before_ready": d.called,
        "verdict": d.verdict,
        "refusals": d.refusals,
        "notes": d.notes,
    }


def plan(profiles: list[dict[str, Any]], sysroot: Path | None = None) -> dict[str, Any]:
    deps = dependencies(profiles, sysroot)
    deferred = [d for d in deps if d.verdict == "defer"]
    return {
        "schema": SCHEMA,
        "program": profiles[0]["program"],
        "profiles": len(profiles),
        "bind_now": bool(deps) and deps[0].bind_now,
        "dependencies": [_as_dict(d) for d in deps],
        "deferred_bytes": sum(d.size for d in deferred),
    }
