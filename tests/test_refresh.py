"""Zygote refresh and status: a fresh zygote (new address layout, new canary) takes over the socket
while the old one finishes its programs, and not one launch fails or waits for a preload."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from conftest import SLOW_START, base_env, bin_path, proc_fields, run_exec, run_served, slow_start_env
from headstart.daemon import RunningDaemon, private_daemon
from headstart.errors import HeadstartError


def observe(*args: str) -> list[str]:
    return [str(bin_path("observe")), *args]


def wait_generation(d: RunningDaemon, generation: int, timeout: float = 60.0) -> dict[str, list[str]]:
    """The status once zygote `generation` serves and every older zygote has ended."""
    deadline = time.monotonic() + timeout
    while True:
        status = d.status()
        older_gone = f"zygote {generation - 1} (pid" not in d.log_text() or d.log_text().count(" has ended") >= (
            generation - 1
        )
        if int(status["generation"][0]) >= generation and older_gone:
            return status
        assert time.monotonic() < deadline, d.log_text()
        time.sleep(0.05)


def libc_base(d: RunningDaemon) -> str:
    got = run_served(d, observe("libc-base"))
    assert got.returncode == 0
    return got.stdout.decode().strip()


def test_status_lists_modes_pool_and_counters():
    tls = bin_path("observe").parent / "observe-tls"
    args = ["--app", str(bin_path("fft")), "--app", str(tls), "--warm", str(bin_path("observe")), "--pool", "2"]
    with private_daemon([], extra_args=args) as d:
        run_served(d, observe("exit", "0"))
        declined = run_served(d, observe("exit", "0"), env=base_env(LD_BIND_NOW="1"))
        assert declined.returncode == 0
        status = d.status()
        programs = status["program"]
        assert f"preload {bin_path('fft')}" in programs
        assert f"warm {bin_path('observe')}" in programs
        assert any(p.startswith(f"exec {tls} -- ") for p in programs), programs
        assert status["pool-size"] == ["2"]
        assert status["launches"] == ["1"] and status["launches-from-pool"] == ["1"]
        assert status["declines"] == ["1"]
        assert status["declined"][0].startswith("environment 1 -- last: the dynamic loader's environment differs")
        assert status["generation"] == ["1"] and status["refreshes"] == ["0"]
        assert int(status["pid"][0]) != d.process.pid
        # The counts are the daemon's, not the zygote's: they did restart at each refresh.
        d.process.send_signal(signal.SIGHUP)
        wait_generation(d, 2)
        run_served(d, observe("exit", "0"))
        status = d.status()
        assert status["launches"] == ["2"] and status["declines"] == ["1"] and status["generation"] == ["2"]


def test_sighup_starts_a_fresh_zygote_with_a_new_layout():
    with private_daemon([bin_path("observe")]) as d:
        first_pid, before = d.zygote_pid(), libc_base(d)
        d.process.send_signal(signal.SIGHUP)
        status = wait_generation(d, 2)
        assert status["started-because"] == ["SIGHUP"] and status["refreshes"] == ["1"]
        assert int(status["pid"][0]) != first_pid
        assert libc_base(d) != before
        assert not Path(f"/proc/{first_pid}").exists()


def test_refresh_after_n_launches_and_after_t_seconds():
    with private_daemon([bin_path("observe")], extra_args=["--refresh-launches", "3"]) as d:
        for i in range(3):
            assert run_served(d, observe("exit", str(i))).returncode == i
        assert wait_generation(d, 2)["started-because"] == ["--refresh-launches reached"]
    with private_daemon([bin_path("observe")], extra_args=["--refresh-seconds", "1"]) as d:
        assert wait_generation(d, 3)["started-because"] == ["--refresh-seconds elapsed"]


def test_twenty_refreshes_under_load_lose_no_launch():
    """Three clients launch in a loop (by headstart-run and by the client library) while the daemon
    is refreshed twenty times: every launch is served, and each gives the right exit status."""
    timer = bin_path("launch-timer")
    apps = [bin_path("observe"), bin_path("fft")]
    with private_daemon(apps, extra_args=["--pool", "2"]) as d:
        args = ["--socket", str(d.socket), "--run-client", str(bin_path("headstart-run")), "--runs", "100000"]
        clients = [
            subprocess.Popen(
                [str(timer), *args, "--modes", "direct,run", "--", str(bin_path("fft")), "64"],
                stdout=subprocess.PIPE,
                env=base_env(),
                start_new_session=True,
            )
            for _ in range(3)
        ]
        try:
            for generation in range(2, 22):
                d.process.send_signal(signal.SIGHUP)
                wait_generation(d, generation)
        finally:
            for c in clients:
                c.send_signal(signal.SIGUSR1)  # each stops after the launch in progress
        lines = [line for c in clients for line in c.communicate(timeout=60)[0].splitlines()]
        assert len(lines) > 100
        assert not [x for x in lines if b'"error"' in x][:3], d.log_text()
        # headstart-run would exec quietly if it could not reach a zygote: count what was served.
        assert "declined" not in d.log_text()
        assert d.launches_started() == len(lines)
        assert d.status()["refreshes"] == ["20"]


def test_replacing_a_preloaded_library_refreshes_and_the_new_code_runs(tmp_path):
    helpers = bin_path("observe").parent
    prog = tmp_path / "uses-versioned"
    shutil.copy(helpers / "uses-versioned", prog)
    shutil.copy(helpers / "libversioned-1.so", tmp_path / "libversioned.so")
    with private_daemon([prog]) as d:
        assert run_served(d, [str(prog)]).stdout == b"versioned library 1\n"
        # As a package manager does it: the new file is written beside and renamed over the old.
        shutil.copy(helpers / "libversioned-2.so", tmp_path / "libversioned.so.new")
        os.rename(tmp_path / "libversioned.so.new", tmp_path / "libversioned.so")
        status = wait_generation(d, 2)
        assert status["started-because"] == [f"changed on disk: {tmp_path / 'libversioned.so'}"]
        assert run_exec([str(prog)]).stdout == b"versioned library 2\n"
        assert run_served(d, [str(prog)]).stdout == b"versioned library 2\n"


def test_a_registered_program_made_non_executable_refreshes_and_fails_as_exec(tmp_path):
    prog = tmp_path / "observe"
    shutil.copy(bin_path("observe"), prog)
    with private_daemon([prog]) as d:
        assert run_served(d, [str(prog), "exit", "3"]).returncode == 3
        # Only its mode (and so its ctime) changes: same inode, size and mtime.
        prog.chmod(0o644)
        status = wait_generation(d, 2)
        assert status["started-because"] == [f"changed on disk: {prog}"]
        served = run_served(d, [str(prog), "exit", "3"])
        assert served.returncode == 126, served


T = TypeVar("T")


def children_of(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def wait_for(what: Callable[[], T], d: RunningDaemon, timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    while not (got := what()):
        assert time.monotonic() < deadline and d.process.poll() is None, d.log_text()
        time.sleep(0.05)
    return got


def alive(pid: int) -> bool:
    try:
        return proc_fields(pid)[0] != "Z"
    except FileNotFoundError:
        return False


def stop_and_check_nothing_is_left(d: RunningDaemon, zygote: int, pid_file: Path) -> None:
    """Stops the daemon while `zygote` waits for the trial child of its slow warm-up step. Before,
    the stop waited for the trial (ten minutes here), and a trial outlived a zygote killed."""
    trial = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), d))
    assert trial in children_of(zygote)
    d.process.send_signal(signal.SIGTERM)
    try:
        d.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the stop waited for a zygote still starting\n{d.log_text()}") from None
    assert d.process.returncode == 0, d.log_text()
    # The daemon exits at once; a zygote still starting, and its trial, end by that SIGTERM.
    for pid in (zygote, trial):
        deadline = time.monotonic() + 10
        while alive(pid):
            assert time.monotonic() < deadline, f"process {pid} outlived the daemon's stop"
            time.sleep(0.05)


def test_a_stop_does_not_wait_for_the_first_zygote_to_finish_starting(tmp_path):
    env, slow, pid_file = slow_start_env(tmp_path)
    slow.touch()
    with private_daemon([], extra_args=SLOW_START, env=env, wait_ready=False) as d:
        (zygote,) = wait_for(lambda: children_of(d.process.pid), d)
        stop_and_check_nothing_is_left(d, zygote, pid_file)
        assert "ready: listening" not in d.log_text()


def test_a_stop_does_not_wait_for_a_refreshs_zygote_and_the_serving_one_ends_cleanly(tmp_path):
    env, slow, pid_file = slow_start_env(tmp_path)
    with private_daemon([], extra_args=SLOW_START, env=env) as d:
        serving = d.zygote_pid()
        slow.touch()
        # The step's trial passed at the first start: the refresh's zygote would run it without one.
        (d.socket.parent / "warm-up").unlink()
        d.process.send_signal(signal.SIGHUP)
        (starting,) = wait_for(lambda: [p for p in children_of(d.process.pid) if p != serving], d)
        stop_and_check_nothing_is_left(d, starting, pid_file)
        deadline = time.monotonic() + 10
        while alive(serving):  # with no program to finish, the serving one ends too
            assert time.monotonic() < deadline, f"the serving zygote {serving} outlived the stop"
            time.sleep(0.05)


def generation(d: RunningDaemon) -> str | None:
    """The serving zygote's generation; None while none serves (the supervisor declines)."""
    try:
        return d.status()["generation"][0]
    except HeadstartError as e:
        assert "no zygote of the daemon serves at this moment" in str(e), e
        return None


