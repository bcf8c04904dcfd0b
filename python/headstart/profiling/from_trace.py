"""A profile from a raw probe trace recorded elsewhere: on a device without Python,
`HEADSTART_PROBE_OUTPUT=trace.jsonl LD_AUDIT=libheadstart-probe.so PROGRAM` writes one, and
`headstart profile --from trace.jsonl` or `headstart report trace.jsonl` reads it on a host. It holds
what the probe saw of that one launch: its phases, the objects and what each cost, what it loaded
after main. What only a launch on the host can measure (faults, the loader's counts, files, pages,
memory) is null or empty."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from headstart.profiling import after_main, summary
from headstart.profiling.launch import Launch
from headstart.profiling.profiler import Recorded
from headstart.profiling.timeline import Timeline, read


def looks_like_trace(text: str) -> bool:
    """JSON lines, one of them a probe's start record (a file may hold several processes' lines)."""
    return text.lstrip().startswith("{") and any(line.startswith('{"event":"start",') for line in text.splitlines())


def _launch(tl: Timeline) -> Launch:
    begin = tl.launch_start if tl.launch_start is not None else tl.start
    return Launch(
        exit_status=0,
        to_ready_ns=None if tl.exit is None else tl.exit - begin,
        to_main_marked_ns=None,
        minor_faults=None,  # not measured on the device
        major_faults=None,
        loader={},
        timeline=tl,
        memory=None,
        stderr_tail="",
    )


def profile(path: Path) -> dict[str, Any]:
    return load(path)[0]


def load(path: Path) -> tuple[dict[str, Any], Recorded]:
    """The profile, and the launch it was made from (for its trace)."""
    tl = read(path)
    program = next((o.path for o in tl.objects if o.kind == "program"), str(path))
    launch = _launch(tl)
    record = summary.launch_record(launch, False)
    data = {
        "schema": summary.SCHEMA_VERSION,
        "program": [program],
        "ready": "exit",
        "runs": 1,
        "machine": {"cpus": None, "uname": f"recorded elsewhere: {path.name}"},
        "warm": summary.aggregate([record]),
        "cold": None,
        "libraries": summary.libraries([launch], [], launch if tl.bindings else None),
        "files": [],
        "flags": [],
        "overhead": None,
        "via_daemon": None,
        "settings": [],
        "after_main": after_main.analyze([tl], None),
        "launches": [record],
    }
    return data, Recorded([launch])
