"""`headstart bench`'s results as tables, built from the JSON form (bench.json) so that the terminal
and the HTML report (bench_page.py) show the same cells: the paper's Table 3 normalized to exec,
then the details."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from rich.console import Console
from rich.table import Table as RichTable

from headstart.benchmark.cpu_use import NOISY_SHARE
from headstart.benchmark.timing import MODE_NAMES, daemon_mode, mode_title
from headstart.reporters import terminal

REPEATED_AT = (1, 10, 50, 100)


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]
    sections: tuple[int, ...] = ()  # a rule before these rows


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _median(s: dict[str, float] | None, scale: float = 1.0, digits: int = 0) -> str:
    return _num(s["median"] / scale if s else None, digits)


def _ratio_cell(mode: dict[str, Any], field: str = "ratio_to_exec") -> str:
    if mode["status"] == "unavailable":
        return "unavailable"
    ratio = mode[field]
    if ratio is None:
        return "failed"
    return f"{ratio:.2f}" + {"ok": "", "preload": " (in preload mode)"}.get(mode["status"], " (failures)")


def _ratio_table(
    data: dict[str, Any],
    title: str,
    leading: dict[str, Callable[[dict[str, Any]], str]],
    ratio_field: str,
    mean_field: str,
) -> Table:
    """One row per program: its `leading` columns, then each daemon mode's ratio to exec; a row of
    the modes' means last."""
    keys = data["modes"][1:]
    rows = [
        [
            p["program"],
            *(cell(p) for cell in leading.values()),
            *(_ratio_cell(p["modes"][k], ratio_field) for k in keys),
        ]
        for p in data["programs"]
    ]
    rows.append(["mean", *([""] * len(leading)), *(_num(data[mean_field][k], 2) for k in keys)])
    return Table(title, ["program", *leading, *(mode_title(k) for k in keys)], rows, (len(rows) - 1,))


def ready_normalized(data: dict[str, Any]) -> Table:
    """What a user waits for: time to ready (a window shown, a ready line, or exit) against exec's,
    beside the share of exec's that comes after main, which no faster way to main takes."""
    return _ratio_table(
        data,
        "Launch time to ready, normalized to exec (exec in ms; medians of alternating launches; "
        "after main: exec's share from main to ready)",
        {
            "ready at": lambda p: p["ready"],
            "exec ms": lambda p: _median(p["modes"]["exec"]["to_ready_us"], 1000, 1),
            "after main": lambda p: _num(p["after_main_share_of_exec"], 2),
        },
        "ready_ratio_to_exec",
        "mean_ready_ratio_to_exec",
    )


def after_main(data: dict[str, Any]) -> Table:
    """Main to ready, launch by launch, against exec's: 1 is the program's own work after main as
    exec does it; below 1 is what a daemon took over (learned preload, warm-ups); above, what the
    served child pays more (its daemon's work at the same time, or pages shared with its zygote)."""
    return _ratio_table(
        data,
        "Time from main to ready, normalized to exec (exec in ms; below 1: work after main a daemon took over)",
        {"exec ms": lambda p: _median(p["modes"]["exec"]["after_main_us"], 1000, 1)},
        "after_main_ratio_to_exec",
        "mean_after_main_ratio_to_exec",
    )


def normalized(data: dict[str, Any]) -> Table:
    """One row per program: exec's time to main, then each mode's as a fraction of it."""
    return _ratio_table(
        data,
        "Launch time to main, normalized to exec (exec in µs; medians of alternating launches)",
        {"exec µs": lambda p: _median(p["modes"]["exec"]["to_main_us"])},
        "ratio_to_exec",
        "mean_ratio_to_exec",
    )


def details(data: dict[str, Any]) -> Table:
    rows, sections = [], []
    for p in data["programs"]:
        sections.append(len(rows))
        for key, m in p["modes"].items():
            rel, mem, main, ready = m["relocations_in_child"], m["memory_at_main"], m["to_main_us"], m["to_ready_us"]
            rows.append(
                [
                    p["program"],
                    mode_title(key) if m["status"] == "ok" else f"{mode_title(key)} ({m['status']})",
                    _median(ready, 1000, 1),
                    "-" if ready is None else f"{ready['p10'] / 1000:,.1f}-{ready['p90'] / 1000:,.1f}",
                    _median(main),
                    "-" if main is None else f"{main['p10']:,.0f}-{main['p90']:,.0f}",
                    _median(m["to_exit_us"]),
                    _num(rel["symbolic"] if rel else None),
                    _num(rel["relative"] if rel else None),
                    _num(mem["pss_kb"] if mem else None),
                    _num(mem["private_dirty_kb"] if mem else None),
                ]
            )
    headers = [
        "program",
        "mode",
        "to ready ms",
        "ready p10-p90",
        "to main µs",
        "p10-p90",
        "to exit µs",
        "lookups",
        "relative",
        "PSS KiB",
        "priv. dirty KiB",
    ]
    title = "Per program and mode: time to ready, main and exit, relocations in the child, memory at main"
    return Table(title, headers, rows, tuple(sections[1:]))


