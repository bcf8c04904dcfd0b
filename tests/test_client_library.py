"""libheadstart-client as a user gets it: installed, found with pkg-config, linked by a program of
theirs (examples/hs-launch.c), launching through the real daemon."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from conftest import Served, bin_path, helper_path
from headstart import binaries
from headstart.daemon import private_daemon

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def hs_launch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """examples/hs-launch.c built against an installed copy of the normal build."""
    dest = tmp_path_factory.mktemp("install")
    subprocess.run(
        ["meson", "install", "-C", str(binaries.apps_build_dir()), "--destdir", str(dest), "--no-rebuild", "--quiet"],
        check=True,
        capture_output=True,
    )
    pcdirs = [str(p.parent) for p in dest.rglob("headstart-client.pc")]
    assert pcdirs, "the install has no headstart-client.pc"
    pkg_env = dict(os.environ, PKG_CONFIG_PATH=pcdirs[0], PKG_CONFIG_SYSROOT_DIR=str(dest))
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "headstart-client"],
        env=pkg_env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    exe = dest / "hs-launch"
    subprocess.run([shutil.which("cc") or "cc", str(ROOT / "examples/hs-launch.c"), *flags, "-o", str(exe)], check=True)
    libdirs = [f[2:] for f in flags if f.startswith("-L")]
    return exe, {"LD_LIBRARY_PATH": ":".join(libdirs)}


def run(hs: tuple[Path, dict[str, str]], daemon, *args: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    exe, env = hs
    return subprocess.run(
        [str(exe), *args],
        env=dict(env, HEADSTART_SOCKET=str(daemon.socket)),
        capture_output=True,
        timeout=60,
        start_new_session=True,
        **kw,  # type: ignore[arg-type]
    )


def report_lines(out: bytes, *keys: bytes) -> list[bytes]:
    return [line for line in out.split(b"\n") if line.startswith(keys)]


def test_cwd_environment_and_chosen_fds(hs_launch, daemon, tmp_path):
    with Served(daemon):
        p = run(hs_launch, daemon, "--cwd", str(tmp_path), "--env", "ONLY=this", str(bin_path("observe")), "report")
    assert p.returncode == 0, p.stderr
    assert report_lines(p.stdout, b"env=") == [b"env=ONLY=this"]
    assert report_lines(p.stdout, b"cwd=") == [f"cwd={tmp_path}".encode()]
    assert report_lines(p.stdout, b"fds=") == [b"fds=0,1,2,"]
    assert b"hs-launch: started pid" in p.stderr


def test_exit_status_and_signal(hs_launch, daemon):
    with Served(daemon):
        p = run(hs_launch, daemon, str(bin_path("observe")), "exit", "42")
    assert p.returncode == 42 and b"exit status 42" in p.stderr
    with Served(daemon):
        p = run(hs_launch, daemon, "--signal", "15", str(bin_path("observe")), "kill", "9")
    assert b"killed by signal" in p.stderr and p.returncode in (128 + 9, 128 + 15)


def test_declined_program_runs_anyway(hs_launch, daemon):
    static = bin_path("observe").parent / "observe-static"
    with Served(daemon, count=0):
        p = run(hs_launch, daemon, str(static), "exit", "3")
    assert p.returncode == 3
    assert b"running it ourselves" in p.stderr


def leave(daemon, *args: str) -> str:
    """What library-launcher printed: a launcher that ends without waiting for its program unless
    told to."""
    env = dict(os.environ, HEADSTART_SOCKET=str(daemon.socket))
    # A file, not a pipe: a program that outlives the launcher holds what it inherited.
    with tempfile.TemporaryFile("w+") as out:
        got = subprocess.run([str(helper_path("library-launcher")), *args], env=env, stdout=out, stderr=out)
        out.seek(0)
        text = out.read()
    assert got.returncode == 0, text
    return text.strip()


def alive_after(pid: int, seconds: float) -> bool:
    """Whether pid still runs (not ended, not a zombie) after seconds, or ends before."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return False
        except OSError:
            return False
        time.sleep(0.05)
    return True


