"""headstart boot: record a serial console, read boot logs into one timeline, compare two boots."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from headstart.boot import analysis, html, timeline
from headstart.boot.record import RecordOptions, record
from headstart.commands._regex import regex
from headstart.errors import HeadstartError, UsageError

NAME = "boot"
HELP = "boot time from power-on to the first program ready: record, analyze, compare"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="boot_command", required=True, metavar="ACTION")
    rec = sub.add_parser("record", help="timestamp every line of a serial console on this host")
    rec.add_argument("--device", required=True, help="the serial device (/dev/ttyUSB0, a pty)")
    rec.add_argument("--baud", type=int, default=115200, help="default 115200")
    rec.add_argument("--start", type=regex, help="reset the time base on the first line matching this")
    rec.add_argument("--stop", type=regex, help="stop after the first line matching this")
    rec.add_argument("--timeout", type=float, help="stop after this many seconds")
    rec.add_argument("-o", "--output", type=Path, required=True, help="the log to write")
    rec.set_defaults(run=run_record)

    ana = sub.add_parser("analyze", help="one timeline from serial, dmesg and systemd logs, with advice")
    ana.add_argument("logs", nargs="+", type=Path, metavar="LOG")
    ana.add_argument("--ready", type=regex, help="the line that says the first program is ready")
    ana.add_argument("--json", action="store_true", help="print the analysis as JSON")
    ana.add_argument("-o", "--output", type=Path, help="also write an HTML report here")
    _boot_option(ana)
    ana.set_defaults(run=run_analyze)

    cmp = sub.add_parser("compare", help="two boots phase by phase; with --budget-ms, fail when B is too slow")
    cmp.add_argument("a", type=Path, metavar="A", help="the reference boot's log")
    cmp.add_argument("b", type=Path, metavar="B", help="the boot to judge")
    cmp.add_argument("--ready", type=regex, help="the line that says the first program is ready")
    cmp.add_argument(
        "--budget-ms",
        type=float,
        help="exit 1 when B takes more than this many ms longer than A to ready (without --ready, or when one "
        "boot does not reach it: to the last moment both reached)",
    )
    _boot_option(cmp)
    cmp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cmp.set_defaults(run=run_compare)


def _boot_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--boot", type=int, metavar="N", help="read the Nth boot of a log that holds several (a capture across reboots)"
    )


def run_record(args: argparse.Namespace) -> int:
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    options = RecordOptions(args.device, args.baud, args.start, args.stop, args.timeout, args.output)
    try:
        result = record(options)
    except OSError as e:
        raise HeadstartError(f"cannot write {args.output}: {e.strerror}") from e
    if result.error and result.lines == 0 and not args.output.exists():
        raise HeadstartError(result.error)
    if result.error:
        raise HeadstartError(f"{result.error}; {result.lines} lines kept in {args.output}")
    if args.start and not result.started:
        print("headstart: warning: no line matched --start; times are from the start of recording", file=sys.stderr)
    print(f"{result.lines} lines recorded in {args.output}", file=sys.stderr)
    return 0


def run_analyze(args: argparse.Namespace) -> int:
    result = analysis.analyze(args.logs, args.ready, args.boot)
    if args.output:
        try:
            args.output.write_text(html.page(result).render())
        except OSError as e:
            raise HeadstartError(f"cannot write {args.output}: {e.strerror}") from e
    if args.json:
        json.dump(analysis.as_dict(result), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        analysis.render(result, Console(file=sys.stdout, width=140))
        if args.output:
            print(f"report: {args.output}")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    a = analysis.analyze([args.a], args.ready, args.boot)
    b = analysis.analyze([args.b], args.ready, args.boot)
    if a.timeline.axis != b.timeline.axis:
        raise HeadstartError("A and B are on different clocks (one recorded on the serial line, one not)")
    end = compared_end(a, b)
    if end is None:
        raise HeadstartError(f"cannot compare: {args.a} and {args.b} reach no boot moment in common")
    moment, label, total_a, total_b = end
    diff_ms = (total_b - total_a) * 1000
    over = args.budget_ms is not None and diff_ms > args.budget_ms
    if args.json:
        data = {
            "phases": compare_rows(a, b),
            "moments": compare_moments(a, b),
            "compared_to": moment,
            "total_a_s": total_a,
            "total_b_s": total_b,
            "difference_ms": diff_ms,
        }
        json.dump(data | {"budget_ms": args.budget_ms, "over_budget": over}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _print_comparison(args, a, b, label, (total_a, total_b, diff_ms))
    if over:
        print(
            f"headstart: B is {diff_ms:,.0f} ms slower than A to {label}, over the budget of {args.budget_ms:,.0f} ms",
            file=sys.stderr,
        )
        return 1
    return 0


def compared_end(a: analysis.Analysis, b: analysis.Analysis) -> tuple[str, str, float, float] | None:
    """The first program ready when both boots show it, else the last moment both reached; without
    any, the end of the last phase (systemd-analyze's durations)."""
    common = [n for n in timeline.CHAIN if a.timeline.at(n) is not None and b.timeline.at(n) is not None]
    if common:
        name = common[-1]
        at_a, at_b = a.timeline.at(name), b.timeline.at(name)
        assert at_a is not None and at_b is not None
        label = timeline.CHAIN[name]
        if name != "ready":
            label += ", the last moment both boots reached"
        return name, label, at_a, at_b
    if a.total_s is not None and b.total_s is not None:
        return "end", "the end of the last phase", a.total_s, b.total_s
    return None


def _print_comparison(
    args: argparse.Namespace, a: analysis.Analysis, b: analysis.Analysis, label: str, totals: tuple[float, float, float]
) -> None:
    table = Table(title=f"Boot phases, s: A = {args.a}, B = {args.b}")
    for col in ("phase", "A", "B", "B - A, ms"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    for r in compare_rows(a, b):
        table.add_row(r["phase"], _s(r["a_s"]), _s(r["b_s"]), _ms(r["difference_ms"]))
    table.add_section()
    for r in compare_moments(a, b):
        table.add_row(f"reached {r['moment']}", _s(r["a_s"]), _s(r["b_s"]), _ms(r["difference_ms"]))
    table.add_section()
    table.add_row(f"to {label}", _s(totals[0]), _s(totals[1]), _ms(totals[2]))
    Console(file=sys.stdout, width=140).print(table)


def compare_rows(a: analysis.Analysis, b: analysis.Analysis) -> list[dict[str, Any]]:
    durations_a = {p.name: p.duration_s for p in a.timeline.phases}
    durations_b = {p.name: p.duration_s for p in b.timeline.phases}
    names = list(dict.fromkeys([*durations_a, *durations_b]))
    rows = []
    for name in names:
        da, db = durations_a.get(name), durations_b.get(name)
        diff = (db - da) * 1000 if da is not None and db is not None else None
        rows.append({"phase": name, "a_s": da, "b_s": db, "difference_ms": diff})
    return rows


def compare_moments(a: analysis.Analysis, b: analysis.Analysis) -> list[dict[str, Any]]:
    """The moments both boots show, when each reached them: phases split differently (a quiet kernel
    prints fewer landmarks) still line up here."""
    rows = []
    for name, label in timeline.CHAIN.items():
        at_a, at_b = a.timeline.at(name), b.timeline.at(name)
        if at_a is not None and at_b is not None:
            rows.append({"moment": label, "a_s": at_a, "b_s": at_b, "difference_ms": (at_b - at_a) * 1000})
    return rows


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:+,.1f}"


def run(args: argparse.Namespace) -> int:  # each action sets its own
    return int(args.run(args))
