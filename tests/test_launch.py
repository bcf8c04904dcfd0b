"""A served program must behave exactly as the same program run by exec."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import (
    DAEMON_ONLY_VAR,
    SANITIZED,
    Served,
    base_env,
    bin_path,
    daemon_fd_count,
    daemon_in_mode,
    proc_fields,
    run_exec,
    run_served,
)
from headstart.daemon import RunningDaemon, private_daemon

SAMPLES = {
    "gtk-hello": [["a", "b c"], []],
    "jpeg-encode": [["85"], ["30", "64", "48"]],
    "mp3-encode": [["1"], ["0.5", "1000"]],
    "fft": [[], ["1024"], ["3"]],  # 3 is out of range: exit status 2 and a message
}

# What a served program sees differently by design: its own session (docs/limitations.md).
SESSION_LINES = (b"own_process_group=", b"session_leader=")


def observe(*args: str) -> list[str]:
    return [str(bin_path("observe")), *args]


def comparable(report: bytes) -> bytes:
    return b"\n".join(line for line in report.split(b"\n") if not line.startswith(SESSION_LINES))


@pytest.mark.parametrize(("app", "args"), [(a, x) for a, xs in SAMPLES.items() for x in xs])
def test_samples_same_as_exec(daemon, app, args):
    argv = [str(bin_path(app)), *args]
    want = run_exec(argv)
    with Served(daemon):
        got = run_served(daemon, argv)
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)
    assert want.stdout or want.stderr


def test_everything_observable_matches_exec(daemon):
    env = base_env(CLIENT_ONLY="x y", EMPTY="")
    want = run_exec(observe("report", "one", "", "two words"), env=env)
    with Served(daemon):
        got = run_served(daemon, observe("report", "one", "", "two words"), env=env)
    assert got.returncode == want.returncode == 0
    assert comparable(got.stdout) == comparable(want.stdout)
    # The report covers these; make sure they are really in it, so the comparison means something.
    for key in (b"env=CLIENT_ONLY=x y", b"cmdline:", b"comm=observe", b"fds=0,1,2,", b"umask="):
        assert key in got.stdout


def test_environment_replaced_exactly(daemon):
    env = base_env(ONLY_HERE="1")
    with Served(daemon):
        got = run_served(daemon, observe("report"), env=env)
    lines = [line[4:] for line in got.stdout.decode().splitlines() if line.startswith("env=")]
    assert sorted(lines) == sorted(f"{k}={v}" for k, v in env.items())
    assert DAEMON_ONLY_VAR not in got.stdout.decode()


def test_empty_environment(daemon):
    with Served(daemon):
        got = run_served(daemon, observe("report"), env={})
    assert b"env=" not in got.stdout
    assert b"environ:\n" in got.stdout


def test_working_directory_and_deleted_directory(daemon):
    with tempfile.TemporaryDirectory() as tmp:
        with Served(daemon):
            got = run_served(daemon, observe("report"), cwd=tmp)
        assert f"cwd={os.path.realpath(tmp)}\n".encode() in got.stdout

        gone = Path(tmp) / "gone"
        # The client starts in the directory, which is removed before it runs.
        client = [str(bin_path("headstart-run")), "--socket", str(daemon.socket), *observe("report")]
        script = f'mkdir "{gone}" && cd "{gone}" && rmdir "{gone}" && exec "$@"'
        with Served(daemon):
            served = run_exec(["/bin/sh", "-c", script, "sh", *client])
        plain = run_exec(["/bin/sh", "-c", script, "sh", *observe("report")])
        assert served.returncode == plain.returncode == 0
        served_cwd = [x for x in served.stdout.split(b"\n") if x.startswith(b"cwd=")]
        plain_cwd = [x for x in plain.stdout.split(b"\n") if x.startswith(b"cwd=")]
        assert served_cwd == plain_cwd
        assert served_cwd[0] != b"cwd=" + str(gone).encode()  # getcwd reports a deleted directory


def test_umask_rlimits_mask_and_ignored_signals(daemon):
    # The shell sets each property, then execs the client (or the program itself).
    setup = "umask 0027; ulimit -n 512; ulimit -S -c 0; trap '' USR2 HUP; exec \"$@\""
    client = [str(bin_path("headstart-run")), "--socket", str(daemon.socket)]
    with Served(daemon):
        got = run_exec(["/bin/sh", "-c", setup, "sh", *client, *observe("report")])
    want = run_exec(["/bin/sh", "-c", setup, "sh", *observe("report")])
    assert b"umask=0027" in got.stdout
    assert b"rlimit[7]=512/" in got.stdout
    assert comparable(got.stdout) == comparable(want.stdout)
    ignored = next(x for x in got.stdout.split(b"\n") if x.startswith(b"ignored="))
    assert b"1," in ignored and b"12," in ignored  # SIGHUP and SIGUSR2 stay ignored across exec


def test_blocked_signals_are_kept(daemon):
    # Python's pthread_sigmask is inherited by the child we spawn, then by the program.
    code = (
        "import signal, subprocess, sys\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGWINCH})\n"
        "sys.exit(subprocess.run(sys.argv[1:]).returncode)\n"
    )
    client = [str(bin_path("headstart-run")), "--socket", str(daemon.socket)]
    with Served(daemon):
        got = run_exec(["python3", "-c", code, *client, *observe("report")])
    blocked = next(x for x in got.stdout.split(b"\n") if x.startswith(b"blocked="))
    assert blocked == b"blocked=10,28,"


def test_extra_fd_passed_at_same_number(daemon):
    r, w = os.pipe()
    try:
        with Served(daemon):
            got = run_served(daemon, observe("report"), pass_fds=(w,))
    finally:
        os.close(r)
        os.close(w)
    fds = next(x for x in got.stdout.split(b"\n") if x.startswith(b"fds="))
    assert fds == f"fds=0,1,2,{w},".encode()


def test_fd_5_reaches_the_program(daemon):
    script = 'exec 5>"$1"; shift; exec "$@"'
    with tempfile.NamedTemporaryFile() as out:
        client = [str(bin_path("headstart-run")), "--socket", str(daemon.socket)]
        with Served(daemon):
            got = run_exec(["/bin/sh", "-c", script, "sh", out.name, *client, *observe("report")])
        assert b"fds=0,1,2,5,\n" in got.stdout


@pytest.mark.parametrize("code", [0, 1, 2, 42, 127, 128, 200, 255])
def test_exit_codes(daemon, code):
    with Served(daemon):
        got = run_served(daemon, observe("exit", str(code)))
    assert got.returncode == code


def test_all_exit_codes_in_one_loop(daemon):
    """Every status from 0 to 255 comes back as the program's. Under the sanitizers every fifth and
    255: each is the same path through the client and the daemon, which the normal pass takes 256 times."""
    codes = [*range(0, 256, 5), 255] if SANITIZED else list(range(256))
    client = [str(bin_path("headstart-run")), "--socket", str(daemon.socket), *observe("exit")]
    script = f'for i in {" ".join(map(str, codes))}; do "$@" $i >/dev/null; echo $?; done'
    with Served(daemon, count=len(codes)):
        got = run_exec(["/bin/sh", "-c", script, "sh", *client], timeout=120)
    assert got.stdout.split() == [str(i).encode() for i in codes]


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGABRT, signal.SIGTERM, signal.SIGKILL])
def test_killed_by_signal(daemon, sig):
    with Served(daemon):
        got = run_served(daemon, observe("kill", str(int(sig))))
    want = run_exec(observe("kill", str(int(sig))))
    assert got.returncode == want.returncode == -sig
    assert got.stderr == want.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP, signal.SIGWINCH])
def test_signals_reach_the_program(daemon, sig):
    client = [str(bin_path("headstart-run")), "--socket", str(daemon.socket), *observe("wait-signal")]
    before = daemon.launches_started()
    p = subprocess.Popen(client, stdout=subprocess.PIPE, env=base_env(), start_new_session=True)
    assert p.stdout is not None
    assert p.stdout.readline() == b"ready\n"
    p.send_signal(sig)
    out, _ = p.communicate(timeout=30)
    assert out == f"got {int(sig)}\n".encode()
    assert p.returncode == int(sig)
    assert daemon.launches_started() == before + 1


def test_a_terminal_the_program_opens_does_not_become_its_controlling_terminal(daemon):
    """The program led a session of its own, so a terminal it opened without O_NOCTTY (a serial port,
    a pty no session holds; dash's redirections, coreutils' dd) became its controlling terminal, and
    the terminal's ^C and hang-ups reached it. It now leads only a process group of the zygote's
    session: under exec a program that does not lead its session never takes one either."""
    master, slave = os.openpty()
    path = os.ttyname(slave)
    os.close(slave)
    try:
        with Served(daemon):
            got = run_served(daemon, ["/bin/sh", "-c", f"exec 3<{path}; cut -d' ' -f7 /proc/$$/stat"])
    finally:
        os.close(master)
    assert got.returncode == 0 and got.stdout == b"0\n", got  # tty_nr: no controlling terminal


def test_kill_0_reaches_the_program_and_nothing_of_the_daemon(daemon):
    script = "sleep 30 & kill 0; echo not reached"
    want = run_exec(["/bin/sh", "-c", script])
    with Served(daemon):
        got = run_served(daemon, ["/bin/sh", "-c", script])
    assert (got.returncode, got.stdout) == (want.returncode, want.stdout) == (-signal.SIGTERM, b"")
    with Served(daemon):  # the daemon, and its pool, serve on
        assert run_served(daemon, ["/bin/true"]).returncode == 0


def test_ten_megabytes_through_stdin_and_stdout(daemon):
    data = os.urandom(10 * 1024 * 1024)
    with Served(daemon):
        got = run_served(daemon, observe("cat"), input=data)
    assert got.returncode == 0
    assert got.stdout == data


def test_program_found_on_path_like_execvp(daemon):
    env = base_env(PATH=f"/nonexistent:{bin_path('observe').parent}:/usr/bin:/bin")
    with Served(daemon):
        got = run_served(daemon, ["observe", "report"], env=env)
    assert b"argv[0]=observe\n" in got.stdout
    assert b"invocation_short_name=observe\n" in got.stdout


@pytest.mark.parametrize("path", ["/nonexistent::/usr/bin", ":/usr/bin", "/nonexistent:", ""])
def test_an_empty_path_entry_is_the_working_directory_as_for_execvp(tmp_path, path):
    """execvp reads an empty PATH entry (and a set but empty PATH) as the working directory. The
    client did so and the daemon's --app did not: the two searches are now one (path-search.c)."""
    shutil.copy(bin_path("observe"), tmp_path / "here")
    (tmp_path / "sub").mkdir()
    env = base_env(PATH=path)
    by_execvp = subprocess.run(["/usr/bin/env", "here", "exit", "3"], cwd=tmp_path, env=env, capture_output=True)
    assert by_execvp.returncode == 3, by_execvp.stderr
    with private_daemon([]) as d:
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        got = subprocess.run([*client, "here", "exit", "3"], cwd=tmp_path, env=env, capture_output=True)
        assert (got.returncode, got.stdout) == (by_execvp.returncode, by_execvp.stdout)
    check = subprocess.run([str(bin_path("headstartd")), "--check", "here"], cwd=tmp_path, env=env,
                           capture_output=True, text=True)  # fmt: skip
    assert json.loads(check.stdout.splitlines()[0])["path"] == str(tmp_path / "here"), check.stdout


