"""libheadstart-client as a user gets it: installed, found with pkg-config, linked by a program of
theirs (examples/hs-launch.c), launching through the real daemon."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Served, bin_path
from headstart import binaries

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
