"""A boot analysed: the timeline and the advice, and their JSON form (the tables and the page:
reporters/boot.py, reporters/boot_page.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headstart.boot import advice, logs, timeline
from headstart.errors import HeadstartError


@dataclass
class Analysis:
    sources: list[str]
    timeline: timeline.Timeline
    advice: list[advice.Advice]

    @property
    def total_s(self) -> float | None:
        """Time to the first program ready, else to the end of the last phase."""
        ready = self.timeline.at("ready")
        if ready is not None:
            return ready
        return max((p.end_s for p in self.timeline.phases), default=None)


def analyze(
    paths: list[Path],
    ready: re.Pattern[str] | None,
    boot: int | None = None,
    marks: list[tuple[str, re.Pattern[str]]] = (),
    kiosk: bool = False,
) -> Analysis:
    """kiosk: the device shows one program and runs nothing else (advice.KIOSK_TOPICS)."""
    log = logs.read(paths, boot)
    t = timeline.build(log, ready, marks)
    if not (t.phases or t.services or t.initcalls or t.cpu.units or log.generators_run()):
        # Nothing of a boot in them (dmesg's ring buffer wrapped long ago, a log of something else):
        # a verdict from a ready line alone would time what is not a boot.
        names = ", ".join(p.name for p in paths)
        why = t.warnings[0] if t.warnings else "no kernel, initramfs, init or systemd line in them"
        raise HeadstartError(f"no boot phase found in {names}: {why}")
    return Analysis([str(p) for p in paths], t, advice.advise(t, log, kiosk))


def as_dict(a: Analysis) -> dict[str, Any]:
    return {
        "sources": a.sources,
        "total_s": None if a.total_s is None else round(a.total_s, 6),
        **timeline.as_dict(a.timeline),
        "recommendations": [x.as_dict() for x in a.advice],
    }
