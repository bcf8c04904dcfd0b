"""Executables with thread-local storage of their own (PT_TLS, issue 30) are served, their block
where exec's loader puts it (the daemon's reserve, src/launcher/preload/tls-reserve.h): our sample,
whose constructor, main and threads print what they see and where each variable is from the thread
pointer (and a variant whose exported variables a library loaded after main reaches through the
loader), and unmodified Debian programs, each compared byte for byte with exec in preload mode and
from the pool (registered --warm: a PT_TLS program is served in preload mode instead), with no
child failing before main (the client would exec then). What does not fit the reserve exactly goes
to exec, with its reason."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Served, base_env, daemon_in_mode, helper_path, run_exec, run_served
from headstart.daemon import RunningDaemon

GOLD = "/usr/bin/x86_64-linux-gnu-ld.gold"
PROGRAMS = {
    "thread-locals": [str(helper_path("thread-locals")), "sample"],
    "systemctl --version": ["/usr/bin/systemctl", "--version"],
    "mcookie --version": ["/usr/bin/mcookie", "--version"],
    "ipcmk --help": ["/usr/bin/ipcmk", "--help"],
    "dwp --version": ["/usr/bin/x86_64-linux-gnu-dwp", "--version"],
    "gold --version": [GOLD, "--version"],
    "top -h": ["/usr/bin/top", "-h"],
}


@pytest.fixture(scope="module", params=["preload", "pool"])
def tls_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    programs = sorted({argv[0] for argv in PROGRAMS.values()})
    with daemon_in_mode(request.param, programs) as d:
        yield d


def same_as_exec(daemon: RunningDaemon, argv: list[str], cwd: Path | None = None) -> bytes:
    env = base_env()
    want = run_exec(argv, env=env, cwd=cwd)
    with Served(daemon):
        got = run_served(daemon, argv, env=env, cwd=cwd)
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)
    return got.stdout


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_served_like_exec(tls_daemon, name):
    out = same_as_exec(tls_daemon, PROGRAMS[name])
    if name == "thread-locals":
        # The constructor ran on the initial values, each thread started from them.
        assert out.startswith(b"main start: counter=43 label=initial sum=12.0 zero=5 ")
        assert out.count(b"start: counter=42 label=initial sum=12.0 zero=0 scratch-nonzero=0") == 6
        assert b"aligned=0" not in out


def test_gold_links_with_threads_like_exec(tls_daemon, tmp_path):
    """gold with its worker threads (its own TLS in each), linking a real object: the same output file."""
    (tmp_path / "a.c").write_text("int value = 42;\nint f(void) { return value; }\nvoid _start(void) { f(); }\n")
    subprocess.run(["gcc", "-c", "-O1", "-fno-pic", "a.c"], cwd=tmp_path, check=True)
    outputs = []
    for name in ("exec.out", "served.out"):
        argv = [GOLD, "--threads", "--thread-count", "3", "-o", name, "a.o"]
        if name == "exec.out":
            want = run_exec(argv, cwd=tmp_path)
        else:
            with Served(tls_daemon):
                got = run_served(tls_daemon, argv, cwd=tmp_path)
        outputs.append((tmp_path / name).read_bytes())
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr) == (0, b"", b"")
    assert outputs[0] == outputs[1]


def check(*programs: str) -> list[dict[str, object]]:
    p = subprocess.run(
        [sys.executable, "-m", "headstart", "check", "--json", *programs], capture_output=True, text=True
    )
    return [json.loads(line) for line in p.stdout.splitlines()]


def test_check_serves_it_in_preload_mode_only():
    (verdict,) = check(str(helper_path("thread-locals")))
    assert verdict["mode"] == "preload" and verdict["modes"] == ["preload"], verdict
    assert "PT_TLS" in str(verdict["warm_reason"])


DOES_NOT_FIT = "does not fit where exec puts it in the daemon's reserve of 2048 bytes aligned 64"
REFUSED = {
    "thread-locals-big": f"{DOES_NOT_FIT}: 4424 bytes aligned 64, 4480 below the thread pointer",
    "thread-locals-over-aligned": f"{DOES_NOT_FIT}: 392 bytes aligned 128",
    "thread-locals-pointer": "whose initial values the loader relocates",
    "thread-locals-pointer-relr": "whose initial values the loader relocates",
    "observe-tls": "exports thread-local variables",
}


@pytest.mark.parametrize("program", sorted(REFUSED))
def test_what_does_not_fit_goes_to_exec(program):
    path = str(helper_path(program))
    (verdict,) = check(path)
    assert verdict["mode"] == "exec", verdict
    assert str(verdict["reason"]).startswith("has thread-local storage in the executable (PT_TLS)"), verdict
    assert REFUSED[program] in str(verdict["reason"]), verdict


def test_refused_ones_run_by_exec(tls_daemon):
    """The daemon declines them, saying why, and the client execs them: the same result."""
    for program in ("thread-locals-big", "thread-locals-over-aligned", "thread-locals-pointer-relr"):
        argv = [str(helper_path(program)), "x"]
        env = base_env(HEADSTART_DEBUG="1")
        before = tls_daemon.launches_started()
        got = run_served(tls_daemon, argv, env=env)
        want = run_exec(argv, env=env)
        assert tls_daemon.launches_started() == before
        assert (got.returncode, got.stdout) == (want.returncode, want.stdout)
        assert REFUSED[program].encode() in got.stderr
