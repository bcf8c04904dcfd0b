"""A library changed on disk by name, not in place: the loader would now find another file for one
of the names it looked up, so served launches must get it too (a fresh zygote), as exec does. Each
case is how a real update does it: a new soname symlink (dpkg), a new library in a directory earlier
in the search order, an ldconfig that moves a soname."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import base_env, bin_path, run_exec, run_served
from headstart.daemon import RunningDaemon, private_daemon
from test_refresh import wait_generation

LIB = "const char *hsfoo(void) { return SAYS; }\n"
MAIN = "#include <stdio.h>\nconst char *hsfoo(void);\nint main(void) { puts(hsfoo()); return 0; }\n"


@pytest.fixture(autouse=True)
def _compiler() -> None:
    if not shutil.which("cc"):
        pytest.skip("no C compiler")


def build_lib(path: Path, says: str) -> Path:
    """libhsfoo (soname libhsfoo.so.1) printing `says`, written beside `path` and renamed to it, as
    package managers install files."""
    src = path.parent / "hsfoo.c"
    src.write_text(LIB)
    tmp = path.parent / f".{path.name}.new"
    cmd = ["cc", "-shared", "-fPIC", "-Wl,-soname,libhsfoo.so.1", f'-DSAYS="{says}"', "-o", str(tmp), str(src)]
    subprocess.run(cmd, check=True)
    tmp.rename(path)
    return path


def build_program(path: Path, lib: Path, runpath: str | None = None) -> Path:
    (path.parent / "main.c").write_text(MAIN)
    flags = [f"-Wl,-rpath,{runpath}", "-Wl,--enable-new-dtags"] if runpath else []
    subprocess.run(["cc", "-o", str(path), str(path.parent / "main.c"), str(lib), *flags], check=True)
    return path


def served(d: RunningDaemon, prog: Path, within: list[str]) -> bytes:
    """What the program prints served, its client started `within` (nsenter ...)."""
    return run_exec([*within, str(bin_path("headstart-run")), "--socket", str(d.socket), str(prog)]).stdout


def check_refreshed_to(
    d: RunningDaemon, prog: Path, says: bytes, because: str, within: list[str] | None = None
) -> None:
    status = wait_generation(d, 2, timeout=15)
    assert status["started-because"][0].startswith("changed on disk"), status
    assert because in status["started-because"][0], status
    assert run_exec([*(within or []), str(prog)]).stdout == says
    assert served(d, prog, within or []) == says


def test_a_new_soname_symlink_refreshes_even_with_the_old_file_kept_mapped(tmp_path):
    """dpkg's way: libhsfoo.so.1 -> libhsfoo.so.1.0.1 becomes -> libhsfoo.so.1.0.2, by a new symlink
    renamed over the old one; then the old file goes. Only the real file was watched, and it was
    neither replaced nor (while the zygote maps it) freed: v1 was served for good."""
    lib = tmp_path / "lib"
    lib.mkdir()
    build_lib(lib / "libhsfoo.so.1.0.1", "v1")
    (lib / "libhsfoo.so.1").symlink_to("libhsfoo.so.1.0.1")
    prog = build_program(tmp_path / "uses-hsfoo", lib / "libhsfoo.so.1", runpath="$ORIGIN/lib")
    with private_daemon([prog]) as d:
        assert run_served(d, [str(prog)]).stdout == b"v1\n"
        build_lib(lib / "libhsfoo.so.1.0.2", "v2")
        (lib / "tmp").symlink_to("libhsfoo.so.1.0.2")
        subprocess.run(["mv", "-T", str(lib / "tmp"), str(lib / "libhsfoo.so.1")], check=True)
        (lib / "libhsfoo.so.1.0.1").unlink()
        check_refreshed_to(d, prog, b"v2\n", str(lib / "libhsfoo.so.1"))


@pytest.mark.parametrize("where", ["runpath", "LD_LIBRARY_PATH"])
def test_a_library_appearing_earlier_in_the_search_order_refreshes(tmp_path, where):
    """A soname the loader looked for in a directory and did not find there, then found later in
    the search order: a library put in that directory is what exec loads from then on."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    build_lib(second / "libhsfoo.so.1", "v1")
    runpath = "$ORIGIN/first:$ORIGIN/second" if where == "runpath" else None
    prog = build_program(tmp_path / "uses-hsfoo", second / "libhsfoo.so.1", runpath=runpath)
    # The daemon and its clients share the loader's environment, or the client is declined.
    search = {} if runpath else {"LD_LIBRARY_PATH": f"{first}:{second}"}
    daemon_env = dict(os.environ, **search)
    with private_daemon([prog], env=daemon_env) as d:
        env = base_env(**search)
        assert run_served(d, [str(prog)], env=env).stdout == b"v1\n"
        # Other names in the directory are no reason to refresh.
        (first / "libunrelated.so.1").write_bytes(b"")
        build_lib(first / "libhsfoo.so.1", "v2")
        status = wait_generation(d, 2, timeout=15)
        assert status["started-because"] == [f"changed on disk: {first / 'libhsfoo.so.1'}"], status
        assert run_exec([str(prog)], env=env).stdout == b"v2\n"
        assert run_served(d, [str(prog)], env=env).stdout == b"v2\n"


