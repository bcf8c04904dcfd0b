"""The HTML report of a boot. The kernel's phases (power-on to init) and user space (init to ready,
systemd's account) are two charts on two time axes: a minute of systemd would otherwise squash
the kernel's seconds into slivers. The tables give every number the charts show."""

from __future__ import annotations

from typing import TYPE_CHECKING

from headstart.boot.analysis import Analysis
from headstart.boot.timeline import Phase, Timeline
from headstart.reporters.boot import CPU_TITLE, TOP
from headstart.reporters.figures import new_figure
from headstart.reporters.page import Page

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_PHASE, _INITCALL, _SYSTEMD = "#4e79a7", "#f28e2b", "#59a14f"
Row = tuple[str, float, float, str]  # label, start, width, colour


def split_phases(t: Timeline) -> tuple[list[Phase], list[Phase]]:
    """(the kernel's phases, up to init; user space's, from init, with systemd's account)."""
    init = t.at("init")
    kernel, user = [], []
    for p in t.phases:
        in_user = p.name.startswith("systemd") or (init is not None and p.start_s >= init)
        (user if in_user else kernel).append(p)
    return kernel, user


def charts(a: Analysis) -> list[tuple[Figure, str]]:
    t = a.timeline
    kernel, user = split_phases(t)
    origin = "power-on" if t.axis == "host" else "the kernel's first message"
    rows: list[Row] = [(p.name, p.start_s, p.duration_s, _PHASE) for p in kernel]
    rows += [
        (f"initcall {c.name}", c.start_s, c.duration_s, _INITCALL) for c in t.initcalls[:TOP] if c.start_s is not None
    ]
    out = []
    if rows:
        out.append((_gantt(rows, t, origin), f"Kernel: {origin} to init, phases and the slowest initcalls"))
    user_rows = [(p.name, p.start_s, p.duration_s, _SYSTEMD if p.name.startswith("systemd") else _PHASE) for p in user]
    if user_rows:
        out.append((_gantt(user_rows, t, origin), "User space: init to the first program ready, and systemd's account"))
    return out


def _gantt(rows: list[Row], t: Timeline, origin: str) -> Figure:
    fig = new_figure(figsize=(10, 1.2 + 0.3 * len(rows)))
    ax = fig.subplots()
    span = max((start + width for _, start, width, _ in rows), default=1.0) - min(r[1] for r in rows)
    for i, (_, start, width, colour) in enumerate(rows):
        ax.barh(i, max(width, span / 500), left=start, color=colour)  # a zero-length phase stays visible
    ready = t.at("ready")
    if ready is not None and min(r[1] for r in rows) <= ready <= max(r[1] + r[2] for r in rows):
        ax.axvline(ready, color="#e15759", linestyle="--", label="first program ready")
        ax.legend(fontsize=8)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"seconds from {origin}")
    return fig


def page(a: Analysis) -> Page:
    t = a.timeline
    p = Page("headstart boot")
    p.text(f"Sources: {', '.join(a.sources)}. Docs: docs/measuring.md (boot).")
    p.heading("Timeline")
    for fig, caption in charts(a):
        p.chart(fig, caption)
    p.table(
        ["phase", "start s", "end s", "duration s"],
        [[x.name, f"{x.start_s:.3f}", f"{x.end_s:.3f}", f"{x.duration_s:.3f}"] for x in t.phases],
    )
    if t.initcalls:
        p.heading("Slowest initcalls")
        p.table(["initcall", "ms"], [[c.name, f"{c.duration_s * 1000:,.1f}"] for c in t.initcalls[:TOP]])
    if t.services:
        p.heading("Slowest services (systemd-analyze blame)")
        p.table(["unit", "s"], [[unit, f"{seconds:.3f}"] for unit, seconds, _ in t.services[:TOP]])
    if t.cpu.units:
        p.heading(CPU_TITLE)
        p.table(["unit", "CPU s"], [[unit, f"{seconds:.3f}"] for unit, seconds, _ in t.cpu.units[:TOP]])
    p.heading("Recommendations")
    for x in a.advice:
        p.text(f"{x.topic}: {x.message}")
        for e in x.evidence:
            p.text(f"evidence: {e}")
        for path, text in x.drop_ins.items():
            if text:
                p.text(f"{path}:")
                p.preformatted(text)
            else:
                p.text(f"{path}: an empty file")
    for w in t.warnings:
        p.text(f"warning: {w}")
    return p
