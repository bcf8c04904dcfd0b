"""The console every terminal report prints to: rich's, without its emoji codes, which turned an
evidence's file and line number (`device.systemd.txt:100: ...`) into an emoji."""

from __future__ import annotations

from typing import IO

from rich.console import Console


def console(file: IO[str], width: int | None = None) -> Console:
    return Console(file=file, width=width, emoji=False)
