"""Reading a JSON file that a headstart command wrote (a profile, an order), with one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise HeadstartError(f"cannot read {path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise HeadstartError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from e
