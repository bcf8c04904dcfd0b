"""GUI programs under a real X server (Xvfb): the GTK and Qt samples show their window through the
daemon and print what they print by exec; a daemon that has learned what GTK loads after main (GL,
Mesa's driver) holds it in the child before main, so the launch loads none of it again."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Served, base_env, bin_path, proc_fields, run_exec, run_served
from headstart.benchmark.display import x_display
from headstart.daemon import RunningDaemon, private_daemon

pytestmark = pytest.mark.skipif(
    not any((Path(d) / "Xvfb").exists() for d in os.environ.get("PATH", "").split(":")),
    reason="Xvfb is not installed (make deps installs it)",
)

GTK, QT = bin_path("gtk-hello"), bin_path("qt-widgets")
# The current toolkits' home screens: each prints its line once its first frame is drawn.
GTK4, QML = bin_path("gtk4-tiles"), bin_path("qml-tiles")
# What GTK 3 on X11 loads after main with Mesa's software GL: no exec loads these before main.
AFTER_MAIN = ("libGLX_mesa.so.0", "swrast_dri.so")


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    with x_display() as d:
        yield d


def gui_env(display: str) -> dict[str, str]:
    return base_env(DISPLAY=display, QT_QPA_PLATFORM="xcb")


def test_gtk_and_qt_show_their_window_through_the_daemon_as_by_exec(display):
    env = gui_env(display)
    args = ["--warm", str(GTK), "--warm", str(QT), "--pool", "2"]
    with private_daemon([], extra_args=args, env=dict(os.environ, DISPLAY=display)) as d:
        for program in (GTK, QT):
            expected = run_exec([str(program), "a b"], env=env)
            assert expected.returncode == 0
            with Served(d):
                got = run_served(d, [str(program), "a b"], env=env)
            assert (got.returncode, got.stdout) == (0, expected.stdout)
        assert b"window shown" in run_served(d, [str(GTK)], env=env).stdout


def test_gtk4_and_qt6_quick_draw_their_first_frame_through_the_daemon_as_by_exec(display):
    """GTK 4 and Qt 6 Quick, registered warm in one zygote beside GTK 3 and Qt 5 as on a device: each
    sample's line (printed after its first frame) and exit status are those of exec."""
    env = gui_env(display)
    args = [a for p in (GTK, GTK4, QT, QML) for a in ("--warm", str(p))] + ["--pool", "2"]
    lines = {GTK4: b"window shown\n", QML: b"qml-tiles: Qt 6."}
    with private_daemon([], extra_args=args, env=dict(os.environ, DISPLAY=display)) as d:
        for program in (GTK4, QML):
            expected = run_exec([str(program), "a b"], env=env)
            assert expected.returncode == 0, expected.stderr
            assert lines[program] in expected.stdout and b"1 argument(s)" in expected.stdout
            with Served(d):
                got = run_served(d, [str(program), "a b"], env=env)
            assert (got.returncode, got.stdout) == (0, expected.stdout), got.stderr
            # Qt registers the QML sample's compiled-in resources in QtCore from its constructors,
            # where every program of the daemon would find them: never warm (shared-state.h).
            mode = "preload" if program == QML else "warm"
            assert re.search(rf"started {re.escape(str(program))} as \d+ \({mode}", d.log_text()), d.log_text()
        assert re.search(r"qml-tiles cannot be warm: its constructors change the data of \S*libQt6Core", d.log_text())


def test_gtk4_classes_warm_up_is_done_in_the_zygote_and_the_window_is_as_by_exec(display):
    """--warm-up gtk4-classes initialises GTK 4's widget classes in the zygote (no thread, no socket,
    no display needed: its test child passes) and the GTK 4 sample still draws and prints as by exec."""
    env = gui_env(display)
    args = ["--warm", str(GTK4), "--warm-up", "gtk4-classes", "--pool", "1", "--no-learn"]
    with private_daemon([], extra_args=args, env=dict(os.environ, DISPLAY=display)) as d:
        assert d.status()["warm-up"] == ["done gtk4-classes"]
        assert len(os.listdir(f"/proc/{d.zygote_pid()}/task")) == 1
        expected = run_exec([str(GTK4), "a b"], env=env)
        assert expected.returncode == 0 and b"window shown\n" in expected.stdout, expected.stderr
        with Served(d):
            got = run_served(d, [str(GTK4), "a b"], env=env)
        assert (got.returncode, got.stdout) == (0, expected.stdout), got.stderr


def maps_at_main(d: RunningDaemon, env: dict[str, str]) -> str:
    """/proc/PID/maps of gtk-hello as it enters main (it stops itself there: bench/apps/mark.h)."""
    read_end, write_end = os.pipe()
    client = [str(bin_path("headstart-run")), "--socket", str(d.socket), str(GTK)]
    mark = dict(env, HEADSTART_MARK_FD=str(write_end), HEADSTART_MARK_STOP="1")
    proc = subprocess.Popen(client, env=mark, pass_fds=(write_end,), start_new_session=True, stdout=subprocess.PIPE)
    os.close(write_end)
    try:
        assert select.select([read_end], [], [], 30)[0], "gtk-hello did not mark main"
        pid = int(os.read(read_end, 64).split()[1])
        while proc_fields(pid)[0] != "T":
            time.sleep(0.001)
        maps = Path(f"/proc/{pid}/maps").read_text()
        os.kill(pid, signal.SIGCONT)
        assert proc.wait(timeout=30) == 0
        return maps
    finally:
        os.close(read_end)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("learn", [True, False], ids=["learning", "no-learn"])
def test_objects_gtk_loads_after_main_are_in_the_child_at_main_once_learned(display, tmp_path, learn):
    env = gui_env(display)
    args = ["--warm", str(GTK), "--pool", "1", "--learn-file", str(tmp_path / "learned")]
    with private_daemon([], extra_args=args + ([] if learn else ["--no-learn"])) as d:
        run_served(d, [str(GTK)], env=env)
        deadline = time.monotonic() + 60
        while learn and not any(v.startswith("preloaded ") for v in d.status().get("learned", [])):
            assert time.monotonic() < deadline, d.log_text()
            time.sleep(0.05)
        status = d.status()
        maps = maps_at_main(d, env)
    preloaded = [v.split()[-1] for v in status.get("learned", []) if v.startswith("preloaded ")]
    for name in AFTER_MAIN:
        assert any(p.endswith(name) for p in preloaded) == learn, status
        assert (name in maps) == learn, name
