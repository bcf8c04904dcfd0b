"""The attacks of the red-team review (issue 25), replayed against the real daemon.

Each test reproduces one way another local user, a served program, a race or an exhausted resource
made the daemon run the wrong code, hang its clients or stop serving, and checks that it no longer
does. docs/reliability.md lists them with what was found.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import (
    SANITIZED,
    base_env,
    bin_path,
    daemon_stopped,
    helper_path,
    proc_fields,
    run_exec,
    run_served,
    waiting_children,
)
from elftools.elf.elffile import ELFFile
from headstart.daemon import private_daemon

DF_1_PIE = 0x08000000


def build_program(tmp: Path, name: str, says: str) -> Path:
    """A PIE that prints `says` and whether it was served (its parent is the daemon, by its command line) or exec'd.
    Its DF_1_PIE flag is cleared, as in programs linked before binutils 2.26 set it: the daemon then
    loads the file itself rather than a copy, which is where a path could name another file."""
    src = tmp / f"{name}.c"
    src.write_text(
        "#include <stdio.h>\n#include <string.h>\n#include <unistd.h>\n"
        "int main(void) {\n"
        '  char path[64], parent[64] = "";\n'
        '  snprintf(path, sizeof path, "/proc/%d/cmdline", (int) getppid());\n'
        '  FILE *f = fopen(path, "r");\n'
        "  if (f && fgets(parent, sizeof parent, f)) fclose(f);\n"
        f'  printf("{says} %s\\n", strstr(parent, "headstartd") ? "served" : "exec");\n'
        "  return 0;\n}\n"
    )
    out = tmp / name
    subprocess.run(["gcc", "-O1", "-fPIE", "-pie", "-rdynamic", "-o", str(out), str(src)], check=True)
    clear_pie_flag(out)
    return out


def clear_pie_flag(path: Path) -> None:
    with open(path, "r+b") as f:
        elf = ELFFile(f)
        dynamic = elf.get_section_by_name(".dynamic")
        entry_size = dynamic["sh_entsize"]
        for i, tag in enumerate(dynamic.iter_tags()):
            if tag.entry.d_tag == "DT_FLAGS_1":
                offset = dynamic["sh_offset"] + i * entry_size + entry_size // 2
                f.seek(offset)
                value = int.from_bytes(f.read(8), "little") & ~DF_1_PIE
                f.seek(offset)
                f.write(value.to_bytes(8, "little"))
                return
    raise AssertionError(f"{path} has no DT_FLAGS_1")


def served_output(daemon, argv: list[str]) -> bytes:
    got = run_served(daemon, argv, env=base_env())
    assert got.returncode == 0, got.stderr
    return got.stdout


def test_a_path_through_a_symlinked_directory_never_serves_another_file(tmp_path):
    """The cache kept the first request's path for a file identity: after the symlinked directory
    was pointed elsewhere, a request for the first file loaded the other one."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    build_program(a, "prog", "A")
    build_program(b, "prog", "B")
    link = tmp_path / "link"
    link.symlink_to(a)
    with private_daemon([]) as d:
        assert served_output(d, [str(link / "prog")]) == b"A served\n"
        link.unlink()
        link.symlink_to(b)
        assert served_output(d, [str(a / "prog")]) == b"A served\n"
        assert served_output(d, [str(link / "prog")]) == b"B served\n"


def test_a_rename_race_never_serves_a_file_that_must_be_execd(tmp_path):
    """A file that must be exec'd (set-user-ID here; file capabilities are the same case) renamed
    back and forth over the path being launched: whatever the client opened is what runs, so the
    set-user-ID file never runs served."""
    plain = build_program(tmp_path, "plain", "plain")
    setuid = build_program(tmp_path, "setuid", "setuid")
    setuid.chmod(0o4755)
    target = tmp_path / "prog"
    os.link(plain, target)
    stop = threading.Event()

    def swap() -> None:
        for i in range(1_000_000):
            if stop.is_set():
                return
            temp = tmp_path / "swap"
            os.link(setuid if i % 2 == 0 else plain, temp)
            os.replace(temp, target)

    with private_daemon([]) as d:
        served_output(d, [str(target)])  # the plain file's identity is cached with this path
        swapper = threading.Thread(target=swap)
        swapper.start()
        try:
            outputs = [served_output(d, [str(target)]) for _ in range(150)]
        finally:
            stop.set()
            swapper.join()
    assert b"setuid served\n" not in outputs
    assert set(outputs) <= {b"plain served\n", b"plain exec\n", b"setuid exec\n"}


@pytest.mark.parametrize("problem", ["world-writable", "symlink", "other-owner"])
def test_a_cache_directory_others_could_write_is_refused(tmp_path, problem):
    cache = tmp_path / "cache"
    if problem == "symlink":
        real = tmp_path / "real"
        real.mkdir(mode=0o700)
        cache.symlink_to(real)
    else:
        cache.mkdir(mode=0o700)
        if problem == "world-writable":
            cache.chmod(0o777)
        else:
            os.chown(cache, 65534, 65534)
    with pytest.raises(Exception, match="cache directory"):
        with private_daemon([bin_path("observe")], extra_args=["--cache-dir", str(cache)], timeout=20):
            pass


def test_a_users_files_in_the_cache_directory_are_left_alone(tmp_path):
    """Every file of the cache directory but the daemon's own folders was removed at start: with
    --cache-dir ~/.cache (or the cache beside a socket in the home folder), the user's files went."""
    cache = tmp_path / "cache"
    (cache / "fontconfig").mkdir(parents=True, mode=0o700)
    cache.chmod(0o700)
    (cache / "fontconfig" / "x.cache").write_text("a user's file\n")
    (cache / "notes.txt").write_text("a user's file\n")
    (cache / "1").mkdir()  # a folder named like a pid: the daemon's folders were once named so
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = cache / f"headstartd-{gone.pid}"  # a daemon process that is gone left its copies
    stale.mkdir()
    (stale / "copy").write_text("a left-over copy\n")
    with private_daemon([bin_path("observe")], extra_args=["--cache-dir", str(cache)]) as d:
        assert run_served(d, [str(bin_path("observe")), "exit", "3"], env=base_env()).returncode == 3
        own = [p.name for p in cache.iterdir() if p.name.startswith("headstartd-")]
        assert own and all(int(name.split("-")[1]) != gone.pid for name in own)
    assert (cache / "notes.txt").read_text() == (cache / "fontconfig" / "x.cache").read_text() == "a user's file\n"
    assert (cache / "1").is_dir() and not stale.exists()