def namespace_daemon(tmp_path: Path) -> Path:
    """A headstartd wrapper that runs it in a mount namespace of its own, with a copy of /etc over
    /etc: the test's ldconfig changes that copy's cache, not the machine's (whose other daemons
    would all refresh)."""
    etc = tmp_path / "etc"
    subprocess.run(["cp", "-a", "/etc", str(etc)], check=True)
    wrapper = tmp_path / "headstartd-ns"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'exec unshare --mount --propagation private sh -c \'mount --bind "$0" /etc && ldconfig && exec "$@"\' '
        f'{etc} {bin_path("headstartd")} "$@"\n'
    )
    wrapper.chmod(0o755)
    return etc


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root for a mount namespace")
def test_an_ldconfig_that_moves_a_soname_refreshes(tmp_path):
    """/etc/ld.so.cache is where the loader finds a soname no RUNPATH names: a new ld.so.conf.d
    file listing a directory with another libhsfoo, and ldconfig, and exec loads that one."""
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    build_lib(old / "libhsfoo.so.1", "v1")
    build_lib(new / "libhsfoo.so.1", "v2")
    prog = build_program(tmp_path / "uses-hsfoo", old / "libhsfoo.so.1")
    etc = namespace_daemon(tmp_path)
    (etc / "ld.so.conf.d" / "zz-hsfoo-old.conf").write_text(f"{old}\n")
    with private_daemon([prog], binary=tmp_path / "headstartd-ns") as d:
        in_namespace = ["nsenter", "-t", str(d.process.pid), "-m", "--"]
        assert served(d, prog, in_namespace) == b"v1\n"
        assert run_exec([*in_namespace, str(prog)]).stdout == b"v1\n"
        (etc / "ld.so.conf.d" / "00-hsfoo-new.conf").write_text(f"{new}\n")
        subprocess.run([*in_namespace, "ldconfig"], check=True)
        check_refreshed_to(d, prog, b"v2\n", "/etc/ld.so.cache", within=in_namespace)


def test_a_warm_program_loaded_through_its_fd_starts_no_refresh(tmp_path):
    """A warm program is loaded through the fd the daemon checked (/proc/PID/fd/N), which the first
    version of the name watch took for a name the loader looks up: every zygote asked for a refresh
    as it started ("changed on disk while loading: /proc/PID/fd/8"), and its learning was lost."""
    lib = tmp_path / "lib"
    lib.mkdir()
    build_lib(lib / "libhsfoo.so.1", "v1")
    prog = build_program(tmp_path / "uses-hsfoo", lib / "libhsfoo.so.1", runpath="$ORIGIN/lib")
    with private_daemon([], extra_args=["--warm", str(prog)]) as d:
        assert run_served(d, [str(prog)]).stdout == b"v1\n"
        time.sleep(0.5)  # a refresh asked for at start would have begun by now
        assert "asking for a refresh" not in d.log_text(), d.log_text()
        assert d.status()["generation"] == ["1"]
