"""Libraries the daemon preloads in an order other than the loader's (issue 30).

systemd's programs need libsystemd-core-252.so, which needs libsystemd-shared-252.so and has no
RUNPATH of its own: exec finds it because the program's RUNPATH loaded it first, by name. Loaded
alone, in the loader's order, the first cannot be opened; the daemon loads it once the second is in,
and serves systemd-analyze and systemd (the PID 1 binary, which run as a user prints its --version and
--help) as exec runs them.

A library whose loading starts a thread cannot be preloaded (the daemon forks): headstartd --check
names it as the program's reason (Debian's yelp: libyelp.so.0, with WebKit), where it used to name
a library left unloaded after it. A daemon given such a program starts again without it and serves
the others (zenity's WebKit once kept every program of a daemon from being served)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest
from conftest import Served, base_env, bin_path, daemon_in_mode, helper_path, run_exec, run_served
from headstart import binaries
from headstart.daemon import RunningDaemon, private_daemon
from headstart.errors import HeadstartError

SYSTEMD = ["/usr/bin/systemd-analyze", "/usr/lib/systemd/systemd"]
CORE = "/usr/lib/x86_64-linux-gnu/systemd/libsystemd-core-252.so"


def dynamic(path: str) -> str:
    return subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=True).stdout


def check(program: str) -> dict:
    out = subprocess.run([str(binaries.find("headstartd")), "--check", program], capture_output=True, text=True)
    return json.loads(out.stdout)


def test_the_systemd_library_needs_one_found_only_loaded():
    """What makes the case: the library's own dynamic section cannot find its dependency."""
    core = dynamic(CORE)
    assert "[libsystemd-shared-252.so]" in core and "RUNPATH" not in core and "RPATH" not in core
    for program in SYSTEMD:
        assert "Library runpath: [/usr/lib/x86_64-linux-gnu/systemd]" in dynamic(program)


@pytest.mark.parametrize("program", SYSTEMD)
def test_check_serves_systemd(program):
    verdict = check(program)
    assert verdict["mode"] == "warm" and verdict["reason"] is None, verdict


@pytest.fixture(scope="module", params=["preload", "warm", "pool"])
def systemd_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    with daemon_in_mode(request.param, SYSTEMD) as d:
        yield d


def run(argv: list[str]) -> tuple[int, bytes, bytes]:
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=base_env(), start_new_session=True,
                       timeout=60)  # fmt: skip
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("program", SYSTEMD)
@pytest.mark.parametrize("option", ["--version", "--help"])
def test_systemd_served_as_exec(systemd_daemon, program, option):
    by_exec = run([program, option])
    with Served(systemd_daemon):
        served = run([str(binaries.find("headstart-run")), "--socket", str(systemd_daemon.socket), program, option])
    assert served == by_exec
    assert by_exec[0] == 0 and b"systemd" in by_exec[1]


def test_check_names_the_library_that_starts_a_thread():
    program = helper_path("links-thread-library")
    verdict = check(str(program))
    assert verdict["mode"] == "exec"
    assert verdict["reason"] == (
        f"preloading {program.parent / 'libhs-thread-at-load.so'} (and the libraries it needs) started a thread; "
        "the daemon forks and must stay single-threaded"
    )


def thread_reason(program) -> str:
    return (
        f"preloading {program.parent / 'libhs-thread-at-load.so'} (and the libraries it needs) started a thread; "
        "the daemon forks and must stay single-threaded"
    )


@pytest.mark.parametrize("option", ["--app", "--warm"])
def test_a_program_whose_library_starts_a_thread_is_execd_and_the_others_served(option):
    threads = helper_path("links-thread-library")
    other = bin_path("observe")
    with private_daemon([], extra_args=[option, str(threads), option, str(other)]) as d:
        status = d.status()
        assert f"exec {threads} -- {thread_reason(threads)}" in status["program"], status
        assert any(p.endswith(f" {other}") and not p.startswith("exec") for p in status["program"]), status
        # The zygote that serves is the one started again: single-threaded.
        assert len(os.listdir(f"/proc/{d.zygote_pid()}/task")) == 1
        with Served(d, count=1):
            served = run_served(d, [str(other), "a b"])
            declined = run_served(d, [str(threads), "x"])
        assert served == run_exec([str(other), "a b"])
        assert declined == run_exec([str(threads), "x"]) and declined.returncode == 0
        assert int(d.status()["declines"][0]) == 1
        log = d.log_text()
    assert f"starting this zygote again without the programs that need {threads.parent}" in log
    assert d.process.returncode == 0, log


def test_a_preloaded_library_that_starts_a_thread_stops_the_daemon_with_one_line():
    library = helper_path("links-thread-library").parent / "libhs-thread-at-load.so"
    with pytest.raises(HeadstartError) as e:
        with private_daemon([bin_path("observe")], extra_args=["--preload", str(library)]):
            pass
    assert f"--preload {library}: leave it out" in str(e.value)