def daemon_memory(data: dict[str, Any]) -> Table | None:
    """What each daemon holds once its programs have run: the zygote and its waiting children."""
    modes = [m for m in dict.fromkeys(daemon_mode(k) for k in data["modes"]) if m != "exec"]
    rows = []
    for p in data["programs"]:
        mem = p["daemon_memory"]
        cells = [f"{mem[m]['zygote_pss_kb']:,.0f} + {mem[m]['pool_pss_kb']:,.0f}" if m in mem else "-" for m in modes]
        rows.append([p["program"], *cells])
    if not rows:
        return None
    title = "The daemon's memory after the run: PSS of the zygote + its waiting children, KiB"
    return Table(title, ["program", *(MODE_NAMES[m] for m in modes)], rows)


def preload(data: dict[str, Any]) -> Table:
    rows = []
    for point in data["preload_scaling"]:
        t, n = point["time_us"], point["libraries"]
        if t is None:
            rows.append([str(n), point["error"] or "-", "", ""])
        else:
            spread = f"{t['p10'] / 1000:,.1f}-{t['p90'] / 1000:,.1f}"
            rows.append([str(n), _median(t, 1000, 1), spread, _num(t["median"] / n)])
    title = "Preload time as the number of libraries grows (the daemon's dlopen of each, every symbol bound)"
    return Table(title, ["libraries", "ms", "p10-p90", "µs per library"], rows)


def repeated(data: dict[str, Any]) -> Table | None:
    r = data["repeated_launches"]
    if r is None:
        return None
    rows = []
    for key in data["modes"]:
        why = r["errors"].get(key) or r["errors"].get(daemon_mode(key))
        if why:
            rows.append([mode_title(key), why, *("" for _ in REPEATED_AT)])
            continue
        if key not in r["total_ms"]:
            continue  # not a mode repeated launches compare (a trained daemon)
        totals = r["total_ms"][key]
        at = [_num(totals[n - 1] if len(totals) >= n else None, 1) for n in REPEATED_AT]
        rows.append([mode_title(key), _num(r["startup_ms"].get(daemon_mode(key)), 1), *at])
    title = f"Total ms of N launches of {r['program']} (a daemon mode includes starting its daemon)"
    return Table(title, ["mode", "daemon start", *(f"N={n}" for n in REPEATED_AT)], rows)


def all_tables(data: dict[str, Any]) -> list[Table]:
    tables = (
        ready_normalized(data),
        after_main(data),
        normalized(data),
        details(data),
        daemon_memory(data),
        preload(data),
        repeated(data),
    )
    return [t for t in tables if t is not None]


def loader_notes(data: dict[str, Any]) -> list[str]:
    """The loader's own counts for one exec, to check the counts from the ELF files against."""
    lines = []
    for p in data["programs"]:
        loader = p["loader_statistics_exec"]
        if loader:
            lines.append(
                f"{p['program']}: the loader itself counts {loader.get('relocations', 0):,} lookups "
                f"(+{loader.get('from_cache', 0):,} from its cache) and {loader.get('relative', 0):,} "
                "relative relocations for one exec"
            )
    return lines


def prepared_notes(data: dict[str, Any]) -> list[str]:
    """How many of the prepared mode's timed launches a child prepared ahead took (the first of a run,
    and any unlike the one before, never are; a program headstartd does not prepare, none). The
    daemon's own count (--status) goes on with the memory launches after them."""
    lines = []
    for p in data["programs"]:
        taken = p.get("prepared_launches")
        asked = p["runs"] * sum(1 for k in p["modes"] if daemon_mode(k) == "prepared")
        if taken is not None and asked:
            # A refused or failed program's reason: it was never prepared. A retrying one's is passing:
            # the bench's own proxy to the compositor goes away after each program's launches.
            state = p.get("prepared_state") or ""
            word, why = state.split(" ")[0], state.partition(" -- ")[2]
            said = f" ({word}: {why})" if why and word in ("refused", "failed") else ""
            took = f"{taken} of {asked} timed launches of the prepared mode took a child prepared ahead"
            lines.append(f"{p['program']}: {took}{said}")
    return lines


