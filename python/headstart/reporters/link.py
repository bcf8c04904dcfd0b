"""`headstart link` in the terminal: each object's loader work and cost, the advice that holds for
the objects you build, the rest (system libraries, and what does not hold) apart; and `link check`'s
table of exec launches before and after relinking, with the daemon's warm mode beside them."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from rich.table import Table

from headstart.reporters import terminal


def _us(value: float | None, at_most: bool = False) -> str:
    if value is None:
        return "-"
    return f"{'≤' if at_most else ''}{value:,.0f}"


def _kib(n: int) -> str:
    return f"{n / 1024:,.0f}" if n else "-"


def render(data: dict[str, Any], file: IO[str], width: int = 170) -> None:
    console = terminal.console(file, width)
    ms = data["to_main_us"]
    ph = data["phases_us"]
    loader = data["loader"]
    c = data["costs"]
    name = Path(data["program"][0]).name
    t = Table(
        title=f"{name}: what the loader does for each object by exec (time to main "
        f"{ms['median']:,.0f} µs, p10-p90 {ms['p10']:,.0f}-{ms['p90']:,.0f}, {data['runs']} launches)"
    )
    cols = (
        "object",
        "yours",
        "map µs",
        "relative",
        "RELR",
        "symbol relocs",
        "lookups before main (cross/self)",
        "after main",
        "PLT slots",
        "binding",
        "hash",
        "IRELATIVE",
        "TLS",
        "ctors",
        "dirty KiB",
        "relocate µs",
    )
    for col in cols:
        t.add_column(col, justify="left" if col in ("object", "binding", "hash") else "right")
    for r in data["objects"]:
        t.add_row(
            r["name"],
            "yes" if r["yours"] else "",
            f"{r['mapped_us']:,.0f}",
            f"{r['relative']:,}",
            "yes" if r["relr"] else "",
            f"{r['symbolic']:,}",
            f"{r['lookups_before_main']:,} ({r['lookups_cross']:,}/{r['lookups_self']:,})",
            f"{r['lookups_after_main']:,}",
            f"{r['plt_slots']:,}",
            "now" if r["bind_now"] else "lazy",
            "+".join(r["hash"]),
            str(r["irelative"] or ""),
            str(r["tls"] or ""),
            str(r["constructors"]),
            str(r["dirty_kib"]),
            _us(r["relocate_us"], not c["lookup_measured"]),
        )
    console.print(t)
    how = "measured with LD_BIND_NOW" if c["lookup_measured"] else "at most: the relocation phase over its lookups"
    write = f"{c['write_ns']:,.1f} ns" if c["lookup_measured"] else "not measured (inside the lookup's bound)"
    console.print(
        f"loader phases (under the probe, medians): load {ph['load']:,.0f} µs, relocate {ph['relocate']:,.0f} µs, "
        f"constructors {ph['constructors']:,.0f} µs. Lookups at start-up {loader['lookups']:,} "
        f"(+{loader['from_cache']:,} from the loader's cache), {loader['lookups_bind_now']:,} with LD_BIND_NOW; "
        f"after main "
        f"{loader['bindings_after_main']:,}. One lookup {c['lookup_ns']:,.0f} ns ({how}), one relocation "
        f"{write}, one page of a table {c['page_ns']:,.0f} ns."
    )
    if loader["exit_status"]:  # a status of its own (diff's 1) is no error here, but is said
        console.print(f"the program exited with status {loader['exit_status']}")
    if data["loaded_after_main"]:
        console.print(f"loaded after main: {', '.join(Path(p).name for p in data['loaded_after_main'])}")
    yours = [a for a in data["advice"] if a["yours"] and a["holds"] and a["flags"]]
    rest = [a for a in data["advice"] if a not in yours and (a["flags"] or not a["holds"] or a["yours"])]
    for title, items in (
        ("Advice for what you build", yours),
        ("Also found (system libraries, trade-offs, what does not hold, notes)", rest),
    ):
        if not items:
            continue
        a_t = Table(title=title, show_lines=True)
        for col in ("change", "object", "flags", "lookups", "relocs", "table KiB", "dirty KiB", "µs", "why (checked)"):
            a_t.add_column(
                col,
                justify="right" if col in ("lookups", "relocs", "table KiB", "dirty KiB", "µs") else "left",
                overflow="fold",
            )
        for a in items:
            s = a["saves"]
            change = a["advice"] + ("" if a["holds"] else " (not advised)")
            a_t.add_row(
                change,
                a["object"],
                " ".join(a["flags"]),
                f"{s['lookups']:,}" if s["lookups"] else "-",
                f"{s['relocations']:,}" if s["relocations"] else "-",
                _kib(s["table_bytes"]),
                _kib(s["dirty_bytes"]),
                _us(s["us"], s["us_at_most"]),
                a["why"],
            )
        console.print(a_t)
    if not yours:
        console.print("no link change of yours applies: what the loader does here is in the system's libraries")


def render_check(data: dict[str, Any], file: IO[str], width: int = 170) -> None:
    console = terminal.console(file, width)
    t = Table(
        title=f"Exec launches to main, before and after relinking ({data['runs']} of each, alternating), "
        f"and the daemon's warm mode for the same program"
    )
    for col in (
        "program",
        "changes",
        "output",
        "exec before µs (p10-p90)",
        "exec after µs (p10-p90)",
        "after/before",
        "warm, client µs",
        "warm/before",
        "lookups",
        "relative relocs",
        "objects",
        "goal",
    ):
        t.add_column(
            col, justify="left" if col in ("program", "changes", "output", "goal") else "right", overflow="fold"
        )
    for p in data["programs"]:
        if "error" in p:
            t.add_row(p["name"], "", "", "", "", "", "", "", "", "", "", p["error"])
            continue
        b, a = p["exec_before_us"], p["exec_after_us"]
        w = p.get("warm_client_us")
        cb, ca = p["counts_before"], p["counts_after"]
        t.add_row(
            p["name"],
            ", ".join(p["applied"]) or "none",
            "identical" if p["output_identical"] else "DIFFERENT",
            f"{b['median']:,.0f} ({b['p10']:,.0f}-{b['p90']:,.0f})",
            f"{a['median']:,.0f} ({a['p10']:,.0f}-{a['p90']:,.0f})",
            f"{p['ratio']:.2f}",
            f"{w['median']:,.0f}" if w else p.get("warm_error", "-"),
            f"{w['median'] / b['median']:.2f}" if w else "-",
            f"{cb['lookups']:,} → {ca['lookups']:,}",
            f"{cb['relative']:,} → {ca['relative']:,}",
            f"{cb['objects']} → {ca['objects']}",
            "reached" if p["ratio"] <= 0.70 else "not reached",
        )
    console.print(t)
    console.print(
        f"goal: exec time to main cut by at least 30% by link changes alone (after/before ≤ 0.70). "
        f"Relinked in {data['folder']}."
    )
