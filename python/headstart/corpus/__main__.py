"""python -m headstart.corpus: the corpus run (`make corpus`). Markdown on stdout, every launch in
--json."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from headstart.commands._regex import seconds, whole_number, writable_file
from headstart.corpus import programs as corpus_programs
from headstart.corpus.report import render
from headstart.corpus.run import Settings, run_corpus, unprivileged
from headstart.errors import HeadstartError
from headstart.reporters.progress import progress


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m headstart.corpus", description=__doc__)
    p.add_argument("--packages", type=Path, default=Path("corpus/packages.txt"),
                   help="Debian packages whose programs are the corpus, one a line")  # fmt: skip
    p.add_argument("--no-install", action="store_true", help="take the installed ones; install none")
    p.add_argument("--programs", nargs="+", metavar="PROGRAM", help="these programs instead of the packages'")
    # Checked as parsed, with the commands' own types: --batch 0 and --timeout nan were tracebacks after
    # the install, --batch -1 ran no program and said so nowhere, and --timeout 0 called every launch a hang.
    p.add_argument("--timeout", type=seconds, default=10.0, help="seconds before a launch is stopped (default 10)")
    p.add_argument("--batch", type=whole_number(1, 10_000), default=25, help="programs per daemon (default 25)")
    p.add_argument("--mode", choices=["warm", "preload"], default="warm",
                   help="register each batch's programs with --warm (default) or --app")  # fmt: skip
    # A place it cannot be written was a traceback once every program had run.
    p.add_argument("--json", type=writable_file, help="write every program's verdict and launches here")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        if args.programs:
            programs = args.programs
        else:
            packages = corpus_programs.read_packages(args.packages)
            if not args.no_install:
                corpus_programs.install(packages)
            programs = corpus_programs.corpus_programs(
                [p for p in packages if p not in corpus_programs.missing_packages(packages)]
            )
        register = "--warm" if args.mode == "warm" else "--app"
        settings = Settings(timeout=args.timeout, batch=args.batch, who=unprivileged(), register=register)
        with progress() as bars:
            tasks = {"check": bars.add_task("headstartd --check", total=len(programs)),
                     "launch": bars.add_task("launches", total=len(programs))}  # fmt: skip
            results = run_corpus(programs, settings, lambda what, n: bars.advance(tasks[what], n))
    except HeadstartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        args.json.write_text(json.dumps([r.as_json() for r in results], indent=1) + "\n")
    render(results, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
