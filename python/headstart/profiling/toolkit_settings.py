"""Settings of a program's toolkit that a product makes through the program's environment and that
change how long it takes to its first frame: each one that applies to the launch profiled is timed
both ways, side by side, and advised where the other way was quicker.

- The renderer. GTK 4 and Qt Quick draw through OpenGL (EGL) whenever they can get a context. On a
  device without a GPU driver, Mesa still gives them one, drawn by the CPU (its swrast driver:
  llvmpipe, which compiles every shader to machine code with LLVM in each process; Mesa's shader
  cache on the disk spares part of that from the second launch on). Each toolkit also has a
  renderer that draws with the CPU directly (GTK 4's cairo renderer, Qt Quick's software scene
  graph), which on such a device reaches the first frame far sooner.
- The cursor theme. GTK 3 on Wayland loads every cursor of its theme as it opens the display
  (libwayland-cursor reads each image of each cursor file); GTK 4 and Qt load a cursor when they
  first show it. Without a theme (XCURSOR_PATH naming an empty folder, as on an image that installs
  none) libwayland-cursor's few built-in cursors serve, which a device without a pointer never shows.

Which way runs is the program's choice, and both are per display connection: headstartd cannot take
this work over, so it is advice, with the numbers of both ways.
"""

from __future__ import annotations

import itertools
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError
from headstart.stats import summarize

RUNS = 10  # launches each way, alternating

# Mesa's drivers: one file per driver name before Mesa 24 (dri/swrast_dri.so, dri/iris_dri.so...),
# one library for all of them since (libgallium-24.x.so), where the name no longer says which.
_MESA_DRIVER = re.compile(r"(?:/dri/(?P<name>[^/]+)_dri\.so|/libgallium[^/]*\.so)$")
_CPU_DRIVERS = {"swrast", "kms_swrast", "llvmpipe", "softpipe"}
EMPTY_FOLDER = ""  # a setting's value: a fresh empty folder, made for the launches


def gl_driver(paths: list[str], env: Mapping[str, str]) -> str | None:
    """The Mesa driver among a launch's objects, if it loaded one."""
    return next((p for p in paths if _MESA_DRIVER.search(p)), None)


def drawn_by_cpu(driver: str) -> bool | None:
    """Whether the driver draws with the CPU; None where its file does not say (Mesa 24's libgallium)."""
    m = _MESA_DRIVER.search(driver)
    name = m.group("name") if m else None
    return None if name is None else name in _CPU_DRIVERS


def wayland_cursors(paths: list[str], env: Mapping[str, str]) -> str | None:
    """libwayland-cursor, when the launch loaded it on a Wayland display."""
    on_wayland = bool(env.get("WAYLAND_DISPLAY")) and env.get("GDK_BACKEND", "wayland").startswith("wayland")
    return next((p for p in paths if Path(p).name.startswith("libwayland-cursor.so")), None) if on_wayland else None


@dataclass(frozen=True)
class Setting:
    """A toolkit, recognised by a library of its own, and the variable that makes the other choice."""

    what: str  # "renderer", "cursor theme"
    toolkit: str
    library: str  # a soname prefix
    variable: str
    value: str  # EMPTY_FOLDER: a fresh empty folder
    # From the launch's objects and environment: what shows that the setting matters (the GL driver,
    # the cursor library), or None when it does not apply.
    applies: Callable[[list[str], Mapping[str, str]], str | None]


SETTINGS = (
    Setting("renderer", "GTK 4", "libgtk-4.so", "GSK_RENDERER", "cairo", gl_driver),
    Setting("renderer", "Qt 6 Quick", "libQt6Quick.so", "QT_QUICK_BACKEND", "software", gl_driver),
    Setting("renderer", "Qt 5 Quick", "libQt5Quick.so", "QT_QUICK_BACKEND", "software", gl_driver),
    Setting("cursor theme", "GTK 3", "libgtk-3.so", "XCURSOR_PATH", EMPTY_FOLDER, wayland_cursors),
)


def chosen(env: Mapping[str, str]) -> dict[str, str]:
    """The settings this environment makes already, as variable -> value: a benchmark's figures hold
    for them (GTK 4 without GL is another program, as far as its time is concerned)."""
    return {s.variable: env[s.variable] for s in SETTINGS if s.variable in env}


