"""What one boot of the device measures, in order: power-on to the home screen's first frame, the
boot's end (systemd-analyze), the second app's first launch after boot (cold), repeated launches
(warm) alternating served and exec'd, and the daemon's --status. Every time is the host's stamp of
a line on the serial console."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headstart.daemon import prepared_pending
from qemu import MARK, Boot, BootFiles, DeviceError, Screen, booted

HOME_FRAME = "home screen frame"
COMPOSITOR = "compositor ready"
READY_REGEX = re.escape(MARK + HOME_FRAME) + "$"
MARKS = [("compositor ready", re.escape(MARK + COMPOSITOR) + "$")]
# Linux's text console draws with 16 colours at most: a screen with more shows a compositor's output.
# A compositor can run, and its clients commit frames, without being allowed to show any.
TEXT_CONSOLE_COLOURS = 16
NOT_READ = Screen(0, "")


def shows_compositor(screen: Screen) -> bool:
    return screen.colours > TEXT_CONSOLE_COLOURS


def shows_app_over(screen: Screen, home: Screen) -> bool:
    """An app opened from the home screen is on the display: the kiosk shell shows it full screen."""
    return shows_compositor(screen) and screen.digest != home.digest


@dataclass
class Plan:
    cold_mode: str  # "exec" or "served": how the app's first launch after boot is opened
    warm_modes: list[str]  # the modes of the repeated launches, alternating
    warm_runs: int  # launches of each mode
    kernel_args: list[str]
    timeout_s: float = 900.0
    # Before each repeated launch, as a user opens the app again after a while: what the daemon does
    # after a launch (the next child's toolkit started ahead) then runs between launches, not during
    # the exec'd one that comes next. Seconds of the emulated board, where GTK starts in about 1 s.
    pause_s: float = 5.0
    # The daemon's log on the console after the launches even when no launch was served: the advice
    # reads when it was ready and how it served the home screen.
    daemon_log: bool = False


@dataclass
class BootResult:
    log: Path
    systemd_log: Path
    home_frame_s: float
    launches: list[dict[str, Any]] = field(default_factory=list)  # mode, cold, ms, status, output
    status: list[str] = field(default_factory=list)
    screen: Screen = NOT_READ  # the emulated display after the home screen's frame and the analysis
    # systemctl --failed once the boot was over; None: not read (an image whose agent does not say)
    failed_units: list[str] | None = None

    @property
    def home_screen_shown(self) -> bool:
        return shows_compositor(self.screen)

    def as_dict(self) -> dict[str, Any]:
        return {
            "log": str(self.log),
            "systemd_log": str(self.systemd_log),
            "home_frame_s": self.home_frame_s,
            "launches": self.launches,
            "status": self.status,
            "screen_colours": self.screen.colours,
            "home_screen_shown": self.home_screen_shown,
            "failed_units": self.failed_units,
        }


def run(arch: str, files: BootFiles, accel: str, plan: Plan, log: Path) -> BootResult:
    with booted(arch, files, accel, plan.kernel_args, plan.timeout_s, log=log) as boot:
        frame_s, _ = boot.wait_for(f"^{re.escape(HOME_FRAME)}$", plan.timeout_s)
        analyze = _lines(boot, "analyze", plan.timeout_s)
        result = BootResult(log, log.with_suffix(".systemd.txt"), frame_s, failed_units=failed_units(analyze))
        result.systemd_log.write_text("".join(line + "\n" for line in analyze))
        home = result.screen = _screen_once(boot, shows_compositor)
        daemon = "served" in {plan.cold_mode, *plan.warm_modes}
        result.launches.append(_launch(boot, plan.cold_mode, cold=True, daemon=daemon, home=home))
        for i in range(plan.warm_runs):
            modes = plan.warm_modes if i % 2 == 0 else plan.warm_modes[::-1]
            for mode in modes:
                time.sleep(plan.pause_s)
                result.launches.append(_launch(boot, mode, cold=False, daemon=daemon, home=home))
        if daemon:
            result.status = _lines(boot, "status", 120)
        if daemon or plan.daemon_log:
            daemon_log = _lines(boot, "daemon-log", 120)
            log.with_suffix(".daemon.txt").write_text("".join(line + "\n" for line in daemon_log))
        boot.wait_for("^done$", 60, after=boot.send("done"))
    return result


def failed_units(analyze: list[str]) -> list[str] | None:
    """The units `systemctl --failed` listed in the agent's analysis (each line: unit, load, active...),
    or None when the analysis does not say (no "system state" line before them)."""
    if not any(line.startswith("system state: ") for line in analyze):
        return None
    listed = [line.removeprefix("failed unit: ").split() for line in analyze if line.startswith("failed unit: ")]
    return [words[0] for words in listed if words]


def _screen_once(boot: Boot, shown: Callable[[Screen], bool], timeout_s: float = 10.0) -> Screen:
    """The display once shown() says it shows what was committed, or as it is after timeout_s: the
    compositor draws a committed frame at its next repaint, which under emulation can lag."""
    deadline = time.monotonic() + timeout_s
    while not shown(screen := boot.screen()) and time.monotonic() < deadline:
        time.sleep(1.0)
    return screen


def _launch(boot: Boot, mode: str, cold: bool, daemon: bool, home: Screen) -> dict[str, Any]:
    waited_s = _wait_for_prepared_child(boot) if daemon else 0.0
    i = boot.send(f"open {mode}")
    start, _ = boot.wait_for(f"^app start {mode}$", 300, after=i)
    frame, _ = boot.wait_for(f"^app frame {mode}$", 300, after=i)
    app = _screen_once(boot, lambda s: shows_app_over(s, home))  # after the timed frame
    _, closed = boot.wait_for("^app closed", 120, after=boot.send("close"))
    m = re.search(r"status=(\d+) output=(\w+)", closed)
    if m is None:
        raise DeviceError(f"the app agent said {closed!r}")
    return {
        "mode": mode,
        "cold": cold,
        "ms": (frame - start) * 1000,
        "status": int(m[1]),
        "output": m[2],
        "waited_for_child_s": waited_s,
        "on_screen": shows_app_over(app, home),
    }


def _wait_for_prepared_child(boot: Boot, timeout_s: float = 120.0) -> float:
    """Waits while the daemon's prepared child is due or starting: its toolkit's start, seconds on
    the emulated board, would otherwise run beside the launch measured next and slow an exec'd one.
    Returns the seconds waited, which the bench reports."""
    started = time.monotonic()
    while any(prepared_pending(line) for line in _prepared_lines(boot)):
        if time.monotonic() - started > timeout_s:
            raise DeviceError(f"the daemon's prepared child was still starting after {timeout_s:.0f} s")
        time.sleep(1.0)
    return time.monotonic() - started


def _prepared_lines(boot: Boot) -> list[str]:
    """The `prepared` values of the daemon's --status, read over the console."""
    key = "prepared: "
    return [line[len(key) :] for line in _lines(boot, "status", 120) if line.startswith(key)]


def _lines(boot: Boot, command: str, timeout_s: float) -> list[str]:
    i = boot.send(command)
    boot.wait_for(f"^{command} done$", timeout_s, after=i)
    prefix = f"{command}: "
    return [text[len(prefix) :] for _, text in boot.marks()[i:] if text.startswith(prefix)]
