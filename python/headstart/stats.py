"""Summary statistics for launch timings: median and the 10th and 90th percentiles."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Summary:
    count: int
    median: float
    p10: float
    p90: float

    def as_dict(self) -> dict[str, float]:
        return {"count": self.count, "median": self.median, "p10": self.p10, "p90": self.p90}


def summarize(values: list[float]) -> Summary:
    """Percentiles by linear interpolation between closest ranks (statistics.quantiles, inclusive)."""
    if not values:
        raise ValueError("no values to summarize")
    if len(values) == 1:
        v = values[0]
        return Summary(1, v, v, v)
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return Summary(len(values), statistics.median(values), deciles[0], deciles[-1])


MIN_FOR_INTERVAL = 5  # launches a side below which no interval is given
_RESAMPLES = 2000


@dataclass(frozen=True)
class Ratio:
    """median(after) / median(before), with a 95% interval from resampling each side's launches
    (bootstrap; None with fewer than MIN_FOR_INTERVAL a side). An interval that holds 1 means the
    launches do not tell the two apart."""

    median: float
    low: float | None
    high: float | None

    @property
    def resolved(self) -> bool:
        return self.low is not None and self.high is not None and not self.low <= 1.0 <= self.high

    def as_dict(self) -> dict[str, float | bool | None]:
        return {"median": self.median, "low": self.low, "high": self.high, "resolved": self.resolved}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ratio:
        return cls(d["median"], d["low"], d["high"])

    def describe(self) -> str:
        if self.low is None or self.high is None:
            return f"{self.median:.2f} (too few launches for an interval: {MIN_FOR_INTERVAL} a side at least)"
        verdict = "" if self.resolved else ": no difference these launches can resolve"
        return f"{self.median:.2f} (95% interval {self.low:.2f}-{self.high:.2f}{verdict})"


def ratio(before: list[float], after: list[float]) -> Ratio:
    median = statistics.median(after) / statistics.median(before)
    if min(len(before), len(after)) < MIN_FOR_INTERVAL:
        return Ratio(median, None, None)
    rng = random.Random(0)  # the same launches give the same interval
    ratios = sorted(
        statistics.median(rng.choices(after, k=len(after))) / statistics.median(rng.choices(before, k=len(before)))
        for _ in range(_RESAMPLES)
    )
    return Ratio(median, ratios[int(0.025 * _RESAMPLES)], ratios[int(0.975 * _RESAMPLES) - 1])
