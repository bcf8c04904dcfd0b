"""headstart report: profiles (`headstart profile -o`), or a benchmark (`headstart bench`'s
bench.json), as one self-contained HTML file of charts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from headstart import inputfile, jsonfile
from headstart.errors import HeadstartError
from headstart.profiling import from_trace, render
from headstart.reporters import bench_page, profile_charts
from headstart.reporters.page import Page

NAME = "report"
HELP = "draw profiles (from `headstart profile -o`) side by side, or a bench.json, as one HTML file of charts"


SUMMARY_COLUMNS = {
    "to_main_us": "to main µs",
    "to_ready_us": "to ready µs",
    "symbol_lookups": "symbol lookups",
    "relative_relocations": "relative",
    "major_faults": "major faults",
    "pss_kb": "PSS KiB",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "traces", nargs="+", type=Path, metavar="TRACE", help="a profile (headstart profile -o) or one bench.json"
    )
    p.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")


# load_json's answer for a raw probe trace (JSON lines), which load_profile turns into a profile.
TRACE = object()


def load_json(path: Path) -> Any:
    """A bench.json or a profile, checked against its schema (a bench.json has a schema_version), or
    TRACE for a probe trace, which load_profile reads."""
    text = inputfile.read_text(path)
    if from_trace.looks_like_trace(text):
        return TRACE
    data = jsonfile.parse(text, str(path))
    jsonfile.check(data, "bench" if is_benchmark(data) else "profile", str(path))
    return data


def is_benchmark(data: Any) -> bool:
    return isinstance(data, dict) and "schema_version" in data


def load_profile(path: Path, data: Any) -> dict[str, Any]:
    return from_trace.profile(path) if data is TRACE else data


def build(profiles: list[dict[str, Any]]) -> Page:
    page = Page("headstart launch profile")
    names = ", ".join(profile_charts.label(p) for p in profiles)
    page.text(f"{len(profiles)} profile(s): {names}. Medians over the launches of each; docs/measuring.md.")
    page.heading("Phases")
    page.chart(profile_charts.phases(profiles), "Time to main by phase, warm and cold launches")
    page.chart(profile_charts.warm_cold(profiles), "Time to main and to ready, warm and cold")
    page.table(["program", "kind", *SUMMARY_COLUMNS.values()], summary_rows(profiles))
    for p in profiles:
        page.heading(f"Waterfall: {profile_charts.label(p)}")
        page.chart(
            profile_charts.waterfall(p), "Each library from when the loader began finding it to when it was mapped"
        )
        fig = profile_charts.pages(p)
        if fig is None:
            page.text("No cold launches in this profile (headstart profile --cold): no pages per file.")
        else:
            page.chart(fig, "Pages per file in cold launches")
        for flag in p["flags"]:
            page.text(f"Large read: {flag['message']}")
        _after_main(page, p)
    return page


def _after_main(page: Page, profile: dict[str, Any]) -> None:
    after = profile.get("after_main")  # absent from profiles saved before it was measured
    if after is None:
        return
    page.heading(f"After main: {profile_charts.label(profile)}")
    loads, gaps = render.after_main_rows(after)
    if loads:
        page.text(f"Objects loaded after main, {after['load_ms']:,.1f} ms in all (medians):")
        page.table(render.LOAD_HEADERS, loads)
    if gaps:
        page.text("The longest stretches without a system call, main thread, in the traced launch:")
        page.table(render.GAP_HEADERS, gaps)
    for line in after["advice"]:
        page.text(f"Advice: {line}")


def summary_rows(profiles: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for p in profiles:
        for kind in ("warm", "cold"):
            if p[kind]:
                cells = [p[kind][key] for key in SUMMARY_COLUMNS]
                rows.append(
                    [profile_charts.label(p), kind, *("-" if c is None else f"{c['median']:,.0f}" for c in cells)]
                )
    return rows


def run(args: argparse.Namespace) -> int:
    loaded = [load_json(t) for t in args.traces]
    if any(is_benchmark(d) for d in loaded):
        if len(loaded) != 1:
            raise HeadstartError("a bench.json is drawn alone: give one benchmark, or profiles only")
        page = bench_page.build(loaded[0])
    else:
        page = build([load_profile(t, d) for t, d in zip(args.traces, loaded, strict=True)])
    try:
        args.output.write_text(page.render())
    except OSError as e:
        raise HeadstartError(f"cannot write {args.output}: {e.strerror}") from e
    print(f"report written to {args.output}")
    return 0