def test_a_cache_directory_on_a_noexec_file_system_is_refused_in_one_line(tmp_path):
    """/run is noexec under Debian's initramfs: the system unit's cache there made every launch fail
    to map the program's copy and exec instead, with nothing said at start."""
    cache = tmp_path / "noexec"
    cache.mkdir(mode=0o700)
    if (
        os.geteuid() != 0
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,mode=0700", "tmpfs", str(cache)]).returncode
    ):
        pytest.skip("mounting a noexec tmpfs needs root")
    try:
        with pytest.raises(Exception, match="mounted noexec"):
            with private_daemon([bin_path("observe")], extra_args=["--cache-dir", str(cache)], timeout=20):
                pass
    finally:
        subprocess.run(["umount", str(cache)], check=True)


def test_a_copy_swapped_in_the_cache_is_never_loaded(tmp_path):
    """Copies were loaded by a predictable path: replacing one between launches ran the new file.
    They are loaded through the descriptor the daemon wrote them with."""
    cache = tmp_path / "cache"
    with private_daemon([bin_path("observe")], extra_args=["--cache-dir", str(cache)]) as d:
        observe = str(bin_path("observe"))
        first = run_served(d, [observe, "exit", "3"], env=base_env())
        assert first.returncode == 3
        copies = [p for p in cache.rglob("*") if p.is_file() and "observe" in p.name]
        assert copies, list(cache.rglob("*"))
        for copy in copies:
            planted = copy.with_name("planted")
            planted.write_bytes(b"\x7fELF garbage that must never be loaded")
            os.replace(planted, copy)
        again = run_served(d, [observe, "exit", "4"], env=base_env(HEADSTART_DEBUG="1"))
        assert again.returncode == 4, again.stderr
        assert b"by exec" not in again.stderr  # served, from the copy the daemon wrote


def zygote_state(pid: int) -> str:
    return proc_fields(pid)[0]


def test_a_stopped_daemon_gets_its_clients_execd_after_the_deadline_and_nothing_runs_twice(tmp_path):
    """A stopped zygote (and a stopped supervisor, which would otherwise continue it) hung every
    client forever. The client now execs after its deadline; when the daemon runs again it must not
    start the program too: its child calls main only once the client has accepted the launch."""
    log = tmp_path / "runs"
    program = build_appender(tmp_path)
    with private_daemon([program]) as d:
        with daemon_stopped(d) as zygote:
            client = [str(bin_path("headstart-run")), "--socket", str(d.socket), "--timeout", "300"]
            started = time.monotonic()
            # Not a pipe: the fds sent with the request stay in the stopped daemon's socket queue,
            # so a pipe would see no end of file until the daemon runs again (docs/limitations.md).
            with open(tmp_path / "stderr", "wb") as err:
                got = subprocess.run([*client, str(program), str(log)], env=base_env(), stderr=err, timeout=30)
            waited = time.monotonic() - started
        assert got.returncode == 7
        assert b"did not answer within 300 ms" in (tmp_path / "stderr").read_bytes()
        assert waited < 20
        # The daemon now reads the request the client gave up on: the program still runs once.
        again = run_served(d, [str(program), str(log)], env=base_env(HEADSTART_DEBUG="1"))
        assert again.returncode == 7 and b"by exec" not in again.stderr, again.stderr
        time.sleep(0.5)
        assert log.read_text() == "ran\nran\n"
        assert d.zygote_pid() == zygote


def build_appender(tmp: Path) -> Path:
    src = tmp / "appender.c"
    src.write_text(
        "#include <stdio.h>\n"
        "int main(int argc, char **argv) {\n"
        '  FILE *f = fopen(argv[1], "a");\n'
        '  fputs("ran\\n", f);\n'
        "  fclose(f);\n"
        "  return 7;\n}\n"
    )
    out = tmp / "appender"
    subprocess.run(["gcc", "-O1", "-fPIE", "-pie", "-o", str(out), str(src)], check=True)
    return out


def build_parent_signaller(tmp: Path) -> Path:
    src = tmp / "signal-parent.c"
    src.write_text(
        "#include <signal.h>\n#include <stdlib.h>\n#include <unistd.h>\n"
        "int main(int argc, char **argv) { return kill(getppid(), atoi(argv[1])) == 0 ? 0 : 1; }\n"
    )
    out = tmp / "signal-parent"
    subprocess.run(["gcc", "-O1", "-fPIE", "-pie", "-o", str(out), str(src)], check=True)
    return out


@pytest.mark.parametrize(
    "sig", [signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGTERM, signal.SIGSTOP, signal.SIGTSTP]
)
def test_a_served_program_cannot_stop_or_kill_its_zygote_through_getppid(tmp_path, sig):
    program = build_parent_signaller(tmp_path)
    observe = str(bin_path("observe"))
    with private_daemon([program, bin_path("observe")]) as d:
        zygote = d.zygote_pid()
        got = run_served(d, [str(program), str(int(sig))], env=base_env(HEADSTART_DEBUG="1"))
        assert got.returncode == 0 and b"by exec" not in got.stderr, got.stderr
        deadline = time.monotonic() + 5
        while zygote_state(zygote) in "Tt" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert zygote_state(zygote) not in "Tt"
        after = run_served(d, [observe, "exit", "5"], env=base_env(HEADSTART_DEBUG="1"))
        assert after.returncode == 5 and b"by exec" not in after.stderr, after.stderr
        assert d.zygote_pid() == zygote
        assert d.process.poll() is None


HEADER = "# headstart: objects loaded after main, learned by headstartd (version 1)"


def shared_folder(tmp: Path) -> Path:
    """A folder every user may write to (not sticky): whoever can, may put a file of theirs there."""
    folder = tmp / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    return folder


def test_an_object_loaded_from_a_folder_others_can_write_is_never_learned(tmp_path):
    """A served program loaded a plugin from a folder any user may write to; the daemon learned the
    path and preloaded whatever was there in its next zygotes, planted or not."""
    plugin = shared_folder(tmp_path) / "plugin.so"
    shutil.copy(helper_path("hs-plugin.so"), plugin)
    uses_plugin = helper_path("uses-plugin")
    state = tmp_path / "learned"
    with private_daemon([uses_plugin], extra_args=["--learn-file", str(state)]) as d:
        got = run_served(d, [str(uses_plugin), str(plugin)], env=base_env())
        assert got.returncode == 0 and got.stdout == b"hello from the plugin\n", got.stderr
        deadline = time.monotonic() + 10
        while "not learning" not in d.log_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert f"not learning {plugin}, loaded after main: {plugin.parent} is writable by other users" in d.log_text()
        assert "learned" not in d.status()
        assert d.status()["generation"] == ["1"]  # no zygote started for it


