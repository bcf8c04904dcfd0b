"""A boot analysed: the timeline and the advice, as JSON and as terminal tables (html.py: the page)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from headstart.boot import advice, logs, timeline

TOP = 10


@dataclass
class Analysis:
    sources: list[str]
    timeline: timeline.Timeline
    advice: list[advice.Advice]

    @property
    def total_s(self) -> float | None:
        """Time to the first program ready, else to the end of the last phase."""
        ready = self.timeline.at("ready")
        if ready is not None:
            return ready
        return max((p.end_s for p in self.timeline.phases), default=None)


def analyze(paths: list[Path], ready: re.Pattern[str] | None, boot: int | None = None) -> Analysis:
    log = logs.read(paths, boot)
    t = timeline.build(log, ready)
    return Analysis([str(p) for p in paths], t, advice.advise(t, log))


def as_dict(a: Analysis) -> dict[str, Any]:
    return {
        "sources": a.sources,
        "total_s": a.total_s,
        **timeline.as_dict(a.timeline),
        "recommendations": [x.as_dict() for x in a.advice],
    }


def render(a: Analysis, console: Console) -> None:
    t = a.timeline
    origin = "power-on (host clock)" if t.axis == "host" else "the kernel's first message (kernel clock)"
    phases = Table(title=f"Boot phases, seconds from {origin}")
    for col in ("phase", "start", "end", "duration", "share"):
        phases.add_column(col, justify="left" if col == "phase" else "right")
    total = a.total_s or 0.0
    for p in t.phases:
        share = f"{p.duration_s / total:.0%}" if total > 0 and not p.name.startswith("systemd") else ""
        phases.add_row(p.name, f"{p.start_s:.3f}", f"{p.end_s:.3f}", f"{p.duration_s:.3f}", share)
    console.print(phases if t.phases else "No boot phase found in these logs.")
    if t.initcalls:
        calls = Table(title=f"Slowest initcalls (of {len(t.initcalls)})")
        for col in ("initcall", "ms", "started at s"):
            calls.add_column(col, justify="left" if col == "initcall" else "right")
        for c in t.initcalls[:TOP]:
            calls.add_row(c.name, f"{c.duration_s * 1000:,.1f}", "-" if c.start_s is None else f"{c.start_s:.3f}")
        console.print(calls)
    if t.services:
        services = Table(title="Slowest services (systemd-analyze blame)")
        services.add_column("unit")
        services.add_column("s", justify="right")
        for unit, seconds, _ in t.services[:TOP]:
            services.add_row(unit, f"{seconds:.3f}")
        console.print(services)
    for x in a.advice:
        console.print(f"[bold]{x.topic}[/]: {x.message}", highlight=False)
        for e in x.evidence:
            console.print(f"    evidence: {e}", markup=False, highlight=False)
    for w in t.warnings:
        console.print(f"warning: {w}", style="yellow", markup=False)
