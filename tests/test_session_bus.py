"""The bench's private session bus (benchmark/session_bus.py), started with its private display:
programs reach it, and a program that registers on it, Debian's gnome-font-viewer (a GtkApplication,
unmodified), behaves the same served as by exec: it owns its name on the bus, and a second launch
hands its activation over to the first instance and exits at once (without a bus, it would open a
window of its own and run until stopped)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Served, base_env, bin_path, run_exec, run_served
from headstart.benchmark import display
from headstart.daemon import RunningDaemon, private_daemon

VIEWER = Path("/usr/bin/gnome-font-viewer")
NAME = "org.gnome.font-viewer"

pytestmark = pytest.mark.skipif(
    not (shutil.which("Xvfb") and shutil.which("dbus-daemon") and shutil.which("gdbus") and VIEWER.exists()),
    reason="Xvfb, dbus-daemon, gdbus and gnome-font-viewer are needed (make deps installs them)",
)


@pytest.fixture(scope="module")
def session() -> Iterator[dict[str, str]]:
    with display.private_display("x11") as found:
        yield base_env(**found)


def bus_names(env: dict[str, str]) -> str:
    done = subprocess.run(
        ["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
         "--method", "org.freedesktop.DBus.ListNames"],
        env=env, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_for_name(env: dict[str, str], present: bool, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (f"'{NAME}'" in bus_names(env)) != present:
        assert time.monotonic() < deadline, f"{NAME} {'never owned' if present else 'still owned'} on the bus"
        time.sleep(0.1)


def test_the_private_display_comes_with_a_session_bus_that_programs_reach(session):
    assert session["DBUS_SESSION_BUS_ADDRESS"].startswith("unix:")
    got = subprocess.run(["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path",
                          "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus.GetId"],
                         env=session, capture_output=True, text=True, timeout=30)  # fmt: skip
    assert got.returncode == 0 and got.stdout.startswith("('"), got.stderr


def primary(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """The first instance, left running: it owns the application's name once it has registered."""
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(timeout=30)


def served_argv(d: RunningDaemon) -> list[str]:
    return [str(bin_path("headstart-run")), "--socket", str(d.socket), str(VIEWER)]


def test_a_program_registering_on_the_bus_behaves_the_same_served_and_by_exec(session):
    with private_daemon([], extra_args=["--warm", str(VIEWER), "--pool", "1"], env=dict(os.environ, **session)) as d:
        # The first instance, by exec: it registers; a second launch, exec'd then served, activates it and exits.
        first = primary([str(VIEWER)], session)
        try:
            wait_for_name(session, present=True)
            expected = run_exec([str(VIEWER)], env=session, timeout=30)
            with Served(d):
                got = run_served(d, [str(VIEWER)], env=session, timeout=30)
            assert expected.returncode == 0, expected.stderr
            assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout)
            assert first.poll() is None  # the activation went to it
        finally:
            stop(first)
        wait_for_name(session, present=False)

        # The first instance served: it owns the name as the exec'd one did, and lets it go as it ends.
        with Served(d):
            first = primary(served_argv(d), session)
            try:
                wait_for_name(session, present=True)
                assert run_exec([str(VIEWER)], env=session, timeout=30).returncode == 0
            finally:
                stop(first)
        wait_for_name(session, present=False)


def test_the_bus_and_what_it_started_are_gone_with_the_display():
    """The services the bus started (portals, AT-SPI) end with it, and the runtime directory goes
    too, though the document portal mounted its FUSE file system in it and its server went away
    unclean. (A profile run over many programs once ended on that directory, a dead FUSE mount that
    could not be removed: ECONNABORTED; this test does not make that exact state.)"""
    with display.private_display("x11") as found:
        folder = found["DBUS_SESSION_BUS_ADDRESS"].split("path=", 1)[1].split(",")[0].rsplit("/", 1)[0]
        env = base_env(**found)
        assert "'org.freedesktop.portal.Desktop'" in bus_names(env)
        # The document portal, as a program's file chooser starts it: it mounts doc/ in the folder.
        subprocess.run(
            ["gdbus", "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
             "--method", "org.freedesktop.DBus.StartServiceByName", "org.freedesktop.portal.Documents", "0"],
            env=env, capture_output=True, timeout=60, check=True,
        )  # fmt: skip
        assert f"{folder}/doc " in Path("/proc/self/mounts").read_text()
        # Its server gone unclean.
        for proc in Path("/proc").glob("[0-9]*"):
            if b"xdg-document-portal" in _environ_or_cmdline(proc) and folder.encode() in _environ_or_cmdline(proc):
                os.kill(int(proc.name), signal.SIGKILL)
    assert not Path(folder).exists()
    assert folder not in Path("/proc/self/mounts").read_text()
    left = [p for p in Path("/proc").glob("[0-9]*") if folder.encode() in _environ_or_cmdline(p)]
    assert not left, left


def _environ_or_cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
    except OSError:
        return b""


def test_no_launch_spawns_dbus_launch_with_the_bus(session):
    """GTK 4 asks for the session bus as it starts (accessibility): without one it spawns
    dbus-launch and warns; with the bench's bus neither the exec'd nor the served launch does."""
    gtk4 = bin_path("gtk4-tiles")
    with private_daemon([], extra_args=["--warm", str(gtk4)], env=dict(os.environ, **session)) as d:
        expected = run_exec([str(gtk4)], env=session)
        with Served(d):
            got = run_served(d, [str(gtk4)], env=session)
    assert expected.returncode == 0 and b"window shown" in expected.stdout, expected.stderr
    assert (got.returncode, got.stdout) == (0, expected.stdout)
    for launch in (expected, got):
        assert b"dbus-launch" not in launch.stderr and b"session bus" not in launch.stderr, launch.stderr


KEEPS_A_DISPLAY = """
import json, sys, time
from headstart.benchmark import display
with display.private_display("x11") as found:
    print(json.dumps(found), flush=True)
    time.sleep(600)
"""


def test_a_killed_run_leaves_no_display_bus_or_service_behind():
    """A run killed before it can stop them (a test's timeout, kill -9): its Xvfb, its bus and the
    services the bus started end with it (they would run on, orphaned, with the portal's mount)."""
    run = subprocess.Popen([sys.executable, "-c", KEEPS_A_DISPLAY], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    found = json.loads(run.stdout.readline())
    folder = found["DBUS_SESSION_BUS_ADDRESS"].split("path=", 1)[1].split(",")[0].rsplit("/", 1)[0]
    x_socket = Path(f"/tmp/.X11-unix/X{found['DISPLAY'][1:]}")
    assert x_socket.exists()
    run.kill()
    run.wait()
    deadline = time.monotonic() + 20
    while True:
        left = [p for p in Path("/proc").glob("[0-9]*") if folder.encode() in _environ_or_cmdline(p)]
        if not left and not x_socket.exists():
            break
        assert time.monotonic() < deadline, (left, x_socket.exists())
        time.sleep(0.1)
