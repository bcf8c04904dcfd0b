"""The device bench's tables (terminal) and its one HTML page: each arm's boot to the home screen's
first frame side by side, phase by phase, what the advice cut, and the second app's launches."""

from __future__ import annotations

from typing import Any

from headstart.boot.advice import INITRAMFS_KINDS
from headstart.reporters.page import Page
from matplotlib.figure import Figure
from rich.console import Console
from rich.table import Table

COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]


def _ms(s: dict[str, float] | None, scale: float = 1.0, unit: str = "ms") -> str:
    if not s:
        return "-"
    return f"{s['median'] * scale:,.0f} {unit} ({s['p10'] * scale:,.0f}-{s['p90'] * scale:,.0f})"


BOOT_HEADERS = ["arm", "boots", "median (p10-p90)", "ratio to stock", "home screen on the display", "failed units"]


def boot_rows(data: dict[str, Any]) -> list[list[str]]:
    summary = data["summary"]
    stock = summary.get("stock", {}).get("home_frame_s", {}).get("median")
    rows = []
    for arm, s in summary.items():
        median = s["home_frame_s"]["median"]
        ratio = f"{median / stock:.2f}" if stock else "-"
        shown = s.get("home_screen_shown")  # None or absent: not read (runs from before it was)
        on_screen = "-" if shown is None else f"{shown} of {s['boots']}"
        failed = s.get("boots_with_failed_units")
        failed_in = "-" if failed is None else f"in {failed} of {s['boots']}" if failed else "none"
        rows.append([arm, str(s["boots"]), _ms(s["home_frame_s"], 1000), ratio, on_screen, failed_in])
    return rows


