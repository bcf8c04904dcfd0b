"""`headstart order` in the terminal: what record and emit did (on stderr, the order itself going to
a file or stdout), and the check's table."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from rich.table import Table

from headstart.ordering.check import PARTLY_COLD
from headstart.ordering.emit import COMPILE_FLAGS
from headstart.reporters import terminal
from headstart.stats import Ratio

MISSING_SHOWN = 10  # names left out by --match, listed


def render_recorded(data: dict[str, Any], output: Path, file: IO[str]) -> None:
    counts = ", ".join(f"{len(o['functions'])} in {Path(o['path']).name}" for o in data["objects"])
    print(f"{data['method']}: {counts or 'no function'} -> {output}", file=file)


def render_matched(total: int, missing: list[str], binary: Path, file: IO[str]) -> None:
    """How many of the recorded names the build given with --match defines, and which it does not."""
    print(f"{total - len(missing)} of {total} names are functions of {binary}", file=file)
    if missing:
        shown = ", ".join(missing[:MISSING_SHOWN]) + (", ..." if len(missing) > MISSING_SHOWN else "")
        print(f"not in it (inlined or renamed in this build), left out: {shown}", file=file)


def render_flags(link_flags: str, output: Path | None, file: IO[str]) -> None:
    """The flags that use the order written (FILE in link_flags: where it went)."""
    where = str(output) if output else "FILE"
    print(f"compile with {COMPILE_FLAGS}; link with {link_flags.replace('FILE', where)}", file=file)


def _labels(programs: list[str]) -> list[str]:
    """Each build by its file's name, or by its path where two builds share a name (a build beside
    the original, in another folder)."""
    names = [Path(p).name for p in programs]
    return names if len(set(names)) == len(names) else programs


def render_check(data: dict[str, Any], file: IO[str], width: int = 140) -> None:
    console = terminal.console(file, width)
    t = Table(title=f"Cold launches: startup text pages and time to ready ({data['runs']} each, alternately)")
    for col in ("build", "object", "text pages", "touched", "cold ms to ready"):
        t.add_column(col, justify="left" if col in ("build", "object") else "right")
    labels = _labels([b["program"][0] for b in data["builds"]])
    for b, label in zip(data["builds"], labels, strict=True):
        ms = b["cold_ready_ms"]
        for i, o in enumerate(b["objects"]):
            first = i == 0
            t.add_row(
                label if first else "",
                Path(o["path"]).name,
                str(o["text_pages"]),
                str(o["touched"]) + ("" if b["exact"] else " ~"),
                f"{ms['median']:.1f} ({ms['p10']:.1f}-{ms['p90']:.1f})" if first else "",
            )
        t.add_section()
    console.print(t)
    if "ratio_to_first" in data:
        console.print(
            f"cold time to ready, {labels[1]} / {labels[0]}: {Ratio.from_dict(data['ratio_to_first']).describe()}"
        )
    if not all(b["exact"] for b in data["builds"]):
        console.print("~ not root: counted with readahead on, so up to a fault-around block (64 KiB) per touch")
    if data.get("cache_emptied") == "its files":
        console.print(PARTLY_COLD)