def test_a_launchers_program_outlives_it_when_asked_and_not_otherwise(daemon):
    """A home screen that restarts took every app it had launched with it: the daemon kills a
    program whose client's connection drops (what headstart-run needs, standing for the program).
    With HS_LAUNCH_OUTLIVES_CALLER the program keeps running, as posix_spawn's outlives its parent."""
    sleep = shutil.which("sleep") or "/usr/bin/sleep"
    # "started": served (the daemon's LAUNCHED). Not the daemon's log count, which once held one
    # "started" line for these two under the sanitizers (not understood).
    kept = int(leave(daemon, "--outlive", sleep, "30").removeprefix("started "))
    ended = int(leave(daemon, sleep, "30").removeprefix("started "))
    try:
        assert alive_after(kept, 1.0)
        assert not alive_after(ended, 10.0)
    finally:
        os.kill(kept, signal.SIGKILL)


def test_arguments_exec_would_refuse_are_refused_as_exec_refuses_them(daemon):
    """The daemon's bound on a request is 16 MiB: 2.1 to 12 MiB of arguments, and one argument over
    exec's 32 pages, were served where exec fails with E2BIG (a new user's trial)."""
    true = shutil.which("true") or "/usr/bin/true"
    for count, size in ((1, 200_000), (30, 100_000)):
        with pytest.raises(OSError) as refused:
            subprocess.run([true, *["x" * size] * count], check=False)
        assert refused.value.errno == errno.E2BIG
        assert leave(daemon, "--big-args", str(count), str(size), true) == f"error {errno.E2BIG}"
    subprocess.run([true, *["x" * 100_000] * 10], check=True)
    assert leave(daemon, "--big-args", "10", "100000", true).startswith("started ")  # served
    assert leave(daemon, "--flags", "0x1", true) == f"error {errno.EINVAL}"  # ours to set, not the caller's


def test_a_second_wait_after_the_end_says_the_same(daemon):
    """A second hs_launch_wait() after the program's end returned -ECONNRESET, which the header
    gives for a daemon gone away (a new user's trial); it says again how the program ended."""
    with Served(daemon):
        got = leave(daemon, "--wait", shutil.which("false") or "/usr/bin/false").splitlines()
    assert got[1:] == ["ended 0 1 1", "ended 0 1 1"], got  # CLD_EXITED, status 1, twice


def test_a_launcher_learns_how_its_program_ended_after_the_daemon_went_away():
    """The zygote killed while its program ran: hs_launch_wait() said the daemon went away, and the
    program's status seemed lost, where headstart-run read it from the pidfd (a new user's trial).
    hs_launch_orphan_status() reads it for any launcher (Linux 6.15 and later)."""
    if tuple(int(x) for x in os.uname().release.split(".")[:2]) < (6, 15):
        pytest.skip("the kernel keeps no exit status for a pidfd before Linux 6.15")
    sh = shutil.which("sh") or "/bin/sh"
    with private_daemon([Path(sh)]) as d:
        env = dict(os.environ, HEADSTART_SOCKET=str(d.socket))
        launcher = subprocess.Popen(
            [str(helper_path("library-launcher")), "--wait", sh, "-c", "sleep 1; exit 3"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert launcher.stdout is not None
        program = int(launcher.stdout.readline().removeprefix("started "))
        # Its zygote: the one serving now may be a newer one (a refresh after what it learned).
        zygote = int(Path(f"/proc/{program}/stat").read_text().rsplit(")", 1)[1].split()[1])
        os.kill(zygote, signal.SIGKILL)
        rest = launcher.stdout.read().splitlines()
        launcher.wait()
    assert rest == [f"ended {-errno.ECONNRESET} 0 0", "orphan 0 1 3"], rest  # CLD_EXITED, 3
