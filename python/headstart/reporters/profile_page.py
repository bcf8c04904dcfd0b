"""The HTML page of profiles (`headstart report PROFILE...`): phases, warm against cold, and per
profile its waterfall, pages per file and what happens after main (profile_charts.py draws)."""

from __future__ import annotations

from typing import Any

from headstart.reporters import after_main, profile_charts
from headstart.reporters.page import Page

SUMMARY_COLUMNS = {
    "to_main_us": "to main µs",
    "to_ready_us": "to ready µs",
    "symbol_lookups": "symbol lookups",
    "relative_relocations": "relative",
    "major_faults": "major faults",
    "pss_kb": "PSS KiB",
}


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
    loads, gaps = after_main.after_main_rows(after)
    if loads:
        page.text(f"Objects loaded after main, {after['load_ms']:,.1f} ms in all (medians):")
        page.table(after_main.LOAD_HEADERS, loads)
    if gaps:
        page.text("The longest stretches without a system call, main thread, in the traced launch:")
        page.table(after_main.GAP_HEADERS, gaps)
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
