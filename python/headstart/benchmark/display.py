"""A display for programs that show a window, started for the run and stopped after it: a private
Xvfb (a real X server drawing into memory, with Mesa's software GL) or one the user names, or a
private weston (a real Wayland compositor, with a seat: its X11 backend in a private Xvfb)."""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import socket as sock
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from headstart.benchmark.lifetime import ends_with_parent
from headstart.benchmark.session_bus import session_bus
from headstart.errors import HeadstartError, UsageError
from headstart.processes import terminate

START_TIMEOUT_S = 15.0
SCREEN = "1280x800x24"
NO_XVFB = "no X server for the programs that show a window: install xvfb (make deps) or pass --display"


@contextmanager
def x_display(display: str | None = None, missing: str = NO_XVFB) -> Iterator[str]:
    """The DISPLAY to use: `display` itself, or a fresh Xvfb on a free display number (without
    Xvfb, the error `missing`)."""
    if display:
        yield display
        return
    xvfb = shutil.which("Xvfb")
    if not xvfb:
        raise HeadstartError(missing)
    read_end, write_end = os.pipe()
    try:
        # -displayfd: Xvfb picks a free display number and writes it here once it accepts clients.
        proc = subprocess.Popen(
            [xvfb, "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0", SCREEN],
            pass_fds=(write_end,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=ends_with_parent,
        )
    finally:
        os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], START_TIMEOUT_S)
        number = os.read(read_end, 32).decode().strip() if ready else ""
        if not number.isdigit():
            raise HeadstartError(f"Xvfb did not start within {START_TIMEOUT_S:.0f} s")
        yield f":{number}"
    finally:
        os.close(read_end)
        terminate(proc, timeout=10)


# weston's kiosk shell: each toplevel fullscreen on the one output, no shell client of its own to
# start or to draw (desktop-shell runs weston-desktop-shell beside the programs), as in a kiosk or
# an embedded product's UI. The pixman renderer composites each frame on the CPU, as on a board
# without a GPU driver in its image. Its X11 backend, in a private Xvfb, and not the headless one:
# weston 10's headless backend has no seat, and a product's compositor has one (a keyboard, a
# pointer). Without it GTK 3 prints a critical as it starts (gdk_seat_get_keyboard), which a program
# under test would print where it never does on a device, and the toolkits skip the keymap and the
# cursor a seat brings. The programs never see that X server: only weston is given its DISPLAY.
WESTON_ARGS = (
    "--backend=x11-backend.so",
    # The headless backend's output, which every earlier figure had (the X11 backend's is 1024x600).
    "--width=1024",
    "--height=640",
    "--use-pixman",
    "--shell=kiosk-shell.so",
    "--idle-time=0",
    "--no-config",
)
WAYLAND_SOCKET = "wayland-headstart"


@contextmanager
def wayland_display() -> Iterator[dict[str, str]]:
    """A private weston with a seat (its X11 backend in a private Xvfb), in a runtime directory of
    its own, stopped after; the environment its clients need (WAYLAND_DISPLAY and XDG_RUNTIME_DIR)."""
    weston = shutil.which("weston")
    if not weston:
        raise HeadstartError("no Wayland compositor for the programs that show a window: install weston (make deps)")
    seatless = "no X server for weston's X11 backend, which gives it a seat: install xvfb (make deps)"
    with x_display(missing=seatless) as x_server, tempfile.TemporaryDirectory(prefix="headstart-weston-") as runtime:
        os.chmod(runtime, 0o700)
        log = Path(runtime) / "weston.log"
        socket = Path(runtime) / WAYLAND_SOCKET
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [weston, *WESTON_ARGS, f"--socket={WAYLAND_SOCKET}"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env=_weston_env(runtime, x_server),
                start_new_session=True,
                preexec_fn=ends_with_parent,
            )
        try:
            _wait_listening(proc, socket, log)
            yield {"WAYLAND_DISPLAY": WAYLAND_SOCKET, "XDG_RUNTIME_DIR": runtime}
        finally:
            terminate(proc, timeout=10)


def _weston_env(runtime: str, x_server: str) -> dict[str, str]:
    """Ours, with the private X server as weston's only display: its X11 backend draws there, and
    the wayland backend, which a WAYLAND_DISPLAY of the session's would make it, is not taken."""
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "WAYLAND_SOCKET", "DISPLAY")}
    return dict(env, XDG_RUNTIME_DIR=runtime, DISPLAY=x_server)


