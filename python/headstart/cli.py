"""The `headstart` command: one subcommand per module of headstart.commands."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys
import traceback
from types import ModuleType

from headstart import __version__, commands
from headstart.errors import HeadstartError
from headstart.processes import end_children


class _Terminated(BaseException):
    """SIGTERM or SIGHUP (`timeout`, a service manager, a closed terminal), raised like Ctrl-C's
    KeyboardInterrupt, so that what a command changed is put back on the way out (a disk's read-ahead,
    a private display) and what it started is ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated(signum)


def _command_modules(only: str | None = None) -> list[ModuleType]:
    """Every module in headstart.commands is a subcommand; the list is not kept by hand. `only`: the
    one named, when it is one (each command imports what it needs, matplotlib and pyelftools among
    them: all of them take longer to import than most commands take to run)."""
    names = sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))
    if only in names:
        names = [only]
    return [importlib.import_module(f"headstart.commands.{name}") for name in names]


def _command_named(argv: list[str]) -> str | None:
    """The subcommand argv names: its first word that is not an option (no top-level option takes a value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="headstart",
        description="Measure and explain program launches: compare exec and headstartd (bench), profile "
        "a launch (profile), say how headstartd would serve a program (check), draw reports (report), "
        "and analyze boots (boot). Each command has its own --help.",
    )
    parser.add_argument("--version", action="version", version=f"headstart {__version__}")
    parser.add_argument("--traceback", action="store_true", help="show the stack on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _command_modules(only):
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def _fail(args: argparse.Namespace, message: str, status: int) -> int:
    if args.traceback or os.environ.get("HEADSTART_DEBUG") == "1":
        traceback.print_exc()
    print(f"headstart: {message}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(_command_named(argv)).parse_args(argv)
    previous = {sig: signal.signal(sig, _raise_terminated) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return _run(args)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(args: argparse.Namespace) -> int:
    try:
        status = int(args.run(args) or 0)
        sys.stdout.flush()  # a reader that went away is seen here, not at interpreter exit
        return status
    except HeadstartError as e:
        return _fail(args, str(e), e.exit_status)
    except KeyboardInterrupt:
        end_children()
        return _fail(args, "interrupted", 130)
    except _Terminated as e:
        end_children()
        return _fail(args, f"stopped by {signal.Signals(e.signum).name}", 128 + e.signum)
    except BrokenPipeError:
        # The reader (`| head`) has what it wanted. Quiet, as a program killed by SIGPIPE would be;
        # stdout goes to /dev/null so that flushing it at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as e:  # a full disk, a file that vanished: say which and why
        where = f" ({e.filename})" if e.filename else ""
        return _fail(args, f"{e.strerror or e}{where}", 1)
