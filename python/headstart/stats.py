"""Summary statistics for launch timings: median and the 10th and 90th percentiles."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


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