def _wait_listening(proc: subprocess.Popen[bytes], socket: Path, log: Path) -> None:
    """Until weston accepts a connection on its socket; one line naming why when it cannot."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise HeadstartError(f"weston did not start (exit status {proc.returncode}): {_why(log)}")
        if socket.exists():
            with contextlib.suppress(OSError), sock.socket(sock.AF_UNIX, sock.SOCK_STREAM) as s:
                s.connect(str(socket))
                return
        time.sleep(0.02)
    raise HeadstartError(f"weston did not start within {START_TIMEOUT_S:.0f} s: {_why(log)}")


def _why(log: Path) -> str:
    """weston's lines that say what went wrong, in one (its log stamps each line with the time)."""
    lines = [re.sub(r"^\[[\d:.]+\]\s*", "", line).strip() for line in log.read_text(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    failing = [line for line in lines if re.search(r"fatal|fail|error|cannot|could not|no such", line, re.I)]
    return "; ".join(failing[-3:]) if failing else (lines or ["no message"])[-1]


DISPLAYS = ("x11", "wayland")
# What makes the toolkits use that display when both could be reached (GTK tries Wayland first and
# falls back to X; Qt 5 takes X unless told otherwise), so that a program never runs on the other.
TOOLKIT_ENV = {
    "x11": {"GDK_BACKEND": "x11", "QT_QPA_PLATFORM": "xcb"},
    "wayland": {"GDK_BACKEND": "wayland", "QT_QPA_PLATFORM": "wayland"},
}
# The other display's variables, dropped: a program must not reach the session's display instead.
_OTHERS = {"x11": ("WAYLAND_DISPLAY", "WAYLAND_SOCKET"), "wayland": ("DISPLAY",)}


def default_displays(env: dict[str, str] | None = None) -> list[str]:
    """The session's kind of display (WAYLAND_DISPLAY, else DISPLAY), else x11 where Xvfb is
    installed (as before Wayland was measured: a default run stays as long and comparable), else
    wayland where weston is, else x11 (which then says what to install). `--display both` for both."""
    env = dict(os.environ) if env is None else env
    if env.get("WAYLAND_DISPLAY"):
        return ["wayland"]
    if env.get("DISPLAY") or shutil.which("Xvfb") or not shutil.which("weston"):
        return ["x11"]
    return ["wayland"]


def parse_displays(text: str | None) -> tuple[list[str], str | None]:
    """--display: x11, wayland, both, or an X server's name (:N), which means x11 on that server.
    The kinds of display, and the X server given (None: a private Xvfb)."""
    if text is None:
        return default_displays(), None
    if text == "both":
        return list(DISPLAYS), None
    if text in DISPLAYS:
        return [text], None
    if text.startswith(":") or ":" in text:
        return ["x11"], text
    raise UsageError(f"--display {text}: choose x11, wayland, both or an X server (:N)")


@contextmanager
def private_display(kind: str, x_server: str | None = None) -> Iterator[dict[str, str]]:
    """A display of `kind` for the run, with a private session bus as any session has
    (benchmark/session_bus.py): what a program needs in its environment to show a window on it."""
    if kind == "wayland":
        with wayland_display() as found, session_bus(found) as bus:
            yield {**found, **bus, **TOOLKIT_ENV["wayland"]}
    else:
        with x_display(x_server) as name, session_bus({"DISPLAY": name}) as bus:
            yield {"DISPLAY": name, **bus, **TOOLKIT_ENV["x11"]}


def display_env(base: dict[str, str], kind: str, found: dict[str, str]) -> dict[str, str]:
    """`base` with the display found, and without the other kind's variables."""
    return {**{k: v for k, v in base.items() if k not in _OTHERS[kind]}, **found}


@contextmanager
def private_display_here(kind: str) -> Iterator[None]:
    """For the commands that launch with our own environment (profile): a private display of `kind`
    in it while the block runs, our environment as it was after."""
    saved = dict(os.environ)
    with private_display(kind) as found:
        os.environ.clear()
        os.environ.update(display_env(saved, kind, found))
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)
