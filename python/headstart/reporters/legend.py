"""Legends of the report's charts, right of the axes: inside, wherever matplotlib puts one, it can
cover a bar. The page saves each chart with a tight box (page.svg_data), which takes the legend in."""

from __future__ import annotations

from typing import Any


def outside(ax: Any, fontsize: int = 8) -> None:
    if not ax.get_legend_handles_labels()[1]:
        return  # nothing drawn with a label (every mode failed): matplotlib would warn of an empty legend
    ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
