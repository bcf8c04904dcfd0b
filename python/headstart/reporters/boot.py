"""A boot analysed (`headstart boot analyze`) and two boots compared (`boot compare`), as tables in
the terminal; boot_page.py is the HTML page of one."""

from __future__ import annotations

import shlex
from typing import IO

from rich.table import Table
from rich.text import Text

from headstart.boot.analysis import Analysis
from headstart.boot.compare import Comparison
from headstart.reporters import terminal

TOP = 10  # the slowest initcalls and services shown
# Units alive at the capture by their cgroups, those that had ended by systemd's own report of each run.
CPU_TITLE = "CPU time by unit, from boot to the capture (systemctl show CPUUsageNSec; a unit ended: its Consumed lines)"


def render(a: Analysis, file: IO[str], width: int = 140) -> None:
    console = terminal.console(file, width)
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
        console.print(_units_table("Slowest services (systemd-analyze blame)", "s", t.services))
    if t.cpu.units:
        console.print(_units_table(CPU_TITLE, "CPU s", t.cpu.units))
    for x in a.advice:
        console.print(Text.assemble((x.topic, "bold"), ": ", x.message), highlight=False)
        for e in x.evidence:
            console.print(f"    evidence: {e}", markup=False, highlight=False)
        for path, text in x.drop_ins.items():
            shown = shlex.quote(path)  # a unit's escapes (\x2d) as a shell would need them
            console.print(
                f"    {shown}: an empty file\n"
                if not text
                else f"    {shown}:\n" + "".join(f"        {line}\n" for line in text.splitlines()),
                end="",
                markup=False,
                highlight=False,
                soft_wrap=True,  # a file's lines, to be copied whole
            )
    for w in t.warnings:
        console.print(f"warning: {w}", style="yellow", markup=False)


def _units_table(title: str, column: str, units: list[tuple[str, float, str]]) -> Table:
    table = Table(title=title)
    table.add_column("unit")
    table.add_column(column, justify="right")
    for unit, seconds, _ in units[:TOP]:
        table.add_row(unit, f"{seconds:.3f}")
    return table


def render_comparison(c: Comparison, file: IO[str], width: int = 140) -> None:
    table = Table(title=f"Boot phases, s: A = {c.a}, B = {c.b}")
    for col in ("phase", "A", "B", "B - A, ms"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    for r in c.phases:
        table.add_row(r["phase"], _s(r["a_s"]), _s(r["b_s"]), _ms(r["difference_ms"]))
    table.add_section()
    for r in c.moments:
        table.add_row(f"reached {r['moment']}", _s(r["a_s"]), _s(r["b_s"]), _ms(r["difference_ms"]))
    table.add_section()
    table.add_row(f"to {c.label}", _s(c.total_a_s), _s(c.total_b_s), _ms(c.difference_ms))
    terminal.console(file, width).print(table)


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:+,.1f}"
