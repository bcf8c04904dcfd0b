"""Checks of values given on the command line, as argparse types, so that a bad one is a usage error
naming the option before anything runs: a regular expression (--ready, --start, --stop), a number
of seconds (--timeout), a whole number within its range (--baud, --read-ahead-kb)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable


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
