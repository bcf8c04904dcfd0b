"""`headstart lazy check`: what the stubs changed, from cold launches of the program eager and with
them (ordering/check.py times both): the libraries no longer loaded by ready, their sizes, and the
time to ready against eager's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "headstart-lazy-check 1"


@dataclass
class LazyCheck:
    data: dict[str, Any]  # the JSON form (--json): the timed builds, not_loaded_by_ready, ratio_to_eager
    object_bytes: list[dict[str, int]]  # per build (eager, with the stubs): the objects loaded by ready, sizes


def _object_bytes(objects: list[dict[str, Any]]) -> dict[str, int]:
    """Their sizes by path (a drop-in has the file name of the library it stands for)."""
    return {o["path"]: Path(o["path"]).stat().st_size for o in objects if Path(o["path"]).exists()}


def _libraries(objects: list[dict[str, Any]]) -> set[str]:
    return {o["path"] for o in objects if not o["program"]}  # a relinked build is another program file


def compare(timed: dict[str, Any]) -> LazyCheck:
    """timed: ordering.check's result for [eager, with the stubs]."""
    data = timed | {"schema": SCHEMA}
    before, after = (_object_bytes(b["objects"]) for b in data["builds"])
    kept = _libraries(data["builds"][0]["objects"]) - _libraries(data["builds"][1]["objects"])
    data["not_loaded_by_ready"] = {path: size for path, size in before.items() if path in kept}
    data["ratio_to_eager"] = data["ratio_to_first"]["median"]
    return LazyCheck(data, [before, after])
