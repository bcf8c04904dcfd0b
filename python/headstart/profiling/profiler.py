"""One program's profile: the launches `headstart profile` makes and what it reads from each.

Each timed launch runs under libheadstart-probe.so (LD_AUDIT) with LD_DEBUG=statistics; more
launches, not timed, give the files it touches (strace), what happens after main (a timed trace)
and the symbol bindings per library pair. docs/measuring.md explains each number and its error.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import Progress

from headstart.errors import HeadstartError
from headstart.profiling import after_main, files, summary, syscalls, toolkit_settings
from headstart.profiling.launch import Launch, LaunchOptions, checked
from headstart.profiling.launch import run as launch
from headstart.profiling.syscalls import Call
from headstart.profiling.timeline import Timeline
from headstart.stats import summarize

ResidentPages = dict[str, int | None]  # per file, its pages in the page cache

LOAD_COST_RUNS = 5  # processes that load the after-main objects apart (load_cost.py)


@dataclass
class ProfileOptions:
    argv: list[str]
    runs: int = 20
    ready: re.Pattern[str] | None = None  # a line of output; else ready_window, else at exit
    ready_window: bool = False
    timeout: float = 30.0
    cold: bool = False
    drop_all: bool = False  # with cold: the whole page cache, not only the program's files
    # With cold: keeps pages locked (headstart-pind with a plan) for as many cold launches, alternately;
    # gives the bytes locked. Passed in, so that profiling does not depend on pinning.
    pinned: Callable[[], AbstractContextManager[int]] | None = None
    overhead: bool = False
    large_read: int = 1 << 20
    gaps: int = after_main.TOP_GAPS


@dataclass
class Recorded:
    """The launches behind a profile's numbers, for its trace (reporters/trace.py): the timed ones in
    the order of the profile's "launches", the cold ones with pages pinned, and the system calls of the
    launch traced with strace (after_main.py)."""

    launches: list[Launch] = field(default_factory=list)
    pinned: list[Launch] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)


class Profiler:
    def __init__(self, options: ProfileOptions, progress: Progress) -> None:
        self.options = options
        self.argv = options.argv
        self.progress = progress
        self.pinned_bytes: int | None = None
        self.recorded = Recorded()  # filled by collect()
        kinds = 1 + options.cold + bool(options.pinned) + 2 * options.overhead
        self.task = progress.add_task(Path(self.argv[0]).name, total=options.runs * kinds + 4)

    def _launch(self, what: str, **kw: Any) -> Launch:
        o = self.options
        result = launch(LaunchOptions(self.argv, o.ready, o.timeout, ready_window=o.ready_window, **kw))
        self.progress.advance(self.task)
        result = checked(result, what)
        if kw.get("probe", True) and not kw.get("wrapper") and result.timeline is None:
            raise HeadstartError(
                f"{self.argv[0]}: the probe recorded nothing (the loader ignores LD_AUDIT for a program it runs in "
                "secure mode, one with file capabilities for example)"
            )
        return result

    def file_uses(self) -> dict[str, files.FileUse]:
        with tempfile.TemporaryDirectory(prefix="headstart-strace-") as tmp:
            out = Path(tmp) / "trace"
            self._launch("traced", probe=False, wrapper=files.strace_command(out))
            uses = files.read_trace(out)
        # The kernel maps the program itself at exec, which the trace does not show.
        program = self.argv[0]
        size = Path(program).stat().st_size
        uses.setdefault(program, files.FileUse(program, size=size, bytes_mapped=size, mapped_exec=True))
        return uses

    def after_main_trace(self) -> str | None:
        """A launch under the probe and a timed system-call trace, for what happens after main."""
        with tempfile.TemporaryDirectory(prefix="headstart-strace-") as tmp:
            out = Path(tmp) / "trace"
            self._launch("after-main trace", wrapper=after_main.trace_command(out))
            return out.read_text(errors="replace") if out.exists() else None

    def collect(self) -> dict[str, Any]:
        """The profile, in its JSON form (docs/schema/profile.json)."""
        o = self.options
        uses = self.file_uses()
        trace = self.after_main_trace()
        bindings = self._launch("bindings", bindings=True)
        warm = [self._launch("warm") for _ in range(o.runs)]
        cold, after_evict, after_launch, pinned = self._cold(sorted(uses))
        # The loader's counts as an exec has them: under the probe (LD_AUDIT) it looks up more.
        loader = self._launch("counted", probe=False).loader
        records = [summary.launch_record(w, False, loader) for w in warm]
        records += [summary.launch_record(c, True, loader) for c in cold]
        pinned_records = [summary.launch_record(c, True, loader) for c in pinned]
        file_rows = summary.files(uses, cold, after_evict, after_launch)
        self.recorded = Recorded(warm + cold, pinned, syscalls.parse(trace) if trace is not None else [])
        after = self._after_main([w.timeline for w in warm if w.timeline], trace)
        settings = self._settings(warm)
        after["advice"] += [line for found in settings if (line := toolkit_settings.advice(found))]
        after["advice"][:0] = _failed_advice(warm)
        return {
            "schema": summary.SCHEMA_VERSION,
            "program": self.argv,
            "ready": {"pattern": o.ready.pattern} if o.ready else "window" if o.ready_window else "exit",
            "runs": o.runs,
            "machine": summary.machine(),
            "warm": summary.aggregate(records[: len(warm)]),
            "cold": summary.aggregate(records[len(warm) :]),
            "cold_pinned": summary.aggregate(pinned_records),
            "pinned_bytes": self.pinned_bytes,
            "libraries": summary.libraries(warm, cold, bindings),
            "files": file_rows,
            "flags": summary.large_reads(file_rows, o.large_read),
            "overhead": self._overhead() if o.overhead else None,
            "after_main": after,
            "settings": settings,
            "via_daemon": None,
            "launches": records,
        }

    def _after_main(self, timelines: list[Timeline], trace: str | None) -> dict[str, Any]:
        self.progress.update(self.task, description="after main: loading its objects apart")
        o = self.options
        return after_main.analyze(timelines, trace, o.gaps, measure_runs=min(o.runs, LOAD_COST_RUNS))

    def _settings(self, warm: list[Launch]) -> list[dict[str, Any]]:
        """Each toolkit setting that applies to the program, timed both ways (toolkit_settings.py)."""
        paths = [o.path for w in warm[:1] if w.timeline for o in w.timeline.objects]
        found = toolkit_settings.applicable(paths, os.environ)
        runs = min(self.options.runs, toolkit_settings.RUNS)
        if found:
            total = next(t.total or 0 for t in self.progress.tasks if t.id == self.task)
            self.progress.update(self.task, total=total + 2 * runs * len(found), description="toolkit settings")

        def to_ready(env: dict[str, str]) -> int | None:
            return self._launch("toolkit setting", probe=False, env=env).to_ready_ns

        return [toolkit_settings.measure(setting, evidence, to_ready, runs) for setting, evidence in found]

    def _empty_cache(self, paths: list[str]) -> None:
        if self.options.drop_all:
            files.drop_all()
        files.evict(paths)

    def _cold(self, paths: list[str]) -> tuple[list[Launch], list[ResidentPages], list[ResidentPages], list[Launch]]:
        """Cold launches, and with a pin plan as many with headstart-pind running, alternately."""
        cold, after_evict, after_launch, pinned = [], [], [], []
        for _ in range(self.options.runs if self.options.cold else 0):
            self._empty_cache(paths)
            after_evict.append({p: files.residency(p) for p in paths})
            cold.append(self._launch("cold"))
            after_launch.append({p: files.residency(p) for p in paths})
            if self.options.pinned:
                with self.options.pinned() as locked:
                    self.pinned_bytes = locked
                    self._empty_cache(paths)
                    pinned.append(self._launch("cold, pinned"))
        return cold, after_evict, after_launch, pinned

    def _overhead(self) -> dict[str, Any]:
        """Time to main through libheadstart-mark-main.so, with and without the probe, alternately."""
        with_probe, without = [], []
        for _ in range(self.options.runs):
            for probe, into in ((True, with_probe), (False, without)):
                t = self._launch("overhead", probe=probe, mark_main=True).to_main_marked_ns
                if t is not None:
                    into.append(t / 1000)
        if not with_probe or not without:
            raise HeadstartError("the overhead launches did not mark main")
        a, b = summarize(with_probe), summarize(without)
        return {"with_probe_us": a.as_dict(), "without_probe_us": b.as_dict(), "added_us": a.median - b.median}


def _failed_advice(warm: list[Launch]) -> list[str]:
    """A program that failed in every launch (a mistyped argument, a missing file) had its way to that
    failure profiled, which the user should hear of first."""
    ended = [w.exit_status for w in warm if not w.stopped_at_ready]
    if not warm or len(ended) != len(warm) or len(set(ended)) != 1 or ended[0] <= 0:
        return []
    status = ended[0]
    return [
        f"the program exited with status {status} in every launch: this profiles its way to that failure "
        "(check its arguments; programs such as grep and diff say what they found so)"
    ]
