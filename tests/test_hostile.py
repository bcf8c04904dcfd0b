"""Bad requests and other users: a clear error, and the daemon keeps serving.

The byte layouts below follow docs/protocol.md (src/common/protocol.h is the authority); they are
written out here so that these tests can craft requests the real client never would.
"""

from __future__ import annotations

import errno
import os
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from conftest import (
    Served,
    base_env,
    bin_path,
    daemon_fd_count,
    daemon_stopped,
    proc_fields,
    run_exec,
    run_served,
    wait_for_log,
)
from headstart.daemon import private_daemon

MAGIC = 0x52545348
VERSION = 2
MSG_LAUNCH, MSG_LAUNCHED, MSG_EXITED, MSG_DECLINED, MSG_ERROR, MSG_ACCEPT, MSG_STOPPED = 1, 2, 3, 4, 5, 8, 9
FLAG_FOLLOWS_STOPS = 0x8
HEADER = struct.Struct("=IHHI")
MAX_PAYLOAD = 16 * 1024 * 1024
# flags, umask, sigmask, sigignore, 16 rlimits (cur, max), nfds, argc, envc, path_size, strings_size, reserved
FIXED = struct.Struct("=IIQQ" + "QQ" * 16 + "IIIIII")


def connect(daemon) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(daemon.socket))
    s.settimeout(20)
    return s


def read_reply(s: socket.socket) -> tuple[int, int, bytes] | None:
    """(type, code, text) of one reply, or None when the daemon closed the connection."""
    head = b""
    while len(head) < HEADER.size:
        chunk = s.recv(HEADER.size - len(head))
        if not chunk:
            return None
        head += chunk
    magic, version, mtype, size = HEADER.unpack(head)
    assert (magic, version) == (MAGIC, VERSION)
    body = b""
    while len(body) < size:
        body += s.recv(size - len(body))
    code = struct.unpack("=i", body[:4])[0] if len(body) >= 8 else 0
    return mtype, code, body[8:]


def launch_payload(
    argv: list[bytes], env: list[bytes], path: bytes, nfds: int = 0, flags: int = 0, **over: int
) -> bytes:
    strings = b"".join(x + b"\0" for x in argv + env)
    fields = {"argc": len(argv), "envc": len(env), "path_size": len(path) + 1, "strings_size": len(strings)}
    fields.update(over)
    # The client's own limits, as headstart-run sends them (RLIM_INFINITY as the kernel's all-ones).
    limits = [v & 0xFFFFFFFFFFFFFFFF for r in range(16) for v in resource.getrlimit(r)]
    fixed = FIXED.pack(
        flags,
        0o22,
        0,
        0,
        *limits,
        nfds,
        fields["argc"],
        fields["envc"],
        fields["path_size"],
        fields["strings_size"],
        0,
    )
    return fixed + b"\0" * 4 * nfds + path + b"\0" + strings


def send_launch_with_root_fds(s: socket.socket, payload: bytes, nfds: int) -> None:
    """Sends a LAUNCH with `nfds` descriptors of / attached (closed again on our side)."""
    fds = [os.open("/", os.O_RDONLY) for _ in range(nfds)]
    try:
        send_with_fds(s, HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, len(payload)) + payload, fds)
    finally:
        for fd in fds:
            os.close(fd)


def send_with_fds(s: socket.socket, data: bytes, fds: list[int]) -> None:
    s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else [])


def still_serves(daemon) -> None:
    with Served(daemon):
        got = run_served(daemon, [str(bin_path("observe")), "exit", "0"])
    assert got.returncode == 0
    assert daemon.process.poll() is None


def test_random_bytes(daemon):
    for _ in range(20):
        with connect(daemon) as s:
            s.sendall(os.urandom(4096))
            reply = read_reply(s)
            assert reply is None or reply[0] == MSG_ERROR
    still_serves(daemon)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (HEADER.pack(0xDEADBEEF, VERSION, MSG_LAUNCH, 10), b"not a headstart request"),
        (HEADER.pack(MAGIC, 99, MSG_LAUNCH, 10), b"unsupported protocol version"),
        (HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, MAX_PAYLOAD + 1), b"request too large"),
    ],
)
def test_bad_headers_get_a_clear_error(daemon, header, message):
    with connect(daemon) as s:
        s.sendall(header)
        mtype, _, text = read_reply(s)
        assert (mtype, text) == (MSG_ERROR, message)
    still_serves(daemon)


def test_unknown_message_type(daemon):
    with connect(daemon) as s:
        s.sendall(HEADER.pack(MAGIC, VERSION, 42, 0))
        mtype, _, text = read_reply(s)
        assert (mtype, text) == (MSG_ERROR, b"unknown message type")
    still_serves(daemon)


