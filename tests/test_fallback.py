"""Whenever the daemon cannot serve, headstart-run still runs the program, by exec, correctly."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Served, base_env, bin_path, helper_path, run_exec, run_served
from headstart.daemon import RunningDaemon, private_daemon


def observe(*args: str, variant: str = "observe") -> list[str]:
    return [str(bin_path("observe").parent / variant), *args]


def debug_env(**extra: str) -> dict[str, str]:
    return base_env(HEADSTART_DEBUG="1", **extra)


def assert_fallback(daemon, argv, reason: bytes, env=None):
    """Runs argv through the client: not served, same result as exec, and the debug line says why."""
    env = env or debug_env()
    before = daemon.launches_started()
    got = run_served(daemon, argv, env=env)
    want = run_exec(argv, env=env)
    assert daemon.launches_started() == before
    assert got.returncode == want.returncode
    assert got.stdout == want.stdout
    debug = [x for x in got.stderr.split(b"\n") if x.startswith(b"headstart-run: running")]
    assert len(debug) == 1 and reason in debug[0], got.stderr
    assert got.stderr.replace(debug[0] + b"\n", b"") == want.stderr


def test_no_daemon(tmp_path):
    argv = [str(bin_path("headstart-run")), "--socket", str(tmp_path / "none"), *observe("exit", "7")]
    got = run_exec(argv, env=debug_env())
    assert got.returncode == 7
    assert got.stdout == b"exiting with 7\n"
    assert b"no daemon answers" in got.stderr


def test_exec_option(daemon):
    before = daemon.launches_started()
    got = run_served(daemon, ["--exec", *observe("exit", "3")], env=debug_env())
    assert (got.returncode, got.stdout) == (3, b"exiting with 3\n")
    assert b"--exec given" in got.stderr
    assert daemon.launches_started() == before


def test_missing_program_reports_like_exec(daemon):
    got = run_served(daemon, ["/nonexistent/prog"])
    assert got.returncode == 127
    assert b"/nonexistent/prog" in got.stderr
    got = run_served(daemon, ["no-such-program-anywhere"])
    assert got.returncode == 127


@pytest.mark.parametrize(
    ("variant", "reason"),
    [
        ("observe-tls", b"thread-local storage"),
        ("observe-nopie", b"not position-independent"),
        ("observe-static", b"statically linked"),
        ("reads-exe", b"/proc/self/exe"),
    ],
)
def test_hazardous_programs_go_to_exec(daemon, variant, reason):
    if not (bin_path("observe").parent / variant).exists():
        pytest.skip(f"{variant} was not built (no static libc?)")
    assert_fallback(daemon, observe("exit", "5", variant=variant), reason)


def test_a_qt_program_is_told_its_own_file_not_the_daemons(daemon):
    """Qt answers applicationFilePath and applicationDirPath from /proc/self/exe, the daemon in a
    served program, unless its cache holds the program's file, which the child sets before main:
    served, focuswriter looked for its themes and translations beside headstartd (a new user's
    trial, 2026-11-29)."""
    program = helper_path("qt-app-dir")
    if not program.exists():
        pytest.skip("qt-app-dir was not built (no Qt 5)")
    want = run_exec([str(program)])
    assert want.stdout == f"{program}\n{program.parent}\n".encode(), want.stderr
    before = daemon.launches_started()
    got = run_served(daemon, [str(program)])
    assert (got.returncode, got.stdout) == (0, want.stdout) and daemon.launches_started() == before + 1, got.stderr


def test_a_qt_program_is_not_given_the_startup_routines_of_another_programs_libraries():
    """Qt runs, as each QCoreApplication starts, the routines libraries gave it with qAddPreRoutine
    from their constructors; preloaded for another program, KDE's KI18n gave the Qt every served
    program shares its routine, and a Qt 5 tool that never links it printed its --help in German
    where exec printed English (a new user's trial, 2026-12-02). Such a program is now exec'd, and
    the program that links the library is still served."""
    program, user = helper_path("qt-app-dir"), helper_path("qt-routine-user")
    if not program.exists():
        pytest.skip("qt-app-dir was not built (no Qt 5)")
    with private_daemon([user, program]) as d:
        want = run_exec([str(program)])
        assert b"startup routine" not in want.stdout
        got = run_served(d, [str(program)])
        assert (got.returncode, got.stdout) == (0, want.stdout), got.stderr
        assert "libqt-startup-routine.so, loaded for another program, gave its Qt a startup routine" in d.log_text()
        own = run_served(d, [str(user)])
        assert (
            own.stdout
            == run_exec([str(user)]).stdout
            == b"the startup routine of libqt-startup-routine ran\nlinked: 1\n"
        )
        assert d.launches_started() == 1, d.log_text()


def test_a_qt_program_is_not_given_the_resources_of_another_programs_libraries():
    """A library's Qt resources are registered by its constructor; Qt reads a path from the first
    registration that has it, so a library preloaded for another program, registered in the zygote
    first, hid a served program's own resource at the same path and added its files to the folder's
    listing. Such a program is exec'd; the program that links the library is still served."""
    program, user = helper_path("qt-reads-resource"), helper_path("qt-resource-user")
    if not program.exists():
        pytest.skip("qt-reads-resource was not built (no Qt 5)")
    want = run_exec([str(program)])
    assert want.stdout == b"the program's resource\nsaid.txt\n", want.stdout
    with private_daemon([user, program]) as d:
        got = run_served(d, [str(program)])
        assert (got.returncode, got.stdout) == (0, want.stdout), got.stderr
        assert "libqt-resource-library.so, loaded for another program, gave its Qt resources" in d.log_text()
        assert run_served(d, [str(user)]).stdout == run_exec([str(user)]).stdout == b"linked: 1\n"
        assert d.launches_started() == 1, d.log_text()


def test_a_qt_program_keeps_the_startup_routines_of_what_it_loads_itself(tmp_path):
    """A library the program itself loads after main, learned and preloaded, is its own: under exec
    it gives Qt its routine too (run at once, the application being there), so the program is still
    served."""
    program, library = helper_path("qt-loads-routine"), helper_path("libqt-startup-routine.so")
    if not program.exists():
        pytest.skip("qt-loads-routine was not built (no Qt 5)")
    argv = [str(program), str(library)]
    want = run_exec(argv)
    assert want.stdout == b"the startup routine of libqt-startup-routine ran\nloaded: 1\n", want.stdout
    with private_daemon([program], extra_args=["--learn-file", str(tmp_path / "learned")]) as d:
        run_served(d, argv)
        deadline = time.monotonic() + 60
        while not any(f"preloaded {program} {library}" in v for v in d.status().get("learned", [])):
            assert time.monotonic() < deadline, d.log_text()
            time.sleep(0.05)
        with Served(d):
            got = run_served(d, argv)
        assert (got.returncode, got.stdout) == (0, want.stdout), got.stderr


def test_unregistered_program_with_libraries_not_loaded_goes_to_exec(daemon):
    # Its copy relocations need libcopyvars bound to it, and the daemon has not loaded that library.
    assert_fallback(daemon, [str(helper_path("uses-copyvars")), "-a", "x"], b"has not loaded")


def test_script_goes_to_exec(daemon, tmp_path):
    script = tmp_path / "hello.sh"
    script.write_text('#!/bin/sh\necho hello from a script "$@"\nexit 4\n')
    script.chmod(0o755)
    assert_fallback(daemon, [str(script), "x"], b"not an ELF file")


def test_setuid_program_goes_to_exec(daemon, tmp_path):
    copy = tmp_path / "observe-setuid"
    shutil.copy(bin_path("observe"), copy)
    copy.chmod(0o755 | stat.S_ISUID)
    assert_fallback(daemon, [str(copy), "exit", "0"], b"set-user-ID")


def assert_refused_as_by_exec(daemon: RunningDaemon, program: Path, reason: bytes) -> None:
    """exec fails with EACCES: the client says so as exec's callers do (126, Permission denied)."""
    with pytest.raises(PermissionError):
        run_exec([str(program)])
    before = daemon.launches_started()
    got = run_served(daemon, [str(program), "exit", "0"], env=debug_env())
    assert daemon.launches_started() == before
    assert got.returncode == 126 and got.stdout == b"", got.stderr
    assert reason in got.stderr and f"{program}: Permission denied".encode() in got.stderr


def test_a_program_exec_refuses_is_refused_as_exec_refuses_it(daemon, tmp_path):
    """No execute bit (the daemon used to run it all the same), or a file system mounted noexec."""
    copy = tmp_path / "observe-no-x"
    shutil.copy(bin_path("observe"), copy)
    copy.chmod(0o644)
    assert_refused_as_by_exec(daemon, copy, b"not executable (no execute permission)")
    if os.geteuid() != 0:
        return
    noexec = tmp_path / "noexec"
    noexec.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec", "tmpfs", str(noexec)], check=True)
    try:
        shutil.copy(bin_path("observe"), noexec / "observe")
        (noexec / "observe").chmod(0o755)
        assert_refused_as_by_exec(daemon, noexec / "observe", b"mounted noexec")
    finally:
        subprocess.run(["umount", str(noexec)], check=True)


def test_file_capabilities_go_to_exec(daemon, tmp_path):
    copy = tmp_path / "observe-caps"
    shutil.copy(bin_path("observe"), copy)
    if subprocess.run(["setcap", "cap_net_raw+ep", str(copy)], capture_output=True).returncode != 0:
        pytest.skip("setcap is not permitted here")
    assert_fallback(daemon, [str(copy), "exit", "0"], b"file capabilities")


@pytest.mark.parametrize("var", ["LD_BIND_NOW=1", "LD_LIBRARY_PATH=/tmp", "GLIBC_TUNABLES=glibc.malloc.check=3"])
def test_different_loader_environment_goes_to_exec(daemon, var):
    key, value = var.split("=", 1)
    assert_fallback(daemon, observe("report"), b"loader's environment differs", env=debug_env(**{key: value}))


def test_controlling_terminal_goes_to_exec(daemon):
    client = f"{bin_path('headstart-run')} --socket {daemon.socket} {bin_path('observe')} report"
    before = daemon.launches_started()
    got = subprocess.run(["script", "-qec", client, "/dev/null"], capture_output=True, env=debug_env(), timeout=60)
    assert got.returncode == 0
    assert b"controlling terminal is attached" in got.stdout  # the pty merges stderr into stdout
    assert b"controlling_tty=1" in got.stdout
    assert daemon.launches_started() == before


def test_a_stopped_daemon_exits_at_once_and_its_running_programs_run_on_to_their_own_end():
    # A service manager's restart (an upgrade) must neither wait for programs that run for hours (a
    # home screen) nor kill them: the units' KillMode=process leaves them, and their zygote stays
    # to tell their clients how they ended. It waited for them, and systemd killed them all after
    # its 90 s stop timeout.
    with private_daemon([bin_path("observe")]) as d:
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        running = subprocess.Popen(
            [*client, *observe("wait-signal")], stdout=subprocess.PIPE, env=base_env(), start_new_session=True
        )
        assert running.stdout is not None
        assert running.stdout.readline() == b"ready\n"
        d.process.send_signal(signal.SIGTERM)
        assert d.process.wait(timeout=10) == 0
        # No one listens: a new launch runs by exec, and correctly.
        later = run_exec([*client, *observe("exit", "9")], env=debug_env())
        assert later.returncode == 9
        assert b"no daemon answers" in later.stderr
        assert running.poll() is None
        running.send_signal(signal.SIGUSR1)
        out, _ = running.communicate(timeout=30)
        assert (out, running.returncode) == (b"got 10\n", 10)


def test_killed_daemon_leaves_a_stale_socket_and_clients_exec():
    with private_daemon([bin_path("observe")]) as d:
        d.process.kill()
        d.process.wait()
        assert d.socket.exists()
        # The zygote held the listening socket too, until it saw its supervisor gone: a client
        # connecting meanwhile is accepted, then reset (and execs). Stale means nobody listens.
        deadline = time.monotonic() + 10
        while listening(d.socket):
            assert time.monotonic() < deadline, "the killed daemon's zygote still listens"
            time.sleep(0.05)
        got = run_exec(
            [str(bin_path("headstart-run")), "--socket", str(d.socket), *observe("exit", "6")],
            env=debug_env(),
        )
        assert got.returncode == 6
        assert b"no daemon answers" in got.stderr


def listening(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(path))
        except ConnectionRefusedError:
            return False
        return True


def start_sleeper(d: RunningDaemon) -> subprocess.Popen[bytes]:
    """A served program that runs for a second, its client's stderr captured."""
    client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
    p = subprocess.Popen(
        [*client, *observe("sleep", "1")], stderr=subprocess.PIPE, env=base_env(), start_new_session=True
    )
    time.sleep(0.3)
    return p


def pidfd_keeps_exit_status() -> bool:
    """Linux 6.15 and later: a pidfd gives its process's exit status once reaped (PIDFD_INFO_EXIT)."""
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    return (major, minor) >= (6, 15)


def test_zygote_killed_while_program_runs():
    """The process holding the client's connection dies: the program runs on, the supervisor (a
    subreaper) reaps it, and the client reads its exit status from the program's pidfd."""
    with private_daemon([bin_path("observe")]) as d:
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        p = subprocess.Popen([*client, "/bin/sh", "-c", "sleep 1; exit 7"], stderr=subprocess.PIPE, env=base_env(),
                             start_new_session=True)  # fmt: skip
        time.sleep(0.3)
        os.kill(d.zygote_pid(), signal.SIGKILL)
        _, err = p.communicate(timeout=30)
        if pidfd_keeps_exit_status():
            assert (p.returncode, err) == (7, b"")
        else:
            assert p.returncode == 255 and b"exit status is lost" in err
        assert d.launches_started() == 1 and d.process.poll() is None


def test_supervisor_killed_while_program_runs():
    """Without its supervisor the zygote stops listening but sees its programs through."""
    with private_daemon([bin_path("observe")]) as d:
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        p = start_sleeper(d)
        zygote = d.zygote_pid()
        d.process.kill()
        d.process.wait()
        _, err = p.communicate(timeout=30)
        assert (p.returncode, err) == (0, b"")
        later = run_exec([*client, *observe("exit", "6")], env=debug_env())
        assert later.returncode == 6 and b"no daemon answers" in later.stderr
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{zygote}") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not os.path.exists(f"/proc/{zygote}")


def test_refuses_root_without_allow_root(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    got = run_exec([str(bin_path("headstartd")), "--socket", str(tmp_path / "s")])
    assert got.returncode == 1
    assert got.stderr.count(b"\n") == 1 and b"refusing to run as root" in got.stderr


def test_bad_options_are_one_clear_line(tmp_path):
    # A missing --app is not one of these: the daemon serves the others (test_user_errors.py).
    numbers = (["--pool", "-1"], ["--trial-timeout", "0"], ["--trial-timeout", " 5"], ["--request-timeout", "+5"])
    for argv in (["--bogus"], ["--max-children", "zero"], ["--warm-up", "nothing-known"], *numbers):
        got = run_exec([str(bin_path("headstartd")), "--socket", str(tmp_path / "s"), *argv])
        assert got.returncode != 0
        assert got.stderr.strip() and got.stderr.count(b"\n") == 1, got.stderr
        assert argv[0] == "--bogus" or b"expected" in got.stderr or b"unknown step" in got.stderr, got.stderr
    got = run_exec([str(bin_path("headstart-run"))])
    assert got.returncode == 2 and b"no program given" in got.stderr


def test_config_file(tmp_path):
    conf = tmp_path / "headstart.conf"
    conf.write_text(f"# a comment\napp = {bin_path('observe')}\n\nverbose = yes\n")
    with private_daemon([], extra_args=["--config", str(conf)]) as d:
        with Served(d):
            got = run_served(d, observe("exit", "0"))
        assert got.returncode == 0
    conf.write_text("app\n")
    got = run_exec([str(bin_path("headstartd")), "--config", str(conf), "--allow-root", "--socket", "/x"])
    assert got.returncode == 1 and b"expected 'key = value'" in got.stderr
    # One line each, naming the place (were two: the setting's complaint, then "setting rejected").
    conf.write_text("app = /bin/true\nrefresh-seconds = soon\n")
    got = run_exec([str(bin_path("headstartd")), "--config", str(conf), "--allow-root", "--socket", "/x"])
    assert got.returncode == 1
    assert (
        got.stderr
        == f"headstartd: {conf}:2: refresh-seconds: expected a number from 0 to 4294967, got 'soon'\n".encode()
    )
    # A folder is no configuration (it was read as an empty one).
    got = run_exec([str(bin_path("headstartd")), "--config", str(tmp_path), "--allow-root", "--socket", "/x"])
    assert got.returncode == 1 and got.stderr.endswith(b": not a regular file\n") and got.stderr.count(b"\n") == 1
    # A day between refreshes, no pool, 100000 launches: all fine (the limit was 65536 for each).
    conf.write_text(f"app = {bin_path('observe')}\nrefresh-seconds = 86400\npool = 0\nrefresh-launches = 100000\n")
    with private_daemon([], extra_args=["--config", str(conf)]) as d:
        status = d.status()
    assert status["refresh-after-seconds"] == ["86400"] and status["pool-size"] == ["0"]
    assert status["refresh-after-launches"] == ["100000"]


def test_load_failing_in_the_child_falls_back_to_exec(daemon):
    """The daemon accepts the program, but loading fails in the child before main (no room for a
    library's static TLS after start-up): the client hears so and execs; main runs exactly once."""
    prog = [str(bin_path("observe").parent / "uses-bigtls")]
    before = daemon.launches_started()
    got = run_served(daemon, prog, env=debug_env())
    want = run_exec(prog)
    assert daemon.launches_started() == before + 1  # it was started, then failed before main
    assert (got.returncode, got.stdout) == (want.returncode, want.stdout) == (3, b"bigtls says 1\n")
    assert b"cannot load the program" in got.stderr and b"static TLS" in got.stderr


def build_origin_program(folder: Path, soname: bool) -> Path:
    """A program that finds its library beside it through $ORIGIN, the library with or without a
    SONAME (a build tree's, linked without -soname)."""
    folder.mkdir()
    (folder / "foo.c").write_text("int foo(void) { return 42; }\n")
    (folder / "use.c").write_text(
        '#include <stdio.h>\nint foo(void);\nint main(void) { printf("foo %d\\n", foo()); }\n'
    )
    cc = shutil.which("cc") or "cc"
    soname_args = ["-Wl,-soname,libfoo.so"] if soname else []
    subprocess.run(
        [cc, "-shared", "-fPIC", *soname_args, str(folder / "foo.c"), "-o", str(folder / "libfoo.so")], check=True
    )
    program = folder / "use-foo"
    subprocess.run(
        [cc, "-fPIE", "-pie", str(folder / "use.c"), f"-L{folder}", "-lfoo", "-Wl,-rpath,$ORIGIN", "-o", str(program)],
        check=True,
    )
    return program


def test_a_program_whose_library_has_no_soname_and_is_found_through_origin_goes_to_exec(tmp_path):
    """`headstart check` said such a program was served, and every launch failed in the daemon's child
    (the copy's $ORIGIN is not the program's folder, and a library loaded by path is matched by its
    SONAME), then went to exec (a new user's trial). Both now say why up front; with a SONAME it is
    served."""
    plain, named = build_origin_program(tmp_path / "plain", False), build_origin_program(tmp_path / "named", True)
    with private_daemon([plain, named]) as d:
        assert_fallback(d, [str(plain)], b"has no SONAME: loaded from the daemon's copy")
        with Served(d):
            assert run_served(d, [str(named)]).stdout == b"foo 42\n"
    check = subprocess.run(
        [sys.executable, "-m", "headstart", "check", "--json", str(plain)], capture_output=True, text=True
    )
    assert "has no SONAME" in check.stdout, check.stdout + check.stderr


def test_a_program_that_is_not_there_is_not_said_to_have_no_daemon(daemon, tmp_path):
    """The daemon answered, but headstart-run said "no daemon answers on the socket" for a program
    path that does not exist: both come back as ENOENT (a new user's trial)."""
    got = run_served(daemon, [str(tmp_path / "no-such-program")], env=debug_env())
    assert got.returncode == 127
    assert b"by exec: the program is not there\n" in got.stderr, got.stderr


OPENMP = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
        int n = 0;
#pragma omp parallel
#pragma omp atomic
        n++;
        printf("max threads %d, in a parallel region %d\n", omp_get_max_threads(), n);
        return 0;
}
"""


def test_a_variable_a_library_read_as_the_daemon_loaded_it_sends_a_launch_that_changes_it_to_exec(tmp_path):
    """libgomp reads OMP_NUM_THREADS in its constructor, once, in the daemon: served, an OpenMP
    program given OMP_NUM_THREADS=1 ran the daemon's number of threads (a new user's trial). The
    zygote notes what its libraries read as it loads them; a launch that differs in one is exec'd,
    and one that does not is served."""
    (tmp_path / "omp.c").write_text(OPENMP)
    program = tmp_path / "omp"
    cc = shutil.which("cc") or "cc"
    if subprocess.run([cc, "-fopenmp", str(tmp_path / "omp.c"), "-o", str(program)]).returncode != 0:
        pytest.skip("no OpenMP in this compiler")
    with private_daemon([program], env=base_env()) as d:
        assert "OMP_NUM_THREADS -- libgomp.so.1" in d.status()["read-at-load"]
        one = debug_env(OMP_NUM_THREADS="1")
        assert run_exec([str(program)], env=one).stdout == b"max threads 1, in a parallel region 1\n"
        assert_fallback(
            d, [str(program)], b"OMP_NUM_THREADS differs from the daemon's, and libgomp.so.1 read it", env=one
        )
        with Served(d):
            got = run_served(d, [str(program)], env=base_env())
        assert (got.returncode, got.stdout) == (0, run_exec([str(program)], env=base_env()).stdout)
