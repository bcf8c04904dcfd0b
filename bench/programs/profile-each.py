#!/usr/bin/env python3
"""Profiles each program of a list under the bench's private display and session bus (issue 27's
after-main figures in docs/results.md): `headstart profile --ready-window` of each, its table in
OUT/NAME.txt and its JSON in OUT/NAME.json.

Usage: .venv/bin/python bench/programs/profile-each.py x11|wayland OUT @bench/programs/wider-gui.txt [PROGRAM ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from headstart.benchmark import display, program_list

RUNS = "5"


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in display.DISPLAYS:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    kind, out, programs = argv[0], Path(argv[1]), program_list.expand(argv[2:])
    out.mkdir(parents=True, exist_ok=True)
    headstart = Path(sys.prefix) / "bin" / "headstart"
    with display.private_display(kind) as found:
        env = display.display_env(dict(os.environ), kind, found)
        for program in programs:
            name = Path(program.split()[0]).name
            with open(out / f"{name}.txt", "w") as text:
                done = subprocess.run(
                    [str(headstart), "profile", "--ready-window", "--runs", RUNS, "--gaps", "8",
                     "-o", str(out / f"{name}.json"), "--", *program.split()],
                    env=env, stdout=text, stderr=subprocess.STDOUT, timeout=900, check=False,
                )  # fmt: skip
            print(f"{name}: {'done' if done.returncode == 0 else f'failed ({done.returncode})'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
