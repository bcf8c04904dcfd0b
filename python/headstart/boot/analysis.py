"""A boot analysed: the timeline and the advice, as JSON, as terminal tables, and as an HTML page."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from rich.console import Console
from rich.table import Table

from headstart.boot import advice, logs, timeline
from headstart.report.page import Page

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


def analyze(paths: list[Path], ready: re.Pattern[str] | None) -> Analysis:
    log = logs.read(paths)
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


def gantt(a: Analysis) -> Figure:
    """The phases as bars on one time axis, and the slowest initcalls where they ran."""
    t = a.timeline
    rows = [(p.name, p.start_s, p.duration_s, "#4e79a7") for p in t.phases]
    rows += [
        (f"initcall {c.name}", c.start_s, c.duration_s, "#f28e2b") for c in t.initcalls[:TOP] if c.start_s is not None
    ]
    fig = Figure(figsize=(10, 1.2 + 0.3 * len(rows)))
    ax = fig.subplots()
    for i, (_, start, width, colour) in enumerate(rows):
        ax.barh(i, max(width, 0.002), left=start, color=colour)
    ready = t.at("ready")
    if ready is not None:
        ax.axvline(ready, color="#e15759", linestyle="--", label="first program ready")
        ax.legend(fontsize=8)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds from " + ("power-on" if t.axis == "host" else "the kernel's first message"))
    return fig


def page(a: Analysis) -> Page:
    t = a.timeline
    p = Page("headstart boot")
    p.text(f"Sources: {', '.join(a.sources)}. Docs: docs/measuring.md (boot).")
    p.heading("Timeline")
    p.chart(gantt(a), "Boot phases and the slowest initcalls")
    p.table(
        ["phase", "start s", "end s", "duration s"],
        [[x.name, f"{x.start_s:.3f}", f"{x.end_s:.3f}", f"{x.duration_s:.3f}"] for x in t.phases],
    )
    if t.initcalls:
        p.heading("Slowest initcalls")
        p.table(["initcall", "ms"], [[c.name, f"{c.duration_s * 1000:,.1f}"] for c in t.initcalls[:TOP]])
    p.heading("Recommendations")
    for x in a.advice:
        p.text(f"{x.topic}: {x.message}")
        for e in x.evidence:
            p.text(f"evidence: {e}")
    for w in t.warnings:
        p.text(f"warning: {w}")
    return p
