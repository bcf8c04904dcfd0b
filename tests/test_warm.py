"""Warm programs: loaded and relocated in the daemon, so a launch is a fork and a call of main."""

from __future__ import annotations

import time

from conftest import Served, base_env, bin_path, run_served
from headstart.daemon import private_daemon


def wait_for_waiting_pool_child(daemon, timeout: float = 30.0) -> None:
    """The pool refills after each launch in the background; under load the last launch of an
    earlier test may have emptied it, and then a launch is forked instead."""
    deadline = time.monotonic() + timeout
    while int(daemon.status()["pool-waiting"][0]) == 0:
        assert time.monotonic() < deadline, "the pool never refilled"
        time.sleep(0.05)


def test_launches_report_their_mode(daemon):
    if daemon.mode == "pool":
        wait_for_waiting_pool_child(daemon)
    with Served(daemon):
        run_served(daemon, [str(bin_path("observe")), "exit", "0"])
    expected = {"preload": "(preload)", "warm": "(warm)", "pool": "(warm, from the pool)"}[daemon.mode]
    assert daemon.log_text().rstrip().splitlines()[-2].endswith(expected), daemon.log_text()[-800:]


def test_constructors_run_once_in_the_daemon_when_warm(tmp_path, monkeypatch):
    log = tmp_path / "ctor.log"
    monkeypatch.setenv("HEADSTART_TEST_CTOR_LOG", str(log))  # the daemon's environment
    prog = bin_path("observe").parent / "constructor"
    env = base_env(HEADSTART_TEST_CTOR_LOG=str(log))
    for mode in ("--app", "--warm"):
        log.write_text("")
        with private_daemon([], extra_args=[mode, str(prog)]) as d:
            at_start = log.read_text().count("constructor")
            for _ in range(3):
                with Served(d):
                    got = run_served(d, [str(prog), "x"], env=env)
                assert got.stdout == b"main of constructor with 1 argument(s)\n"
            runs = log.read_text().count("constructor") - at_start
        # Warm: the constructor ran while the daemon loaded the program, never per launch.
        assert runs == (0 if mode == "--warm" else 3), (mode, runs)
        if mode == "--app":
            assert at_start == 0
        else:
            assert at_start >= 1


def test_a_program_that_starts_a_thread_while_loading_is_served_in_preload_mode():
    prog = bin_path("observe").parent / "constructor-thread"
    with private_daemon([], extra_args=["--warm", str(prog)]) as d:
        assert "starts a thread while it loads" in d.log_text()
        with Served(d):
            got = run_served(d, [str(prog)])
        assert got.stdout == b"main of constructor-thread with 0 argument(s)\n"
        assert d.log_text().rstrip().splitlines()[-2].endswith("(preload)")
