"""What one `headstart bench` run found, and its JSON form (docs/schema/bench.schema.json)."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from typing import Any

from headstart.benchmark.cpu_use import CpuUse
from headstart.benchmark.memory import MemoryAtMain
from headstart.benchmark.repeated import RepeatedLaunches
from headstart.benchmark.scaling import PreloadPoint
from headstart.benchmark.timing import ModeResult, daemon_mode
from headstart.profiling import toolkit_settings
from headstart.relocations import Relocations

SCHEMA_VERSION = 3


@dataclass
class ProgramResult:
    program: str
    argv: list[str]
    ready: str  # what counts as ready: "exit", "window shown", "line /REGEX/"
    runs: int
    modes: dict[str, ModeResult]  # per key: exec, run@preload, direct@preload, ...
    served: int  # launches the daemons started (the rest fell back to exec)
    requested: int  # launches that asked a daemon
    relocations: dict[str, Relocations]  # per daemon mode (or exec): what the launched process relocates
    loader: dict[str, int]  # the loader's own counts for one exec, to check `relocations["exec"]` against
    memory: dict[str, MemoryAtMain] = field(default_factory=dict)  # per daemon mode (or exec), at main
    memory_errors: dict[str, str] = field(default_factory=dict)
    daemon_memory: dict[str, dict[str, float]] = field(default_factory=dict)  # per daemon mode, after the run
    display: str | None = None  # "x11" or "wayland" for a program timed on a display, else None
    prepared_launches: int | None = None  # the prepared mode's launches taken by a child prepared ahead
    prepared_state: str | None = None  # the prepared daemon's status line on the program, after its launches

    def relocations_of(self, key: str) -> Relocations | None:
        return self.relocations.get(daemon_mode(key))

    def memory_of(self, key: str) -> MemoryAtMain | None:
        return self.memory.get(daemon_mode(key))

    def ratio(self, key: str, metric: str = "to_main_us") -> float | None:
        base = getattr(self.modes["exec"], metric) if "exec" in self.modes else None
        this = getattr(self.modes[key], metric) if key in self.modes else None
        if base is None or this is None or base.median == 0:
            return None
        return this.median / base.median

    def after_main_share(self) -> float | None:
        """Exec's time from main to ready over its time to ready: the least a launcher that only
        shortens the way to main can reach, as a ratio to exec."""
        exec_mode = self.modes.get("exec")
        if exec_mode is None or exec_mode.after_main_us is None or exec_mode.to_ready_us is None:
            return None
        return exec_mode.after_main_us.median / exec_mode.to_ready_us.median if exec_mode.to_ready_us.median else None


@dataclass
class BenchResult:
    quick: bool
    keys: list[str]
    programs: list[ProgramResult]
    missing_programs: dict[str, str]  # asked for but not found or not built: why
    preload_scaling: list[PreloadPoint]
    repeated: RepeatedLaunches | None
    cpu_use: CpuUse | None = None  # the CPUs' use over the run, other work's share (cpu_use.py)

    def mean_ratio(self, key: str, metric: str = "to_main_us") -> float | None:
        """The average over programs of the ratio to exec, as the paper averages its programs; a mode
        with failed or declined launches is left out (its times are partly exec's or missing)."""
        ratios = [
            r
            for p in self.programs
            if key in p.modes and p.modes[key].status == "ok" and (r := p.ratio(key, metric)) is not None
        ]
        return sum(ratios) / len(ratios) if ratios else None

    def failed(self) -> bool:
        return bool(self.missing_programs) or any(
            p.served != p.requested
            or any(m.status not in ("ok", "preload") for m in p.modes.values())
            or p.memory_errors
            for p in self.programs
        )


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "uname": " ".join(os.uname()),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
    }


def _mode_dict(p: ProgramResult, m: ModeResult) -> dict[str, Any]:
    rel, mem = p.relocations_of(m.mode), p.memory_of(m.mode)
    return {
        "status": m.status,
        "to_main_us": m.to_main_us.as_dict() if m.to_main_us else None,
        "to_ready_us": m.to_ready_us.as_dict() if m.to_ready_us else None,
        "to_exit_us": m.to_exit_us.as_dict() if m.to_exit_us else None,
        "after_main_us": m.after_main_us.as_dict() if m.after_main_us else None,
        "ready_ratio_to_exec": p.ratio(m.mode, "to_ready_us"),
        "ratio_to_exec": p.ratio(m.mode),
        "exit_ratio_to_exec": p.ratio(m.mode, "to_exit_us"),
        "after_main_ratio_to_exec": p.ratio(m.mode, "after_main_us"),
        "relocations_in_child": rel.as_dict() if rel else None,
        "memory_at_main": mem.as_dict() if mem else None,
        "errors": m.errors,
    }


def program_dict(p: ProgramResult) -> dict[str, Any]:
    return {
        "program": p.program,
        "argv": p.argv,
        "ready": p.ready,
        "after_main_share_of_exec": p.after_main_share(),
        "runs": p.runs,
        "served": p.served,
        "requested": p.requested,
        "modes": {k: _mode_dict(p, m) for k, m in p.modes.items()},
        "loader_statistics_exec": p.loader,
        "memory_errors": p.memory_errors,
        "daemon_memory": p.daemon_memory,
        "display": p.display,
        "prepared_launches": p.prepared_launches,
        "prepared_state": p.prepared_state,
    }


def as_json(result: BenchResult) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "machine": machine(),
        "toolkit_settings": toolkit_settings.chosen(os.environ),
        "quick": result.quick,
        "modes": result.keys,
        "programs": [program_dict(p) for p in result.programs],
        "missing_programs": result.missing_programs,
        "mean_ratio_to_exec": {k: result.mean_ratio(k) for k in result.keys},
        "mean_ready_ratio_to_exec": {k: result.mean_ratio(k, "to_ready_us") for k in result.keys},
        "mean_after_main_ratio_to_exec": {k: result.mean_ratio(k, "after_main_us") for k in result.keys},
        "preload_scaling": [p.as_dict() for p in result.preload_scaling],
        "repeated_launches": result.repeated.as_dict() if result.repeated else None,
        "cpu_use": result.cpu_use.as_dict() if result.cpu_use else None,
    }
