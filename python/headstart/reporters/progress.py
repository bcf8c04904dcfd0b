"""Progress of long work (bench, bench --cold, profile's launches) on standard error: rich's bars,
which vanish once the work is done, and nothing at all when standard error is not a terminal (a pipe,
a file, a CI log), so that what is kept holds only what the command reports."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import Progress

from headstart.reporters import terminal


def _stderr() -> Console:
    return terminal.console(sys.stderr)


def progress(console: Console | None = None) -> Progress:
    """A transient Progress on `console` (standard error by default), disabled off a terminal: rich
    would otherwise still write its last refresh there when it stops."""
    console = console or _stderr()
    return Progress(console=console, transient=True, disable=not console.is_terminal)