def cpu_note(data: dict[str, Any]) -> tuple[str, bool] | None:
    """How busy the CPUs were over the run, and whether other work made small programs' ratios
    noise (True: say it as a warning); None for a run before it was recorded."""
    use = data.get("cpu_use")
    if not use:
        return None
    line = (
        f"the {use['cpus']} CPUs were busy {use['busy_share']:.0%} of the run's {use['elapsed_s']:,.0f} s: "
        f"the bench and what it started {use['own_share']:.0%}, other work {use['other_share']:.0%}"
    )
    noisy = use["other_share"] > NOISY_SHARE
    if noisy:
        line += (
            "; with that much other work, the ratios of programs that take a few milliseconds are noise "
            "either way (docs/measuring.md): run it again on a quiet machine"
        )
    return line, noisy


def problems(data: dict[str, Any]) -> list[str]:
    """Launches that were not served, errors, programs missing: what makes the run incomplete."""
    lines = []
    for p in data["programs"]:
        for key, m in p["modes"].items():  # launches not served are among its modes' errors
            lines += [f"{p['program']} ({mode_title(key)}): {e}" for e in m["errors"]]
        lines += [f"{p['program']} ({mode}): memory not measured: {e}" for mode, e in p["memory_errors"].items()]
    lines += [f"{name}: missing: {why}" for name, why in data["missing_programs"].items()]
    return lines


LEGEND = (
    "lookups, relative: relocations the launched process does itself before main, counted from the ELF files "
    "each mode loads in it. PSS, private dirty: the launched program as it enters main (the same daemon child "
    "whichever launcher asked). docs/measuring.md says how each is measured."
)


def cold_tables(data: dict[str, Any]) -> list[Table]:
    """`bench --cold`: each arm's time to ready and to main against warm, and what was locked."""
    arms = data["arms"]
    tables = []
    for what, title in (("to_ready", "ready"), ("to_main", "main")):
        rows = []
        for p in data["programs"]:
            for key, by_arm in p["modes"].items():
                warm = by_arm["warm"][f"{what}_us"]
                cells = [f"{_median(by_arm[a][f'{what}_us'], 1000, 1)} ({_num(by_arm[a][f'{what}_ratio_to_warm'], 2)}x)"
                         for a in arms if a != "warm"]  # fmt: skip
                rows.append([p["program"], mode_title(key), _median(warm, 1000, 1), *cells])
        tables.append(
            Table(
                f"Cold launches, time to {title}: median ms (ratio to warm), {data['runs']} rounds, "
                f"cache emptied by {data['emptied_by']}",
                ["program", "mode", "warm ms", *(a for a in arms if a != "warm")],
                rows,
            )
        )
    mib = 1 << 20
    locked = [f"{arm} {n / mib:.1f} MiB" for arm, n in data["locked_bytes"].items()]
    rows = [
        ["the programs' files (what vmtouch -l locks)", f"{data['closure_bytes'] / mib:.1f} MiB"],
        ["the pin plan", f"{data['plan_bytes'] / mib:.1f} MiB"],
        ["locked while timed", ", ".join(locked) or "-"],
    ]
    tables.append(Table("Memory locked", ["what", "bytes"], rows))
    return tables


def render(data: dict[str, Any], file: IO[str], width: int = 160) -> None:
    console = terminal.console(file, width)
    if str(data.get("schema", "")).startswith("headstart-bench-cold"):
        return _print(cold_tables(data), console)
    _print(all_tables(data), console)
    console.print(LEGEND)
    if chosen := data.get("toolkit_settings"):
        settings = ", ".join(f"{k}={v}" for k, v in chosen.items())
        console.print(f"every launch, in every mode, ran with these toolkit settings: {settings}", highlight=False)
    for line in loader_notes(data):
        console.print(line)
    for line in prepared_notes(data):
        console.print(line)
    if note := cpu_note(data):
        console.print(note[0], style="bold yellow" if note[1] else None, highlight=False)
    for line in problems(data):
        console.print(line, style="bold red", markup=False)


def _print(tables: list[Table], console: Console) -> None:
    for t in tables:
        table = RichTable(title=t.title)
        for i, h in enumerate(t.headers):
            table.add_column(h.replace(", ", "\n"), justify="left" if i == 0 or h == "mode" else "right")
        for i, row in enumerate(t.rows):
            if i in t.sections:
                table.add_section()
            table.add_row(*row)
        console.print(table)
