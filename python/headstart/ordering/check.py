"""`headstart order check`: a build's startup text pages and cold time to ready, against another
build of the same program (the original against the reordered one), launched alternately with the
page cache emptied before each launch."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError
from headstart.ordering.pages import cold_text_pages, empty_cache, read_ahead
from headstart.profiling.launch import LaunchOptions, run
from headstart.stats import ratio, summarize

# What a report says when cache_emptied is "its files".
PARTLY_COLD = (
    "not root: before each launch only the files it mapped were evicted, and their pages that another "
    "process maps (libc's, always) stayed cached: partly cold launches (root drops the whole cache)"
)


def _timed_cold(opts: LaunchOptions, read_ahead_kib: int | None, mapped: list[str]) -> tuple[float, int]:
    """A cold launch's time to ready, and its exit status (0 when stopped at its ready point).
    Not root: the files the build mapped are evicted (the program's and its libraries'), not the
    whole cache."""
    empty_cache([opts.argv[0], *mapped])
    with read_ahead(opts.argv[0], read_ahead_kib):
        launch = run(replace(opts, probe=False))
    status = 0 if launch.stopped_at_ready else launch.exit_status
    if launch.to_ready_ns is None or status < 0:
        raise HeadstartError(f"{opts.argv[0]} failed in a cold launch (exit status {launch.exit_status})")
    return launch.to_ready_ns / 1e6, status


def check(builds: list[LaunchOptions], runs: int, read_ahead_kib: int | None) -> dict[str, Any]:
    """Each build's text pages touched (per object) and its cold time to ready, side by side. A
    program may end with a status other than 0 (diff's 1), but every launch of every build the same."""
    pages = [cold_text_pages(b) for b in builds]
    times: list[list[float]] = [[] for _ in builds]
    first: tuple[str, int] | None = None
    for round_ in range(runs):
        # Each build first in every other round: what drifts over the run (the disk, the host) falls
        # on both alike.
        order = list(enumerate(builds))
        for i, b in order if round_ % 2 == 0 else order[::-1]:
            ms, status = _timed_cold(b, read_ahead_kib, list(pages[i]))
            first = first or (b.argv[0], status)
            if status != first[1]:
                raise HeadstartError(
                    f"{b.argv[0]} exited with status {status} in a cold launch, {first[0]} with {first[1]}: "
                    "the builds do not behave the same"
                )
            times[i].append(ms)
    out = []
    for b, found, ms in zip(builds, pages, times, strict=True):
        program = str(Path(b.argv[0]).resolve())
        objects = [
            {"path": p.path, "text_pages": p.total, "touched": len(p.touched), "program": path == program}
            for path, p in sorted(found.items(), key=lambda kv: (kv[0] != program, kv[0]))
        ]
        out.append(
            {
                "program": b.argv,
                "exact": all(p.exact for p in found.values()),
                "objects": objects,
                "cold_ready_ms": summarize(ms).as_dict(),
            }
        )
    data = {
        "schema": "headstart-order-check 1",
        "runs": runs,
        "read_ahead_kib": read_ahead_kib,
        # Root drops the whole page cache before each launch; anyone else evicts the files each build
        # mapped, whose pages another process maps (libc's, always) stay.
        "cache_emptied": "all" if os.geteuid() == 0 else "its files",
        "builds": out,
    }
    if len(builds) == 2:
        data["ratio_to_first"] = ratio(times[0], times[1]).as_dict()
    return data
