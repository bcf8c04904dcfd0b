"""One `headstart bench` run: the programs timed in every mode, their memory and relocation work,
the preload time as libraries grow, and repeated launches of one program."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.progress import Progress

from headstart import relocations
from headstart.benchmark import memory, repeated, scaling
from headstart.benchmark.cpu_use import CpuWatch
from headstart.benchmark.daemons import DAEMON_MODES, WARM_UP, Daemons, daemon_memory, not_warm, start_daemons
from headstart.benchmark.display import display_env, private_display
from headstart.benchmark.programs import SAMPLES, Program, Ready, mark_main_env, resolve
from headstart.benchmark.repeated import MAX_LAUNCHES
from headstart.benchmark.results import BenchResult, ProgramResult
from headstart.benchmark.timing import ModeResult, daemon_mode, mode_keys, time_program
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
    repeated_launches: int = MAX_LAUNCHES
    shared_daemon: bool = False
    ready: dict[str, Ready] = field(default_factory=dict)  # per program given by path: when it is ready
    displays: tuple[str, ...] = ("x11",)  # where programs that show a window are timed, each in turn
    x_server: str | None = None  # an X server to use; None: a private Xvfb when a program needs one
    warm_up: str = WARM_UP  # the warm-up mode's steps (headstartd --warm-up)


def quick_plan(plan: Plan) -> Plan:
    """A few minutes on two cores: fewer launches, memory readings, points on the preload curve and
    repeated launches (GUI programs take about 100 ms each)."""
    return replace(
        plan, quick=True, memory_launches=2, preload_counts=(10, 50, 100), preload_repeats=3, repeated_launches=50
    )


def resolve_programs(names: list[str], ready: dict[str, Ready] | None = None) -> tuple[list[Program], dict[str, str]]:
    """The programs found, and those asked for that are not (a sample not built: Qt missing, say)."""
    found, missing = [], {}
    for name in names:
        try:
            found.append(resolve(name, (ready or {}).get(name)))
        except HeadstartError as e:
            missing[name] = str(e)
    return found, missing


def measure_programs(
    programs: list[Program], plan: Plan, progress: Progress, base_env: dict[str, str] | None = None
) -> list[ProgramResult]:
    """Each program against daemons of its own, or with --shared-daemon all against one set (a
    daemon holding many programs' libraries forks a larger process, which every launch pays for).
    The samples mark main themselves; other programs are marked by a preloaded library, which
    their daemons must load too, so the two kinds never share daemons."""
    if plan.shared_daemon:
        samples = [p for p in programs if p.is_sample]
        others = [p for p in programs if not p.is_sample]
        groups = [g for g in (samples, others) if g]
    else:
        groups = [[p] for p in programs]
    results = [r for group in groups for r in _measure_group(group, plan, progress, base_env)]
    by_label = {r.program: r for r in results}
    return [by_label[p.label] for p in programs]


def _measure_group(
    programs: list[Program], plan: Plan, progress: Progress, base_env: dict[str, str] | None
) -> list[ProgramResult]:
    keys = mode_keys(plan.modes, plan.clients)
    env = mark_main_env(programs, base_env)
    results = []
    with ExitStack() as stack:
        daemons = start_daemons(stack, plan.modes, programs, env, plan.warm_up)
        preload_instead = not_warm(daemons)
        for program in programs:
            before = {mode: d.launches_started() for mode, d in daemons.running.items()}
            prepared = daemons.running.get("prepared")
            prepared_before = prepared.launches_prepared() if prepared else 0
            modes = time_program(program, keys, plan.runs, daemons.running, daemons.unavailable, env, progress)
            served = {mode: d.launches_started() - before[mode] for mode, d in daemons.running.items()}
            _mark_fallbacks(modes, served)
            in_preload = {
                m: by_path[str(program.path)] for m, by_path in preload_instead.items() if str(program.path) in by_path
            }
            _mark_not_warm(modes, in_preload)
            result = ProgramResult(
                program=program.label,
                argv=program.argv,
                ready=program.ready.describe(),
                runs=plan.runs,
                modes=modes,
                served=sum(served.values()),
                requested=sum(m.launches for k, m in modes.items() if k != "exec"),
                relocations=_relocations(program.path, in_preload),
                loader=relocations.loader_statistics(program.argv),
                display=program.shown_on,
                prepared_launches=prepared.launches_prepared() - prepared_before if prepared else None,
                prepared_state=prepared.prepared_line(str(program.path)) if prepared else None,
            )
            if plan.memory_launches:
                _measure_memory(result, program, daemons, plan, env)
            results.append(result)
        # Last, once every program has run: the daemons as they serve them all, read once.
        memory = _daemon_memory(daemons)
        for result in results:
            result.daemon_memory = memory
    return results


def _mark_fallbacks(modes: dict[str, ModeResult], served: dict[str, int]) -> None:
    """A daemon that did not serve every launch asked of it: the launches it did not serve ran by
    exec, so its modes' times are partly exec's and must not read as the daemon's."""
    for mode, count in served.items():
        keys = [k for k in modes if k != "exec" and daemon_mode(k) == mode]
        asked = sum(modes[k].launches for k in keys)
        if count >= asked:
            continue
        why = f"{count} of {asked} launches through the {mode} daemon were served; the rest ran by exec"
        for key in keys:
            modes[key].status = "failed"
            modes[key].errors.append(why)


def _mark_not_warm(modes: dict[str, ModeResult], in_preload: dict[str, str]) -> None:
    """A daemon asked to hold the program warm that serves it in preload mode: its modes' times are
    not those of the mode they are named after."""
    for key, result in modes.items():
        why = in_preload.get(daemon_mode(key))
        if key != "exec" and why:
            result.status = "preload" if result.status == "ok" else result.status
            result.errors.append(f"the daemon serves it in preload mode, not warm: {why}")


def _relocations(program: Path, in_preload: dict[str, str]) -> dict[str, relocations.Relocations]:
    """What the launched process relocates in each mode, as its daemon really serves it."""
    counts = relocations.per_mode(program)
    return {mode: counts["preload"] if mode in in_preload else n for mode, n in counts.items()}


def _daemon_memory(daemons: Daemons) -> dict[str, dict[str, float]]:
    found = {}
    for mode, daemon in daemons.running.items():
        try:
            found[mode] = daemon_memory(daemon)
        except HeadstartError:
            continue  # the table shows '-'; the timings stand
    return found


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
    samples, _ = resolve_programs(list(SAMPLES))
    return list(dict.fromkeys(p.path for p in [*programs, *samples]))


def run(plan: Plan, progress: Progress) -> BenchResult:
    watch = CpuWatch()
    programs, missing = resolve_programs(plan.programs, plan.ready)
    keys = mode_keys(plan.modes, plan.clients)
    base = dict(os.environ)
    plain = [p for p in programs if not p.needs_display]
    results = measure_programs(plain, plan, progress, base) if plain else []
    repeat = None
    if plan.repeated and plain and plain[0] is programs[0]:
        repeat = _repeated(programs[0], plan, base, progress)
    # Each kind of display in turn, only one running at a time: the GUI programs on each.
    for kind in plan.displays if len(plain) < len(programs) else ():
        shown = [p.on_display(kind) for p in programs if p.needs_display]
        with ExitStack() as stack:
            try:
                env = display_env(base, kind, stack.enter_context(private_display(kind, plan.x_server)))
            except HeadstartError as e:
                missing.update({p.label: str(e) for p in shown})
                continue
            results += measure_programs(shown, plan, progress, env)
            if plan.repeated and repeat is None and programs[0].needs_display:
                repeat = _repeated(programs[0].on_display(kind), plan, env, progress)
    # In the order asked for, each program on each display.
    order = {tuple(p.argv): i for i, p in enumerate(programs)}
    results.sort(key=lambda r: order[tuple(r.argv)])
    task = progress.add_task("preload time vs libraries", total=None)
    points = scaling.measure(list(plan.preload_counts), plan.preload_repeats, _library_sources(programs))
    progress.remove_task(task)
    return BenchResult(plan.quick, keys, results, missing, points, repeat, watch.finish())


def _repeated(
    program: Program, plan: Plan, env: dict[str, str], progress: Progress
) -> repeated.RepeatedLaunches | None:
    """Repeated launches of one program; the daemon's start includes its training, so they compare
    the plain modes. None when no plain daemon mode was asked for: exec alone compares nothing."""
    modes = [m for m in plan.modes if m == "exec" or not DAEMON_MODES[m].trained]
    if modes == ["exec"] or "exec" not in modes:
        return None
    return repeated.measure(
        program, modes, mode_keys(modes, plan.clients), mark_main_env([program], env), progress, plan.repeated_launches
    )
