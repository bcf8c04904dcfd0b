"""`headstart order record`: the functions a launch runs up to ready, in the order of their first
call, merged over several launches. From an instrumented build (libheadstart-order), or from the
text pages a cold launch touches when the build is not instrumented (address order within them)."""

from __future__ import annotations

import shutil
import statistics
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError
from headstart.ordering.capture import Called, read_order_file
from headstart.ordering.pages import cold_text_pages
from headstart.ordering.symbols import load
from headstart.profiling.launch import LaunchOptions, checked, run
from headstart.profiling.memory import PAGE_SIZE

SCHEMA = "headstart-order 1"
OUTPUT_ENV = "HEADSTART_ORDER_OUTPUT"


def instrumented_run(opts: LaunchOptions) -> list[Called]:
    with tempfile.TemporaryDirectory(prefix="headstart-order-") as tmp:
        out, at_ready = Path(tmp) / "order", Path(tmp) / "order-at-ready"

        def keep_at_ready() -> None:  # the file goes on filling if the program goes on after SIGTERM
            if out.exists():
                shutil.copyfile(out, at_ready)

        launch = run(replace(opts, probe=False, env={OUTPUT_ENV: str(out)}, at_ready_stop=keep_at_ready))
        # A program may end with a status of its own (diff's 1, grep -q's): its record is whole at any
        # exit; one killed by a signal is refused by checked().
        checked(launch, "recording")
        if not out.exists():
            raise HeadstartError(
                f"{opts.argv[0]} is not instrumented: nothing was recorded. Build it with -finstrument-functions "
                "and link it with -lheadstart-order after its objects (LIBS, LDLIBS: glibc's empty "
                "__cyg_profile_func_enter is taken otherwise), or record its pages with --pages"
            )
        return read_order_file(at_ready if at_ready.exists() else out)


def pages_run(opts: LaunchOptions) -> list[Called]:
    """The program's functions that lie in the text pages a cold launch touched, by address."""
    program = str(Path(opts.argv[0]).resolve())
    touched = cold_text_pages(opts).get(program)
    if touched is None:
        raise HeadstartError(f"{program}: none of its text pages were seen at ready")
    symbols = load(program)
    if not symbols.functions:
        # Debian's programs are stripped, and a PIE's .dynsym names no function of its own.
        raise HeadstartError(
            f"{program} names none of its functions (no symbol table: stripped): record a build with symbols, "
            "as the order is for the program you link"
        )
    return [Called(program, f.name) for f in symbols.functions_in_pages(touched.touched, PAGE_SIZE)]


def merge(runs: list[list[Called]]) -> dict[str, list[str]]:
    """Per object, its functions by their median rank over the runs that called them (a function
    every run calls early comes before one only some call), then by first appearance."""
    ranks: dict[Called, list[int]] = defaultdict(list)
    first: dict[Called, int] = {}
    for calls in runs:
        for rank, called in enumerate(calls):
            ranks[called].append(rank)
            first.setdefault(called, len(first))
    ordered = sorted(ranks, key=lambda c: (statistics.median(ranks[c]), first[c]))
    objects: dict[str, list[str]] = defaultdict(list)
    for called in ordered:
        objects[called.object].append(called.name)
    return dict(objects)


def record(opts: LaunchOptions, runs: int, pages: bool) -> dict[str, Any]:
    captured = [(pages_run if pages else instrumented_run)(opts) for _ in range(runs)]
    objects = merge(captured)
    return {
        "schema": SCHEMA,
        "program": opts.argv,
        "method": "pages" if pages else "instrumented",
        "runs": runs,
        "objects": [{"path": path, "functions": names} for path, names in objects.items()],
    }
