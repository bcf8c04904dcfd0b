"""Checks of values given on the command line, as argparse types, so that a bad one is a usage error
naming the option before anything runs: a regular expression (--ready, --start, --stop), a number
of seconds (--timeout), a whole number within its range (--baud, --read-ahead-kb, --runs), a file or
a folder the results can be written to (-o), checked before minutes of launches rather than after."""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from headstart.errors import UsageError


def regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"bad regular expression {text!r}: {e}") from e


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"not a number of seconds above 0: {text!r}")
    return value


def finite_number(text: str) -> float:
    """A number that compares: `nan` is never more than anything, so a budget of nan passed every boot
    (and was written to JSON as NaN, which is not JSON)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    return value


# More launches than anyone waits for: a typo (an extra 0) is one line, not a command that runs for days.
MAX_RUNS = 100_000


def whole_number(minimum: int, maximum: int) -> Callable[[str], int]:
    """A type for a whole number from `minimum` to `maximum`."""

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"expected a whole number from {minimum} to {maximum}, got {text!r}")
        return value

    return number


def check_runs(runs: int) -> None:
    """--runs of the commands that take it as a plain number: one line, before anything runs (a
    billion was taken, and ran until killed)."""
    if not 1 <= runs <= MAX_RUNS:
        raise UsageError(f"--runs must be from 1 to {MAX_RUNS}, not {runs}")


def writable_file(text: str) -> Path:
    """A file to write results to, in a folder that exists and can be written in."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: a folder, not a file")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such folder: {path.parent}")
    if not os.access(path if path.exists() else path.parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text}: cannot be written")
    return path


def writable_folder(text: str) -> Path:
    """A folder to write results in, or to make: tried by making and removing a folder where it is
    (or would be) made, since access() says yes to root for /proc."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: not a folder")
    existing = path.resolve()
    while not existing.exists():
        existing = existing.parent
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".headstart-", dir=existing))
    except OSError as e:
        raise argparse.ArgumentTypeError(f"{text}: cannot be written in: {e.strerror}") from e
    return path