def test_a_status_question_with_a_payload_or_fds_is_an_error(daemon):
    """docs/protocol.md: a STATUS has an empty payload and passes no fds (a red team found one with
    a payload answered as if it had none)."""
    for payload, fds in ((b"x" * 8, []), (b"", [0])):
        with connect(daemon) as s:
            send_with_fds(s, HEADER.pack(MAGIC, VERSION, 6, len(payload)) + payload, fds)
            mtype, _, text = read_reply(s)
            assert (mtype, text) == (MSG_ERROR, b"a status question carries no payload and no fds")
    still_serves(daemon)


def test_malformed_launch_requests(daemon):
    path = str(bin_path("observe")).encode()
    cases = [
        (
            launch_payload([b"x"], [], path, argc=3),
            2,
            b"argument and environment strings do not match their counts",
        ),
        (launch_payload([], [], path), 2, b"argv is empty"),
        (launch_payload([b"x"], [], b"relative"), 2, b"program path is not absolute"),
        (launch_payload([b"x"], [], path), 0, b"file descriptor count differs from the one attached"),
        (launch_payload([b"x"], [], path)[:-1], 2, b"sizes do not add up to the payload size"),
    ]
    for payload, nfds, message in cases:
        with connect(daemon) as s:
            send_launch_with_root_fds(s, payload, nfds)
            mtype, _, text = read_reply(s)
            assert (mtype, text) == (MSG_ERROR, message)
    still_serves(daemon)


def test_truncated_request_and_disconnect(daemon):
    for cut in (1, HEADER.size - 1, HEADER.size, HEADER.size + 100):
        with connect(daemon) as s:
            s.sendall((HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, 5000) + b"\0" * 5000)[:cut])
    still_serves(daemon)
    assert "a client disconnected in the middle of its request" in daemon.log_text()


def test_stalled_client_times_out():
    with private_daemon([bin_path("observe")], extra_args=["--request-timeout", "1"]) as d:
        with connect(d) as s:
            s.sendall(HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, 5000))
            start = time.monotonic()
            mtype, _, text = read_reply(s)
            assert (mtype, text) == (MSG_ERROR, b"request not complete in time")
            assert time.monotonic() - start < 10
        still_serves(d)


def test_many_idle_connections_do_not_block_others(daemon):
    idle = [connect(daemon) for _ in range(200)]
    try:
        for s in idle[:100]:
            s.sendall(HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, 100))
        still_serves(daemon)
    finally:
        for s in idle:
            s.close()


def test_large_requests_are_bounded_together_not_only_each(daemon):
    """Each request may be 16 MiB, and 4,096 connections may be open: a process of the user holding
    nearly complete large requests until their deadlines could make the zygote hold gigabytes. Past
    16 of the largest at once, another is refused with one line, and the daemon serves after."""
    held = [connect(daemon) for _ in range(16)]
    try:
        for s in held:
            s.sendall(HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, MAX_PAYLOAD) + b"\0")
        with connect(daemon) as s:
            s.sendall(HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, 100))
            assert read_reply(s) == (MSG_ERROR, 16, b"too many large requests at once")
    finally:
        for s in held:
            s.close()
    still_serves(daemon)


def test_too_many_fds_is_an_error(daemon):
    path = str(bin_path("observe")).encode()
    payload = launch_payload([b"x"], [], path, nfds=0)
    fds_before = daemon_fd_count(daemon)
    with connect(daemon) as s:
        send_launch_with_root_fds(s, payload, 253)
        mtype, _, _ = read_reply(s)
        assert mtype == MSG_ERROR
    still_serves(daemon)
    assert daemon_fd_count(daemon, expect=fds_before) == fds_before


