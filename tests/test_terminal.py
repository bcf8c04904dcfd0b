"""Launching from a terminal: a program that only writes to it is served with the terminal as its
stdio (isatty true, the width and colours as under exec) when the user says so (headstart-run
--terminal, or the daemon's --terminal PROGRAM); others are exec'd, and --status counts them. Ctrl-Z
and Ctrl-C behave for an interactive shell as under exec: the job stops, continues with fg, and
dies of SIGINT."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import SANITIZED, bin_path, proc_fields
from headstart.daemon import RunningDaemon, private_daemon

PROMPT = "PROMPT> "
OBSERVE = str(bin_path("observe"))


class Shell:
    """An interactive bash (job control on) in a pseudo-terminal of 100 columns."""

    def __init__(self, env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            # As a terminal emulator starts a shell: with every signal at its default. A runner
            # started in the background of a script (`make test &`) ignores SIGINT, and the
            # shell and its jobs would inherit that, served or exec'd alike.
            for sig in signal.valid_signals():
                if sig not in (signal.SIGKILL, signal.SIGSTOP):
                    try:
                        signal.signal(sig, signal.SIG_DFL)
                    except (OSError, ValueError):
                        pass
            os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        self.out = ""
        self.expect(r"[$#] ")  # the default prompt, $ or root's #
        # Not exported, and typed so that its echo is not the prompt itself.
        self.send("PS1='PR''OMPT> '\n")
        self.expect(PROMPT)

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def expect(self, pattern: str, timeout: float = 30.0) -> str:
        """The output up to and including the first match, consumed."""
        deadline = time.monotonic() + timeout
        while not (m := re.search(pattern, self.out)):
            left = deadline - time.monotonic()
            assert left > 0, f"no {pattern!r} in {self.out!r}"
            if select.select([self.fd], [], [], left)[0]:
                self.out += os.read(self.fd, 65536).decode(errors="replace")
        seen, self.out = self.out[: m.end()], self.out[m.end() :]
        return seen

    def run(self, command: str) -> str:
        """What the command printed (the terminal's \\r\\n as \\n), once the prompt is back."""
        # A marker printed first, typed so that its echo (which readline may wrap) does not match it.
        self.send(f"printf '%s\\n' BE''GIN; {command}\n")
        self.expect("BEGIN\r\n")
        seen = self.expect(PROMPT)[: -len(PROMPT)].replace("\r\n", "\n")
        return re.sub(r"\x1b\[\?2004[hl]\r?", "", seen)  # readline's bracketed-paste switches

    def close(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


@contextmanager
def shell(daemon: RunningDaemon) -> Iterator[Shell]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "TERM": "xterm",
        "HEADSTART_SOCKET": str(daemon.socket),
    }
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    sh = Shell(env)
    try:
        yield sh
    finally:
        sh.close()


def _cmdline(argv: list[str]) -> bytes:
    """argv as /proc/PID/cmdline holds it."""
    return "".join(f"{arg}\0" for arg in argv).encode()


def job_states(shell_pid: int, served: list[str]) -> list[str]:
    """The states (R, S, T...) of the shell's children and of the served program, whose command line
    is `served` (the daemon's child, not the shell's; other tests may run observe meanwhile)."""
    want = _cmdline(served)
    states = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, ppid = proc_fields(entry.name)[:2]
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(ppid) == shell_pid or cmdline == want:
            states.append(state)
    return states


def states_of(cmdline: list[str]) -> list[str]:
    """The states of every process whose command line is that."""
    want = _cmdline(cmdline)
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == want:
                found.append(proc_fields(entry.name)[0])
        except OSError:
            continue
    return found


def run_client(*args: str) -> str:
    return " ".join([str(bin_path("headstart-run")), *args])


@pytest.fixture
def daemon(tmp_path) -> Iterator[RunningDaemon]:
    with private_daemon([], extra_args=["--app", OBSERVE, "--no-learn"]) as d:
        yield d


def test_a_program_that_writes_to_the_terminal_is_served_with_it_as_stdio(daemon):
    with shell(daemon) as sh:
        by_exec = sh.run(f"{OBSERVE} tty")
        assert by_exec == "isatty=111 columns=100\n\x1b[31mcoloured\x1b[0m\n"
        before = daemon.launches_started()
        assert sh.run(run_client("--terminal", OBSERVE, "tty")) == by_exec
        assert daemon.launches_started() == before + 1
        # It has no controlling terminal of its own: what --terminal promises it does not need.
        report = sh.run(run_client("--terminal", OBSERVE, "report"))
        assert "controlling_tty=0" in report


def test_without_terminal_permission_it_is_exec_d_and_counted(daemon):
    with shell(daemon) as sh:
        report = sh.run(run_client(OBSERVE, "report"))
        assert "controlling_tty=1" in report  # exec'd: the terminal is its controlling terminal
        status = sh.run(run_client("--status"))
    assert daemon.launches_started() == 0
    assert re.search(r"declined: terminal 1 -- last: a controlling terminal is attached", status), status


def test_the_daemon_can_name_programs_served_from_a_terminal(tmp_path):
    args = ["--app", OBSERVE, "--terminal", OBSERVE, "--no-learn"]
    with private_daemon([], extra_args=args) as d, shell(d) as sh:
        assert sh.run(run_client(OBSERVE, "tty")) == "isatty=111 columns=100\n\x1b[31mcoloured\x1b[0m\n"
        assert d.launches_started() == 1


@pytest.mark.skipif(SANITIZED, reason="timing of stops under the sanitizer build is not what this checks")
def test_ctrl_z_stops_the_job_fg_continues_it_and_ctrl_c_ends_it(daemon):
    served = [OBSERVE, "sleep", "30"]
    with shell(daemon) as sh:
        sh.send(run_client("--terminal", *served) + "\n")
        deadline = time.monotonic() + 30
        while daemon.launches_started() == 0:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.2)
        sh.send("\x1a")  # Ctrl-Z
        sh.expect(r"Stopped")
        sh.expect(PROMPT)
        assert sh.run("jobs -l").count("Stopped") == 1
        sh.send("fg\n")
        sh.expect("sleep 30")
        # As a user presses Ctrl-C once the job runs again: the client and its program both continued.
        deadline = time.monotonic() + 10
        while any(state == "T" for state in job_states(sh.pid, served)):
            assert time.monotonic() < deadline, job_states(sh.pid, served)
            time.sleep(0.02)
        time.sleep(0.2)
        sh.send("\x03")  # Ctrl-C
        sh.expect(PROMPT)
        sh.send("echo status=$?\n")  # not through run(), whose marker would set $?
        assert sh.expect(r"status=\d+\r\n").endswith("status=130\r\n")


