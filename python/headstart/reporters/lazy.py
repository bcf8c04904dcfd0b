"""`headstart lazy` in the terminal: the plan's table, what a build made, and the check's table."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from rich.table import Table

from headstart.lazy.compare import LazyCheck
from headstart.ordering.check import PARTLY_COLD
from headstart.reporters import terminal
from headstart.stats import Ratio


def render_plan(data: dict[str, Any], file: IO[str], width: int = 160) -> None:
    console = terminal.console(file, width)
    now = " (-z now: used when called, as a run with its stubs shows)" if data.get("bind_now") else ""
    t = Table(title=f"{Path(data['program'][0]).name}: its libraries before ready ({data['profiles']} profile(s)){now}")
    numbers = ("KiB", "bound before ready", *(("called",) if now else ()))
    for col in ("library", *numbers, "verdict", "why"):
        t.add_column(col, justify="right" if col in numbers else "left")
    for d in data["dependencies"]:
        why = "; ".join(d["refusals"] + [f"note: {n}" for n in d["notes"]])
        called = ({True: "yes", False: "no"}.get(d["called_before_ready"], "-"),) if now else ()
        t.add_row(d["soname"], f"{d['size'] / 1024:,.0f}", str(d["bindings_before_ready"]), *called, d["verdict"], why)
    console.print(t)
    console.print(f"deferrable: {data['deferred_bytes'] / 1024:,.0f} KiB not loaded before ready")


def render_built(built: Path, count: int, library: str, drop_in: bool, file: IO[str]) -> None:
    """How to use the stubs `lazy build` made."""
    if drop_in:
        how = f"run the program with LD_LIBRARY_PATH={built.parent}"
    else:
        how = f"link with {built} instead of -l{library.split('.so')[0].removeprefix('lib')}"
    loaded = f"{library} is then loaded at the first call of one of them"
    print(f"{count} functions stubbed in {built}: {how}; {loaded}", file=file)


def render_check(result: LazyCheck, file: IO[str], width: int = 140) -> None:
    data = result.data
    readahead = f", readahead {data['read_ahead_kib']} KiB" if data["read_ahead_kib"] is not None else ""
    t = Table(title=f"Cold launches, time to ready ({data['runs']} each, alternately{readahead})")
    for col in ("", "objects by ready", "KiB of them", "cold ms to ready, median (p10-p90)"):
        t.add_column(col, justify="left" if not col else "right")
    for name, b, sizes in zip(("eager", "with the stubs"), data["builds"], result.object_bytes, strict=True):
        ms = b["cold_ready_ms"]
        t.add_row(name, str(len(b["objects"])), f"{sum(sizes.values()) / 1024:,.0f}",
                  f"{ms['median']:.1f} ({ms['p10']:.1f}-{ms['p90']:.1f})")  # fmt: skip
    terminal.console(file, width).print(t)
    gone = ", ".join(f"{p} ({size / 1024:,.0f} KiB)" for p, size in data["not_loaded_by_ready"].items()) or "none"
    print(
        f"not loaded by ready: {gone}; with the stubs / eager: {Ratio.from_dict(data['ratio_to_first']).describe()}",
        file=file,
    )
    if data.get("cache_emptied") == "its files":
        print(PARTLY_COLD, file=file)
