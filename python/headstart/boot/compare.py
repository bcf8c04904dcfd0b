"""Two boots compared (`headstart boot compare`): phase by phase, the moments both reached, and the
time to the last moment they have in common."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from headstart.boot.analysis import Analysis


@dataclass
class Comparison:
    a: str  # the reference boot's log
    b: str  # the boot judged
    phases: list[dict[str, Any]]
    moments: list[dict[str, Any]]
    compared_to: str  # a moment of timeline.CHAIN, or "end"
    label: str  # compared_to in words
    total_a_s: float
    total_b_s: float

    @property
    def difference_ms(self) -> float:
        return (self.total_b_s - self.total_a_s) * 1000

    def as_dict(self) -> dict[str, Any]:
        return {
            "phases": self.phases,
            "moments": self.moments,
            "compared_to": self.compared_to,
            "total_a_s": self.total_a_s,
            "total_b_s": self.total_b_s,
            "difference_ms": self.difference_ms,
        }


def compare(a: Analysis, b: Analysis, name_a: str, name_b: str) -> Comparison | None:
    """None when the boots reach no moment in common."""
    end = compared_end(a, b)
    if end is None:
        return None
    moment, label, total_a, total_b = end
    return Comparison(name_a, name_b, compare_rows(a, b), compare_moments(a, b), moment, label, total_a, total_b)


def compared_end(a: Analysis, b: Analysis) -> tuple[str, str, float, float] | None:
    """The first program ready when both boots show it, else the last moment both reached; without
    any, the end of the last phase (systemd-analyze's durations)."""
    common = [n for n in a.timeline.chain if a.timeline.at(n) is not None and b.timeline.at(n) is not None]
    if common:
        name = common[-1]
        at_a, at_b = a.timeline.at(name), b.timeline.at(name)
        assert at_a is not None and at_b is not None
        label = a.timeline.chain[name]
        if name != "ready":
            label += ", the last moment both boots reached"
        return name, label, at_a, at_b
    if a.total_s is not None and b.total_s is not None:
        return "end", "the end of the last phase", a.total_s, b.total_s
    return None


def compare_rows(a: Analysis, b: Analysis) -> list[dict[str, Any]]:
    durations_a = {p.name: p.duration_s for p in a.timeline.phases}
    durations_b = {p.name: p.duration_s for p in b.timeline.phases}
    names = list(dict.fromkeys([*durations_a, *durations_b]))
    rows = []
    for name in names:
        da, db = durations_a.get(name), durations_b.get(name)
        diff = (db - da) * 1000 if da is not None and db is not None else None
        rows.append({"phase": name, "a_s": da, "b_s": db, "difference_ms": diff})
    return rows


def compare_moments(a: Analysis, b: Analysis) -> list[dict[str, Any]]:
    """The moments both boots show, when each reached them: phases split differently (a quiet kernel
    prints fewer landmarks) still line up here."""
    rows = []
    for name, label in a.timeline.chain.items():
        at_a, at_b = a.timeline.at(name), b.timeline.at(name)
        if at_a is not None and at_b is not None:
            rows.append({"moment": label, "a_s": at_a, "b_s": at_b, "difference_ms": (at_b - at_a) * 1000})
    return rows