@contextmanager
def running_served(d: RunningDaemon, seconds: str) -> Iterator[subprocess.Popen[bytes]]:
    """A client whose served program sleeps `seconds`, once the daemon has started it; killed after."""
    client = subprocess.Popen(
        [str(bin_path("headstart-run")), "--socket", str(d.socket), *observe("sleep", seconds)], env=base_env()
    )
    try:
        deadline = time.monotonic() + 30
        while d.launches_started() == 0:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        yield client
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


def test_a_zygote_stopped_by_someone_else_is_replaced_at_once_not_when_its_programs_end():
    """SIGTERM to the zygote alone (not the supervisor's stop): it stopped accepting and finished
    its programs, and until they ended (a home screen's never does) every client waited its full
    timeout, then exec'd. The supervisor now hears of it and starts the next zygote at once."""
    with private_daemon([bin_path("observe")]) as d, running_served(d, "30") as running:
        deadline = time.monotonic() + 30
        first = d.zygote_pid()
        os.kill(first, signal.SIGTERM)
        while generation(d) != "2":
            assert time.monotonic() < deadline and running.poll() is None, d.log_text()
            time.sleep(0.05)
        assert run_served(d, observe("exit", "3")).returncode == 3 and d.zygote_pid() != first
        assert running.poll() is None  # the program the first zygote started runs on


