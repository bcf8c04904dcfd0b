"""The JSON form of a result, as every command writes it: to standard output (--json) and to files
(`profile -o`, bench.json, an order). Indented by one space, one newline at the end."""

from __future__ import annotations

import json
from typing import IO, Any


def text(data: Any) -> str:
    return json.dumps(data, indent=1) + "\n"


def write(data: Any, file: IO[str]) -> None:
    file.write(text(data))
