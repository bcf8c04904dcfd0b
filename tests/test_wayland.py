"""GUI programs under a real Wayland compositor (weston with a seat, the test's own): the
GTK 3 and Qt 5 samples reach their first frame by exec and through the daemon alike, seen by the
proxy of bench/timer/wayland-watch.c, and behave the same; bench times them to that frame; a
program that never shows a frame, and a compositor that cannot start, each end in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from conftest import SANITIZED, Served, base_env, bin_path, run_exec, run_served
from headstart.benchmark import display
from headstart.daemon import private_daemon
from headstart.errors import HeadstartError
from headstart.profiling import toolkit_settings

pytestmark = pytest.mark.skipif(not shutil.which("weston"), reason="weston is not installed (make deps installs it)")

GTK, QT = bin_path("gtk-hello"), bin_path("qt-widgets")
SCHEMA_DIR = Path(__file__).parents[1] / "docs/schema"
SCHEMA = json.loads((SCHEMA_DIR / "bench.schema.json").read_text())


@pytest.fixture(scope="module")
def compositor() -> Iterator[dict[str, str]]:
    with display.private_display("wayland") as found:
        yield found


def wayland_env(compositor: dict[str, str], **extra: str) -> dict[str, str]:
    return base_env(**compositor, **extra)


class Proxy:
    """window-shown as the programs' compositor: its socket, and whether it saw a first frame."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(bin_path("window-shown"))], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline().split()
        assert first[:1] == ["watching"] and first[1].startswith("WAYLAND_DISPLAY=/"), first
        self.address = first[1].partition("=")[2]

    def shown(self) -> bool:
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        return "shown" in out.split()


def test_samples_reach_their_first_frame_through_the_daemon_as_by_exec(compositor):
    env = wayland_env(compositor)
    args = ["--warm", str(GTK), "--warm", str(QT), "--pool", "2"]
    with private_daemon([], extra_args=args, env=dict(os.environ, **compositor)) as d:
        for program in (GTK, QT):
            proxy = Proxy(env)
            expected = run_exec([str(program), "a b"], env=dict(env, WAYLAND_DISPLAY=proxy.address))
            assert proxy.shown(), f"{program.name} by exec: no frame"
            assert expected.returncode == 0, expected.stderr
            proxy = Proxy(env)
            with Served(d):
                got = run_served(d, [str(program), "a b"], env=dict(env, WAYLAND_DISPLAY=proxy.address))
            assert proxy.shown(), f"{program.name} served: no frame"
            assert (got.returncode, got.stdout) == (0, expected.stdout)
            assert b"1 argument(s)" in got.stdout


def test_the_compositor_has_a_seat_as_a_products_has(compositor):
    """A product's compositor has a keyboard and a pointer; weston's headless backend had none, and
    GTK 3 then printed a critical as it started (gdk_seat_get_keyboard) that it never prints on a
    device: the bench's weston runs its X11 backend, whose seat has both."""
    proxy = Proxy(wayland_env(compositor))
    done = run_exec([str(GTK)], env=dict(wayland_env(compositor), WAYLAND_DISPLAY=proxy.address))
    assert proxy.shown() and done.returncode == 0, done.stderr
    assert b"CRITICAL" not in done.stderr and b"WARNING" not in done.stderr, done.stderr


def test_a_served_qt_window_has_the_programs_app_id_not_the_daemons(compositor):
    """Qt names a window (its xdg_toplevel app_id) after the program's file when it sets no desktop
    file name, which Qt reads from /proc/self/exe: "headstartd" in every served Qt window until the
    child gave Qt the program's file (qt-file-path.h; a new user's trial, 2026-11-29)."""
    env = dict(wayland_env(compositor), WAYLAND_DEBUG="1")

    def app_ids(got: subprocess.CompletedProcess[bytes]) -> list[bytes]:
        return [line.split(b"set_app_id", 1)[1] for line in got.stderr.splitlines() if b"set_app_id" in line]

    expected = run_exec([str(QT)], env=env)
    assert app_ids(expected) == [b'("qt-widgets")'], expected.stderr[-2000:]
    with private_daemon([QT], env=dict(os.environ, **compositor)) as d:
        with Served(d):
            got = run_served(d, [str(QT)], env=env)
    assert (got.returncode, app_ids(got)) == (0, app_ids(expected))


def timer(*args: str) -> list[str]:
    return [str(bin_path("launch-timer")), "--run-client", str(bin_path("headstart-run")), *args]


def test_launch_timer_times_the_first_frame_and_stops_at_a_program_that_shows_none(compositor):
    env = wayland_env(compositor)
    done = subprocess.run(
        timer("--runs", "2", "--modes", "exec", "--ready-window", "--", str(GTK)),
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for row in map(json.loads, done.stdout.splitlines()):
        assert "error" not in row, row
        # Stopped 100 ms after its frame (time for the compositor to refuse it), unless it quit first,
        # as the sample does once it has drawn.
        assert 0 < row["to_main_ns"] < row["to_ready_ns"] <= row["to_exit_ns"] <= row["to_ready_ns"] + 5 * 10**9

    # Not ready within its timeout: one error line, and the run ends there (not 3 launches of 2 s).
    done = subprocess.run(
        timer("--runs", "3", "--modes", "exec", "--ready-window", "--timeout", "1", "--", "/bin/sleep", "30"),
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 3
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"mode": "exec", "round": 0, "error": "no window shown within 1 s"}
    ]