@pytest.mark.skipif(SANITIZED, reason="timing of stops under the sanitizer build is not what this checks")
def test_ctrl_z_without_a_shell_doing_job_control_is_ignored_as_under_exec(daemon):
    """Under script(1), ssh -t or docker run -t no shell does job control: the client's process group
    is orphaned, and exec's program would go on through Ctrl-Z (the kernel drops its default action).
    Served, the program stopped, and the client, which the kernel does not stop, waited for ever."""
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "HEADSTART_SOCKET": str(daemon.socket)}
    client = str(bin_path("headstart-run"))
    pid, fd = pty.fork()  # the child leads a session of its own, the pty its terminal
    if pid == 0:
        os.execve(client, [client, "--terminal", OBSERVE, "sleep", "2"], env)
    ended = 0
    try:
        deadline = time.monotonic() + 30
        while daemon.launches_started() == 0:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.2)
        os.write(fd, b"\x1a")  # Ctrl-Z, while the program sleeps
        while time.monotonic() < deadline:
            ended, status = os.waitpid(pid, os.WNOHANG)
            if ended:
                break
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    os.read(fd, 65536)
                except OSError:  # the terminal's last process closed it
                    pass
        assert ended, "the client still waits for a stopped program"
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        if not ended:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)


@pytest.mark.skipif(SANITIZED, reason="timing of stops under the sanitizer build is not what this checks")
@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGTSTP])
def test_a_program_that_stops_itself_stops_the_job_and_fg_continues_it(daemon, sig):
    """A program that stops itself (a shell's `suspend`, an editor's own Ctrl-Z) stopped alone, and
    the shell went on waiting for a job it did not know was stopped: the terminal seemed hung."""

    def story(command: str) -> str:
        with shell(daemon) as sh:
            sh.send(f"{command}\n")
            sh.expect(r"Stopped")
            sh.expect(PROMPT)
            jobs = sh.run("jobs -l").count("Stopped")
            sh.send("fg\n")
            sh.expect(PROMPT)
            sh.send("echo status=$?\n")
            status = sh.expect(r"status=\d+").split()[-1]
            return f"{jobs} stopped job, {status}"

    command = f"{OBSERVE} kill {int(sig)}"
    want = story(command)
    before = daemon.launches_started()
    got = story(run_client("--terminal", command))
    assert daemon.launches_started() == before + 1
    assert got == want == "1 stopped job, status=100"


@pytest.mark.skipif(SANITIZED, reason="timing of signals under the sanitizer build is not what this checks")
@pytest.mark.parametrize("key", ["\x03", "\x1a"])
def test_ctrl_c_and_ctrl_z_reach_the_programs_children_as_under_exec(key):
    """Under exec the terminal signals the whole job: a script and the command it waits for. Served,
    only the script got Ctrl-C (bash waits for its command before it acts on it, so the script ran
    on to its end), and Ctrl-Z stopped the script while its command ran on."""
    script = "sleep 29; echo after-sleep"  # a duration no other test sleeps: states_of looks machine-wide

    def story(command: str, d: RunningDaemon) -> str:
        with shell(d) as sh:
            sh.send(f"{command} '{script}'\n")
            time.sleep(1)
            sh.send(key)
            seen = sh.expect(PROMPT, timeout=10)
            if key == "\x1a":
                sleeping = [state for state in states_of(["sleep", "29"]) if state != "T"]
                sh.send("kill -KILL %1\n")
                sh.expect(PROMPT)
                return f"stopped, {len(sleeping)} still running"
            sh.send("echo status=$?\n")
            status = sh.expect(r"status=\d+").split()[-1]
            return f"{bool(re.search(r'^after-sleep', seen, re.MULTILINE))}, {status}"

    bash = shutil.which("bash") or "/bin/bash"
    with private_daemon([], extra_args=["--app", bash, "--terminal", bash, "--no-learn"]) as d:
        want = story(f"{bash} -c", d)
        got = story(run_client(bash, "-c"), d)
        assert d.launches_started() == 1
    assert got == want == ("False, status=130" if key == "\x03" else "stopped, 0 still running")