def test_full_arg_max_of_arguments_and_environment(daemon):
    """Arguments and environment up to what exec itself accepts go through unchanged."""
    arg_max = os.sysconf("SC_ARG_MAX")
    # Stay just under the kernel's limit, which also counts the pointers and the other strings.
    big_arg = "a" * (128 * 1024 - 1)  # MAX_ARG_STRLEN minus the NUL
    count = (arg_max // 2) // (len(big_arg) + 9) + 1
    argv = [str(bin_path("observe")), "exit", "0", *[big_arg] * count]
    env = base_env(**{f"V{i}": "e" * 1000 for i in range((arg_max * 4 // 10) // 1010)})
    want = run_exec(argv, env=env)
    assert want.returncode == 0
    with Served(daemon):
        got = run_served(daemon, argv, env=env)
    assert (got.returncode, got.stdout) == (want.returncode, want.stdout)
    total = sum(len(a) + 1 for a in argv) + sum(len(k) + len(v) + 2 for k, v in env.items())
    assert total > arg_max * 0.85


def test_a_client_that_reads_nothing_while_its_program_stops_a_thousand_times_still_learns_how_it_ended(daemon):
    """A client that follows its program's stops but did not read as the program stopped again and
    again: the daemon's STOPPED reports filled its socket, and EXITED, sent without waiting, was lost
    (the client library said the daemon had gone away). One report unread is all it sends now."""
    observe = str(bin_path("observe"))
    payload = launch_payload(
        [observe.encode(), b"stop-loop", b"1000"], [b"PATH=/usr/bin:/bin"], observe.encode(), flags=FLAG_FOLLOWS_STOPS
    )
    program, cwd = os.open(observe, os.O_PATH), os.open("/", os.O_PATH)
    with Served(daemon), connect(daemon) as s:
        try:
            send_with_fds(s, HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, len(payload)) + payload, [program, cwd])
        finally:
            os.close(program)
            os.close(cwd)
        data, ancillary, _, _ = s.recvmsg(HEADER.size + 8, socket.CMSG_SPACE(4))
        assert HEADER.unpack(data[: HEADER.size])[2] == MSG_LAUNCHED
        pid = struct.unpack("=i", data[HEADER.size : HEADER.size + 4])[0]
        pidfd = struct.unpack("=i", ancillary[0][2][:4])[0]
        s.sendall(HEADER.pack(MAGIC, VERSION, MSG_ACCEPT, 0))
        # Continues the program at each of its stops, reading nothing meanwhile.
        deadline = time.monotonic() + 60
        while not select.select([pidfd], [], [], 0.001)[0]:
            assert time.monotonic() < deadline
            try:
                stopped = proc_fields(pid)[0] == "T"
            except (FileNotFoundError, ProcessLookupError):
                # It ended since the look at its pidfd, which now says so: reaped before /proc's file
                # was opened, or between the open and the read (ESRCH).
                continue
            if stopped:
                os.kill(pid, signal.SIGCONT)
        os.close(pidfd)
        replies = []
        while (reply := read_reply(s)) is not None:
            replies.append(reply)
    assert replies and replies[-1][:2] == (MSG_EXITED, os.CLD_EXITED), replies[-3:]
    assert len(replies) <= 3, f"{len(replies) - 1} STOPPED reports queued"


def test_a_client_gone_before_its_launch_is_read_is_said_to_be_gone():
    """A client that ended (its parent has not reaped it yet) before the daemon read its launch: its
    namespaces and memory are gone, and the daemon took that for other namespaces or settings, logging
    a sandbox that was not there. The daemon is stopped while the client sends and ends, so that the
    order is sure."""
    observe = str(bin_path("observe"))
    payload = launch_payload([observe.encode(), b"exit", b"0"], [b"PATH=/usr/bin:/bin"], observe.encode())
    with private_daemon([bin_path("observe")]) as d:
        with daemon_stopped(d):
            client = os.fork()
            if client == 0:
                try:
                    s = connect(d)
                    fds = [os.open(observe, os.O_PATH), os.open("/", os.O_PATH)]
                    send_with_fds(s, HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, len(payload)) + payload, fds)
                finally:
                    os._exit(0)
            deadline = time.monotonic() + 10
            while proc_fields(client)[0] != "Z":
                assert time.monotonic() < deadline
                time.sleep(0.01)
        wait_for_log(d, "declined: ")
        os.waitpid(client, 0)
        log = d.log_text()
    assert "declined: the client's rights and namespaces cannot be read" in log, log


# --- other users ---------------------------------------------------------------------------------

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def needs_root_and_setpriv() -> None:
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to act as another user")


@pytest.fixture
def shared_tmp():
    """A directory other users can reach (pytest's own tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="headstart-shared-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def world_readable_copy(tmp: Path, name: str) -> Path:
    """A copy of one of our binaries that the user nobody can run."""
    copy = tmp / name
    shutil.copy(bin_path(name), copy)
    copy.chmod(0o755)
    if name == "headstartd":  # it finds its entry library beside itself
        shutil.copy(bin_path(name).parent / "libheadstart-entry.so", tmp)
    return copy


# A client that skips the client library's check of who listens: a STATUS, and the reply's type
# and code (ERROR's errno) printed.
RAW_STATUS = f"""
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(10)
try:
    s.sendall(struct.pack("=IHHI", {MAGIC}, {VERSION}, 6, 0))
except (BrokenPipeError, ConnectionResetError):
    pass  # the daemon answers as it accepts, and hangs up: its answer is still there to read
reply = s.recv(64)
kind = struct.unpack_from("=IHHI", reply)[2]
print(kind, struct.unpack_from("=i", reply, 12)[0] if kind == {MSG_ERROR} else "")
"""


def test_another_user_is_refused_and_runs_by_exec(daemon, shared_tmp):
    needs_root_and_setpriv()
    observe = world_readable_copy(shared_tmp, "observe")
    client = world_readable_copy(shared_tmp, "headstart-run")
    # Open the door on purpose: the SO_PEERCRED check must hold even when the socket is reachable.
    daemon.runtime_dir.chmod(0o711)
    (daemon.socket.parent).chmod(0o711)
    daemon.socket.chmod(0o777)
    try:
        before = daemon.launches_started()
        got = run_exec([*NOBODY, str(client), "--socket", str(daemon.socket), str(observe), "exit", "4"])
        status = run_exec([*NOBODY, str(client), "--socket", str(daemon.socket), "--status"])
        raw = run_exec([*NOBODY, "/usr/bin/python3", "-c", RAW_STATUS, str(daemon.socket)])
    finally:
        daemon.socket.chmod(0o700)
        (daemon.socket.parent).chmod(0o700)
        daemon.runtime_dir.chmod(0o700)
    # The client sees root listening and sends nothing: it execs, and says why in one line.
    assert got.returncode == 4
    assert got.stdout == b"exiting with 4\n"
    assert b"another user listens on the socket" in got.stderr, got.stderr
    assert status.returncode == 1 and status.stderr.count(b"\n") == 1
    assert b"another user listens on the socket" in status.stderr, status.stderr
    # One that asks anyway gets ERROR (EPERM) from the daemon, which serves no one else.
    assert raw.stdout.split() == [str(MSG_ERROR).encode(), str(errno.EPERM).encode()], raw.stderr
    assert daemon.launches_started() == before
    assert "refused a connection from another user" in daemon.log_text()
    still_serves(daemon)


def test_daemon_as_an_ordinary_user(shared_tmp):
    tmp_path = shared_tmp
    """A non-root daemon serves its own user, and the kernel lets it set the command line."""
    needs_root_and_setpriv()
    observe = world_readable_copy(tmp_path, "observe")
    daemon_bin = world_readable_copy(tmp_path, "headstartd")
    client = world_readable_copy(tmp_path, "headstart-run")
    runtime = tmp_path / "run"
    runtime.mkdir()
    os.chown(runtime, 65534, 65534)
    runtime.chmod(0o700)
    sock = runtime / "headstart" / "socket"
    env = base_env(XDG_RUNTIME_DIR=str(runtime))
    log = tmp_path / "log"
    with open(log, "wb") as logf:
        d = subprocess.Popen([*NOBODY, str(daemon_bin), "--app", str(observe), "--verbose"], stderr=logf, env=env)
    try:
        deadline = time.monotonic() + 30
        while "ready" not in log.read_text() and time.monotonic() < deadline and d.poll() is None:
            time.sleep(0.05)
        assert "ready" in log.read_text(), log.read_text()
        got = run_exec([*NOBODY, str(client), str(observe), "report", "x"], env=env)
        want = run_exec([*NOBODY, str(observe), "report", "x"], env=env)
        assert log.read_text().count(" started ") == 1
        assert got.returncode == 0
        keep = (b"cmdline:", b"environ:", b"comm=", b"fds=", b"env=")
        assert [x for x in got.stdout.split(b"\n") if x.startswith(keep)] == [
            x for x in want.stdout.split(b"\n") if x.startswith(keep)
        ]
        assert sock.exists() and (sock.parent.stat().st_mode & 0o777) == 0o700
    finally:
        d.terminate()
        d.wait(timeout=10)


def test_program_fd_that_is_a_fifo_is_declined(daemon, tmp_path):
    """The daemon must not open what the client hands it blindly: a FIFO would block it."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    payload = launch_payload([b"fifo"], [], str(fifo).encode())
    fds = [os.open(fifo, os.O_PATH), os.open(tmp_path, os.O_PATH)]
    try:
        with connect(daemon) as s:
            send_with_fds(s, HEADER.pack(MAGIC, VERSION, MSG_LAUNCH, len(payload)) + payload, fds)
            mtype, _, text = read_reply(s)
    finally:
        for fd in fds:
            os.close(fd)
    assert (mtype, text) == (MSG_DECLINED, b"not a regular file")
    still_serves(daemon)