def test_a_shells_underscore_names_the_program_as_under_exec(daemon):
    """A shell sets `_` to the file it runs: headstart-run's. The program found it there, served or
    exec'd by the client, where under exec it finds its own file (xargs --show-limits counted 29
    bytes more environment, a new user's trial)."""
    client = f"{bin_path('headstart-run')} --socket {daemon.socket}"
    for command, want in (("printenv _", "/usr/bin/printenv"), ("./printenv _", "./printenv")):
        exec_d = subprocess.run(["bash", "-c", f"cd /usr/bin && {command}"], capture_output=True, text=True)
        before = daemon.launches_started()
        served = subprocess.run(["bash", "-c", f"cd /usr/bin && {client} {command}"], capture_output=True, text=True)
        fallback = subprocess.run(
            ["bash", "-c", f"cd /usr/bin && {client} --exec {command}"], capture_output=True, text=True
        )
        assert exec_d.stdout == served.stdout == fallback.stdout == want + "\n", served.stderr
        assert daemon.launches_started() == before + 1


def test_process_name_through_a_symlink(daemon, tmp_path):
    """exec names the process (comm, 15 bytes at most) after the file name it was given."""
    link = tmp_path / "a-rather-long-alias-name"
    link.symlink_to(bin_path("observe"))
    with Served(daemon):
        got = run_served(daemon, [str(link), "report"])
    want = run_exec([str(link), "report"])

    def names(out: bytes) -> list[bytes]:
        keys = (b"comm=", b"invocation_name=", b"invocation_short_name=", b"cmdline:")
        return [x for x in out.split(b"\n") if x.startswith(keys)]

    assert names(got.stdout) == names(want.stdout)
    assert b"comm=a-rather-long-a" in names(got.stdout)


