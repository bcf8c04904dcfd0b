"""headstart boot: record a serial console, read boot logs into one timeline, compare two boots."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from headstart.boot import analysis, timeline
from headstart.boot.compare import compare
from headstart.boot.record import RecordOptions, record
from headstart.commands._regex import finite_number, regex, seconds, whole_number
from headstart.errors import HeadstartError, UsageError
from headstart.reporters import boot, boot_page, json_out, trace

NAME = "boot"
HELP = "boot time from power-on to the first program ready: record, analyze, compare"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="boot_command", required=True, metavar="ACTION")
    rec = sub.add_parser("record", help="timestamp every line of a serial console on this host")
    rec.add_argument("--device", required=True, help="the serial device (/dev/ttyUSB0, a pty)")
    rec.add_argument("--baud", type=whole_number(50, 4_000_000), default=115200, help="default 115200")
    rec.add_argument("--start", type=regex, help="reset the time base on the first line matching this")
    rec.add_argument("--stop", type=regex, help="stop after the first line matching this")
    rec.add_argument("--timeout", type=seconds, help="stop after this many seconds")
    rec.add_argument("-o", "--output", type=Path, required=True, help="the log to write")
    rec.set_defaults(run=run_record)

    ana = sub.add_parser("analyze", help="one timeline from serial, dmesg and systemd logs, with advice")
    ana.add_argument("logs", nargs="+", type=Path, metavar="LOG")
    ana.add_argument("--ready", type=regex, help="the line that says the first program is ready")
    _mark_option(ana)
    ana.add_argument("--json", action="store_true", help="print the analysis as JSON")
    ana.add_argument("-o", "--output", type=Path, help="also write an HTML report here")
    ana.add_argument(
        "--kiosk",
        action="store_true",
        help="the device shows one program and runs nothing else a user sees: the advice that takes away units, "
        "systemd's generators and coldplug events, and keeps the journal in memory, comes with the arguments and files "
        "that apply it",
    )
    ana.add_argument(
        "--trace",
        type=Path,
        metavar="FILE",
        help="also write the boot as a trace for Perfetto (ui.perfetto.dev) or chrome://tracing: Chrome's JSON "
        "trace format, phases, initcalls and systemd units on one timeline (docs/traces.md)",
    )
    _boot_option(ana)
    ana.set_defaults(run=run_analyze)

    cmp = sub.add_parser("compare", help="two boots phase by phase; with --budget-ms, fail when B is too slow")
    cmp.add_argument("a", type=Path, metavar="A", help="the reference boot's log")
    cmp.add_argument("b", type=Path, metavar="B", help="the boot to judge")
    cmp.add_argument("--ready", type=regex, help="the line that says the first program is ready")
    _mark_option(cmp)
    cmp.add_argument(
        "--budget-ms",
        type=finite_number,
        help="exit 1 when B takes more than this many ms longer than A to ready, or never reaches it (without "
        "--ready, or when A does not reach it: to the last moment both reached)",
    )
    _boot_option(cmp)
    for which in ("a", "b"):
        cmp.add_argument(
            f"--boot-{which}",
            type=int,
            metavar="N",
            help=f"read the Nth boot of {which.upper()}'s log (overrides --boot)",
        )
    cmp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cmp.set_defaults(run=run_compare)


def _mark_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mark",
        type=_mark,
        action="append",
        default=[],
        metavar="NAME=REGEX",
        help="a moment of your own between init and ready (the compositor up), at the first line matching "
        "REGEX; repeat in boot order: each splits the phase before ready (a root remount by init seen after "
        "it is left out)",
    )


def _mark(text: str) -> tuple[str, re.Pattern[str]]:
    name, sep, pattern = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=REGEX")
    if name.strip() in timeline.CHAIN:
        raise argparse.ArgumentTypeError(f"{name!r} names a moment of the boot already; choose another name")
    return name.strip(), regex(pattern)


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
    if not result.written:
        # The log was never opened: a file already there is an earlier recording, not "0 lines kept".
        raise HeadstartError(result.error or "nothing recorded")
    if result.error:
        raise HeadstartError(f"{result.error}; {result.lines} lines kept in {args.output}")
    if args.start and not result.started:
        print("headstart: warning: no line matched --start; times are from the start of recording", file=sys.stderr)
    print(f"{result.lines} lines recorded in {args.output}", file=sys.stderr)
    return 0


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise HeadstartError(f"cannot write {path}: {e.strerror}") from e


def run_analyze(args: argparse.Namespace) -> int:
    result = analysis.analyze(args.logs, args.ready, args.boot, args.mark, kiosk=args.kiosk)
    if args.output:
        _write(args.output, boot_page.page(result).render())
    if args.trace:
        _write(args.trace, trace.text(trace.boot_trace(result)))
    if args.json:
        json_out.write(analysis.as_dict(result), sys.stdout)
    else:
        boot.render(result, sys.stdout)
        if args.output:
            print(f"report: {args.output}")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    # `is None`, not `or`: --boot-a 0 was taken as not given, and --boot's boot read instead.
    a = analysis.analyze([args.a], args.ready, args.boot if args.boot_a is None else args.boot_a, args.mark)
    b = analysis.analyze([args.b], args.ready, args.boot if args.boot_b is None else args.boot_b, args.mark)
    if a.timeline.axis != b.timeline.axis:
        raise HeadstartError("A and B are on different clocks (one recorded on the serial line, one not)")
    if None not in (origin := (_from_power_on(a), _from_power_on(b))) and origin[0] != origin[1]:
        raise HeadstartError(
            "A and B count from different moments: one's systemd account has the firmware and loader (from "
            "power-on), the other's starts at the kernel"
        )
    c = compare(a, b, str(args.a), str(args.b))
    if c is None:
        raise HeadstartError(f"cannot compare: {args.a} and {args.b} reach no boot moment in common")
    for name, one in (("A", a), ("B", b)):
        for w in one.timeline.warnings:
            print(f"headstart: warning: {name}: {w}", file=sys.stderr)
    if (
        args.ready is not None
        and b.timeline.at("ready") is None
        and b.timeline.end_s is not None
        and args.budget_ms is not None
    ):
        # Compared to the last moment both reached, a boot that never got ready could pass any budget.
        # (systemd-analyze's durations alone have no line to be ready at: compared to their end.)
        raise HeadstartError(f"B ({args.b}) never reached ready (no line matches {args.ready.pattern!r}): over budget")
    over = args.budget_ms is not None and c.difference_ms > args.budget_ms
    if args.json:
        json_out.write(c.as_dict() | {"budget_ms": args.budget_ms, "over_budget": over}, sys.stdout)
    else:
        boot.render_comparison(c, sys.stdout)
    if over:
        print(
            f"headstart: B is {c.difference_ms:,.0f} ms slower than A to {c.label}, over the budget of "
            f"{args.budget_ms:,.0f} ms",
            file=sys.stderr,
        )
        return 1
    return 0


def _from_power_on(a: analysis.Analysis) -> bool | None:
    """Whether systemd's account counts from power-on (firmware, loader); None without one."""
    names = {p.name for p in a.timeline.phases if p.name.startswith("systemd: ")}
    return bool({"systemd: firmware", "systemd: loader"} & names) if names else None


def run(args: argparse.Namespace) -> int:  # each action sets its own
    return int(args.run(args))
