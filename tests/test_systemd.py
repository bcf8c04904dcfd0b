"""The systemd protocol pieces: socket activation and readiness notification, as systemd drives them."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest
from conftest import SLOW_START, base_env, bin_path, run_exec, slow_start_env

# Execs headstartd with the listening socket as fd 3 and LISTEN_PID set to its own pid, as systemd does.
ACTIVATE = """
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(16)
os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1", LISTEN_FDNAMES="headstart.socket")
os.execv(sys.argv[2], sys.argv[2:])
"""


def test_socket_activation_and_notify(tmp_path):
    sock = tmp_path / "activated.sock"
    notify = tmp_path / "notify.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(notify))
    listener.settimeout(30)
    daemon = [str(bin_path("headstartd")), "--app", str(bin_path("observe")), "--verbose"]
    if os.geteuid() == 0:
        daemon.append("--allow-root")
    env = base_env(NOTIFY_SOCKET=str(notify), XDG_RUNTIME_DIR=str(tmp_path))
    log = tmp_path / "log"
    with open(log, "wb") as logf:
        p = subprocess.Popen(["python3", "-c", ACTIVATE, str(sock), *daemon], env=env, stderr=logf)
    try:
        message = listener.recv(4096)
        assert b"READY=1" in message
        got = run_exec(
            [str(bin_path("headstart-run")), "--socket", str(sock), str(bin_path("observe")), "report"],
            env=base_env(),
        )
        assert got.returncode == 0
        assert b"LISTEN_" not in got.stdout and b"NOTIFY_SOCKET" not in got.stdout
        deadline = time.monotonic() + 10
        while " started " not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert " started " in log.read_text()
        # Listening on the inherited socket: the default path was never created.
        assert not (tmp_path / "headstart" / "socket").exists()
    finally:
        p.terminate()
        p.wait(timeout=10)
        stopping = listener.recv(4096)
        listener.close()
    assert b"STOPPING=1" in stopping


@pytest.mark.parametrize("unit", ["headstart.service", "headstart.socket"])
def test_units_are_generated(unit):
    text = (bin_path("headstartd").parent / "packaging" / unit).read_text()
    assert "@" not in text.replace("%t/", "").replace("%E/", "")
    if unit == "headstart.service":
        assert "Type=notify" in text and "ExecStart=/" in text


def test_exec_while_starting_on_a_socket_systemd_passes(tmp_path):
    """systemd passes a blocking socket. A supervisor declining launches while its first zygote
    starts accepted until none was left, blocked in accept, and never read its zygote's READY: the
    virtual device's unit failed its start. Two launches during the start are declined, then the
    daemon says READY=1."""
    sock, notify = tmp_path / "activated.sock", tmp_path / "notify.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(notify))
    listener.settimeout(60)
    slow_env, slow, _ = slow_start_env(tmp_path)
    slow.touch()
    daemon = [str(bin_path("headstartd")), *SLOW_START, "--exec-while-starting", "--verbose"]
    if os.geteuid() == 0:
        daemon.append("--allow-root")
    env = dict(slow_env, NOTIFY_SOCKET=str(notify), XDG_RUNTIME_DIR=str(tmp_path))
    with open(tmp_path / "log", "wb") as logf:
        p = subprocess.Popen(["python3", "-c", ACTIVATE, str(sock), *daemon], env=env, stderr=logf)
    try:
        deadline = time.monotonic() + 30
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        client = [str(bin_path("headstart-run")), "--socket", str(sock), str(bin_path("observe")), "exit", "6"]
        for _ in range(2):
            got = run_exec(client, env=base_env(HEADSTART_DEBUG="1"))
            assert got.returncode == 6 and b"the daemon is starting" in got.stderr, got.stderr
        slow.unlink()
        assert b"READY=1" in listener.recv(4096)
    finally:
        p.terminate()
        p.wait(timeout=10)
        listener.close()
