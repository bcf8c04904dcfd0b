"""Legends of the report's charts, right of the axes: inside, wherever matplotlib puts one, it can
cover a bar. The page saves each chart with a tight box (page.svg_data), which takes the legend in."""

from __future__ import annotations

from typing import Any


def outside(ax: Any, fontsize: int = 8) -> None:
    ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
