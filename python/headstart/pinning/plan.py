"""Pin plans: from cold-launch profiles (`headstart profile --cold -o`), every page of every file
that a cold launch had mapped at ready or read, with the programs that needed it, written in the
format headstart-pind reads (docs/pinning.md, src/pind/plan.h): the programs with their launch
counts (a profile counts as one), then each file's ranges with the programs that need them, cut
at a budget, worth most first."""

from __future__ import annotations

import re
import stat
from collections import defaultdict
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError, UsageError
from headstart.jsonfile import read_json
from headstart.profiling.memory import PAGE_SIZE

HEADER = "headstart-pin-plan 2"


def parse_size(text: str, option: str = "--budget") -> int:
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    size = int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)] if m else 0
    if not 0 < size < 1 << 64:  # as headstart-pind reads it
        raise UsageError(f"{option}: expected a size such as 64M, got {text!r}")
    return size


def load_profile(path: Path) -> dict[str, Any]:
    data = read_json(path, "profile")
    if not data["cold"]:
        raise HeadstartError(f"{path}: no cold launches in it: profile with --cold to know which pages launches need")
    return data


def program_path(profile: dict[str, Any], source: Path) -> str:
    program = profile.get("program")
    if not isinstance(program, list) or not program or not str(program[0]).startswith("/"):
        raise HeadstartError(f"{source}: the profile does not say which program it launched")
    return str(program[0])


def _first_pages(nbytes: int) -> range:
    return range((nbytes + PAGE_SIZE - 1) // PAGE_SIZE)


def file_pages(f: dict[str, Any]) -> set[int]:
    """Pages of one file that a cold launch needed: every page it had mapped at ready (or copied);
    from the start of the file, as many pages as it read with read() (the trace has no offsets;
    reads of configuration files and caches start at 0); and of a file it mapped but no longer
    maps at ready (ld.so.cache, unmapped once the libraries are found), what it mapped."""
    cold = f.get("cold") or {}
    pages = {p for first, count in cold.get("mapped_ranges", []) for p in range(first, first + count)}
    pages.update(_first_pages(min(f.get("bytes_read", 0), f["size"])))
    if not cold.get("mapped_ranges") and not f.get("code"):
        pages.update(_first_pages(min(f.get("bytes_mapped", 0), f["size"])))
    return pages


def whole_file(path: str) -> dict[str, Any]:
    """A file every program needs whole (`--include`: the launcher, say), as a profile's file."""
    try:
        st = Path(path).stat()
    except OSError as e:
        raise HeadstartError(f"--include: cannot read {path}: {e.strerror}") from e
    if not stat.S_ISREG(st.st_mode):
        raise HeadstartError(f"--include: {path}: not a regular file (only a file's pages can be pinned)")
    size = st.st_size
    return {"path": str(Path(path).resolve()), "size": size, "bytes_read": size}


Owners = dict[str, dict[int, set[int]]]  # file -> page -> programs that needed it


def page_owners(profiles: list[dict[str, Any]], programs: list[str]) -> tuple[Owners, dict[str, int]]:
    """Per file, each page's programs (indexes into programs), and each file's size."""
    owners: Owners = defaultdict(lambda: defaultdict(set))
    sizes: dict[str, int] = {}
    for profile, program in zip(profiles, programs, strict=True):
        index = programs.index(program)
        for f in profile["files"]:
            for page in file_pages(f):
                owners[f["path"]][page].add(index)
            sizes[f["path"]] = f["size"]
    return owners, sizes


def ranges(pages: dict[int, set[int]]) -> list[tuple[int, int, frozenset[int]]]:
    """(first page, pages, programs) of consecutive pages that the same programs need."""
    out: list[list[Any]] = []
    for page in sorted(pages):
        owners = frozenset(pages[page])
        if out and out[-1][0] + out[-1][1] == page and out[-1][2] == owners:
            out[-1][1] += 1
        else:
            out.append([page, 1, owners])
    return [(a, b, c) for a, b, c in out]


def plan_text(profiles: list[tuple[Path, dict[str, Any]]], budget: int | None, include: list[str] | None = None) -> str:
    """The plan; `include` names files that every program needs whole (the launcher, say)."""
    per_profile = [program_path(data, source) for source, data in profiles]
    programs = list(dict.fromkeys(per_profile))  # one entry per program, in the order given
    launches = [per_profile.count(p) for p in programs]  # each profile counts as a launch
    owners, sizes = page_owners([data for _, data in profiles], per_profile)
    for f in map(whole_file, include or []):
        sizes[f["path"]] = f["size"]
        for page in file_pages(f):
            owners[f["path"]][page] = set(range(len(programs)))
    chosen = [(owned, path, first, count) for path, pages in owners.items() for first, count, owned in ranges(pages)]
    # Worth most first, as headstart-pind ranks them before it learns launch counts of its own.
    chosen.sort(key=lambda c: (-sum(launches[i] for i in c[0]), c[1], c[2]))
    kept, total = defaultdict(list), 0
    for owned, path, first, count in chosen:
        if budget is not None and total + count * PAGE_SIZE > budget:
            continue
        total += count * PAGE_SIZE
        kept[path].append((first, count, owned))
    lines = [HEADER, f"# {len(profiles)} profile(s), {total} bytes in {len(kept)} files, {len(sizes)} files held"]
    lines += [f"program {i} {launches[i]} {path}" for i, path in enumerate(programs)]
    for path in sorted(sizes):  # a file with no range is held open: its inode and path stay cached
        lines.append(f"file {sizes[path]} {path}")
        lines += [
            f"range {first * PAGE_SIZE} {count * PAGE_SIZE} {','.join(map(str, sorted(owned)))}"
            for first, count, owned in sorted(kept[path], key=lambda k: k[0])
        ]
    return "\n".join([*lines, "end"]) + "\n"