def test_a_learned_object_others_could_have_replaced_is_not_preloaded(tmp_path):
    """The state file outlives the folder's safety (/tmp after a reboot, a folder opened to all):
    the object it names is refused, and its constructor never runs in the daemon."""
    plugin = shared_folder(tmp_path) / "plugin.so"
    shutil.copy(helper_path("hs-plugin.so"), plugin)
    uses_plugin = helper_path("uses-plugin")
    state = tmp_path / "learned"
    state.write_text(f"{HEADER}\nprogram {uses_plugin}\nobject {plugin}\nend\n")
    with private_daemon([uses_plugin], extra_args=["--learn-file", str(state)]) as d:
        why = f"{plugin.parent} is writable by other users (mode 0777)"
        assert d.status()["learned"] == [f"skipped {uses_plugin} {plugin} -- {why}"]
        assert str(plugin) not in Path(f"/proc/{d.zygote_pid()}/maps").read_text()


def test_a_preload_others_could_have_replaced_is_refused(tmp_path):
    library = shared_folder(tmp_path) / "plugin.so"
    shutil.copy(helper_path("hs-plugin.so"), library)
    with private_daemon([bin_path("observe")], extra_args=["--preload", str(library)]) as d:
        why = f"{library.parent} is writable by other users (mode 0777)"
        assert d.status()["preload"] == [f"refused {library} -- {why}"]
        assert str(library) not in Path(f"/proc/{d.zygote_pid()}/maps").read_text()
        assert run_served(d, [str(bin_path("observe")), "exit", "3"]).returncode == 3


def test_a_preload_given_by_name_is_found_as_the_loader_finds_it():
    """The configuration's example, `preload = libsqlite3.so.0`, was refused: the name was checked as
    a path in the daemon's working directory ("cannot be checked: No such file or directory")."""
    with private_daemon([bin_path("observe")], extra_args=["--preload", "libz.so.1", "--preload", "libnone.so.7"]) as d:
        why = "the dynamic loader cannot load it: libnone.so.7: cannot open shared object file"
        assert d.status()["preload"] == [f"refused libnone.so.7 -- {why}: No such file or directory"]
        assert "/libz.so.1" in Path(f"/proc/{d.zygote_pid()}/maps").read_text()


def test_a_registered_program_with_a_library_others_could_replace_is_execd(tmp_path):
    """Preloading runs a registered program's libraries in the daemon whenever one changes on disk
    (a refresh): a library planted in a folder others can write to would run as the daemon's user
    without anyone launching the program."""
    shared = shared_folder(tmp_path)
    helpers = helper_path("uses-versioned").parent
    shutil.copy(helpers / "uses-versioned", shared / "uses-versioned")
    shutil.copy(helpers / "libversioned-1.so", shared / "libversioned.so")
    program = shared / "uses-versioned"
    with private_daemon([program]) as d:
        assert f"--app {program}: {shared} is writable by other users" in d.log_text()
        assert str(shared) not in Path(f"/proc/{d.zygote_pid()}/maps").read_text()


def test_a_configuration_file_others_could_change_is_refused(tmp_path):
    conf = shared_folder(tmp_path) / "headstart.conf"
    conf.write_text(f"app = {bin_path('observe')}\n")
    got = subprocess.run(
        [
            str(bin_path("headstartd")),
            "--config",
            str(conf),
            "--allow-root",
            "--socket",
            str(tmp_path / "s" / "socket"),
        ],
        capture_output=True,
        timeout=30,
    )
    assert got.returncode != 0
    assert f"refusing the configuration file {conf}: {conf.parent} is writable by other users".encode() in got.stderr


def test_a_socket_folder_inside_one_others_can_write_is_refused(tmp_path):
    """Only the socket's own folder was checked: in a folder others could write to, another user
    moved it aside and put a fake daemon's socket at its path."""
    sock = shared_folder(tmp_path) / "mine" / "socket"
    got = subprocess.run(
        [str(bin_path("headstartd")), "--allow-root", "--socket", str(sock)], capture_output=True, timeout=30
    )
    assert got.returncode != 0
    line = f"cannot use {sock.parent}: {sock.parent.parent} is writable by other users (mode 0777)"
    assert got.stderr.decode().strip().endswith(f"{line}; pick another --socket"), got.stderr
    assert not sock.exists()


def spare_uid() -> int:
    """A user id with no account and no process: RLIMIT_NPROC counts the processes of a real user
    id, and nobody's are whatever else runs as nobody on the machine (corpus runs, a soak)."""
    taken = {int(line.split(":")[2]) for line in Path("/etc/passwd").read_text().splitlines() if line.count(":") >= 2}
    running = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(FileNotFoundError):  # a process that ended meanwhile
            running.add(os.stat(f"/proc/{pid}").st_uid)
    return next(uid for uid in range(61000, 65000) if uid not in taken | running)


# A listener that takes one connection and writes how many bytes and fds came before the client
# hung up: a daemon's place taken by someone else.
FAKE_DAEMON = """
import array, os, socket, sys
path, result = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
if len(sys.argv) > 3:
    os.chown(path, int(sys.argv[3]), int(sys.argv[3]))
s.listen()
open(result + ".ready", "w").close()
c, _ = s.accept()
c.settimeout(10)
size, fds = 0, 0
try:
    while True:
        data, anc, _, _ = c.recvmsg(65536, socket.CMSG_SPACE(64 * 4))
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += len(payload) // 4
        if not data:
            break
        size += len(data)
except (TimeoutError, ConnectionResetError):
    pass
with open(result, "w") as out:
    out.write(f"{size} {fds}")
"""


@contextlib.contextmanager
def fake_daemon(folder: Path, user: list[str], owner: list[str]) -> Iterator[tuple[Path, Path]]:
    """FAKE_DAEMON run as user at folder/socket (its file given to owner, when root makes it),
    listening; its socket and the file it writes its count into."""
    sock, result = folder / "socket", folder / "result"
    fake = subprocess.Popen([*user, "/usr/bin/python3", "-c", FAKE_DAEMON, str(sock), str(result), *owner])
    try:
        deadline = time.monotonic() + 10
        while not Path(f"{result}.ready").exists():
            assert time.monotonic() < deadline and fake.poll() is None, "the fake daemon did not start"
            time.sleep(0.02)
        yield sock, result
        fake.wait(timeout=20)
    finally:
        fake.kill()
        fake.wait()


