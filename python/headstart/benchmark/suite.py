"""One `headstart bench` run: the programs timed in every mode, their memory and relocation work,
the preload time as libraries grow, and repeated launches of one program."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from headstart import relocations
from headstart.benchmark import memory, repeated, scaling
from headstart.benchmark.results import BenchResult, ProgramResult
from headstart.benchmark.timing import (
    SAMPLE_ARGS,
    Daemons,
    Program,
    mark_main_env,
    mode_keys,
    resolve,
    start_daemons,
    time_program,
)
from headstart.errors import HeadstartError


@dataclass
class Plan:
    programs: list[str]
    runs: int
    modes: list[str]
    clients: list[str]
    quick: bool = False
    memory_launches: int = 3
    preload_counts: tuple[int, ...] = tuple(range(10, 101, 10))
    preload_repeats: int = 5
    repeated: bool = True
    shared_daemon: bool = False


def quick_plan(plan: Plan) -> Plan:
    """A few minutes on two cores: fewer launches, memory readings and points on the preload curve."""
    return replace(plan, quick=True, memory_launches=2, preload_counts=(10, 50, 100), preload_repeats=3)


def resolve_programs(names: list[str]) -> tuple[list[Program], dict[str, str]]:
    """The programs found, and those asked for that are not (a sample not built: Qt missing, say)."""
    found, missing = [], {}
    for name in names:
        try:
            found.append(resolve(name))
        except HeadstartError as e:
            missing[name] = str(e)
    return found, missing


def measure_programs(programs: list[Program], plan: Plan, progress: Progress) -> list[ProgramResult]:
    """Each program against daemons of its own, or with --shared-daemon all against one set (a
    daemon holding many programs' libraries forks a larger process, which every launch pays for).
    The samples mark main themselves; other programs are marked by a preloaded library, which
    their daemons must load too, so the two kinds never share daemons."""
    if plan.shared_daemon:
        samples = [p for p in programs if p.name in SAMPLE_ARGS]
        others = [p for p in programs if p.name not in SAMPLE_ARGS]
        groups = [g for g in (samples, others) if g]
    else:
        groups = [[p] for p in programs]
    results = [r for group in groups for r in _measure_group(group, plan, progress)]
    by_argv = {tuple(r.argv): r for r in results}
    return [by_argv[tuple(p.argv)] for p in programs]


def _measure_group(programs: list[Program], plan: Plan, progress: Progress) -> list[ProgramResult]:
    keys = mode_keys(plan.modes, plan.clients)
    env = mark_main_env(programs)
    results = []
    with ExitStack() as stack:
        daemons = start_daemons(stack, plan.modes, [p.path for p in programs], env)
        for program in programs:
            before = daemons.launches_started()
            modes = time_program(program, keys, plan.runs, daemons, env, progress)
            result = ProgramResult(
                program=program.name,
                argv=program.argv,
                runs=plan.runs,
                modes=modes,
                served=daemons.launches_started() - before,
                requested=sum(m.launches for k, m in modes.items() if k != "exec"),
                relocations=relocations.per_mode(program.path),
                loader=relocations.loader_statistics(program.argv),
            )
            if plan.memory_launches:
                _measure_memory(result, program, daemons, plan, env)
            results.append(result)
    return results


def _measure_memory(result: ProgramResult, program: Program, daemons: Daemons, plan: Plan, env: dict[str, str]) -> None:
    for mode in plan.modes:
        if mode in daemons.unavailable:
            continue
        socket = daemons.running[mode].socket if mode != "exec" else None
        try:
            result.memory[mode] = memory.measure(program, socket, env, plan.memory_launches)
        except HeadstartError as e:
            result.memory_errors[mode] = str(e)


def _library_sources(programs: list[Program]) -> list[Path]:
    """Where the preload curve takes its libraries from: the programs, and every sample built."""
    samples, _ = resolve_programs(list(SAMPLE_ARGS))
    return list(dict.fromkeys(p.path for p in [*programs, *samples]))


def run(plan: Plan, console: Console) -> BenchResult:
    programs, missing = resolve_programs(plan.programs)
    keys = mode_keys(plan.modes, plan.clients)
    with Progress(console=console, transient=True) as progress:
        results = measure_programs(programs, plan, progress)
        task = progress.add_task("preload time vs libraries", total=None)
        points = scaling.measure(list(plan.preload_counts), plan.preload_repeats, _library_sources(programs))
        progress.remove_task(task)
        repeat = None
        if plan.repeated and programs:
            env = mark_main_env(programs[:1])
            repeat = repeated.measure(programs[0], plan.modes, keys, env, progress)
    return BenchResult(plan.quick, keys, results, missing, points, repeat)
