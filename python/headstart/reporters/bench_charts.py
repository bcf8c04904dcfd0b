"""The charts of a benchmark (`headstart bench`, its bench.json): launch time and relocations per
mode normalized to exec, memory at main, preload time against libraries, repeated launches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from headstart.benchmark.timing import LAUNCHERS, MODE_NAMES, daemon_mode, mode_title
from headstart.reporters import legend
from headstart.reporters.figures import new_figure, tab20

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DAEMON_MODES = ("exec", "preload", "warm", "pool", "learned", "warm-up", "prepared")

# One colour per mode, the same in every chart: exec grey; each daemon mode a hue of tab20, dark
# through headstart-run and light through the client library (11 series; matplotlib's own cycle has
# 10 colours, so the 11th took exec's). Charts by daemon mode alone take the dark one.
EXEC_COLOUR = "#4d4d4d"


def mode_colour(key: str) -> str:
    """A mode through a launcher ("run@learned") or exec."""
    if key == "exec":
        return EXEC_COLOUR
    launcher, _, mode = key.partition("@")
    return tab20()[2 * list(MODE_NAMES).index(mode) + list(LAUNCHERS).index(launcher)]


def daemon_mode_colour(mode: str) -> str:
    return EXEC_COLOUR if mode == "exec" else tab20()[2 * list(MODE_NAMES).index(mode)]


def _grouped_bars(ax: Any, groups: list[str], series: dict[str, tuple[str, list[float | None]]]) -> None:
    """Bars per group, one per series: name -> (colour, a value per group)."""
    width = 0.8 / max(len(series), 1)
    for i, (name, (colour, values)) in enumerate(series.items()):
        xs = [g + i * width - 0.4 + width / 2 for g in range(len(groups))]
        ax.bar(xs, [v if v is not None else 0 for v in values], width, label=name, color=colour)
    ax.set_xticks(range(len(groups)), groups, rotation=20, ha="right")


def launch_ratios(data: dict[str, Any], metric: str = "ratio_to_exec") -> Figure | None:
    """Each mode's median time to main (or to ready, or to exit) over exec's, per program; 1 is exec.
    Programs without the number in any mode (a GUI program stopped once its window shows has no
    exit) are left out, not drawn as an empty slot; None when no program has it."""
    programs = [p for p in data["programs"] if any(p["modes"][k][metric] is not None for k in data["modes"])]
    if not programs:
        return None
    fig = new_figure(figsize=(10, 4.5))
    ax = fig.subplots()
    series = {mode_title(k): (mode_colour(k), [p["modes"][k][metric] for p in programs]) for k in data["modes"]}
    _grouped_bars(ax, [p["program"] for p in programs], series)
    ax.axhline(1.0, color="#333", linewidth=0.8)
    ax.set_ylabel("time / exec's time (median)")
    legend.outside(ax, 7)
    return fig


def relocations(data: dict[str, Any]) -> Figure:
    """Symbol lookups and relative relocations left to the launched process, over exec's."""
    programs = data["programs"]
    modes = [m for m in DAEMON_MODES if any(daemon_mode(k) == m for k in data["modes"])]
    fig = new_figure(figsize=(10, 4.5))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, kind, title in ((axes[0], "symbolic", "symbol lookups"), (axes[1], "relative", "relative relocations")):
        series: dict[str, tuple[str, list[float | None]]] = {}
        for mode in modes:
            key = next(k for k in data["modes"] if daemon_mode(k) == mode)
            series[mode] = (daemon_mode_colour(mode), [_over_exec(p, key, kind) for p in programs])
        _grouped_bars(ax, [p["program"] for p in programs], series)
        ax.set_title(title)
    axes[0].set_ylabel("count / exec's count")
    legend.outside(axes[1], 7)
    return fig


def _over_exec(program: dict[str, Any], key: str, kind: str) -> float | None:
    base = program["modes"]["exec"]["relocations_in_child"]
    this = program["modes"][key]["relocations_in_child"]
    if not base or this is None or not base[kind]:
        return None
    return this[kind] / base[kind]


def memory(data: dict[str, Any]) -> Figure:
    """PSS and private dirty of the launched program as it enters main, per mode."""
    programs = data["programs"]
    modes = [m for m in DAEMON_MODES if any(daemon_mode(k) == m for k in data["modes"])]
    fig = new_figure(figsize=(10, 4.5))
    axes = fig.subplots(1, 2)
    for ax, field, title in ((axes[0], "pss_kb", "PSS"), (axes[1], "private_dirty_kb", "private dirty")):
        series: dict[str, tuple[str, list[float | None]]] = {}
        for mode in modes:
            key = next(k for k in data["modes"] if daemon_mode(k) == mode)
            values = [(p["modes"][key]["memory_at_main"] or {}).get(field) for p in programs]
            series[mode] = (daemon_mode_colour(mode), values)
        _grouped_bars(ax, [p["program"] for p in programs], series)
        ax.set_title(title)
        ax.set_ylabel("KiB")
    legend.outside(axes[1], 7)
    return fig


def preload_scaling(data: dict[str, Any]) -> Figure:
    """The daemon's preload time against the number of libraries, median with p10 to p90."""
    points = [p for p in data["preload_scaling"] if p["time_us"]]
    fig = new_figure(figsize=(7, 4))
    ax = fig.subplots()
    xs = [p["libraries"] for p in points]
    ax.plot(xs, [p["time_us"]["median"] / 1000 for p in points], marker="o", label="median")
    ax.fill_between(
        xs,
        [p["time_us"]["p10"] / 1000 for p in points],
        [p["time_us"]["p90"] / 1000 for p in points],
        alpha=0.25,
        label="p10 to p90",
    )
    ax.set_xlabel("libraries preloaded")
    ax.set_ylabel("ms")
    ax.set_ylim(bottom=0)
    ax.legend()
    return fig


def repeated(data: dict[str, Any]) -> Figure:
    """Total time of N launches of one program, daemon start included."""
    r = data["repeated_launches"]
    fig = new_figure(figsize=(7, 4))
    ax = fig.subplots()
    for key, totals in r["total_ms"].items():
        ax.plot(range(1, len(totals) + 1), totals, label=mode_title(key), color=mode_colour(key))
    ax.set_xlabel("launches")
    ax.set_ylabel("total ms")
    ax.set_title(r["program"])
    legend.outside(ax, 7)
    return fig