def open_folder(trusted_tmp: Path) -> Path:
    folder = trusted_tmp / "runtime"
    folder.mkdir()
    folder.chmod(0o777)
    return folder


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
@pytest.mark.parametrize(
    ("listener", "file_owner", "client", "sent"),
    [
        ("other", "other", "root", False),  # another user's process in the daemon's place
        ("root", "other", "root", False),  # the system manager's socket for another user's daemon
        ("root", "other", "other", True),  # the same socket, for that user's own client
    ],
)
def test_only_the_clients_own_user_or_the_system_manager_for_it_gets_the_launch(
    trusted_tmp, listener, file_owner, client, sent
):
    """The client sent its launch, with every open fd, to whoever listened on the socket and
    believed its answers; a fake daemon read root's files through them. It now checks who
    listens before it sends anything, and execs the program otherwise."""
    uid = spare_uid()
    as_user = {"root": [], "other": ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]}
    owner = [str(uid)] if file_owner == "other" and listener == "root" else []
    with fake_daemon(open_folder(trusted_tmp), as_user[listener], owner) as (sock, result):
        got = subprocess.run(
            [*as_user[client], str(bin_path("headstart-run")), "--socket", str(sock), "/usr/bin/printf", "ran"],
            env=base_env(),
            capture_output=True,
            timeout=30,
        )
        assert got.returncode == 0 and got.stdout == b"ran", got.stderr
    size, fds = map(int, result.read_text().split())
    if sent:
        assert size > 0 and fds >= 2
    else:
        assert (size, fds) == (0, 0)
        assert b"another user listens on the socket" in got.stderr


# A root listener (as the system manager's for another user's daemon) that counts the launches
# it is sent, until killed: bytes received per connection, written as they come.
COUNTING_LISTENER = """
import os, socket, sys
path, result, owner = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chown(path, owner, owner)
os.chmod(path, 0o666)  # its owner lets anyone connect
s.listen(64)
open(result + ".ready", "w").close()
while True:
    c, _ = s.accept()
    c.settimeout(1)
    try:
        got = len(c.recv(65536))
    except (TimeoutError, ConnectionResetError):
        got = 0
    c.close()
    with open(result, "a") as out:
        out.write(f"{got}\\n")
"""


