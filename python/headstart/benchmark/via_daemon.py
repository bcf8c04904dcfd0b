"""`headstart profile --via-daemon`: one program launched by exec, warm and pool through the client
library, timed side by side as `headstart bench` times them."""

from __future__ import annotations

import shlex
from typing import Any

from rich.progress import Progress

from headstart.benchmark import suite
from headstart.benchmark.programs import Ready, resolve
from headstart.benchmark.results import program_dict
from headstart.errors import HeadstartError


def measure(argv: list[str], runs: int, ready: Ready, progress: Progress) -> dict[str, Any]:
    """The program's results in bench.json's form; ready as the profile's launches were (a line, a
    window, or exit) within the same timeout."""
    plan = suite.Plan([], runs, ["exec", "warm", "pool"], ["direct"], memory_launches=0)
    (result,) = suite.measure_programs([resolve(shlex.join(argv), ready)], plan, progress)
    failed = [m for m in result.modes.values() if m.status not in ("ok", "preload")]
    if len(failed) == len(result.modes):
        first = failed[0]
        why = first.errors[0] if first.errors else first.status
        raise HeadstartError(f"--via-daemon: every launch failed ({first.mode}: {why})")
    return program_dict(result)
