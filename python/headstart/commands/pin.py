"""headstart pin: plans which pages headstart-pind keeps resident (headstart/pinning/plan.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from headstart.errors import HeadstartError
from headstart.pinning.plan import load_profile, parse_size, plan_text

NAME = "pin"
HELP = "plan which pages headstart-pind keeps resident, from cold-launch profiles"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="pin_command", required=True, metavar="COMMAND")
    plan = sub.add_parser("plan", help="write a pin plan from profiles made with `headstart profile --cold -o`")
    plan.add_argument("profiles", nargs="+", type=Path, metavar="PROFILE.json")
    plan.add_argument("--budget", help="at most this many bytes in the plan (K, M, G suffixes); default all")
    plan.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="FILE",
        help="a file every program needs whole, such as headstart-run when launches go through headstartd (repeatable)",
    )
    plan.add_argument("-o", "--output", type=Path, help="the plan file (default: standard output)")


def run(args: argparse.Namespace) -> int:
    budget = parse_size(args.budget) if args.budget is not None else None
    text = plan_text([(p, load_profile(p)) for p in args.profiles], budget, args.include)
    if args.output:
        try:
            args.output.write_text(text)
        except OSError as e:
            raise HeadstartError(f"cannot write {args.output}: {e.strerror}") from e
    else:
        sys.stdout.write(text)
    return 0
