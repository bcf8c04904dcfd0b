"""headstart report: profiles (`headstart profile -o`), or a benchmark (`headstart bench`'s
bench.json), as one self-contained HTML file of charts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from headstart import inputfile, jsonfile
from headstart.errors import HeadstartError
from headstart.profiling import from_trace
from headstart.reporters import bench_page, profile_page

NAME = "report"
HELP = "draw profiles (from `headstart profile -o`) side by side, or a bench.json, as one HTML file of charts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "traces", nargs="+", type=Path, metavar="TRACE", help="a profile (headstart profile -o) or one bench.json"
    )
    p.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")


# load_json's answer for a raw probe trace (JSON lines), which load_profile turns into a profile.
TRACE = object()


def load_json(path: Path) -> Any:
    """A bench.json or a profile, checked against its schema (a bench.json has a schema_version), or
    TRACE for a probe trace, which load_profile reads."""
    text = inputfile.read_text(path)
    if from_trace.looks_like_trace(text):
        return TRACE
    data = jsonfile.parse(text, str(path))
    jsonfile.check(data, "bench" if is_benchmark(data) else "profile", str(path))
    return data


def is_benchmark(data: Any) -> bool:
    return isinstance(data, dict) and "schema_version" in data


def load_profile(path: Path, data: Any) -> dict[str, Any]:
    return from_trace.profile(path) if data is TRACE else data


def run(args: argparse.Namespace) -> int:
    loaded = [load_json(t) for t in args.traces]
    if any(is_benchmark(d) for d in loaded):
        if len(loaded) != 1:
            raise HeadstartError("a bench.json is drawn alone: give one benchmark, or profiles only")
        page = bench_page.build(loaded[0])
    else:
        page = profile_page.build([load_profile(t, d) for t, d in zip(args.traces, loaded, strict=True)])
    try:
        args.output.write_text(page.render())
    except OSError as e:
        raise HeadstartError(f"cannot write {args.output}: {e.strerror}") from e
    print(f"report written to {args.output}")
    return 0
