"""The daemon's verdicts on programs, for `headstart check`: headstartd is the authority, and
`headstartd --check` judges each program with the daemon's own code (the rules, the library
preloading and the binding plan), in a child of its own; one JSON object a program."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from headstart import binaries
from headstart.errors import HeadstartError


def judge(programs: list[str]) -> tuple[list[dict[str, Any]], str]:
    """The daemon's verdicts, and what it said on stderr (libraries it had trouble with)."""
    daemon = binaries.find("headstartd")
    # A path is bytes, not always UTF-8: headstartd writes it back as it is, and surrogateescape
    # keeps those bytes as Python keeps them in sys.argv.
    p = subprocess.run([str(daemon), "--check", *programs], capture_output=True, text=True, errors="surrogateescape")
    verdicts = []
    for line in p.stdout.splitlines():
        try:
            verdicts.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise HeadstartError(f"headstartd --check wrote something that is not JSON: {line!r}") from e
    if len(verdicts) != len(programs):
        raise HeadstartError(
            f"headstartd --check judged {len(verdicts)} of {len(programs)} programs: {p.stderr.strip()}"
        )
    return verdicts, p.stderr