def test_a_program_given_twice_is_registered_once():
    """--app X --app X --warm X was listed three times in --status, twice in preload mode."""
    fft = str(bin_path("fft"))
    with private_daemon([], extra_args=["--app", fft, "--app", fft, "--warm", fft]) as d:
        assert [p for p in d.status()["program"] if p.endswith(fft)] == [f"preload {fft}"]
        assert d.log_text().count("registered already") == 2


def test_a_stopped_program_outlives_its_zygote():
    """A served program's group must not become orphaned when its zygote dies (the kernel would send
    a stopped one SIGHUP): the programs stay in the supervisor's session, which adopts them."""
    with private_daemon([bin_path("observe")]) as d, running_served(d, "2") as client:
        deadline = time.monotonic() + 30
        zygote = d.zygote_pid()
        (program,) = [int(p) for p in Path(f"/proc/{zygote}/task/{zygote}/children").read_text().split()]
        os.kill(program, signal.SIGSTOP)
        while proc_fields(program)[0] != "T":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(zygote, signal.SIGKILL)
        time.sleep(0.5)  # a SIGHUP would have come by now
        assert Path(f"/proc/{program}").exists(), "the stopped program was hung up"
        os.kill(program, signal.SIGCONT)
        # The client stopped with its program, as the job would under exec. The zygote that would
        # continue it with the program is gone: its shell's `fg` does (docs/limitations.md).
        os.kill(client.pid, signal.SIGCONT)
        assert client.wait(timeout=30) == 0


def test_exec_while_starting_sends_launches_to_exec_until_the_first_zygote_serves(tmp_path):
    """A program started with the daemon (at boot) need not wait for its preload: with
    --exec-while-starting the supervisor declines at once until its first zygote is ready, and the
    client execs. Without it the client waits, here until its deadline, and its request, with the
    fds it passed, stays queued for the zygote."""
    env, slow, _ = slow_start_env(tmp_path)
    debug = dict(env, HEADSTART_DEBUG="1")
    argv = observe("exit", "6")
    want = run_exec(argv, env=env)
    slow.touch()
    with private_daemon([], extra_args=SLOW_START, env=env, wait_ready=False) as d:
        wait_for(d.socket.exists, d)
        # Not through pipes: the queued request holds their write ends until the zygote reads it.
        with open(tmp_path / "err", "w+b") as err:
            client = [str(bin_path("headstart-run")), "--socket", str(d.socket), "--timeout", "300", *argv]
            waited = subprocess.run(client, env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err, timeout=60)
            err.seek(0)
            assert waited.returncode == 6 and b"did not answer within 300 ms" in err.read()
    slow.touch()
    with private_daemon([], extra_args=[*SLOW_START, "--exec-while-starting"], env=env, wait_ready=False) as d:
        wait_for(d.socket.exists, d)
        declined = run_served(d, argv, env=debug)
        assert (declined.returncode, declined.stdout) == (6, want.stdout)
        assert b"the daemon is starting (--exec-while-starting)" in declined.stderr, declined.stderr
        assert "ready: listening" not in d.log_text()
        slow.unlink()
        wait_for(lambda: "ready: listening" in d.log_text(), d)
        served = run_served(d, argv, env=env)
        assert (served.returncode, served.stdout) == (6, want.stdout)
        assert d.launches_started() == 1