@pytest.mark.parametrize("mode", ["preload", "warm", "pool"])
def test_many_launches_in_a_row_leak_nothing(mode):
    """2,000 launches: none fails, and the daemon's fd count and memory do not grow. Under the
    sanitizers 300: LeakSanitizer finds a leak of one launch as surely as of thousands, and an fd
    left open by each launch shows in 300 as in 2,000. A daemon of its own serving only the program
    launched: each launch forks a zygote that has not loaded the samples' GTK and Qt (the fork of that
    one took about 9 ms of a 13 ms launch here), and runs the same code."""
    runs = "150" if SANITIZED else "1000"
    timer = bin_path("launch-timer")
    fft = [str(bin_path("fft")), "64"]
    with daemon_in_mode(mode, fft[:1]) as daemon:
        _launch_many_and_measure(daemon, timer, fft, runs)


def test_a_program_rebuilt_in_a_loop_keeps_one_copy_and_one_file_open(tmp_path):
    """A build's loop rebuilds a program and runs it: the daemon kept a copy of every version (in
    XDG_RUNTIME_DIR, memory: 40 rebuilds of a 4 MB test took 165 MB, a new user's trial) and each
    version's file open, up to its 256 entries. It now forgets the other versions of a path."""
    cache, program = tmp_path / "cache", tmp_path / "rebuilt"
    with private_daemon([], extra_args=["--cache-dir", str(cache)]) as d:
        fds = None
        for i in range(8):
            shutil.copy(bin_path("observe"), tmp_path / "next")  # by rename, as a linker, or in place
            (tmp_path / "next").replace(program) if i % 2 else shutil.copy(tmp_path / "next", program)
            got = run_served(d, [str(program), "exit", str(i)], env=base_env())
            assert got.returncode == i, got.stderr
            fds = fds or daemon_fd_count(d)
        assert d.launches_started() == 8, d.log_text()
        copies = [p for p in cache.rglob("*") if p.is_file() and "rebuilt" in p.name]
        assert len(copies) == 1, copies
        assert daemon_fd_count(d, expect=fds) == fds


