"""The programs a benchmark launches: our samples, or any program with its arguments, each with the
moment it counts as ready (a line of output, a window shown, or its exit) and what it needs to run
(a display, X11 or Wayland; environment variables)."""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from headstart import binaries
from headstart.errors import UsageError
from headstart.verdicts import is_elf_program


@dataclass(frozen=True)
class Ready:
    """When a launch is ready: the first output line matching `pattern`, or its first window shown
    (`window`: a top-level window mapped on X, the first frame of a toplevel surface committed on
    Wayland; the program is then stopped), else the program's exit.
    A launch not ready within `timeout` seconds is stopped and counted as failed (None: launch-timer's
    default, 30 s for a line or a window, no limit for the exit). With `stop_at_line` a program ready
    at its line is stopped there too: a user's program given with --ready may run on (a service's
    "listening" line); our samples exit by themselves once ready, which learning reads."""

    pattern: str | None = None
    window: bool = False
    timeout: float | None = None
    stop_at_line: bool = False

    @property
    def stops(self) -> bool:
        """Whether the program is stopped once ready, rather than left to exit."""
        return self.window or (self.pattern is not None and self.stop_at_line)

    def describe(self) -> str:
        if self.window:
            return "window shown"
        return f"line /{self.pattern}/" if self.pattern else "exit"

    def timer_args(self) -> list[str]:
        limit = ["--timeout", f"{self.timeout:g}"] if self.timeout is not None else []
        if self.window:
            return ["--ready-window", *limit]
        line = ["--ready", self.pattern, *(["--stop-at-ready"] if self.stop_at_line else [])] if self.pattern else []
        return [*line, *limit]


@dataclass(frozen=True)
class Sample:
    args: list[str]
    ready: Ready = Ready()
    env: dict[str, str] = field(default_factory=dict)
    display: bool = False


# Each sample with a small, representative job. The GUI samples show a real window: on X11, GTK 3
# says "window shown" when its window is mapped, and Qt 5 (not off screen: the display's environment
# chooses its platform, benchmark/display.py) prints its line after the first round of events; the
# GTK 4 and Qt 6 Quick home screens (gtk4-tiles, qml-tiles) print theirs once their first frame is
# drawn; all flushed at once. On Wayland the GTK 3 and Qt 5 lines come before anything is drawn, so
# there the samples are ready at their first frame, as any program is (Program.on_display).
SAMPLES: dict[str, Sample] = {
    "gtk-hello": Sample([], Ready("^window shown$"), display=True),
    "gtk4-tiles": Sample([], Ready("^window shown$"), display=True),
    "jpeg-encode": Sample(["85"]),
    "mp3-encode": Sample(["1"]),
    "fft": Sample(["4096"]),
    "many-globals": Sample([]),
    "qt-widgets": Sample([], Ready("^qt-widgets:"), display=True),
    "qml-tiles": Sample([], Ready("^qml-tiles:"), display=True),
}


@dataclass
class Program:
    """A program to launch: a sample's name, or a path and its arguments in one word."""

    name: str
    path: Path
    args: list[str]
    ready: Ready = Ready()
    env: dict[str, str] = field(default_factory=dict)
    display: bool = False
    shown_on: str | None = None  # the display it is timed on: "x11" or "wayland" (display.DISPLAYS)

    @property
    def label(self) -> str:
        """Its name in results: on Wayland, with the display named (X11 is where it always ran)."""
        return f"{self.name} (wayland)" if self.shown_on == "wayland" else self.name

    def on_display(self, kind: str) -> Program:
        """This program timed on a display of `kind`. A sample's ready line comes, on Wayland, before
        its window is drawn: there it is ready at its first frame (and then stopped)."""
        ready = self.ready
        if kind == "wayland" and self.is_sample and self.display:
            ready = Ready(window=True, timeout=self.ready.timeout)
        return replace(self, ready=ready, shown_on=kind)

    @property
    def argv(self) -> list[str]:
        return [str(self.path), *self.args]

    @property
    def is_sample(self) -> bool:
        return self.name in SAMPLES

    @property
    def needs_display(self) -> bool:
        return self.display or self.ready.window


def resolve(program: str, ready: Ready | None = None) -> Program:
    """Samples mark main themselves (bench/apps/mark.h); other programs are marked by a preloaded
    library (see mark_main_env). `ready` applies to programs that are not samples."""
    if program in SAMPLES:
        s = SAMPLES[program]
        return Program(program, binaries.find(program), s.args, s.ready, s.env, s.display)
    try:
        words = shlex.split(program)
    except ValueError as e:  # an unclosed quote
        raise UsageError(f"{program!r}: {e.args[0].lower()} (a program and its arguments in one word)") from e
    if not words:
        raise UsageError("an empty program: give a sample's name or a path")
    path, *args = words
    if "/" not in path and not Path(path).is_file():
        path = shutil.which(path) or path  # a name, as a shell (and profile, check) finds it on PATH
    if not Path(path).is_file():
        raise UsageError(f"{path}: no such sample app, file or program on PATH (samples: {', '.join(SAMPLES)})")
    if not is_elf_program(Path(path)):  # relocations and memory are read from the ELF file
        raise UsageError(f"{path}: not an ELF program we may run (a script? bench its interpreter: '/bin/sh {path}')")
    return Program(Path(path).name, Path(path).resolve(), args, ready or Ready())


def mark_main_env(programs: list[Program], base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment under which every program of the run marks main. A program that is not one of
    our samples cannot mark it itself: libheadstart-mark-main.so, preloaded into it by exec and into
    the daemons (so that the loader environments still match), marks it for it. It then runs in
    every mode, exec included, so the ratios stay side by side. `base` is the environment to start
    from (ours by default)."""
    env = dict(os.environ if base is None else base)
    if all(p.is_sample for p in programs):
        return env
    return dict(env, LD_PRELOAD=str(binaries.find("mark-main")))
