"""Checks of values given on the command line, as argparse types, so that a bad one is a usage error
naming the option before anything runs: a regular expression (--ready, --start, --stop), a number
of seconds (--timeout)."""

from __future__ import annotations

import argparse
import re


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