def _launch_many_and_measure(daemon: RunningDaemon, timer: Path, fft: list[str], runs: str) -> None:
    args = ["--socket", str(daemon.socket), "--run-client", str(bin_path("headstart-run"))]

    def measure(expect_fds: int | None = None) -> tuple[int, int]:
        fds = daemon_fd_count(daemon, expect=expect_fds)
        rss = next(int(x.split()[1]) for x in open(f"/proc/{daemon.zygote_pid()}/status") if x.startswith("VmRSS:"))
        return fds, rss

    # Until the daemon's memory settles (checked in the normal pass only).
    warm = run_exec([str(timer), "--runs", "20" if SANITIZED else "100", "--modes", "direct", *args, "--", *fft])
    assert b"error" not in warm.stdout
    fds0, rss0 = measure()
    before = daemon.launches_started()
    out = run_exec([str(timer), "--runs", runs, "--modes", "direct,run", *args, "--", *fft], timeout=600)
    lines = out.stdout.splitlines()
    assert len(lines) == 2 * int(runs)
    assert not [x for x in lines if b"error" in x][:3]
    assert daemon.launches_started() - before == 2 * int(runs)  # each served, none exec'd
    fds1, rss1 = measure(expect_fds=fds0)
    assert fds1 == fds0
    if SANITIZED:
        return  # AddressSanitizer's quarantine holds freed memory; LeakSanitizer checks at daemon exit
    assert rss1 - rss0 < 1024, f"daemon RSS grew from {rss0} to {rss1} KiB"


def test_fifty_at_once(daemon):
    client = [str(bin_path("headstart-run")), "--socket", str(daemon.socket)]
    before = daemon.launches_started()
    procs = [
        subprocess.Popen(
            [*client, *observe("exit", str(i))],
            stdout=subprocess.PIPE,
            env=base_env(),
            start_new_session=True,
        )
        for i in range(50)
    ]
    results = [(p.communicate(timeout=60)[0], p.returncode) for p in procs]
    assert results == [(f"exiting with {i}\n".encode(), i) for i in range(50)]
    deadline = time.monotonic() + 5
    while daemon.launches_started() < before + 50 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert daemon.launches_started() == before + 50


def test_shared_object_exporting_main_is_served(daemon):
    lib = bin_path("observe").parent / "observe-lib.so"
    with Served(daemon):
        got = run_served(daemon, [str(lib), "report", "x"])
    want = run_exec(observe("report", "x"))
    assert got.returncode == 0

    def body(out: bytes) -> list[bytes]:
        # Everything but the lines that name the file itself.
        names = (b"argv[0]=", b"comm=", b"invocation_", b"cmdline:", b"execfn=")
        return [x for x in comparable(out).split(b"\n") if not x.startswith(names)]

    assert body(got.stdout) == body(want.stdout)
    assert b"comm=observe-lib.so" in got.stdout


