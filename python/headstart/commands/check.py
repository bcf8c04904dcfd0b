"""headstart check: whether headstartd serves each program, in which modes, or why it sends it to exec.

The daemon is the authority: this asks `headstartd --check` (headstart/verdicts.py), which judges each
program with the daemon's own code (the rules, the library preloading and the binding plan).
"""

from __future__ import annotations

import argparse
import sys

from headstart.reporters import check
from headstart.verdicts import judge

NAME = "check"
HELP = "say whether headstartd serves each program (and in which modes) or sends it to exec, and why"
# Like test(1) and grep -q, for scripts: `if headstart check PROGRAM; then ...`.
EXIT_STATUS = (
    "exit status: 0 when headstartd serves every program given; 1 when it serves only some or none of them "
    "(it sends the others to exec, or cannot find them: each has its verdict and why), or when the check "
    "could not be made; 2 on a usage error"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EXIT_STATUS
    p.add_argument("programs", nargs="+", metavar="PROGRAM", help="a path, or a name looked up on PATH")
    p.add_argument("--json", action="store_true", help="one JSON object per program, as headstartd gives it")


def run(args: argparse.Namespace) -> int:
    verdicts, messages = judge(args.programs)
    if messages.strip():
        print(messages.strip(), file=sys.stderr)
    if args.json:
        check.render_json(verdicts, sys.stdout)
    else:
        check.render(verdicts, sys.stdout)
    check.render_missing(verdicts, sys.stderr)
    return 0 if all(v["mode"] != "exec" for v in verdicts) else 1
