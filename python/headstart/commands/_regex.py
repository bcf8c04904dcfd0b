"""The one check of a regular expression given on the command line (--ready, --start, --stop): an
argparse type, so a bad one is a usage error naming the option, before anything runs."""

from __future__ import annotations

import argparse
import re


def regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"bad regular expression {text!r}: {e}") from e