def test_a_changed_file_is_never_served_stale(daemon, tmp_path):
    """Replacing a program in place (same path, even same inode) serves the new one."""
    prog = tmp_path / "prog"
    shutil.copy(bin_path("fft"), prog)
    with Served(daemon):
        first = run_served(daemon, [str(prog), "64"])
    assert first.stdout.startswith(b"fft of 64 points")
    with open(prog, "r+b") as f:  # rewrite the same inode
        f.truncate(0)
        f.write(bin_path("jpeg-encode").read_bytes())
    with Served(daemon):
        second = run_served(daemon, [str(prog), "80", "16", "16"])
    want = run_exec([str(bin_path("jpeg-encode")), "80", "16", "16"])
    assert second.stdout == want.stdout and second.stdout.startswith(b"\xff\xd8")


# A caller that sets a prctl (option, then its arguments), then execs.
PRCTL_THEN_EXEC = (
    "import ctypes, os, sys; sys.exit(77) if ctypes.CDLL(None).prctl({}, {}, 0, 0, 0) else "
    "os.execv(sys.argv[1], sys.argv[1:])"
)

# A caller that sets up, then execs headstart-run: what exec keeps from it for the program.
KEPT_ACROSS_EXEC = {
    # A CPU-time timer bounding the program: under exec it fires after 0.3 s of the program's CPU.
    "interval timer": (
        "import os, signal, sys; signal.setitimer(signal.ITIMER_VIRTUAL, 0.3); os.execv(sys.argv[1], sys.argv[1:])",
        ["/usr/bin/sha256sum", "/dev/zero"],
    ),
    # A signal blocked and pending: under exec the program finds it pending at main.
    "pending signal": (
        "import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1}); "
        "os.kill(os.getpid(), signal.SIGUSR1); os.execv(sys.argv[1], sys.argv[1:])",
        ["/usr/bin/grep", "ShdPnd", "/proc/self/status"],
    ),
    # A POSIX record lock, which belongs to the process: under exec the program holds it.
    "POSIX record lock": (
        "import fcntl, os, sys, tempfile; fd, path = tempfile.mkstemp(); os.unlink(path); os.dup2(fd, 9); "
        "os.close(fd); fcntl.lockf(9, fcntl.LOCK_EX); os.execv(sys.argv[1], sys.argv[1:])",
        [str(bin_path("observe")), "lock", "9"],
    ),
    # What prctl sets that exec keeps and no /proc file shows (exit 77: the kernel has no such prctl).
    # MDWE (PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN; Linux 6.3), which systemd's MemoryDenyWriteExecute= may set.
    "MDWE": (PRCTL_THEN_EXEC.format(65, 1), [str(bin_path("observe")), "prctl"]),
    # A child subreaper (PR_SET_CHILD_SUBREAPER): the program's orphans would be the caller's under exec.
    "child subreaper": (PRCTL_THEN_EXEC.format(36, 1), [str(bin_path("observe")), "prctl"]),
    # A machine-check kill policy (PR_MCE_KILL, PR_MCE_KILL_SET, PR_MCE_KILL_EARLY).
    "machine-check kill policy": (PRCTL_THEN_EXEC.format(33, "1, 1"), [str(bin_path("observe")), "prctl"]),
    # No time-stamp counter (PR_SET_TSC, PR_TSC_SIGSEGV): under exec the program's loader dies of SIGSEGV
    # (it reads the counter); headstart-run, static, lives to ask.
    "time-stamp counter": (PRCTL_THEN_EXEC.format(26, 2), [str(bin_path("observe")), "prctl"]),
    # A speculation mitigation forced on (PR_SET_SPECULATION_CTRL, PR_SPEC_STORE_BYPASS,
    # PR_SPEC_FORCE_DISABLE), which exec keeps and /proc/PID/status shows: the daemon compares it.
    "speculation mitigation": (PRCTL_THEN_EXEC.format(53, "0, 8"), ["/usr/bin/grep", "Specul", "/proc/self/status"]),
    # Securebits (PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP; root only), which exec keeps but for
    # SECBIT_KEEP_CAPS: a served root program lost its capabilities through setuid where exec's kept them.
    "securebits": (PRCTL_THEN_EXEC.format(28, 4), [str(bin_path("observe")), "prctl"]),
    # Which mappings a core dump holds (/proc/self/coredump_filter), which fork and exec keep: a served
    # program had the daemon's.
    "core dump filter": (
        "import os, sys; open('/proc/self/coredump_filter', 'w').write('0x7f'); os.execv(sys.argv[1], sys.argv[1:])",
        ["/usr/bin/cat", "/proc/self/coredump_filter"],
    ),
    # A NUMA memory policy (set_mempolicy, numactl --preferred/--membind/--interleave), which fork and
    # exec keep and no /proc file shows: a served program had the daemon's (MPOL_PREFERRED, node 0).
    "NUMA memory policy": (
        "import ctypes, os, sys; node = ctypes.c_ulong(1); "
        "nr = {'x86_64': 238, 'aarch64': 237}[os.uname().machine]; "
        "sys.exit(77) if ctypes.CDLL(None).syscall(nr, 1, ctypes.byref(node), 64) else "
        "os.execv(sys.argv[1], sys.argv[1:])",
        [str(bin_path("observe")), "mempolicy"],
    ),
    # A limit on the address space, which the zygote's mappings would use up in a served program.
    "address space limit": (
        "import os, resource, sys; resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30)); "
        "os.execv(sys.argv[1], sys.argv[1:])",
        ["/usr/bin/grep", "address space", "/proc/self/limits"],
    ),
}


