"""Whether a program's first frame waits on OpenGL drawn by the CPU, and what its toolkit's own
software renderer gives instead: both timed, side by side.

GTK 4 and Qt Quick draw through OpenGL (EGL) whenever they can get a context. On a device without a
GPU driver, Mesa still gives them one, drawn by the CPU (its swrast driver: llvmpipe, which compiles
every shader to machine code with LLVM in each process; Mesa's shader cache on the disk spares part
of that from the second launch on). Each toolkit also has a renderer that draws with the CPU
directly (GTK 4's cairo renderer, Qt Quick's software scene graph), which on such a device reaches
the first frame far sooner. Which one runs is the program's choice, made through its environment,
and a GL context belongs to one display connection: headstartd cannot take this work over, so it is
advice, with the numbers of both renderers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headstart.stats import summarize

RUNS = 10  # launches with each renderer, alternating


@dataclass(frozen=True)
class Switch:
    """A toolkit, recognised by a library of its own, and the variable that picks its CPU renderer."""

    toolkit: str
    library: str  # a soname prefix
    variable: str
    value: str


SWITCHES = (
    Switch("GTK 4", "libgtk-4.so", "GSK_RENDERER", "cairo"),
    Switch("Qt 6 Quick", "libQt6Quick.so", "QT_QUICK_BACKEND", "software"),
    Switch("Qt 5 Quick", "libQt5Quick.so", "QT_QUICK_BACKEND", "software"),
)

# Mesa's drivers: one file per driver name before Mesa 24 (dri/swrast_dri.so, dri/iris_dri.so...),
# one library for all of them since (libgallium-24.x.so), where the name no longer says which.
_MESA_DRIVER = re.compile(r"(?:/dri/(?P<name>[^/]+)_dri\.so|/libgallium[^/]*\.so)$")
_CPU_DRIVERS = {"swrast", "kms_swrast", "llvmpipe", "softpipe"}


def gl_driver(paths: Iterable[str]) -> str | None:
    """The Mesa driver among a launch's objects, if it loaded one."""
    return next((p for p in paths if _MESA_DRIVER.search(p)), None)


def drawn_by_cpu(driver: str) -> bool | None:
    """Whether the driver draws with the CPU; None where its file does not say (Mesa 24's libgallium)."""
    m = _MESA_DRIVER.search(driver)
    name = m.group("name") if m else None
    return None if name is None else name in _CPU_DRIVERS


def applicable(paths: list[str], env: Mapping[str, str]) -> tuple[Switch, str] | None:
    """The toolkit's switch and the GL driver, when a launch of a GTK 4 or Qt Quick program loaded a
    Mesa driver and its environment does not choose a renderer already."""
    driver = gl_driver(paths)
    if driver is None:
        return None
    names = [Path(p).name for p in paths]
    for switch in SWITCHES:
        if any(n.startswith(switch.library) for n in names) and switch.variable not in env:
            return switch, driver
    return None


TimeToReady = Callable[[dict[str, str]], int | None]  # one launch with these variables added: ns, or None


def measure(switch: Switch, driver: str, time_to_ready: TimeToReady, runs: int = RUNS) -> dict[str, Any]:
    """Times to ready (ns, None when not ready) with the toolkit's default renderer and with its CPU
    renderer, alternating; medians in ms and their ratio."""
    default: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        for env, into in (({}, default), ({switch.variable: switch.value}, cpu)):
            ns = time_to_ready(env)
            if ns is not None:
                into.append(ns / 1e6)
    result: dict[str, Any] = {
        "toolkit": switch.toolkit,
        "variable": switch.variable,
        "value": switch.value,
        "gl_driver": driver,
        "drawn_by_cpu": drawn_by_cpu(driver),
        "default_ms": summarize(default).as_dict() if default else None,
        "cpu_renderer_ms": summarize(cpu).as_dict() if cpu else None,
        "ratio": None,
    }
    if default and cpu:
        result["ratio"] = result["cpu_renderer_ms"]["median"] / result["default_ms"]["median"]
    return result


def advice(found: dict[str, Any]) -> str | None:
    """One line of advice when the CPU renderer reached ready sooner, with both figures."""
    ratio = found["ratio"]
    if ratio is None or ratio >= 1:
        return None
    gl, cpu = found["default_ms"]["median"], found["cpu_renderer_ms"]["median"]
    how = {True: "drawn by the CPU", False: "a GPU driver", None: "driver unknown"}[found["drawn_by_cpu"]]
    setting = f"{found['variable']}={found['value']}"
    return (
        f"{found['toolkit']} drew its first frame with OpenGL ({Path(found['gl_driver']).name}, {how}): "
        f"{gl:.1f} ms to ready, {cpu:.1f} ms with {setting} ({ratio:.2f}, medians of "
        f"{found['default_ms']['count']} launches each, alternating). On a device without a GPU, set "
        f"{setting} in the program's environment (its unit or session). headstartd cannot take this work: "
        "a GL context belongs to one display connection"
    )
