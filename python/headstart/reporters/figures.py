"""matplotlib, imported when a report draws its first chart rather than when headstart starts: the
import took about 1 s of every command's start here (far more on a slow board), and a device
without matplotlib runs every command but the charts."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from headstart.errors import HeadstartError

if TYPE_CHECKING:
    from matplotlib.figure import Figure


MISSING = "drawing a report's charts needs matplotlib (Debian: apt install python3-matplotlib; pip: matplotlib)"


def _require() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        raise HeadstartError(MISSING) from e


def missing() -> str | None:
    """Why no chart can be drawn here, or None: for a command whose measurements must be kept
    whether or not their report can be drawn."""
    try:
        _require()
    except HeadstartError as e:
        return str(e)
    return None


def new_figure(**kwargs: Any) -> Figure:
    """A Figure made directly, which draws without any display."""
    _require()
    from matplotlib.figure import Figure

    return Figure(**kwargs)


@cache
def tab20() -> list[str]:
    """matplotlib's 20 colours in 10 pairs, dark then light."""
    _require()
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    return [to_hex(c) for c in colormaps["tab20"].colors]