@pytest.mark.parametrize("kept", KEPT_ACROSS_EXEC)
def test_what_exec_keeps_from_the_caller_for_the_program_makes_the_client_exec(kept):
    """An interval timer set by the caller (the daemon's child had none: a program ran on where exec's
    was killed by SIGVTALRM), a signal pending (not pending at the served program's main) or a POSIX
    record lock (a served program found its file locked by another process) is kept by exec for the
    program: headstart-run then execs it, as it does when the caller refuses memory both writable and
    executable (MDWE), is a child subreaper, has a machine-check kill policy or may not read the
    time-stamp counter, which exec also keeps (a served program had none). So it does when the
    daemon declines a limit on the address space, which the zygote's mappings use (a served python3
    had twice exec's)."""
    if kept == "address space limit" and SANITIZED:
        pytest.skip("a sanitizer build of headstart-run cannot start under a limit on its address space")
    if kept == "time-stamp counter" and SANITIZED:
        pytest.skip("a sanitizer build of headstart-run is not static: its loader dies of SIGSEGV as the program's")
    setup, argv = KEPT_ACROSS_EXEC[kept]
    env = base_env(HEADSTART_DEBUG="1")
    caller = ["python3", "-c", setup]
    with private_daemon([Path(argv[0])]) as d:
        expected = run_exec([*caller, *argv], env=env)
        if expected.returncode == 77:
            pytest.skip(f"this kernel or architecture has no {kept} to set")
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        got = run_exec([*caller, *client, *argv], env=env)
        plain = run_served(d, [argv[0], "--version"], env=env)
    assert b"by exec" not in plain.stderr, plain.stderr  # served when nothing is kept
    assert b"by exec" in got.stderr, got.stderr
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout)


