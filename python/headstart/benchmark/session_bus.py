"""A private D-Bus session bus for the programs that show a window, started with the private display
and stopped with it, as in any desktop or kiosk session. Without one, GLib finds no session bus:
on X11 it spawns `dbus-launch --autolaunch` on every launch (or fails to), on Wayland a program that
registers on the bus (a GtkApplication, a Qt program's D-Bus menus and accessibility) goes without;
neither is what a device's session does. The bus is dbus-daemon with the system's session
configuration (its activatable services included, as in a real session), listening in a directory of
its own; every launch, exec'd or served, gets its address in DBUS_SESSION_BUS_ADDRESS."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from headstart.benchmark.lifetime import ends_with_parent
from headstart.errors import HeadstartError
from headstart.processes import process_stats

START_TIMEOUT_S = 15.0
GROUP_STOP_S = 5.0  # for the services in the bus's process group to end after it
ADDRESS = "DBUS_SESSION_BUS_ADDRESS"


@contextmanager
def session_bus(display: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """A private session bus for the run, stopped after: the environment its clients need
    ({} when dbus-daemon is not installed: the programs then run without a bus, as before, said once).
    `display`: the private display's variables, which the services the bus starts get (as a session's
    dbus-update-activation-environment gives them), never the session's own display."""
    daemon = shutil.which("dbus-daemon")
    if not daemon:
        print("headstart: no dbus-daemon: programs run without a session bus (make deps installs it)", file=sys.stderr)
        yield {}
        return
    # Cleaned up as well as can be: what a service left behind must not end the run.
    with tempfile.TemporaryDirectory(prefix="headstart-bus-", ignore_cleanup_errors=True) as runtime:
        os.chmod(runtime, 0o700)
        proc, address = _start(daemon, runtime, display or {})
        try:
            _start_services(address)
            yield {ADDRESS: address}
        finally:
            _stop(proc, runtime)


def _stop(proc: subprocess.Popen[bytes], runtime: str) -> None:
    """The bus and the services it started (in its process group, though each has left it as a
    child: they daemonise), then what they mounted in the runtime directory: the document portal's
    FUSE file system in doc/, which outlives its server as a dead mount."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    _wait_for_group(proc.pid)
    for mount in _mounts_under(runtime):
        unmount = shutil.which("fusermount3") or shutil.which("fusermount")
        argv = [unmount, "-u", "-z", mount] if unmount else ["umount", "-l", mount]
        subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False)


def _wait_for_group(group: int, timeout: float = GROUP_STOP_S) -> None:
    """Until the services in the bus's process group have ended too (SIGTERM reached them with the
    bus, and some take a moment to exit), then SIGKILL for those still there. A service that has
    ended but is not yet reaped counts as ended: having daemonised, it is init's to reap, and an init
    that reaps late (a container's) kept the group alive for seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _running_in_group(group):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def _running_in_group(group: int) -> bool:
    """Whether a process of the group is still running (a zombie is not)."""
    return any(fields[2] == b"%d" % group and fields[0] != b"Z" for _, fields in process_stats())


def _mounts_under(folder: str) -> list[str]:
    """Mount points inside `folder` (/proc/self/mounts escapes a space as \\040)."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = [line.split()[1].replace("\\040", " ") for line in lines if len(line.split()) > 1]
    return [p for p in points if p.startswith(folder + "/")]


def _start(daemon: str, runtime: str, display: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """dbus-daemon, its address once it accepts connections (--print-address writes it then)."""
    log_path = Path(runtime) / "bus.log"
    read_end, write_end = os.pipe()
    try:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [daemon, "--session", "--nofork", "--nopidfile", f"--address=unix:dir={runtime}",
                 f"--print-address={write_end}"],
                pass_fds=(write_end,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            preexec_fn=ends_with_parent,
                env=_bus_env(runtime, display),
            )  # fmt: skip
    finally:
        os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], START_TIMEOUT_S)
        address = os.read(read_end, 4096).decode(errors="replace").strip() if ready else ""
    finally:
        os.close(read_end)
    if not address.startswith("unix:"):
        proc.kill()
        proc.wait()
        why = (log_path.read_text(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise HeadstartError(f"dbus-daemon did not start: {why}")
    return proc, address


# What a session has running before any program starts, and GTK and Qt ask for as they start: the
# accessibility bus's launcher and the desktop portal (its settings: colour scheme, fonts). Started
# here, so that the first launch timed does not pay for starting them and the others not.
SESSION_SERVICES = ("org.a11y.Bus", "org.freedesktop.portal.Desktop")


def _start_services(address: str) -> None:
    """SESSION_SERVICES the bus can start, started (gdbus, from GLib's tools; none without it)."""
    gdbus = shutil.which("gdbus")
    for name in SESSION_SERVICES if gdbus else ():
        with contextlib.suppress(subprocess.TimeoutExpired):  # one that hangs: a launch that asks starts it
            subprocess.run(
                [gdbus, "call", "--address", address, "--dest", "org.freedesktop.DBus", "--object-path",
                 "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.StartServiceByName", name, "0"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
                check=False,
            )  # fmt: skip


_DROPPED = (ADDRESS, "DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET")


def _bus_env(runtime: str, display: dict[str, str]) -> dict[str, str]:
    """Ours, without the session's bus or display, with the private display's variables: the
    services the bus activates get it."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    return {"XDG_RUNTIME_DIR": runtime, **env, **display}