def phase_rows(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    arms = list(data["summary"])
    names: list[str] = []
    for s in data["summary"].values():
        names += [n for n in s["phases_s"] if n not in names]
    rows = [[n] + [_ms(data["summary"][a]["phases_s"].get(n), 1000) for a in arms] for n in names]
    return ["phase (median, p10-p90)", *arms], rows


def app_rows(data: dict[str, Any]) -> list[list[str]]:
    rows = []
    for arm, s in data["summary"].items():
        app = s["app_ms"]
        for when in ("cold", "warm"):
            served, exec_ = app.get(f"{when} served"), app.get(f"{when} exec")
            ratio = f"{served['median'] / exec_['median']:.2f}" if served and exec_ else "-"
            rows.append([arm, when, _ms(exec_), _ms(served), ratio, _waits(s.get("app_waits_s", {}), when)])
    return rows


APP_HEADERS = ["arm", "launch", "exec", "served", "served / exec", "waited for a child starting"]


def _waits(waits: dict[str, list[float]], when: str) -> str:
    """How many launches waited for the daemon's prepared child to finish starting, and the longest
    wait: a launch measured while one starts would share the CPUs with its toolkit's start."""
    mine = [w for key, ws in waits.items() if key.startswith(when) for w in ws]
    late = [w for w in mine if w >= 1.0]
    return f"{len(late)} of {len(mine)}, up to {max(late):.0f} s" if late else f"0 of {len(mine)}" if mine else "-"


CPU_UNITS = 10  # the units that used the most CPU in any arm


def cpu_rows(data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """CPU seconds by unit until the home screen's frame, each arm a column, the busiest first."""
    summary = data["summary"]
    used = {a: s.get("cpu_s", {}) for a, s in summary.items()}
    names = sorted({n for per_arm in used.values() for n in per_arm}, key=lambda n: -_most(used, n))[:CPU_UNITS]
    rows = [[n] + [_seconds(used[a].get(n)) for a in summary] for n in names]
    busy = [s.get("cpu_busy_share") for s in summary.values()]
    rows.append(["the CPUs busy, share of the time"] + [_ms(b, 100, "%") for b in busy])
    return ["unit (CPU s, median, p10-p90)", *summary], rows


def _most(used: dict[str, dict[str, Any]], name: str) -> float:
    return max(per_arm[name]["median"] for per_arm in used.values() if name in per_arm)


def _seconds(s: dict[str, float] | None) -> str:
    return f"{s['median']:.1f} ({s['p10']:.1f}-{s['p90']:.1f})" if s else "-"


def print_tables(data: dict[str, Any]) -> None:
    console = Console()
    title = f"Power-on to the home screen's first frame ({data['arch']}, {data['accelerator']})"
    console.print(_table(title, BOOT_HEADERS, boot_rows(data)))
    console.print(_table("Phases", *phase_rows(data)))
    console.print(_table("CPU time until the home screen's frame, by unit", *cpu_rows(data)))
    console.print(_table("The second app, open to first frame", APP_HEADERS, app_rows(data)))


def _table(title: str, headers: list[str], rows: list[list[str]]) -> Table:
    t = Table(title=title)
    for h in headers:
        t.add_column(h)
    for row in rows:
        t.add_row(*row)
    return t


def _chart(data: dict[str, Any]) -> Figure:
    """One horizontal bar per arm, its phases' medians laid end to end from power-on."""
    arms = list(data["summary"])
    names: list[str] = []
    for a in arms:
        names += [n for n in data["summary"][a]["phases_s"] if n not in names]
    fig = Figure(figsize=(10, 1.2 + 0.6 * len(arms)))
    ax = fig.add_subplot()
    left = [0.0] * len(arms)
    for k, name in enumerate(names):
        widths = [(data["summary"][a]["phases_s"].get(name) or {"median": 0.0})["median"] for a in arms]
        ax.barh(range(len(arms)), widths, left=left, color=COLOURS[k % len(COLOURS)], label=name)
        left = [x + w for x, w in zip(left, widths, strict=True)]
    ax.set_yticks(range(len(arms)), arms)
    ax.invert_yaxis()
    ax.set_xlabel("seconds from power-on (medians)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    return fig


def _board_args(data: dict[str, Any]) -> str:
    args = data.get("board_args")
    return f" Every arm booted with {' '.join(args)}, for the emulator (docs/device.md)." if args else ""


def page(data: dict[str, Any]) -> str:
    p = Page(f"The virtual device: power-on to the home screen ({data['arch']}, QEMU {data['accelerator']})")
    p.text(
        "Each arm booted alternately; times are the host's stamps of serial console lines, from the moment "
        "QEMU's CPUs started. Medians with p10-p90." + _board_args(data)
    )
    p.heading("Power-on to the home screen's first frame")
    p.table(BOOT_HEADERS, boot_rows(data))
    if data["summary"]:
        p.chart(_chart(data), "Where the time went: each arm's phases (medians), end to end")
    headers, rows = phase_rows(data)
    p.table(headers, rows)
    p.heading("Where the CPUs went until the home screen's frame")
    p.text(
        "CPU time of each unit (systemctl show CPUUsageNSec, read at the home screen's frame; a unit that had "
        "ended by then is not counted) and how much of the time the CPUs were busy (/proc/stat)."
    )
    p.table(*cpu_rows(data))
    p.heading("The advice, and what it cut")
    advised = data.get("analysis_boot")
    booted = data.get("advice_initramfs", "")
    if advised:
        p.text(
            "The advice comes from one boot of the headstart image with each initcall timed (initcall_debug, "
            f"every kernel line on the console; its home screen's frame at {advised['home_frame_s']:.2f} s), "
            "which no arm's timed boots have."
        )
        p.table(
            ["advice (from the analysis boot)", "costs there", "applied as"],
            [
                [r["message"], f"{r['seconds'] * 1000:,.0f} ms" if r["seconds"] else "-", _applied_as(r, booted)]
                for r in advised["analysis"]["recommendations"]
            ],
        )
    p.table(["phase", "headstart + advice against headstart (medians)"], _cut_rows(data))
    p.heading("The second app: opened from the home screen, to its first frame")
    p.table(APP_HEADERS, app_rows(data))
    return p.render()


def _applied_as(recommendation: dict[str, Any], booted: str) -> str:
    """How arm 3 applied it: of the initramfs advised, it boots the one that does most."""
    kind = recommendation.get("initramfs")
    initramfs = [f"the device's {INITRAMFS_KINDS[kind]}"] if kind else []
    if kind and kind != booted and booted in INITRAMFS_KINDS:
        initramfs = [f"not applied: arm 3 booted the device's {INITRAMFS_KINDS[booted]}"]
    drop_ins = [f"the drop-in {path}" for path in recommendation.get("drop_ins", {})]
    return " ".join(recommendation["kernel_args"] + initramfs + drop_ins) or "-"


def _cut_rows(data: dict[str, Any]) -> list[list[str]]:
    s = data["summary"]
    if "headstart" not in s or "headstart+advice" not in s:
        return []
    a, b = s["headstart"]["phases_s"], s["headstart+advice"]["phases_s"]
    rows = []
    for name in a:
        if name in b:
            rows.append([name, f"{(b[name]['median'] - a[name]['median']) * 1000:+,.0f} ms with the advice"])
    return rows