STACK_AT_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* How far below the stack's start (field 28 of /proc/self/stat) main runs, in bytes. */
int main(void) {
        char line[1024];
        FILE *f = fopen("/proc/self/stat", "r");
        if (!f || !fgets(line, sizeof line, f))
                return 1;
        char *p = strrchr(line, ')') + 4; /* past ") S " */
        unsigned long start = 0;
        for (int field = 4; field <= 28; field++)
                start = strtoul(p, &p, 10);
        int here;
        printf("%lu\n", start - (unsigned long) &here);
        return 0;
}
"""


def test_main_has_about_the_stack_it_has_under_exec(tmp_path):
    """main runs below the zygote's frames: they held 100 KiB (its 60 KB server on the stack), so a
    recursion that fit in `ulimit -s 1024` by exec overflowed served. They are now a few KiB."""
    src = tmp_path / "stack.c"
    src.write_text(STACK_AT_MAIN)
    program = tmp_path / "stack"
    subprocess.run(["gcc", "-O1", "-fPIE", "-pie", "-o", str(program), str(src)], check=True)
    with private_daemon([program]) as d, Served(d):
        served = run_served(d, [str(program)])
    exec_depth = int(run_exec([str(program)]).stdout)
    assert int(served.stdout) - exec_depth < 24 * 1024, (int(served.stdout), exec_depth)


def what_its_parent_sees(
    argv: list[str],
    program_of: Callable[[int], int] | None = None,
    on_stop: signal.Signals = signal.SIGCONT,
    stop_it: bool = False,
    timeout: float = 30,
) -> list[str]:
    """What a parent waiting with WUNTRACED sees of argv, run in a session of its own (so its process
    group is orphaned): each stop, after which it sends on_stop (to argv's program, which program_of
    finds from argv's pid, or to argv), then the end. With stop_it, the program is stopped by another
    process once it said it is ready, and continues are seen too (WCONTINUED)."""
    p = subprocess.Popen(
        argv, env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
    )
    program_of = program_of or (lambda pid: pid)
    flags = os.WUNTRACED | os.WNOHANG
    if stop_it:
        assert p.stdout and p.stdout.readline() == b"ready\n"
        os.kill(program_of(p.pid), signal.SIGSTOP)
        flags |= os.WCONTINUED
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid, status = os.waitpid(p.pid, flags)
        if pid == 0:
            time.sleep(0.01)
        elif os.WIFSTOPPED(status):
            seen.append(f"stopped by {signal.Signals(os.WSTOPSIG(status)).name}")
            os.kill(program_of(p.pid), on_stop)
        elif os.WIFCONTINUED(status):
            seen.append("continued")
        else:
            p.returncode = os.waitstatus_to_exitcode(status)
            return [*seen, f"ended {p.returncode}"]
    p.kill()
    p.wait()
    return [*seen, "still running"]


@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGTSTP])
def test_a_program_that_stops_itself_stops_its_client_as_under_exec(daemon, sig):
    """The client followed only the stops it forwarded (Ctrl-Z): a program that stopped itself stopped
    alone, and its parent never saw it. SIGSTOP stops under exec; SIGTSTP, in this orphaned process
    group, does not (the kernel drops it), and the served program, which stopped in the daemon's
    session, is continued."""
    argv = observe("kill", str(int(sig)))
    want = what_its_parent_sees(argv)
    with Served(daemon):
        got = what_its_parent_sees([str(bin_path("headstart-run")), "--socket", str(daemon.socket), *argv])
    assert got == want
    assert want == (["stopped by SIGSTOP", "ended 100"] if sig == signal.SIGSTOP else ["ended 100"])


def its_program(daemon: RunningDaemon) -> Callable[[int], int]:
    """Finds the program a client of the daemon launched: the zygote's one child (no pool)."""
    zygote = daemon.zygote_pid()

    def program_of(_client: int) -> int:
        deadline = time.monotonic() + 30
        while not (children := Path(f"/proc/{zygote}/task/{zygote}/children").read_text().split()):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        return int(children[0])

    return program_of


def test_a_program_stopped_and_continued_by_another_process_stops_and_continues_its_client():
    """Under exec, `kill -STOP` and `kill -CONT` on the program stop and continue the job its shell
    waits for. Served, the client stops with its program and the daemon continues it with it; the
    program gets one SIGCONT, as under exec (observe counts them in its exit status)."""
    argv = observe("count-continues")
    want = what_its_parent_sees(argv, stop_it=True)
    with private_daemon([Path(argv[0])]) as d, Served(d):
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket), *argv]
        got = what_its_parent_sees(client, its_program(d), stop_it=True)
    assert got == want == ["stopped by SIGSTOP", "continued", "ended 1"]


def test_a_program_killed_while_stopped_ends_its_client():
    """The client stopped with its program, and the program was killed meanwhile: the client, still
    stopped, could not read how it ended, and its shell said the job was stopped until `fg`."""
    argv = observe("kill", str(int(signal.SIGSTOP)))
    want = what_its_parent_sees(argv, on_stop=signal.SIGKILL)
    with private_daemon([Path(argv[0])]) as d, Served(d):
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket), *argv]
        got = what_its_parent_sees(client, its_program(d), on_stop=signal.SIGKILL)
    assert got == want == ["stopped by SIGSTOP", "ended -9"]


def child_outlives_its_job(argv: list[str], end_job: Callable[[subprocess.Popen], None], wait_s: float = 5) -> bool:
    """Runs argv (a script that starts a child and prints its pid, or a command that runs one) as a
    job of its own, ends it with end_job, and says whether the script's child still runs wait_s
    later."""
    job = subprocess.Popen(argv, stdout=subprocess.PIPE, env=base_env(), start_new_session=True)
    assert job.stdout is not None
    child = int(job.stdout.readline())
    end_job(job)
    job.wait()
    job.stdout.close()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if proc_fields(child)[0] == "Z":
                return False
        except OSError:
            return False
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    return True


def child_outlives_its_killed_job(argv: list[str]) -> bool:
    """The job's process group killed with SIGKILL, as `kill -KILL %1` or `timeout -s KILL` does."""
    return child_outlives_its_job(argv, lambda job: os.killpg(job.pid, signal.SIGKILL))


