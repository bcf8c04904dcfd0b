"""How long the daemon takes to preload N real libraries (the seed paper's Figure 7), for N from 10
to 100: the daemon is started with `--preload` for each of N libraries and logs the time its
loading took (dlopen with every symbol bound, around the loading alone).

The libraries are those the sample programs and a few Debian programs need, ordered so that each
comes after every library it needs: the first N are closed under their dependencies, so preloading
them loads exactly N objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from headstart import relocations
from headstart.benchmark.daemons import last_line
from headstart.daemon import private_daemon
from headstart.errors import HeadstartError
from headstart.stats import Summary, summarize

# Besides the samples: Debian programs whose libraries widen the set (those installed are used).
EXTRA_PROGRAMS = tuple(
    f"/usr/bin/{name}"
    for name in ("exiv2", "qpdf", "xmllint", "sqlite3", "flac", "gawk", "file", "jq", "cwebp", "opusenc")
)
_PRELOADED = re.compile(r"preloaded (\d+) libraries for \d+ programs in (\d+) us")


@dataclass
class PreloadPoint:
    libraries: int
    time_us: Summary | None
    error: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "libraries": self.libraries,
            "time_us": self.time_us.as_dict() if self.time_us else None,
            "error": self.error,
        }


def candidate_libraries(programs: list[Path]) -> list[Path]:
    """Every library the programs need, dependencies first, without the C library and the loader
    (already in the daemon)."""
    by_name: dict[str, Path] = {}
    for program in [*programs, *(Path(p) for p in EXTRA_PROGRAMS if Path(p).is_file())]:
        for lib in relocations.closure(program):
            by_name.setdefault(lib.name, lib)
    always = {"libc.so.6"} | {n for n in by_name if n.startswith("ld-linux")}
    ordered: list[Path] = []
    seen: set[str] = set(always)

    def visit(name: str) -> None:
        if name in seen or name not in by_name:
            return
        seen.add(name)
        for needed in _needed(by_name[name]):
            visit(needed)
        ordered.append(by_name[name])

    for name in sorted(by_name):
        visit(name)
    return ordered


def _needed(lib: Path) -> list[str]:
    with open(lib, "rb") as f:
        for section in ELFFile(f).iter_sections():
            if isinstance(section, DynamicSection):
                return [t.needed for t in section.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
    return []


def measure(counts: list[int], repeats: int, programs: list[Path]) -> list[PreloadPoint]:
    libraries = candidate_libraries(programs)
    points = []
    for n in counts:
        if n > len(libraries):
            points.append(PreloadPoint(n, None, f"only {len(libraries)} libraries found on this machine"))
            continue
        times, error = [], None
        for _ in range(repeats):
            try:
                times.append(_preload_time_us(libraries[:n]))
            except HeadstartError as e:
                error = last_line(str(e))
                break
        points.append(PreloadPoint(n, summarize(times) if times and not error else None, error))
    return points


def _preload_time_us(libraries: list[Path]) -> float:
    args = [arg for lib in libraries for arg in ("--preload", str(lib))]
    with private_daemon([], extra_args=args) as daemon:
        m = _PRELOADED.search(daemon.log_text())
    if not m:
        raise HeadstartError("the daemon did not say how long its preloading took")
    return float(m.group(2))
