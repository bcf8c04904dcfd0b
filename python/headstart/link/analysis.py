"""One program's launch by exec, object by object: what the loader did for each (counted by the
loader itself and read from the ELF files) and what it cost (timed under the probe), put together
for the advice (advice.py) and the report (reporters/link.py)."""

from __future__ import annotations

import functools
import json
import mmap
import os
import re
import statistics
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headstart import binaries
from headstart.errors import HeadstartError
from headstart.link.collect import Counted, Timed, count, timed
from headstart.link.objects import PAGE, ObjectFacts, read_object
from headstart.stats import Summary, summarize

SCHEMA = "headstart-link 1"
# Folders whose objects come from the system's packages: their link is their packager's, not yours.
SYSTEM_DIRS = ("/usr/", "/lib/", "/lib64/", "/lib32/", "/bin/", "/sbin/", "/opt/")
# The measurement's own objects: preloaded to mark main, or the probe.
OURS = ("libheadstart-mark-main.so", "libheadstart-probe.so")


def is_yours(path: str) -> bool:
    """Built by the user, so relinkable by them: anything outside the system's folders."""
    return not os.path.realpath(path).startswith(SYSTEM_DIRS)


@functools.cache
def _key(path: str) -> str:
    """The object's file, whatever path the loader named it by; asked for each of a launch's
    millions of bindings, of a few dozen paths: remembered."""
    return os.path.realpath(path) if os.path.exists(path) else path


@dataclass
class Costs:
    """What one operation of the loader costs in this launch (ns)."""

    lookup_ns: float  # one symbol lookup
    lookup_measured: bool  # False: an upper bound (the relocation phase over its lookups)
    write_ns: float  # one relocation applied, beyond its lookup
    page_ns: float  # one page of a file in the page cache, first touched (a relocation table read)

    def as_dict(self) -> dict[str, Any]:
        return {
            "lookup_ns": round(self.lookup_ns, 1),
            "lookup_measured": self.lookup_measured,
            "write_ns": round(self.write_ns, 2),
            "page_ns": round(self.page_ns, 1),
        }


def page_cost_ns(path: str) -> float:
    """Median time to touch one page of `path` mapped read-only, the file in the page cache (the
    kernel maps pages around each fault, as it does for the loader)."""
    size = os.path.getsize(path)
    pages = size // PAGE
    if pages < 16:
        return 0.0
    samples = []
    with open(path, "rb") as f:
        for _ in range(5):
            m = mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ)
            t = time.perf_counter_ns()
            for i in range(pages):
                m[i * PAGE]
            samples.append((time.perf_counter_ns() - t) / pages)
            m.close()
    return statistics.median(samples)


def costs(t: Timed, writes: int, page_ns: float) -> Costs:
    relocate_ns = statistics.median(t.relocate_us) * 1000
    measured = t.lookup_ns
    if measured is not None:
        rest = max(0.0, relocate_ns - measured * t.lookups)
        return Costs(measured, True, rest / writes if writes else 0.0, page_ns)
    return Costs(relocate_ns / t.lookups if t.lookups else 0.0, False, 0.0, page_ns)


def marks_main(path: str) -> bool:
    """Whether the program marks main itself (bench/apps/mark.h), as our samples do."""
    with open(path, "rb") as f:
        return b"HEADSTART_MARK_FD" in f.read()


def exec_to_main(
    argv: list[str],
    ready: re.Pattern[str] | None,
    timeout: float,
    runs: int,
    env: dict[str, str] | None = None,
    builds: dict[str, str] | None = None,
) -> Summary:
    """Time from spawn to main by exec, untraced (launch-timer), over `runs` launches. A program that
    does not mark main itself has libheadstart-mark-main.so preloaded to mark it."""
    rows = timer_rows(argv, ready, timeout, runs, ["exec"], env)
    values = [r["to_main_ns"] / 1000 for r in rows if "to_main_ns" in r]
    if not values:
        errors = sorted({r.get("error", "") for r in rows})
        raise HeadstartError(f"{argv[0]}: every launch failed, so none was timed to main ({'; '.join(errors)})")
    return summarize(values)


def mark_main_env(env: dict[str, str], programs: list[str]) -> dict[str, str]:
    """`env`, with libheadstart-mark-main.so preloaded when a program does not mark main itself. A
    daemon that serves the program needs the same (its loader environment must match the client's)."""
    mark = str(binaries.find("mark-main"))
    preload = env.get("LD_PRELOAD", "")
    if all(marks_main(p) for p in programs) or mark in preload.split():
        return env
    return dict(env, LD_PRELOAD=" ".join(p for p in (mark, preload) if p))


