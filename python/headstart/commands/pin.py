"""headstart pin: plans which pages headstart-pind keeps resident.

`headstart pin plan PROFILE.json... -o PLAN` reads cold-launch profiles (`headstart profile --cold
-o`), takes every page of every file that a cold launch had mapped at ready, weighs each page by the
number of profiled programs that touched it, and writes the plan headstart-pind reads
(docs/pinning.md): the most valuable ranges first, cut at --budget."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError, UsageError
from headstart.profiling.memory import PAGE_SIZE

NAME = "pin"
HELP = "plan which pages headstart-pind keeps resident, from cold-launch profiles"
HEADER = "headstart-pin-plan 1"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="pin_command", required=True, metavar="COMMAND")
    plan = sub.add_parser("plan", help="write a pin plan from profiles made with `headstart profile --cold -o`")
    plan.add_argument("profiles", nargs="+", type=Path, metavar="PROFILE.json")
    plan.add_argument("--budget", help="at most this many bytes in the plan (K, M, G suffixes); default all")
    plan.add_argument("-o", "--output", type=Path, help="the plan file (default: standard output)")


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    if not m or int(m.group(1)) == 0:
        raise UsageError(f"--budget: expected a size such as 64M, got {text!r}")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise HeadstartError(f"cannot read {path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise HeadstartError(f"{path}: not JSON ({e.msg})") from e
    if not isinstance(data, dict) or "files" not in data:
        raise HeadstartError(f"{path}: not a profile written by `headstart profile -o`")
    if not data.get("cold"):
        raise HeadstartError(f"{path}: no cold launches in it: profile with --cold to know which pages launches need")
    return data


def page_weights(profiles: list[dict[str, Any]]) -> tuple[dict[str, dict[int, int]], dict[str, int]]:
    """Per file, each page's weight (programs that touched it), and each file's size."""
    weights: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    sizes: dict[str, int] = {}
    for profile in profiles:
        for f in profile["files"]:
            cold = f.get("cold") or {}
            for first, count in cold.get("mapped_ranges", []):
                for page in range(first, first + count):
                    weights[f["path"]][page] += 1
            sizes[f["path"]] = f["size"]
    return weights, sizes


def ranges(pages: dict[int, int]) -> list[tuple[int, int, int]]:
    """(first page, pages, weight) of consecutive pages of equal weight."""
    out: list[list[int]] = []
    for page in sorted(pages):
        if out and out[-1][0] + out[-1][1] == page and out[-1][2] == pages[page]:
            out[-1][1] += 1
        else:
            out.append([page, 1, pages[page]])
    return [(a, b, c) for a, b, c in out]


def plan_text(profiles: list[dict[str, Any]], budget: int | None) -> str:
    weights, sizes = page_weights(profiles)
    chosen = [(w, path, first, count) for path, pages in weights.items() for first, count, w in ranges(pages)]
    chosen.sort(key=lambda c: (-c[0], c[1], c[2]))  # most valuable first, as headstart-pind locks
    kept, total = defaultdict(list), 0
    for w, path, first, count in chosen:
        if budget is not None and total + count * PAGE_SIZE > budget:
            continue
        total += count * PAGE_SIZE
        kept[path].append((first, count, w))
    lines = [HEADER, f"# {len(profiles)} profile(s), {total} bytes in {len(kept)} files"]
    for path in sorted(kept):
        lines.append(f"file {sizes[path]} {path}")
        lines += [f"range {first * PAGE_SIZE} {count * PAGE_SIZE} {w}" for first, count, w in sorted(kept[path])]
    return "\n".join([*lines, "end"]) + "\n"


def run(args: argparse.Namespace) -> int:
    budget = parse_size(args.budget) if args.budget else None
    text = plan_text([_load(p) for p in args.profiles], budget)
    if args.output:
        try:
            args.output.write_text(text)
        except OSError as e:
            raise HeadstartError(f"cannot write {args.output}: {e.strerror}") from e
    else:
        sys.stdout.write(text)
    return 0