FLIPPER = r"""
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.new", argv[1]);
    for (;;)
        for (int i = 2; i < 4; i++) {
            unlink(tmp);
            if (symlink(argv[i], tmp) == 0)
                rename(tmp, argv[1]);
        }
}
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("cc"),
    reason="needs root to become another user, and a C compiler",
)
def test_a_socket_path_swapped_between_connect_and_check_gets_nothing(trusted_tmp):
    """The red team's second pass: the client connected by path and then looked at the file the
    path named to see whose it was. Another user who could rename in a folder of the path swapped
    it between the two (to a file of the client's user) and got 62 of 300 launches, with the
    client's environment and fds. The owner is now read from the very file connected to."""
    victim, other = spare_uid(), spare_uid() + 1
    folder = open_folder(trusted_tmp)
    listener, result = folder / "other.socket", folder / "result"
    mine = folder / "mine"
    mine.write_text("")
    os.chown(mine, victim, victim)
    fake = subprocess.Popen(["/usr/bin/python3", "-c", COUNTING_LISTENER, str(listener), str(result), str(other)])
    # What the other user does in a folder on the client's socket path, as fast as it can.
    flip_c = folder / "flip.c"
    flip_c.write_text(FLIPPER)
    subprocess.run(["cc", "-O2", "-o", str(folder / "flip"), str(flip_c)], check=True)
    flipper: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + 10
        while not Path(f"{result}.ready").exists():
            assert time.monotonic() < deadline and fake.poll() is None, "the listener did not start"
            time.sleep(0.02)
        flipper = subprocess.Popen([str(folder / "flip"), str(folder / "sock"), str(listener), str(mine)])
        client = ["setpriv", f"--reuid={victim}", f"--regid={victim}", "--clear-groups"]
        client += [str(bin_path("headstart-run")), "--socket", str(folder / "sock"), "--timeout", "200", "/bin/true"]
        for _ in range(150):
            subprocess.run(client, capture_output=True, env=base_env(), timeout=30)
    finally:
        if flipper:
            flipper.kill()
            flipper.wait()
        fake.kill()
        fake.wait()
    sent = [int(n) for n in result.read_text().split()] if result.exists() else []
    assert not any(sent), f"{sum(1 for n in sent if n)} launches of {len(sent)} connections went to the other user"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_the_status_is_not_asked_of_another_users_listener(trusted_tmp):
    uid = spare_uid()
    user = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    with fake_daemon(open_folder(trusted_tmp), user, []) as (sock, _):
        got = subprocess.run(
            [str(bin_path("headstart-run")), "--socket", str(sock), "--status"], capture_output=True, timeout=30
        )
    assert got.returncode == 1 and b"another user listens on the socket" in got.stderr, got.stderr
    assert got.stderr.count(b"\n") == 1


def another_user(trusted_tmp: Path) -> tuple[list[str], Path]:
    """setpriv's arguments that become a spare user, and a runtime folder of that user's."""
    uid = spare_uid()
    runtime = trusted_tmp / "runtime"
    runtime.mkdir(mode=0o700)
    os.chown(runtime, uid, uid)
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"], runtime


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_a_zygote_that_cannot_start_at_rlimit_nproc_is_tried_again_and_clients_exec_meanwhile(trusted_tmp):
    """The user at RLIMIT_NPROC: the serving zygote died and the supervisor could not fork another
    (EAGAIN), and exited for good. It now declines (clients exec) and tries again until it can."""
    user, runtime = another_user(trusted_tmp)
    log = trusted_tmp / "daemon.log"
    observe = str(bin_path("observe"))
    # The client under the same limit: one above the daemon's hard limit would be declined.
    limit = [*user, "prlimit", "--nproc=4:4"]
    daemon_cmd = [*limit, str(bin_path("headstartd")), "--socket", f"{runtime}/socket"]
    client = [*limit, str(bin_path("headstart-run")), "--socket", f"{runtime}/socket"]
    sleepers: list[subprocess.Popen[bytes]] = []
    with open(log, "wb") as out:
        daemon = subprocess.Popen([*daemon_cmd, "--app", observe], stdout=out, stderr=out, env=base_env())
    try:
        wait_for_line(log, "ready: listening")
        assert served(client, observe)
        # Two processes of the user run (supervisor, zygote); three more fill its limit of 4.
        sleepers = [subprocess.Popen([*user, "sleep", "600"]) for _ in range(3)]
        zygote = int(subprocess.check_output(["pgrep", "-P", str(daemon.pid)]).split()[0])
        os.kill(zygote, signal.SIGKILL)
        wait_for_line(log, "cannot start a zygote; trying again")
        got = subprocess.run([*client, observe, "exit", "6"], env=base_env(HEADSTART_DEBUG="1"), capture_output=True)
        assert got.returncode == 6 and b"no zygote is running" in got.stderr, got.stderr
        assert daemon.poll() is None
        for s in sleepers:
            s.kill()
            s.wait()
        # The supervisor's line, not the zygote's "ready": until the supervisor reads that, it declines.
        wait_for_line(log, "zygote 2 serves: clients are served again", timeout=30)
        assert served(client, observe), log.read_text(errors="replace")
    finally:
        for s in sleepers:
            s.kill()
        daemon.terminate()
        daemon.wait(timeout=30)


def served(client: list[str], observe: str) -> bool:
    got = subprocess.run([*client, observe, "exit", "0"], env=base_env(HEADSTART_DEBUG="1"), capture_output=True)
    return got.returncode == 0 and b"by exec" not in got.stderr


def wait_for_line(log: Path, text: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, log.read_text(errors="replace")
        time.sleep(0.02)


@pytest.fixture
def full_filesystem(tmp_path: Path):
    """A tmpfs of 64 KiB, filled up."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        with open(mnt / "filler", "wb") as f:
            try:
                f.write(b"x" * 1024 * 1024)
            except OSError:
                pass
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


def test_learning_on_a_full_disk_starts_one_zygote_not_one_per_launch(full_filesystem):
    """With the state file on a full filesystem, every learning launch said "cannot save" and
    started a new zygote, which had not learned it: 6 launches, 6 zygotes. What was learned now
    stays in memory (the supervisor's) for the next zygotes."""
    uses_plugin, plugin = helper_path("uses-plugin"), helper_path("hs-plugin.so")
    state = full_filesystem / "learned"
    with private_daemon([uses_plugin], extra_args=["--learn-file", str(state)]) as d:
        for _ in range(6):
            got = run_served(d, [str(uses_plugin), str(plugin)], env=base_env())
            assert got.returncode == 0, got.stderr
            time.sleep(0.3)
        status = d.status()
        assert status["generation"] == ["2"], d.log_text()
        assert status["learned"] == [f"preloaded {uses_plugin} {plugin}"]
        assert d.log_text().count("cannot save the learned objects") == 1
        assert not state.exists()


def test_connections_over_the_cap_are_logged_once_a_second_not_once_each(tmp_path):
    """5,000 connections held: each one over the cap of 4,096 was one log line (907 lines)."""
    import resource
    import socket as sock

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 6000:
        pytest.skip("cannot hold 5,000 connections here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 6000), hard))
    held: list[sock.socket] = []
    try:
        with private_daemon([bin_path("observe")]) as d:
            started = time.monotonic()
            for _ in range(5000):
                s = sock.socket(sock.AF_UNIX, sock.SOCK_STREAM)
                s.connect(str(d.socket))
                held.append(s)
            time.sleep(0.5)
            seconds = time.monotonic() - started
            lines = d.log_text().count("too many connections")
            assert 1 <= lines <= seconds + 2, d.log_text()[-2000:]
            for s in held:
                s.close()
            held.clear()
            got = run_served(d, [str(bin_path("observe")), "exit", "3"], env=base_env(HEADSTART_DEBUG="1"))
            assert got.returncode == 3 and b"by exec" not in got.stderr, got.stderr
    finally:
        for s in held:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_log_says_how_a_program_ended_in_words():
    """It said "child N ended (code 1, status 0)" for a normal exit (code 1 is CLD_EXITED)."""
    with private_daemon([bin_path("observe")]) as d:
        assert run_served(d, [str(bin_path("observe")), "exit", "0"]).returncode == 0
        assert run_served(d, [str(bin_path("observe")), "kill", "9"]).returncode == -9
        deadline = time.monotonic() + 5
        while "killed by SIGKILL" not in d.log_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        log = d.log_text()
        assert "ended: exited with status 0" in log and "ended: killed by SIGKILL" in log, log
        assert "(code " not in log


def build_chroot(tmp: Path, d) -> Path:
    """A directory to chroot into, in the daemon's own mount namespace: the host's /usr (so that its
    programs are the files the daemon serves) and the links to it of a merged /usr, /proc (the
    client library lists its fds there), a copy of headstart-run (whose libraries, if any, are in
    /usr), the daemon's socket by a hard link at its own path, and an /etc of its own."""
    root = d.socket.parent / "root"  # the socket's file system, for the hard link
    for name in ("usr", "proc", "etc"):
        (root / name).mkdir(parents=True)
    for name in ("bin", "lib", "lib64", "sbin"):
        if Path("/", name).is_symlink():
            (root / name).symlink_to(os.readlink(Path("/", name)))
    (root / "etc/headstart-marker").write_text("inside the chroot\n")
    run = root / bin_path("headstart-run").relative_to("/")
    run.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(bin_path("headstart-run"), run)
    sock = root / d.socket.relative_to("/")
    sock.parent.mkdir(parents=True, exist_ok=True)
    os.link(d.socket, sock)
    for args, target in ((["-t", "proc", "proc"], root / "proc"), (["--bind", "-o", "ro", "/usr"], root / "usr")):
        subprocess.run(["mount", *args, str(target)], check=True)
        MOUNTED.append(target)
    return root


# A caller in a Landlock domain that may make no directory (LANDLOCK_ACCESS_FS_MAKE_DIR handled, no
# rule allows it), then exec of its arguments; exit 77 where the kernel has no Landlock. As root
# (CAP_SYS_ADMIN) it needs no no_new_privs, which the daemon would see: only the client library can
# tell, as the kernel shows no Landlock domain in /proc.
LANDLOCK = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
handled = ctypes.c_uint64(1 << 7)
fd = libc.syscall(444, ctypes.byref(handled), ctypes.sizeof(handled), 0)  # landlock_create_ruleset
if fd < 0 or libc.syscall(446, fd, 0):  # landlock_restrict_self
    sys.exit(77)
os.execv(sys.argv[1], sys.argv[1:])
"""


def landlock_available() -> bool:
    return subprocess.run(["python3", "-c", LANDLOCK, "/usr/bin/true"], check=False).returncode == 0


# What the test mounted in the host's mount namespace, unmounted when it ends.
MOUNTED: list[Path] = []


def build_sandbox(tmp: Path) -> Path:
    """A sandbox of the daemon's own user: no_new_privs and a seccomp filter that fails mkdir with
    EPERM, then the command it is given, by exec."""
    src = tmp / "sandbox.c"
    src.write_text(
        "#include <errno.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <unistd.h>\n"
        "#include <linux/filter.h>\n#include <linux/seccomp.h>\n#include <sys/prctl.h>\n#include <sys/syscall.h>\n"
        "int main(int argc, char **argv) {\n"
        "  (void) argc;\n"
        "  struct sock_filter f[] = {\n"
        "    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),\n"
        "    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mkdir, 2, 0),\n"
        "    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mkdirat, 1, 0),\n"
        "    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),\n"
        "    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),\n"
        "  };\n"
        "  struct sock_fprog prog = { sizeof f / sizeof f[0], f };\n"
        "  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {\n"
        '    perror("seccomp");\n    return 99;\n  }\n'
        "  execv(argv[1], argv + 1);\n"
        '  perror("execv");\n  return 98;\n}\n'
    )
    out = tmp / "sandbox"
    subprocess.run(["gcc", "-O1", "-o", str(out), str(src)], check=True)
    return out


CONTEXTS = {
    "seccomp": (lambda tmp, d: [str(build_sandbox(tmp))], ["/usr/bin/mkdir", "{tmp}/made"]),
    "capabilities": (
        lambda tmp, d: ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search"],
        ["/usr/bin/cat", "{tmp}/secret"],
    ),
    "groups": (lambda tmp, d: ["setpriv", "--regid", "100", "--groups", "5,7"], ["/usr/bin/id"]),
    "namespaces": (lambda tmp, d: ["unshare", "--net"], ["/usr/bin/cat", "/proc/self/net/dev"]),
    "personality": (lambda tmp, d: ["setarch", "--addr-no-randomize"], ["/usr/bin/cat", "/proc/self/personality"]),
    "io priority": (lambda tmp, d: ["ionice", "-c", "3"], ["/usr/bin/ionice"]),
    # A tracer follows what its tracee execs: the count of untraced status lines is 0 under exec.
    "traced": (
        lambda tmp, d: ["strace", "-f", "-qq", "-e", "trace=none", "-o", "/dev/null"],
        ["/usr/bin/grep", "-c", "^TracerPid:[[:space:]]*0$", "/proc/self/status"],
    ),
    "huge pages": (
        lambda tmp, d: [
            "python3",
            "-c",
            "import ctypes, os, sys; ctypes.CDLL(None).prctl(41, 1, 0, 0, 0); os.execv(sys.argv[1], sys.argv[1:])",
        ],
        ["/usr/bin/grep", "THP_enabled", "/proc/self/status"],
    ),
    # A Landlock domain, in which mkdir fails with EACCES.
    "landlock": (lambda tmp, d: ["python3", "-c", LANDLOCK], ["/usr/bin/mkdir", "{tmp}/made"]),
    # A chroot in the daemon's own mount namespace: under exec the program reads the chroot's /etc.
    "chroot": (
        lambda tmp, d: ["/usr/sbin/chroot", str(build_chroot(tmp, d))],
        ["/usr/bin/cat", "/etc/headstart-marker"],
    ),
}


@pytest.mark.skipif(os.geteuid() != 0, reason="setpriv changes groups and capabilities only as root")
@pytest.mark.parametrize("context", CONTEXTS)
def test_a_client_confined_or_placed_otherwise_than_the_daemon_gets_exec(tmp_path, context):
    """A process of the daemon's own user in a sandbox (a seccomp filter, capabilities dropped, other
    groups, other namespaces) asked the daemon, and its program ran outside the sandbox, as the
    daemon: a directory made that the filter forbids, a file read that the capabilities left did not
    allow. Such a client, one in a Landlock domain (its program made the directory the domain
    forbids; the client library sees it), one chrooted (its program read the host's /etc), one whose personality, I/O
    priority or huge pages setting differs, and one traced (strace -f: the served program escaped the
    trace) is declined and execs the program in its own context, which the program then shows as
    under exec."""
    if context == "huge pages" and b"THP_enabled" not in Path("/proc/self/status").read_bytes():
        pytest.skip("this kernel does not say whether a process may have transparent huge pages")
    if context == "landlock" and not landlock_available():
        pytest.skip("this kernel has no Landlock, or it is not enabled")
    if context == "traced" and (SANITIZED or not shutil.which("strace")):
        pytest.skip("strace is not installed, or LeakSanitizer in a sanitizer build cannot run traced")
    wrapper_of, argv = CONTEXTS[context]
    (tmp_path / "secret").write_text("secret\n")
    (tmp_path / "secret").chmod(0)
    argv = [a.format(tmp=tmp_path) for a in argv]
    env = base_env(HEADSTART_DEBUG="1")
    with private_daemon([Path(argv[0])]) as d:
        try:
            wrapper = wrapper_of(tmp_path, d)
            plain = run_served(d, argv, env=env)
            assert b"by exec" not in plain.stderr, plain.stderr  # served without the wrapper
            shutil.rmtree(tmp_path / "made", ignore_errors=True)
            expected = run_exec(wrapper + argv, env=env)
            client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
            got = run_exec(wrapper + client + argv, env=env)
        finally:
            while MOUNTED:
                subprocess.run(["umount", "--lazy", str(MOUNTED.pop())], check=False)
    assert b"by exec" in got.stderr, got.stderr
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout)
    assert got.stderr.endswith(expected.stderr), (got.stderr, expected.stderr)
    assert not (tmp_path / "made").exists()  # the sandbox forbade it, served or not


def test_a_clients_oom_score_adjustment_is_given_to_its_program():
    """A client with another OOM score adjustment (choom; a service manager's OOMScoreAdjust=, 100 for
    a user's daemon under systemd's user manager) is served, and its program has the client's, as
    under exec, not the zygote's."""
    argv = ["/usr/bin/cat", "/proc/self/oom_score_adj"]
    env = base_env(HEADSTART_DEBUG="1")
    with private_daemon([Path(argv[0])]) as d:
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        got = run_exec(["choom", "-n", "300", "--", *client, *argv], env=env)
        plain = run_served(d, argv, env=env)
    assert b"by exec" not in got.stderr, got.stderr
    assert got.stdout == b"300\n"
    assert plain.stdout == Path("/proc/self/oom_score_adj").read_bytes()  # the next launch: its own again


def test_a_stopped_pool_child_does_not_hang_the_zygote_with_a_large_request(tmp_path):
    """Any process of the user may stop a waiting child of the pool (SIGSTOP). The zygote handed it a
    request through a blocking send: one larger than the channel's buffer (arguments a build system
    passes, over about 200 KiB) blocked the zygote in sendmsg for as long as the child stayed
    stopped. Every client after waited its deadline and exec'd, --status was not answered, and the
    first client's fds stayed open in the zygote: a reader of its stdout never saw end of file."""
    observe = str(bin_path("observe"))
    with private_daemon([bin_path("observe")], extra_args=["--pool", "1"]) as d:
        (child,) = waiting_children(d, 1)
        os.kill(child, signal.SIGSTOP)
        try:
            big = ["x" * 100_000] * 4
            started = time.monotonic()
            first = run_served(
                d, ["--timeout", "3000", observe, "exit", "3", *big], env=base_env(HEADSTART_DEBUG="1"), timeout=20
            )
            # The pipe of its stdout reached end of file: nothing of the daemon's holds it.
            assert first.returncode == 3, first.stderr
            assert time.monotonic() - started < 10
            after = run_served(
                d, ["--timeout", "3000", observe, "exit", "5"], env=base_env(HEADSTART_DEBUG="1"), timeout=20
            )
            assert after.returncode == 5 and b"by exec" not in after.stderr, after.stderr
            assert b"did not answer" not in first.stderr, first.stderr
            assert "is stopped" in d.log_text()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGCONT)


def build_program_needing_a_fifo(tmp: Path) -> Path:
    """A program that exports its symbols (-rdynamic, so the daemon asks the loader for its libraries
    to bind them) and needs a library, found through its RUNPATH, that is a FIFO: the loader blocks
    opening it until something writes to it, under exec and in `ld.so --list` alike."""
    libs = tmp / "libs"
    libs.mkdir()
    (tmp / "lib.c").write_text("int blocked_value(void) { return 3; }\n")
    (tmp / "prog.c").write_text("int blocked_value(void);\nint main(void) { return blocked_value(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(libs / "libblocked.so"), str(tmp / "lib.c")], check=True)
    program = tmp / "needs-fifo"
    link = ["gcc", "-fPIE", "-pie", "-rdynamic", "-o", str(program), str(tmp / "prog.c")]
    subprocess.run([*link, f"-L{libs}", "-lblocked", f"-Wl,-rpath,{libs}"], check=True)
    (libs / "libblocked.so").unlink()
    os.mkfifo(libs / "libblocked.so")
    return program


def loader_listing(zygote: int, timeout: float = 10.0) -> bool:
    """Whether the zygote's `ld.so --list` of a program shows up among its children in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for kid in Path(f"/proc/{zygote}/task/{zygote}/children").read_text().split():
            with contextlib.suppress(OSError):
                if b"--list" in Path(f"/proc/{kid}/cmdline").read_bytes():
                    return True
        time.sleep(0.01)
    return False


def test_a_program_whose_library_blocks_the_loader_does_not_hang_the_zygote(tmp_path):
    """For an unregistered program that exports symbols, the zygote asked `ld.so --list` for its
    libraries and read its answer with no deadline, as it judged the launch. A library the loader
    blocks on (a FIFO at its name, a hung file system) held the zygote for as long: every client after
    waited its deadline and exec'd. Any client of the user could do it, with any such program."""
    program = build_program_needing_a_fifo(tmp_path)
    observe = str(bin_path("observe"))
    with private_daemon([bin_path("observe")]) as d:
        zygote = d.zygote_pid()  # asked now: the status waits for the zygote too
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket), "--timeout", "300", str(program)]
        # Its client gives up after 300 ms and execs it, which blocks on the FIFO, as exec would.
        blocked = subprocess.Popen(client, env=base_env(), stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            assert loader_listing(zygote), d.log_text()
            after = run_served(d, [observe, "exit", "5"], env=base_env(HEADSTART_DEBUG="1"), timeout=20)
            assert after.returncode == 5 and b"by exec" not in after.stderr, after.stderr
        finally:
            blocked.kill()
            blocked.wait()


FUSE_HANG_C = r"""
/* A FUSE file system in a user and mount namespace of our own (no privilege): one file, /prog,
 * whose requests from one pid (argv[1], the zygote) are never answered, mounted at argv[2]. Then
 * runs argv[3..] in the namespace. Its reads are not served: a file whose close waits. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fuse.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static void put(const char *file, const char *text) {
        int fd = open(file, O_WRONLY);
        if (fd < 0 || write(fd, text, strlen(text)) < 0)
                perror(file);
        close(fd);
}

static void attr(struct fuse_attr *a, uint64_t ino) {
        memset(a, 0, sizeof *a);
        a->ino = ino;
        a->nlink = 1;
        a->mode = ino == 1 ? S_IFDIR | 0755 : S_IFREG | 0755;
        a->size = ino == 1 ? 0 : 4096;
        a->blksize = 4096;
}

static void reply(int fd, uint64_t unique, int error, const void *p, size_t n) {
        char buf[8192];
        struct fuse_out_header h = { .len = sizeof h + n, .error = error, .unique = unique };
        memcpy(buf, &h, sizeof h);
        memcpy(buf + sizeof h, p, n);
        if (write(fd, buf, h.len) < 0)
                perror("reply");
}

static void serve(int fd, pid_t ignored) {
        static char buf[1 << 20];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0) {
                struct fuse_in_header *in = (void *) buf;
                struct fuse_init_out init = { .major = 7, .minor = FUSE_KERNEL_MINOR_VERSION, .max_write = 4096 };
                struct fuse_entry_out entry = { .nodeid = 2 };
                struct fuse_attr_out got = { 0 };
                if ((pid_t) in->pid == ignored)
                        continue; /* never answered */
                if (in->opcode == FUSE_INIT)
                        reply(fd, in->unique, 0, &init, sizeof init);
                else if (in->opcode == FUSE_LOOKUP && strcmp(buf + sizeof *in, "prog") != 0)
                        reply(fd, in->unique, -2, NULL, 0);
                else if (in->opcode == FUSE_LOOKUP) {
                        attr(&entry.attr, 2);
                        reply(fd, in->unique, 0, &entry, sizeof entry);
                } else if (in->opcode == FUSE_GETATTR) {
                        attr(&got.attr, in->nodeid);
                        reply(fd, in->unique, 0, &got, sizeof got);
                } else if (in->opcode == FUSE_FLUSH) {
                        reply(fd, in->unique, 0, NULL, 0); /* ENOSYS would spare everyone the next */
                } else if (in->opcode != FUSE_FORGET && in->opcode != FUSE_BATCH_FORGET)
                        reply(fd, in->unique, -38, NULL, 0);
        }
}

int main(int argc, char **argv) {
        char map[64], opts[128];
        uid_t uid = getuid();
        gid_t gid = getgid();
        if (argc < 4 || unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                return perror("unshare"), 1;
        snprintf(map, sizeof map, "0 %u 1", uid);
        put("/proc/self/uid_map", map);
        put("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "0 %u 1", gid);
        put("/proc/self/gid_map", map);
        int fd = open("/dev/fuse", O_RDWR);
        snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
        if (fd < 0 || mount("hang", argv[2], "fuse", 0, opts) < 0)
                return perror("mount"), 1;
        if (fork() == 0) {
                close(fd);
                execvp(argv[3], argv + 3);
                _exit(127);
        }
        serve(fd, (pid_t) atoi(argv[1]));
        return 0;
}
"""


def build_fuse_hang(tmp: Path) -> tuple[Path, Path]:
    """FUSE_HANG_C built, and an empty folder to mount it on."""
    (tmp / "fuse-hang.c").write_text(FUSE_HANG_C)
    out = tmp / "fuse-hang"
    subprocess.run(["gcc", "-O1", "-o", str(out), str(tmp / "fuse-hang.c")], check=True)
    (tmp / "mnt").mkdir()
    return out, tmp / "mnt"


def test_a_client_in_namespaces_of_its_own_cannot_hold_the_zygote_with_a_file_it_serves(tmp_path):
    """A process of the user in a user and mount namespace of its own (no privilege needed) mounts a
    FUSE file system it serves itself and asks for a program on it. The zygote looked at the
    program's fd (fstat) before it compared the client's namespaces, which declines it: the FUSE
    server never answered that GETATTR, and the zygote waited in it as long as the server lived.
    Every client after waited its deadline and exec'd, and those whose stdout was a pipe never ended."""
    hang, mnt = build_fuse_hang(tmp_path)
    observe = str(bin_path("observe"))
    with private_daemon([bin_path("observe")]) as d:
        zygote = d.zygote_pid()
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket), "--timeout", "300", str(mnt / "prog")]
        confined = subprocess.Popen(
            [str(hang), str(zygote), str(mnt), *client],
            env=base_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 10
            while "declined" not in d.log_text() and time.monotonic() < deadline:
                if Path(f"/proc/{zygote}/wchan").read_text() == "request_wait_answer":
                    break  # held: the daemon would never say it declined
                time.sleep(0.01)
            after = run_served(d, [observe, "exit", "5"], env=base_env(HEADSTART_DEBUG="1"), timeout=20)
            assert after.returncode == 5 and b"by exec" not in after.stderr, after.stderr
        finally:
            os.killpg(confined.pid, signal.SIGKILL)
            confined.wait()


def test_a_zygote_held_in_a_file_systems_close_is_replaced_and_clients_are_served_again(tmp_path):
    """A file whose close waits for a server that never answers (a FUSE file the client serves, a
    network mount gone): passed as a declined client's stdin, the zygote closes its copy and waits,
    unkillable (the kernel waits out a FUSE flush), for as long as that server lives; every client
    after it paid its deadline and exec'd (a red team's trial). The supervisor pings the serving
    zygote: one that has not answered for 10 s, and is not waiting for a CPU, is replaced."""
    hang, mnt = build_fuse_hang(tmp_path)
    observe = str(bin_path("observe"))
    with private_daemon([bin_path("observe")]) as d:
        zygote = d.zygote_pid()
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket), observe, "exit", "0"]
        confined = subprocess.Popen(
            [str(hang), str(zygote), str(mnt), "sh", "-c", 'exec "$@" < "$0"', str(mnt / "prog"), *client],
            env=base_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 20
            while Path(f"/proc/{zygote}/wchan").read_text() != "request_wait_answer":
                assert time.monotonic() < deadline, d.log_text()
                time.sleep(0.05)
            deadline = time.monotonic() + 60
            while True:
                try:
                    got = run_served(d, [observe, "exit", "5"], env=base_env(HEADSTART_DEBUG="1"), timeout=30)
                except subprocess.TimeoutExpired as e:
                    raise AssertionError(d.log_text()) from e
                assert got.returncode == 5
                if b"by exec" not in got.stderr:
                    break
                assert time.monotonic() < deadline, d.log_text()
                time.sleep(0.5)
            assert f"zygote 1 (pid {zygote}) has not answered for 10 s" in d.log_text()
        finally:
            os.killpg(confined.pid, signal.SIGKILL)
            confined.wait()


JOINS_PARENTS_GROUP = r"""
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void on(int sig) { dprintf(1, "program got %s\n", strsignal(sig)); _exit(0); }
int main(void) {
        /* Served, its parent is the zygote: it joins the daemon's group. */
        int r = setpgid(0, getpgid(getppid()));
        signal(SIGTERM, on);
        dprintf(1, "joined: %d\n", r);
        sleep(30);
        return 1;
}
"""


@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler")
def test_a_served_program_in_the_daemons_group_cannot_have_a_signal_to_its_group_reach_the_daemon(trusted_tmp):
    """Before Linux 6.9 (Debian 12's 6.1) headstart-run signalled the group the program was in, read
    from /proc, where a pidfd cannot signal a group: a program that joined its parent's group (the
    zygote's, the daemon's) had a SIGTERM from a sender that ignores it (which goes to the group)
    stop the daemon (a red team's trial). Now the group numbered by the program's pid, as the pidfd
    does from 6.9 on; the program left it, so the program alone gets the signal."""
    program = trusted_tmp / "joins"
    (trusted_tmp / "joins.c").write_text(JOINS_PARENTS_GROUP)
    subprocess.run([shutil.which("cc") or "cc", str(trusted_tmp / "joins.c"), "-o", str(program)], check=True)
    old_kernel = str(helper_path("no-group-signal"))
    runtime = trusted_tmp / "runtime"
    runtime.mkdir(mode=0o700)
    log = trusted_tmp / "daemon.log"
    root = ["--allow-root"] if os.geteuid() == 0 else []
    daemon_cmd = [old_kernel, str(bin_path("headstartd")), "--socket", str(runtime / "sock"), *root]
    with open(log, "wb") as out:  # a session of its own: the old code's signal reaches its group only
        daemon = subprocess.Popen([*daemon_cmd, "--app", str(program)], stdout=out, stderr=out, env=base_env(),
                                  start_new_session=True)  # fmt: skip
    try:
        wait_for_line(log, "ready: listening")
        client = subprocess.Popen(
            [old_kernel, str(bin_path("headstart-run")), "--socket", str(runtime / "sock"), str(program)],
            env=base_env(HEADSTART_DEBUG="1"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert client.stdout is not None
        assert client.stdout.readline() == b"joined: 0\n"
        subprocess.run(["sh", "-c", f'trap "" TERM; kill -TERM {client.pid}'], check=True)
        out, err = client.communicate(timeout=30)
        assert (client.returncode, out) == (0, b"program got Terminated\n"), err
        assert b"by exec" not in err
        time.sleep(0.5)  # the daemon's end, were it signalled, is not at once
        assert daemon.poll() is None, log.read_text(errors="replace")
        assert "stopping" not in log.read_text(errors="replace")
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