def timer_rows(
    argv: list[str],
    ready: re.Pattern[str] | None,
    timeout: float,
    runs: int,
    modes: list[str],
    env: dict[str, str] | None = None,
    builds: dict[str, str] | None = None,
    daemons: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """launch-timer's rows: `modes` taken in turn for `runs` rounds (exec@NAME: builds[NAME]). A
    program's exit status is its own (diff's 1 says what it found): only a launch that did not reach
    main, or was killed, is an error here."""
    cmd = [
        str(binaries.find("launch-timer")),
        "--any-status",
        "--runs",
        str(runs),
        "--run-client",
        str(binaries.find("headstart-run")),
        "--timeout",
        f"{timeout:g}",
    ]
    for name, path in (builds or {}).items():
        cmd += ["--build", f"{name}={path}"]
    for name, socket in (daemons or {}).items():
        cmd += ["--daemon", f"{name}={socket}"]
    if ready is not None:  # stopped there, as the traced launches are: not left to run to --timeout
        cmd += ["--ready", ready.pattern, "--stop-at-ready"]
    cmd += ["--modes", ",".join(modes), "--", *argv]
    full = dict(os.environ, **(env or {}))
    full = mark_main_env(full, [argv[0], *(builds or {}).values()])
    done = subprocess.run(cmd, capture_output=True, text=True, env=full, start_new_session=True)
    if done.returncode not in (0, 3):
        raise HeadstartError(f"launch-timer failed (exit status {done.returncode}): {done.stderr.strip()}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def _object_row(facts: ObjectFacts, c: Counted, t: Timed, cost: Costs) -> dict[str, Any]:
    key = _key(facts.path)
    mine = [b for b in c.bindings if _key(b.source) == key]
    before = [b for b in mine if b.before_main]
    cross = [b for b in before if _key(b.target) != key]
    writes = facts.relative + len(facts.symbolic) + facts.irelative + len(facts.plt)
    reloc_ns = len(before) * cost.lookup_ns + writes * cost.write_ns
    return {
        "path": facts.path,
        "name": facts.name,
        "program": facts.is_program,
        "yours": is_yours(facts.path),
        "mapped_us": round(t.map_us.get(facts.path, 0.0), 1),
        "relative": facts.relative,
        "relr": facts.relr,
        "symbolic": len(facts.symbolic),
        "lookups_before_main": len(before),
        "lookups_cross": len(cross),
        "lookups_self": len(before) - len(cross),
        "lookups_after_main": len(mine) - len(before),
        "plt_slots": len(facts.plt),
        "bind_now": facts.bind_now,
        "hash": facts.hash_styles,
        "irelative": facts.irelative,
        "tls": facts.tls,
        "copies": len(facts.copies),
        "constructors": facts.constructors,
        "textrel": facts.textrel,
        "dirty_kib": facts.dirty_pages * PAGE // 1024,
        "exported": len(facts.exported),
        "relocate_us": round(reloc_ns / 1000, 1),
    }


def analyse(
    argv: list[str], ready: re.Pattern[str] | None, timeout: float, runs: int, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Everything `headstart link PROGRAM` reports, as JSON-ready data; advice.py adds the advice."""
    from headstart.link.advice import advise  # the advice reads the rows made here

    counted = count(argv, ready, timeout, env)
    # The loader's counts as a user's exec sees them: the probe's launches (timed) look up more.
    bind_now = count(argv, ready, timeout, {**(env or {}), "LD_BIND_NOW": "1"}).statistics
    t = timed(argv, ready, timeout, runs, env)
    paths = [p for p in t.objects if Path(p).name not in OURS and os.path.exists(p)]
    later = [p for p in t.loaded_after_main if Path(p).name not in OURS and os.path.exists(p)]
    facts = {p: read_object(p) for p in [*paths, *later]}
    writes = sum(f.relative + len(f.symbolic) + f.irelative + len(f.plt) for p, f in facts.items() if p in paths)
    cost = costs(t, writes, page_cost_ns(max(paths, key=os.path.getsize)))
    exec_us = exec_to_main(argv, ready, timeout, runs, env)
    rows = [_object_row(facts[p], counted, t, cost) for p in paths]
    lookups = Counter(b.before_main for b in counted.bindings)
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "program": argv,
        "runs": runs,
        "to_main_us": exec_us.as_dict(),
        "phases_us": {k: round(v, 1) for k, v in t.phases_us.items()},
        "loader": {
            "lookups": counted.statistics.get("relocations", 0),
            "lookups_bind_now": bind_now.get("relocations", 0),
            "from_cache": counted.statistics.get("from_cache", 0),
            "bindings_before_main": lookups[True],
            "bindings_after_main": lookups[False],
            "exit_status": counted.exit_status,
            "reached_ready": counted.reached_ready,
        },
        "costs": cost.as_dict(),
        "objects": rows,
        "loaded_after_main": later,
    }
    data["advice"] = advise(data, facts, counted, cost)
    return data
