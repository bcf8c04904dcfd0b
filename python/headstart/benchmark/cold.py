"""`headstart bench --cold`: launches from an empty page cache, as on a device whose small memory
keeps little cached, with and without help, beside warm ones.

Arms, taken in turn round after round so that machine noise falls on all alike:
- warm: nothing emptied (after one launch that is not timed);
- cold: the page cache emptied before each launch (drop_caches as root, else the programs' files
  evicted one by one);
- pinned: the same, with headstart-pind keeping the planned pages locked;
- vmtouch: the same, with vmtouch -l locking the programs' whole files (the usual tool);
and with --memory-max, pressure and pressure+pinned: the launches (and the daemons) in a cgroup
with that memory limit, nothing emptied by hand, the limit evicting what it must.

The plan comes from --pin-plan, or from a cold profile of each program made here
(`headstart profile --cold`, then `headstart pin plan` over all of them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import Progress

from headstart import binaries
from headstart.benchmark.daemons import start_daemons
from headstart.benchmark.pressure import memory_limited
from headstart.benchmark.programs import Program, mark_main_env
from headstart.benchmark.timing import daemon_mode, run_launch_timer
from headstart.errors import HeadstartError
from headstart.pinning.lockers import pind_running, vmtouch_locking
from headstart.pinning.plan import plan_text
from headstart.profiling import files
from headstart.stats import summarize

SCHEMA = "headstart-bench-cold 1"
# Warm first: right after a helper that held hundreds of MiB locked stops, the kernel is still
# busy with those pages, and the launches that follow pay for it (SETTLE_S after each helper).
ARMS = ("warm", "cold", "pinned", "vmtouch")
SETTLE_S = 1.0
PRESSURE_ARMS = ("pressure", "pressure+pinned")
PROFILE_TIMEOUT_S = 900


@dataclass
class ColdPlan:
    programs: list[Program]
    runs: int
    keys: list[str]  # exec, run@pool, ...
    budget: int | None = None  # for headstart-pind; None: the whole plan
    pin_plan: Path | None = None  # None: made here from cold profiles
    memory_max: int | None = None  # bytes: adds the pressure arms

    @property
    def arms(self) -> tuple[str, ...]:
        return ARMS + (PRESSURE_ARMS if self.memory_max else ())


@dataclass
class Prepared:
    plan: Path
    closure: list[str]  # every file the programs used: what vmtouch locks
    closure_bytes: int
    plan_bytes: int


@dataclass
class ArmRows:
    rows: dict[tuple[str, str, str], list[dict[str, Any]]] = field(default_factory=dict)  # (program, key, arm)
    locked: dict[str, int] = field(default_factory=dict)  # arm -> bytes locked by its helper


def profile(program: Program, env: dict[str, str], out: Path) -> dict[str, Any]:
    """A cold profile of the program, by `headstart profile` as a user would make it."""
    cmd = [sys.executable, "-m", "headstart", "profile", "--cold", "--runs", "1", "-o", str(out)]
    cmd += ["--ready", program.ready.pattern] if program.ready.pattern else []
    cmd += ["--ready-window"] if program.ready.window else []
    done = subprocess.run(
        [*cmd, "--", *program.argv],
        env=dict(env, **program.env),
        capture_output=True,
        text=True,
        timeout=PROFILE_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise HeadstartError(f"profiling {program.name} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.read_text())


def prepare(plan: ColdPlan, env: dict[str, str], workdir: Path, progress: Progress) -> Prepared:
    task = progress.add_task("cold profiles for the pin plan", total=len(plan.programs))
    profiles = []
    for program in plan.programs:
        profiles.append((workdir / f"{program.name}.json", profile(program, env, workdir / f"{program.name}.json")))
        progress.advance(task)
    progress.remove_task(task)
    # With the launcher, which served launches start from.
    launcher = [str(binaries.find("headstart-run").resolve())] if any(k != "exec" for k in plan.keys) else []
    used = {f["path"] for _, data in profiles for f in data["files"]} | {str(p.path) for p in plan.programs}
    closure = sorted(used | set(launcher))
    path = plan.pin_plan or workdir / "pin.plan"
    if plan.pin_plan is None:
        path.write_text(plan_text(profiles, None, launcher))
    plan_bytes = sum(int(line.split()[2]) for line in path.read_text().splitlines() if line.startswith("range "))
    return Prepared(path, closure, sum(os.path.getsize(f) for f in closure if os.path.exists(f)), plan_bytes)


def empty_cache(closure: list[str]) -> None:
    if os.geteuid() == 0:
        files.drop_all()
    else:
        files.evict(closure)  # what no process maps; documented as weaker than drop_caches


@contextmanager
def _arm_context(
    arm: str, prepared: Prepared, plan: ColdPlan, joined: Callable[[], None] | None, locked: dict[str, int]
) -> Iterator[Callable[[], None] | None]:
    """Starts what the arm needs; yields how launches join the memory-limited cgroup (or None)."""
    if arm in ("pinned", "pressure+pinned"):
        with pind_running(prepared.plan, plan.budget) as n:
            locked[arm] = n
            yield joined if arm.startswith("pressure") else None
        time.sleep(SETTLE_S)
    elif arm == "vmtouch":
        with vmtouch_locking(prepared.closure) as n:
            locked[arm] = n
            yield None
        time.sleep(SETTLE_S)
    else:
        yield joined if arm == "pressure" else None


def measure(plan: ColdPlan, env: dict[str, str], progress: Progress) -> tuple[dict[str, Any], ArmRows]:
    """cold.json's content, and the launches it summarizes."""
    env = mark_main_env(plan.programs, env)
    result = ArmRows()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="headstart-cold-")))
        prepared = prepare(plan, env, workdir, progress)
        limit = stack.enter_context(memory_limited(plan.memory_max)) if plan.memory_max else None
        modes = list(dict.fromkeys(daemon_mode(k) for k in plan.keys))
        daemons = start_daemons(stack, modes, plan.programs, env)
        if daemons.unavailable:
            raise HeadstartError(f"a daemon did not start: {next(iter(daemons.unavailable.values()))}")
        if limit:
            for daemon in daemons.running.values():
                limit.add_tree(daemon.process.pid)
        task = progress.add_task("cold launches", total=plan.runs * len(plan.arms))
        for _ in range(plan.runs):
            for arm in plan.arms:
                joined = limit.join if limit else None
                with _arm_context(arm, prepared, plan, joined, result.locked) as join:
                    _round(arm, plan, prepared, daemons.running, env, join, result)
                progress.advance(task)
        progress.remove_task(task)
    return as_json(plan, prepared, result), result