FACTORY = "/usr/bin/gtk4-widget-factory"  # its window is larger than the kiosk shell's 1024x640 output


def test_a_window_the_compositor_refuses_fails_the_launch_with_the_compositors_words(compositor):
    """weston's kiosk shell answers the widget factory's first frame with a protocol error (its
    window is larger than the output), and the program dies of it: that frame was never shown, so
    the launch failed, whatever the program's exit after the timer stopped it."""
    done = subprocess.run(
        timer("--runs", "2", "--modes", "exec", "--ready-window", "--", FACTORY),
        env=wayland_env(compositor), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["error"].startswith("the compositor refused the program's window with a protocol error: "), row
        assert "larger than the configured fullscreen state (1024 x 640)" in row["error"]


@pytest.mark.skipif(SANITIZED, reason="bench and profile: as in test_bench.py and test_profile.py, the normal pass")
def test_profile_of_a_window_the_compositor_refuses_ends_in_one_line(compositor):
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "profile", "--runs", "1", "--ready-window", "--", FACTORY],
        capture_output=True, text=True, timeout=300, env=wayland_env(compositor),
    )  # fmt: skip
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"headstart: {FACTORY} showed a window, then exited with status 1"), line
    assert "Protocol error" in line


def _without_settings() -> dict[str, str]:
    """Our environment without the toolkit settings a user may have made (toolkit_settings.py)."""
    made = toolkit_settings.chosen(os.environ)
    return {k: v for k, v in os.environ.items() if k not in made}


@pytest.mark.skipif(SANITIZED, reason="bench and profile: as in test_bench.py and test_profile.py, the normal pass")
def test_bench_times_the_samples_to_their_first_frame(compositor, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "bench", "--quick", "--display", "wayland", "--programs", "gtk-hello",
         "qt-widgets", "--runs", "2", "--modes", "exec,pool", "--clients", "run", "--json", "-o", str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=dict(_without_settings(), GSK_RENDERER="cairo"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, SCHEMA)
    # GTK 3 and Qt widgets ignore it; the figures still say under which settings they were taken.
    assert data["toolkit_settings"] == {"GSK_RENDERER": "cairo"}
    assert [p["program"] for p in data["programs"]] == ["gtk-hello (wayland)", "qt-widgets (wayland)"]
    for program in data["programs"]:
        assert program["display"] == "wayland" and program["ready"] == "window shown"
        assert program["served"] == program["requested"] == 2
        for key, mode in program["modes"].items():
            assert mode["status"] == "ok", (key, mode["errors"])
            assert mode["to_ready_us"]["count"] == 2
            assert mode["to_main_us"]["median"] < mode["to_ready_us"]["median"]
        assert program["modes"]["run@pool"]["ready_ratio_to_exec"] > 0


@pytest.mark.skipif(SANITIZED, reason="bench and profile: as in test_bench.py and test_profile.py, the normal pass")
def test_profile_is_ready_at_the_first_frame(compositor):
    """profile --ready-window under Wayland: each launch (the strace'd one, the one counting bindings,
    the timed ones) is given window-shown's socket and is ready at its first frame."""
    data = _profile(compositor, QT)
    assert data["ready"] == "window"
    warm = data["warm"]
    assert warm["launches"] == 2 and warm["to_ready_us"]["count"] == 2
    assert 0 < warm["to_main_us"]["median"] < warm["to_ready_us"]["median"]


@pytest.mark.skipif(SANITIZED, reason="bench and profile: as in test_bench.py and test_profile.py, the normal pass")
def test_profile_of_a_program_that_never_shows_a_frame_ends_in_one_line(compositor):
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "profile", "--runs", "1", "--ready-window", "--timeout", "2", "--",
         "/bin/sleep", "30"],
        capture_output=True, text=True, timeout=120, env=dict(os.environ, **compositor),
    )  # fmt: skip
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "did not show a window (mapped on X, a frame on Wayland) within 2 s" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_compositor_that_cannot_start_is_one_line_naming_why(monkeypatch, tmp_path):
    monkeypatch.setattr(display, "WESTON_ARGS", ("--backend=no-such-backend.so", "--no-config"))
    with pytest.raises(HeadstartError) as caught, display.wayland_display():
        pass
    message = str(caught.value)
    assert message.startswith("weston did not start") and "no-such-backend.so" in message
    assert "\n" not in message

    # And none running where WAYLAND_DISPLAY points: the watch says so before any launch.
    env = base_env(XDG_RUNTIME_DIR=str(tmp_path), WAYLAND_DISPLAY="wayland-none")
    done = subprocess.run(
        timer("--runs", "1", "--modes", "exec", "--ready-window", "--", str(GTK)),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"launch-timer: cannot connect to the Wayland compositor at {tmp_path}/wayland-none: No such file or directory"
    )