def test_a_job_killed_with_sigkill_takes_the_programs_children_with_it():
    """Under exec a job's program and its children share the job's process group, which `kill -KILL
    %1`, `timeout -s KILL` and a service manager's stop kill whole. Served, SIGKILL reached only
    headstart-run; the daemon killed the program, and the program's children ran on."""
    argv = ["/usr/bin/bash", "-c", "sleep 300 & echo $!; wait"]
    assert not child_outlives_its_killed_job(argv)
    with private_daemon([Path(argv[0])]) as d, Served(d):
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        assert not child_outlives_its_killed_job([*client, *argv])


def test_timeouts_sigterm_to_its_group_reaches_the_programs_children_and_one_to_the_client_alone_does_not():
    """timeout(1) ends its command with SIGTERM to the command, then to its whole process group,
    which under exec holds the program's children: served, the client passed both to the program
    alone, and a test runner's timed-out test left its children running (a new user's trial). A
    signal the client's sender ignores (as timeout does before signalling its own group) now goes to
    the program's group; a SIGTERM to the client alone from a sender that does not ignore it still
    goes to the program alone, as under exec."""
    script = ["/usr/bin/bash", "-c", "sleep 300 & echo $!; wait"]
    with private_daemon([Path(script[0])]) as d, Served(d, count=2):
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        for launcher in ([], client):
            timed_out = ["timeout", "1", *launcher, *script]
            assert not child_outlives_its_job(timed_out, lambda job: None), launcher
            term_alone = lambda job: os.kill(job.pid, signal.SIGTERM)  # noqa: E731
            assert child_outlives_its_job([*launcher, *script], term_alone, wait_s=1.5), launcher


def test_a_daemon_that_refuses_writable_executable_memory_declines_every_launch(tmp_path):
    """A daemon under MDWE (a service manager's MemoryDenyWriteExecute= may set PR_SET_MDWE) gave it
    to every program it served, which exec from a client without it does not: it declines."""
    wrapper = tmp_path / "headstartd-mdwe"
    wrapper.write_text(
        f"#!{sys.executable}\nimport ctypes, os, sys\n"
        "sys.exit(77) if ctypes.CDLL(None).prctl(65, 1, 0, 0, 0) else "
        f"os.execv({str(bin_path('headstartd'))!r}, sys.argv)\n"
    )
    wrapper.chmod(0o755)
    argv = [str(bin_path("observe")), "prctl"]
    env = base_env(HEADSTART_DEBUG="1")
    if subprocess.run([str(wrapper), "--version"], capture_output=True).returncode == 77:
        pytest.skip("this kernel has no MDWE")
    with private_daemon([Path(argv[0])], binary=wrapper) as d:
        got = run_served(d, argv, env=env)
    assert b"by exec" in got.stderr, got.stderr
    assert got.stdout == run_exec(argv, env=env).stdout


THREAD_STACK = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>

static void *report(void *arg) {
        pthread_attr_t a;
        size_t size;
        pthread_getattr_np(pthread_self(), &a);
        pthread_attr_getstacksize(&a, &size);
        printf("thread %zu\n", size);
        return arg;
}

int main(void) {
        pthread_attr_t a;
        size_t size;
        pthread_getattr_default_np(&a);
        pthread_attr_getstacksize(&a, &size);
        printf("default %zu\n", size);
        pthread_t t;
        pthread_create(&t, NULL, report, NULL);
        pthread_join(t, NULL);
        return 0;
}
"""


@pytest.mark.parametrize("mode", ["preload", "warm", "pool"])
@pytest.mark.parametrize("stack", ["1024", "65536", "unlimited"])
def test_threads_get_the_stack_size_the_clients_stack_limit_gives(tmp_path, mode, stack):
    """glibc sizes a thread's stack by default from RLIMIT_STACK as the process starts (2 MiB when
    unlimited): under exec from the client's limit, so `ulimit -s 65536` gives threads 64 MiB. A
    served program once got the size the daemon's limit gave at its exec (8 MiB for every launch),
    and a thread's recursion that fit by exec overflowed served (a new user's trial, 2026-11-29)."""
    src = tmp_path / "threadstack.c"
    src.write_text(THREAD_STACK)
    program = tmp_path / "threadstack"
    subprocess.run(["gcc", "-O1", "-fPIE", "-pie", "-pthread", "-o", str(program), str(src)], check=True)
    setup = f'ulimit -s {stack}; exec "$@"'
    with daemon_in_mode(mode, [str(program)]) as d, Served(d):
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        served = run_exec(["/bin/sh", "-c", setup, "sh", *client, str(program)])
    want = run_exec(["/bin/sh", "-c", setup, "sh", str(program)])
    assert served.returncode == want.returncode == 0
    assert served.stdout == want.stdout