def _round(
    arm: str,
    plan: ColdPlan,
    prepared: Prepared,
    daemons: dict[str, Any],
    env: dict[str, str],
    join: Callable[[], None] | None,
    result: ArmRows,
) -> None:
    """One launch of each program in each mode. Cold arms empty the cache before each; the others
    launch once untimed first, and the pressure arms empty it once at their start, so that what
    the launches read again is charged to the limited cgroup."""
    emptied_each = arm in ("cold", "pinned", "vmtouch")
    if arm.startswith("pressure"):
        empty_cache(prepared.closure)
    for program in plan.programs:
        for key in plan.keys:
            if emptied_each:
                empty_cache(prepared.closure)
            else:
                run_launch_timer(program, [key], 1, daemons, env, preexec=join)
            rows = run_launch_timer(program, [key], 1, daemons, env, preexec=join)
            result.rows.setdefault((program.name, key, arm), []).extend(rows)


def _summary(rows: list[dict[str, Any]], field_name: str) -> dict[str, float] | None:
    values = [r[field_name] / 1000 for r in rows if "error" not in r and r.get(field_name) is not None]
    return summarize(values).as_dict() if values else None


def as_json(plan: ColdPlan, prepared: Prepared, result: ArmRows) -> dict[str, Any]:
    programs = []
    for program in plan.programs:
        modes = {}
        for key in plan.keys:
            arms = {}
            for arm in plan.arms:
                rows = result.rows.get((program.name, key, arm), [])
                errors = sorted({r["error"] for r in rows if "error" in r})
                arms[arm] = {"to_main_us": _summary(rows, "to_main_ns"), "to_ready_us": _summary(rows, "to_ready_ns")}
                arms[arm]["errors"] = errors
            for arm in plan.arms:  # each against warm, the goal's yardstick
                for what in ("to_main_us", "to_ready_us"):
                    a, w = arms[arm][what], arms["warm"][what]
                    arms[arm][what.replace("_us", "_ratio_to_warm")] = a["median"] / w["median"] if a and w else None
            modes[key] = arms
        ready = program.ready.describe()
        programs.append({"program": program.name, "argv": program.argv, "ready": ready, "modes": modes})
    return {
        "schema": SCHEMA,
        "runs": plan.runs,
        "arms": list(plan.arms),
        "modes": plan.keys,
        "emptied_by": "drop_caches" if os.geteuid() == 0 else "posix_fadvise(DONTNEED) of each file",
        "memory_max": plan.memory_max,
        "plan_bytes": prepared.plan_bytes,
        "closure_files": len(prepared.closure),
        "closure_bytes": prepared.closure_bytes,
        "locked_bytes": dict(result.locked),
        "budget": plan.budget,
        "programs": programs,
    }