def test_a_compositor_without_its_x_server_is_one_line_naming_what_to_install(monkeypatch):
    which = shutil.which
    monkeypatch.setattr(display.shutil, "which", lambda name: None if name == "Xvfb" else which(name))
    with pytest.raises(HeadstartError) as caught, display.wayland_display():
        pass
    assert str(caught.value) == "no X server for weston's X11 backend, which gives it a seat: install xvfb (make deps)"


GTK4 = bin_path("gtk4-tiles")


def test_the_gtk4_sample_shows_its_frame_with_the_cairo_renderer_too(compositor):
    """GTK's cairo renderer leaves the frame's commit in the connection's buffer (GL flushes it as it
    swaps): the sample must flush before it quits, or its frame never reaches the compositor."""
    for renderer in ("gl", "cairo"):
        proxy = Proxy(wayland_env(compositor))
        env = dict(wayland_env(compositor), WAYLAND_DISPLAY=proxy.address, GSK_RENDERER=renderer)
        done = run_exec([str(GTK4)], env=env)
        assert done.returncode == 0 and b"window shown" in done.stdout, done.stderr
        assert proxy.shown(), f"GSK_RENDERER={renderer}: no frame"


def _profile(compositor: dict[str, str], program: Path, **extra: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "profile", "--json", "--runs", "2", "--ready-window", "--timeout", "30",
         "--", str(program)],
        capture_output=True, text=True, timeout=300, env=dict(_without_settings(), **compositor, **extra),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(SANITIZED, reason="bench and profile: as in test_bench.py and test_profile.py, the normal pass")
def test_profile_starts_a_compositor_of_its_own_when_asked():
    """--display wayland, as bench's: no compositor or display of the user's is needed."""
    env = {k: v for k, v in _without_settings().items() if k not in ("WAYLAND_DISPLAY", "DISPLAY")}
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "profile", "--json", "--runs", "1", "--display", "wayland",
         "--ready-window", "--", str(GTK)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["warm"]["to_ready_us"]["count"] == 1 and data["warm"]["to_ready_us"]["median"] > 0


def _one_setting(data: dict, what: str) -> dict:
    (found,) = [f for f in data["settings"] if f["setting"] == what]
    assert found["as_is_ms"]["count"] == found["changed_ms"]["count"] == 2
    assert found["ratio"] == pytest.approx(found["changed_ms"]["median"] / found["as_is_ms"]["median"])
    advised = [line for line in data["after_main"]["advice"] if f"{found['variable']}=" in line]
    assert len(advised) == (1 if found["ratio"] < 1 else 0), advised
    return found


@pytest.mark.skipif(SANITIZED, reason="bench and profile: as in test_bench.py and test_profile.py, the normal pass")
def test_profile_times_a_gtk4_program_with_its_cpu_renderer_beside_gl(compositor):
    """Mesa's GL on a machine without a GPU driver draws with the CPU (swrast): profile times the
    program with GTK's cairo renderer too, and advises it exactly when it was quicker."""
    data = _profile(compositor, GTK4)
    jsonschema.validate(data, json.loads((SCHEMA_DIR / "profile.schema.json").read_text()))
    assert [f["setting"] for f in data["settings"]] == ["renderer"], "GTK 4 loads a cursor when it shows one"
    found = _one_setting(data, "renderer")
    assert (found["toolkit"], found["variable"], found["value"]) == ("GTK 4", "GSK_RENDERER", "cairo")
    assert Path(found["found"]).name.endswith("_dri.so") and found["found"] in data["after_main"]["objects"]
    assert found["drawn_by_cpu"] is (Path(found["found"]).name in ("swrast_dri.so", "kms_swrast_dri.so"))


@pytest.mark.skipif(SANITIZED, reason="bench and profile: as in test_bench.py and test_profile.py, the normal pass")
def test_profile_times_a_gtk3_program_without_its_cursor_theme(compositor):
    """GTK 3 on Wayland loads its whole cursor theme as it opens the display: timed with XCURSOR_PATH
    naming an empty folder beside it; GTK 3 draws with cairo, so there is no renderer to compare."""
    data = _profile(compositor, GTK)
    jsonschema.validate(data, json.loads((SCHEMA_DIR / "profile.schema.json").read_text()))
    assert [f["setting"] for f in data["settings"]] == ["cursor theme"]
    found = _one_setting(data, "cursor theme")
    assert (found["toolkit"], found["variable"]) == ("GTK 3", "XCURSOR_PATH")
    assert Path(found["found"]).name.startswith("libwayland-cursor.so") and found["drawn_by_cpu"] is None


@pytest.mark.skipif(SANITIZED, reason="bench and profile: as in test_bench.py and test_profile.py, the normal pass")
def test_profile_compares_no_setting_the_environment_makes_already(compositor):
    for program, variable, value in ((GTK4, "GSK_RENDERER", "cairo"), (GTK, "XCURSOR_PATH", "/usr/share/icons")):
        data = _profile(compositor, program, **{variable: value})
        assert data["settings"] == []
        assert not any(f"{variable}=" in line for line in data["after_main"]["advice"])
