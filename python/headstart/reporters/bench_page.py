"""The HTML page of a benchmark (bench.json): the same tables as the terminal, and the charts."""

from __future__ import annotations

from typing import Any

from headstart.reporters import bench as table
from headstart.reporters import bench_charts
from headstart.reporters.page import Page


def build(data: dict[str, Any]) -> Page:
    page = Page("headstart bench")
    machine = data["machine"]
    page.text(
        f"{len(data['programs'])} program(s) on {machine['uname']} ({machine['cpus']} CPUs)"
        f"{', quick run' if data['quick'] else ''}. Medians of launches alternating between modes; "
        "docs/measuring.md says how each number is taken."
    )
    page.heading("Time to ready, normalized to exec")
    _table(page, table.ready_normalized(data))
    ready = "Time to ready (window shown, ready line, or exit) over exec's, per program and mode (1 = exec)"
    _ratios(page, data, "ready_ratio_to_exec", ready)
    page.heading("Time from main to ready, normalized to exec")
    _table(page, table.after_main(data))
    page.heading("Time to main, normalized to exec")
    _table(page, table.normalized(data))
    if data["programs"]:
        _ratios(page, data, "ratio_to_exec", "Time to main over exec's, per program and mode (1 = exec)")
        _ratios(page, data, "exit_ratio_to_exec",
                "Time to exit over exec's: the program's own work is the same in every mode (programs stopped "
                "at their window have no exit and are left out)")  # fmt: skip
        page.heading("Relocations and memory")
        page.chart(bench_charts.relocations(data), "Relocations left to the launched process, over exec's")
        page.chart(bench_charts.memory(data), "PSS and private dirty of the launched program at main")
        _table(page, table.details(data))
        page.text(table.LEGEND)
        daemon_memory = table.daemon_memory(data)
        if daemon_memory is not None:
            _table(page, daemon_memory)
        for line in table.loader_notes(data):
            page.text(line)
        if note := table.cpu_note(data):
            page.text(note[0])
    page.heading("Preload time against libraries")
    if any(p["time_us"] for p in data["preload_scaling"]):
        page.chart(bench_charts.preload_scaling(data), "The daemon's preload time as libraries are added")
    _table(page, table.preload(data))
    repeated = table.repeated(data)
    if repeated is not None:
        page.heading("Repeated launches")
        page.chart(bench_charts.repeated(data), "Total time of N launches, daemon start included")
        _table(page, repeated)
    problems = table.problems(data)
    if problems:
        page.heading("Problems")
        for line in problems:
            page.text(line)
    return page


def _ratios(page: Page, data: dict[str, Any], metric: str, caption: str) -> None:
    fig = bench_charts.launch_ratios(data, metric)
    if fig is not None:
        page.chart(fig, caption)


def _table(page: Page, t: table.Table) -> None:
    page.text(t.title)
    page.table(t.headers, t.rows)
