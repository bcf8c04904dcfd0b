"""The profile (`headstart profile`) as tables in the terminal."""

from __future__ import annotations

from typing import IO, Any

from rich.table import Table

from headstart.profiling import toolkit_settings
from headstart.profiling.timeline import PHASES
from headstart.reporters import terminal
from headstart.reporters.after_main import render_after_main

TOP_LIBRARIES = 10
TOP_FILES = 12


def _cell(s: dict[str, float] | None, fmt: str = ",.0f") -> str:
    return "-" if s is None else f"{s['median']:{fmt}} ({s['p10']:{fmt}}-{s['p90']:{fmt}})"


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _phases(profile: dict[str, Any]) -> Table:
    kinds = [k for k in ("warm", "cold", "cold_pinned") if profile.get(k)]
    t = Table(title="Launch phases, µs: median (p10-p90)")
    t.add_column("phase")
    for k in kinds:
        label = k.replace("_", ", ")
        if k == "cold_pinned" and profile.get("pinned_bytes") is not None:
            label += f" {profile['pinned_bytes'] / (1 << 20):.1f} MiB"
        t.add_column(f"{label} ({profile[k]['launches']} launches)", justify="right")
    for phase in PHASES:
        t.add_row(phase, *[_cell(profile[k]["phases_us"][phase]) for k in kinds])
    t.add_section()
    t.add_row("to main", *[_cell(profile[k]["to_main_us"]) for k in kinds])
    t.add_row("to ready", *[_cell(profile[k]["to_ready_us"]) for k in kinds])
    t.add_section()
    for key, label in (
        ("symbol_lookups", "symbol lookups"),
        ("lookups_from_cache", "  and more from its cache"),  # glibc counts these beside the lookups
        ("relative_relocations", "relative relocations"),
        ("minor_faults", "minor faults"),
        ("major_faults", "major faults"),
        ("pss_kb", "PSS at ready, KiB"),
        ("private_dirty_kb", "private dirty at ready, KiB"),
    ):
        t.add_row(label, *[_cell(profile[k][key]) for k in kinds])
    return t


def _libraries(profile: dict[str, Any]) -> Table:
    libs = sorted(profile["libraries"], key=lambda lib: -(lib["map_us"] or 0))[:TOP_LIBRARIES]
    t = Table(title=f"Libraries that cost most to find and map (top {len(libs)} of {len(profile['libraries'])})")
    for col in ("library", "needed by", "size KiB", "map µs warm", "map µs cold", "bindings from", "to"):
        t.add_column(col, justify="left" if col in ("library", "needed by") else "right")
    by_index = {lib["index"]: lib["name"] for lib in profile["libraries"]}
    for lib in libs:
        t.add_row(
            lib["name"],
            by_index.get(lib["needed_by"], "-") if lib["needed_by"] is not None else "-",
            f"{lib['size'] / 1024:,.0f}",
            "-" if lib["map_us"] is None else f"{lib['map_us']:,.0f}",
            "-" if lib["map_us_cold"] is None else f"{lib['map_us_cold']:,.0f}",
            _count(lib["bindings_from"]),
            _count(lib["bindings_to"]),
        )
    return t


def _files(profile: dict[str, Any]) -> Table:
    rows = profile["files"][:TOP_FILES]
    with_cold = any(f["cold"] for f in rows)  # launches with --cold: the pages kept, mapped and resident
    title = f"Files by bytes read (top {len(rows)} of {len(profile['files'])})"
    t = Table(title=title + ("; the last three columns: pages in cold launches" if with_cold else ""))
    columns = (
        "file",
        "read KiB",
        "reads",
        "mapped KiB",
        "size (pages)",
        *(("kept", "mapped", "resident after") * with_cold),
    )
    for col in columns:
        t.add_column(col, justify="left" if col == "file" else "right")
    for f in rows:
        cold = f["cold"] or {}

        def pages(key: str, cold: dict[str, Any] = cold) -> str:
            return "-" if cold.get(key) is None else f"{cold[key]:,.0f}"

        cold_pages = (pages("resident_after_evict"), pages("mapped"), pages("resident_after_launch"))
        t.add_row(
            f["path"],
            f"{f['bytes_read'] / 1024:,.0f}",
            f"{f['reads']:,}",
            f"{f['bytes_mapped'] / 1024:,.0f}",
            f"{f['pages']:,}",
            *(cold_pages * with_cold),
        )
    return t


def _via_daemon(via: dict[str, Any]) -> Table:
    """Time to main, and to ready (its line or window; stopped there) or to exit, per mode."""
    t = Table(title="Through headstartd, timed side by side with exec: µs, median (p10-p90)")
    if via["ready"] == "exit":
        end, end_key, end_ratio = "to exit", "to_exit_us", "exit_ratio_to_exec"
    else:  # stopped once ready: no exit to time
        end, end_key, end_ratio = "to ready", "to_ready_us", "ready_ratio_to_exec"
    for col in ("mode", "to main", "ratio", end, "ratio "):
        t.add_column(col, justify="left" if col == "mode" else "right")
    for mode, m in via["modes"].items():
        ratio, second = m["ratio_to_exec"], m[end_ratio]
        t.add_row(
            mode,
            _cell(m["to_main_us"]),
            "-" if ratio is None else f"{ratio:.3f}",
            _cell(m[end_key]),
            "-" if second is None else f"{second:.3f}",
        )
    return t


def _via_daemon_errors(via: dict[str, Any]) -> list[str]:
    return [f"{mode}: {error}" for mode, m in via["modes"].items() for error in m["errors"]]


def render(profile: dict[str, Any], file: IO[str], width: int = 120) -> None:
    console = terminal.console(file, width)
    console.print(f"[bold]{' '.join(profile['program'])}[/]")
    console.print(_phases(profile))
    if profile["libraries"]:
        console.print(_libraries(profile))
    console.print(_files(profile))
    if profile["cold"]:
        console.print(
            "pages: kept = still cached after eviction (other processes map them), mapped = in the program "
            "at ready (touched, plus fault-around), resident after = in the cache after the launch (plus "
            "readahead); docs/measuring.md"
        )
    for flag in profile["flags"]:
        console.print(f"[yellow]large read:[/] {flag['message']}")
    render_after_main(profile, console)
    for found in profile.get("settings", []):
        if not toolkit_settings.advice(found):
            console.print(toolkit_settings.no_gain(found), highlight=False)
    if profile["overhead"]:
        o = profile["overhead"]
        console.print(
            f"probe overhead: time to main {o['with_probe_us']['median']:,.0f} µs with it, "
            f"{o['without_probe_us']['median']:,.0f} µs without (+{o['added_us']:,.0f} µs, medians)"
        )
    if profile["via_daemon"]:
        console.print(_via_daemon(profile["via_daemon"]))
        for line in _via_daemon_errors(profile["via_daemon"]):
            console.print(f"[yellow]through headstartd:[/] {line}", highlight=False)
