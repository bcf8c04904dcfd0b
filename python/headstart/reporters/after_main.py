"""What happens after main (a profile's after_main), as tables in the terminal; the objects and gaps
also in the HTML report (profile_page.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

TOP_FILES = 10
LOAD_HEADERS = [
    "loaded after main",
    "asked for by",
    "at ms",
    "mapped in ms",
    "+ relocated, traced ms",
    "loaded apart ms",
    "+ deps",
]
GAP_HEADERS = ["at ms (traced)", "no system call for ms", "from the end of", "to the start of"]
TEXT_COLUMNS = {"loaded after main", "file", "kind", "asked for by", "by", "ran", "call", "the zygote can take it"}
TEXT_COLUMNS.update(GAP_HEADERS[2:])
GAP_TITLE = "After main: the longest stretches without a system call (main thread)"


def after_main_rows(after: dict[str, Any]) -> tuple[list[list[str]], list[list[str]]]:
    """The objects loaded after main and the longest gaps, as table rows (terminal and HTML)."""
    loads = [
        [
            Path(r["object"]).name  # the paths: --json, --write-preload
            + (" (deferred to its first call by lazy stubs)" if r.get("deferred_by_stubs") else ""),
            r.get("requested_by") or "-",  # absent from profiles saved before it was recorded
            f"{r['at_ms']:,.1f}",
            f"{r['cost_ms']:,.2f}",
            "-" if r["relocated_traced_ms"] is None else f"{r['relocated_traced_ms']:,.1f}",
            "-" if r.get("dlopen_ms") is None else f"{r['dlopen_ms']:,.1f}",
            str(len(r["with"])),
        ]
        for r in after["loads"]
    ]
    gaps = [[f"{g['at_ms']:,.1f}", f"{g['ms']:,.1f}", g["after"], g["before"]] for g in after["trace"]["gaps"]]
    return loads, gaps


def _table(title: str, headers: list[str], rows: list[list[str]]) -> Table:
    t = Table(title=title, min_width=len(title))  # a title wider than its table would wrap
    for h in headers:
        t.add_column(h, justify="left" if h in TEXT_COLUMNS else "right")
    for row in rows:
        t.add_row(*row)
    return t


def _files(trace: dict[str, Any]) -> Table:
    rows = [
        [
            f["path"],
            f"{f['first_ms']:,.1f}",
            f"{f['syscall_ms']:,.2f}",
            f"{f['bytes_read'] / 1024:,.0f}",
            f"{f['bytes_mapped'] / 1024:,.0f}",
        ]
        for f in trace["files"][:TOP_FILES]
    ]
    title = f"After main: files by time in their system calls (top {len(rows)} of {len(trace['files'])}, traced)"
    return _table(title, ["file", "first at ms", "in calls ms", "read KiB", "mapped KiB"], rows)


def _started(trace: dict[str, Any]) -> Table:
    rows = []
    for s in trace["started"]:
        ran = Path(s["executed"]).name + " (exec failed)" * s["exec_failed"] if s["executed"] else "-"
        by = "main thread" if s["by"] == trace["main_thread"] else str(s["by"])
        rows.append([s["kind"], f"{s['at_ms']:,.1f}", by, ran, f"{s['system_calls']:,}"])
    return _table("After main: threads and processes started (traced)", ["kind", "at ms", "by", "ran", "calls"], rows)


def _waits(trace: dict[str, Any]) -> Table:
    rows = [[f"{w['at_ms']:,.1f}", f"{w['ms']:,.1f}", w["call"]] for w in trace["waits"]]
    return _table("After main: the main thread's longest system calls (traced)", ["at ms", "ms", "call"], rows)


# Each kind of the main thread's time after main, by who could take it (profiling/after_main_shares.py).
SHARE_GROUPS = {
    # A child prepared ahead (headstartd --prepare-display) takes what a GTK program does on both as
    # its toolkit starts; the zygote never can.
    "display": "never (per display; prepared: GTK's start)",
    "session bus": "never (per launch; prepared: GTK's start)",
    "waiting for its threads": "never (threads)",
    "loading objects": "preload",
    "fontconfig": "warm-up",
    "other system calls": "as is",
    "computation": "as is (warm-ups: part)",
}


def _before_main_share(profile: dict[str, Any]) -> float | None:
    """The share of the time to ready that comes before main (untraced launches, medians)."""
    warm = profile.get("warm") or {}
    to_main, to_ready = warm.get("to_main_us"), warm.get("to_ready_us")
    if not to_main or not to_ready or not to_ready["median"]:
        return None
    return min(to_main["median"] / to_ready["median"], 1.0)


def _shares(shares: dict[str, Any], before_main: float | None) -> Table:
    rows = [[k["kind"], SHARE_GROUPS[k["kind"]], f"{k['ms']:,.1f}", f"{k['share']:.0%}"] for k in shares["kinds"]]
    # The split is of the time after main alone: say how much came before, which a daemon takes whole.
    of_what = (
        f" ({1 - before_main:.0%} of the time to ready; the {before_main:.0%} before main is exec's and the "
        "loader's, which a daemon serving it takes: headstart check says whether it does)"
        if before_main is not None
        else ""
    )
    title = (
        f"After main{of_what}: the main thread's time by kind (traced): never takeable "
        f"{shares['never_share']:.0%}, takeable {shares['could_share']:.0%}, as is {shares['as_is_share']:.0%}"
    )
    return _table(title, ["kind", "the zygote can take it", "ms", "share"], rows)


def render_after_main(profile: dict[str, Any], console: Console) -> None:
    after = profile["after_main"]
    loads, gaps = after_main_rows(after)
    if loads:
        title = f"After main: objects loaded, mapped in {after['load_ms']:,.1f} ms in all (medians)"
        console.print(_table(title, LOAD_HEADERS, loads))
    trace = after["trace"]
    if trace["found_main"]:
        console.print(f"after main: {trace['traced_ms']:,.0f} ms to ready under strace (main found in the trace)")
        for table, present in ((_files, trace["files"]), (_started, trace["started"]), (_waits, trace["waits"])):
            if present:
                console.print(table(trace))
    if gaps:
        console.print(_table(GAP_TITLE, GAP_HEADERS, gaps))
    if shares := after.get("shares"):  # absent from profiles saved before it was measured
        console.print(_shares(shares, _before_main_share(profile)))
    for line in after["advice"]:
        console.print(f"[green]advice:[/] {line}", markup=True, highlight=False)