def applicable(paths: list[str], env: Mapping[str, str]) -> list[tuple[Setting, str]]:
    """The settings that apply to a launch with these objects, whose environment does not make the
    choice already, each with what shows it matters."""
    names = [Path(p).name for p in paths]
    found = []
    for s in SETTINGS:
        if s.variable in env or not any(n.startswith(s.library) for n in names):
            continue
        if (evidence := s.applies(paths, env)) is not None:
            found.append((s, evidence))
    return found


TimeToReady = Callable[[dict[str, str]], int | None]  # one launch with these variables added: ns, or None


@contextmanager
def _value(setting: Setting) -> Iterator[str]:
    if setting.value != EMPTY_FOLDER:
        yield setting.value
        return
    with tempfile.TemporaryDirectory(prefix="headstart-empty-") as empty:
        yield empty


def measure(setting: Setting, evidence: str, time_to_ready: TimeToReady, runs: int = RUNS) -> dict[str, Any]:
    """Times to ready as the program is and with the other choice, alternating; medians in ms and
    their ratio. A launch that is not ready either way ends the comparison, which says why: a
    program that cannot run the other way is no reason to lose the rest of its profile."""
    as_is: list[float] = []
    changed: list[float] = []
    error = None
    with _value(setting) as value:
        ways = (({}, as_is, "as it is"), ({setting.variable: value}, changed, f"with {setting.variable}={value}"))
        for env, into, name in itertools.chain.from_iterable(itertools.repeat(ways, runs)):
            try:
                ns = time_to_ready(env)
            except HeadstartError as e:
                error = f"{name}: {e}"
                break
            if ns is None:
                error = f"{name}: it ended before it was ready"
                break
            into.append(ns / 1e6)
    result: dict[str, Any] = {
        "setting": setting.what,
        "toolkit": setting.toolkit,
        "variable": setting.variable,
        "value": setting.value or "an empty folder",
        "found": evidence,
        "drawn_by_cpu": drawn_by_cpu(evidence) if setting.what == "renderer" else None,
        "as_is_ms": summarize(as_is).as_dict() if as_is else None,
        "changed_ms": summarize(changed).as_dict() if changed else None,
        "ratio": None,
        "error": error,
    }
    if error is None:
        result["ratio"] = result["changed_ms"]["median"] / result["as_is_ms"]["median"]
    return result


def _times(found: dict[str, Any]) -> str:
    setting = f"{found['variable']}={found['value']}"
    return (
        f"{found['as_is_ms']['median']:.1f} ms to ready, {found['changed_ms']['median']:.1f} ms with {setting} "
        f"({found['ratio']:.2f}, medians of {found['as_is_ms']['count']} launches each, alternating)"
    )


def advice(found: dict[str, Any]) -> str | None:
    """One line of advice when the other choice reached ready sooner, with both figures."""
    if found["ratio"] is None or found["ratio"] >= 1:
        return None
    if found["setting"] == "renderer":
        how = {True: "drawn by the CPU", False: "a GPU driver", None: "driver unknown"}[found["drawn_by_cpu"]]
        head = f"{found['toolkit']} drew its first frame with OpenGL ({Path(found['found']).name}, {how})"
        tail = f"On a device without a GPU, set {found['variable']}={found['value']} in the program's environment"
    else:
        head = f"{found['toolkit']} loaded its whole cursor theme as it opened the Wayland display"
        tail = (
            "On a device without a pointer, leave the cursor theme out of the image, or set XCURSOR_PATH in the "
            "program's environment to a folder holding only the cursors it shows (libwayland-cursor's few "
            "built-in ones serve the rest)"
        )
    return (
        f"{head}: {_times(found)}. {tail}; the environment is set in its unit or session. headstartd cannot "
        "take this work: it is done for one display connection"
    )


def no_gain(found: dict[str, Any]) -> str:
    """A comparison that gives no advice: the other choice was no quicker, or it stopped early."""
    head = f"{found['setting']}: {found['toolkit']}: {found['variable']}={found['value']}"
    if found["error"]:
        return f"{head} not compared ({found['error']})"
    as_is, changed = found["as_is_ms"]["median"], found["changed_ms"]["median"]
    return f"{head} is no quicker here ({as_is:.1f} ms to ready as it is, {changed:.1f} ms)"
