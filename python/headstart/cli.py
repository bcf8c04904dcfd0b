"""The `headstart` command: one subcommand per module of headstart.commands."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import traceback
from types import ModuleType

from headstart import __version__, commands
from headstart.errors import HeadstartError


def _command_modules() -> list[ModuleType]:
    """Every module in headstart.commands is a subcommand; the list is not kept by hand."""
    names = sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))
    return [importlib.import_module(f"headstart.commands.{name}") for name in names]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="headstart", description=__doc__)
    parser.add_argument("--version", action="version", version=f"headstart {__version__}")
    parser.add_argument("--traceback", action="store_true", help="show the stack on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _command_modules():
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except HeadstartError as e:
        if args.traceback or os.environ.get("HEADSTART_DEBUG") == "1":
            traceback.print_exc()
        print(f"headstart: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("headstart: interrupted", file=sys.stderr)
        return 130
