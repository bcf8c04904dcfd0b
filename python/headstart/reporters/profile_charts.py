"""The charts of `headstart report` for profiles (`headstart profile -o`): a waterfall of each launch,
the phases and warm against cold side by side, and the pages touched per file."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from headstart.profiling.timeline import PHASES
from headstart.reporters import legend
from headstart.reporters.figures import new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PHASE_COLOURS = {"exec": "#9e9e9e", "load": "#4e79a7", "relocate": "#f28e2b", "constructors": "#59a14f"}
TOP_FILES = 25


def label(profile: dict[str, Any]) -> str:
    return " ".join(profile["program"])[:60]


def _median(s: dict[str, float] | None) -> float:
    return 0.0 if s is None else s["median"]


def waterfall(profile: dict[str, Any]) -> Figure:
    """Each object as a bar from when the loader began finding it to when it was mapped, over the
    phases of the warm launches (medians)."""
    libs = profile["libraries"]
    fig = new_figure(figsize=(10, 1.5 + 0.18 * len(libs)))
    ax = fig.subplots()
    edge = 0.0
    for phase in PHASES:
        width = _median(profile["warm"]["phases_us"][phase])
        ax.axvspan(edge, edge + width, color=PHASE_COLOURS[phase], alpha=0.15, label=phase)
        edge += width
    for row, lib in enumerate(libs):
        end, width = lib["mapped_at_us"] or 0.0, lib["map_us"] or 0.0
        ax.barh(row, width, left=end - width, color=PHASE_COLOURS["load"])
    ax.set_yticks(range(len(libs)), [lib["name"] for lib in libs], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("µs from the launch request (warm, medians)")
    legend.outside(ax)
    ax.set_title(f"Launch waterfall: {label(profile)}")
    return fig


def phases(profiles: list[dict[str, Any]]) -> Figure:
    """Stacked phases to main, warm and cold, one bar per trace and kind."""
    rows = [(f"{label(p)} ({kind})", p[kind]) for p in profiles for kind in ("warm", "cold") if p[kind]]
    fig = new_figure(figsize=(10, 1.2 + 0.5 * len(rows)))
    ax = fig.subplots()
    for i, (_, agg) in enumerate(rows):
        left = 0.0
        for phase in PHASES:
            width = _median(agg["phases_us"][phase])
            ax.barh(i, width, left=left, color=PHASE_COLOURS[phase], label=phase if i == 0 else None)
            left += width
    ax.set_yticks(range(len(rows)), [name for name, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("µs to main (medians)")
    legend.outside(ax)
    ax.set_title("Phases of the launch")
    return fig


def warm_cold(profiles: list[dict[str, Any]]) -> Figure:
    """Time to main and to ready, warm beside cold, per trace."""
    fig = new_figure(figsize=(10, 1.5 + 0.6 * len(profiles)))
    ax = fig.subplots()
    bars = [("warm", "to_main_us", "#4e79a7"), ("warm", "to_ready_us", "#a0cbe8"),
            ("cold", "to_main_us", "#e15759"), ("cold", "to_ready_us", "#ff9d9a")]  # fmt: skip
    height = 0.8 / len(bars)
    for j, (kind, key, colour) in enumerate(bars):
        values = [_median(p[kind][key]) if p[kind] else 0.0 for p in profiles]
        ax.barh([i + j * height for i in range(len(profiles))], values, height, color=colour,
                label=f"{kind}, {key.removesuffix('_us').replace('_', ' ')}")  # fmt: skip
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(profiles))], [label(p) for p in profiles], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("µs (medians)")
    legend.outside(ax)
    ax.set_title("Warm and cold launches")
    return fig


def pages(profile: dict[str, Any]) -> Figure | None:
    """Per file, in cold launches: its size in pages, pages resident after the launch, pages mapped."""
    rows = [f for f in profile["files"] if f["cold"]]
    if not rows:
        return None
    rows = sorted(rows, key=lambda f: -(f["cold"]["resident_after_launch"] or 0))[:TOP_FILES]
    fig = new_figure(figsize=(10, 1.5 + 0.25 * len(rows)))
    ax = fig.subplots()
    y = range(len(rows))
    ax.barh(y, [f["pages"] for f in rows], color="#dddddd", label="pages in the file")
    ax.barh(y, [f["cold"]["resident_after_launch"] or 0 for f in rows], color="#f28e2b", height=0.6,
            label="in the page cache after the launch (touched + readahead)")  # fmt: skip
    ax.barh(y, [f["cold"]["mapped"] or 0 for f in rows], color="#4e79a7", height=0.3,
            label="mapped in the program at ready (touched + fault-around)")  # fmt: skip
    ax.set_yticks(list(y), [f["path"].rsplit("/", 1)[-1] for f in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("symlog")
    ax.set_xlabel("pages (4 KiB)")
    legend.outside(ax)
    ax.set_title(f"Pages per file in a cold launch: {label(profile)}")
    return fig
