"""The aarch64 build, run by qemu-user: Debian's arm64 programs, unpacked into a sysroot, behave
through the aarch64 daemon exactly as by exec, and the hand-made hazards land where they should.

`make test` cross-builds build-aarch64/ and makes the sysroot and the qemu binfmt registration
(tests/aarch64/setup.sh), then sets HEADSTART_AARCH64_BUILD and HEADSTART_AARCH64_SYSROOT."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Result
from headstart.daemon import RunningDaemon, private_daemon

BUILD = os.environ.get("HEADSTART_AARCH64_BUILD")
SYSROOT = os.environ.get("HEADSTART_AARCH64_SYSROOT")
pytestmark = pytest.mark.skipif(
    not (BUILD and SYSROOT), reason="the aarch64 build and sysroot are made by `make test` (make aarch64)"
)

# Program (relative to the sysroot), arguments, stdin. {TEXT} is a file made below.
PROGRAMS = {
    "gzip": ("bin/gzip", ["-c", "-9", "{TEXT}"], b""),
    "sed": ("bin/sed", ["-n", "s/o/0/gp", "{TEXT}"], b""),
    "grep": ("bin/grep", ["-n", "-i", "the", "{TEXT}"], b""),
    "sort": ("usr/bin/sort", ["-r", "{TEXT}"], b""),
    "wc": ("usr/bin/wc", ["-lwc", "{TEXT}"], b""),
    "date": ("bin/date", ["-u", "-d", "@1700000000", "+%c %j"], b""),
    "diff": ("usr/bin/diff", ["-u", "--label=a", "--label=b", "{TEXT}", "/dev/null"], b""),
    "bzip2": ("bin/bzip2", ["-c", "{TEXT}"], b""),
    "xz": ("usr/bin/xz", ["-c", "{TEXT}"], b""),
    "cjpeg": ("usr/bin/cjpeg", ["-quality", "75", "{PPM}"], b""),
    "lame": ("usr/bin/lame", ["--quiet", "-r", "-s", "8", "-m", "m", "-", "-"], bytes(range(256)) * 64),
    "sqlite3": ("usr/bin/sqlite3", [":memory:"], b"select 6 * 7, 'x' || 'y';\nselect nosuch();\n"),
    "jq": ("usr/bin/jq", ["-c", ".a | map(. + 1)"], b'{"a": [1, 2, 3]}'),
}
# On aarch64, GCC reaches another object's data through the GOT even in a PIE, so there are no copy
# relocations (Debian's arm64 programs have none either): the self-referential copy that sends
# uses-selfref to exec on x86-64 does not exist here, and both are served. The library still calls
# the program's own hook, as under exec.
HELPERS = ("uses-copyvars", "uses-selfref")


def qemu_env() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C", "QEMU_LD_PREFIX": str(SYSROOT)}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("aarch64")
    (d / "text.txt").write_text("The quick brown fox\njumps over the lazy dog\nso long, and thanks\n")
    pixels = b"".join(bytes(((x * 8) % 256, (y * 8) % 256, 128)) for y in range(16) for x in range(16))
    (d / "image.ppm").write_bytes(b"P6\n16 16\n255\n" + pixels)
    return {"TEXT": str(d / "text.txt"), "PPM": str(d / "image.ppm")}


@pytest.fixture(scope="module", params=["preload", "warm"])
def a64_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    saved = os.environ.get("QEMU_LD_PREFIX")
    os.environ["QEMU_LD_PREFIX"] = str(SYSROOT)
    option = "--app" if request.param == "preload" else "--warm"
    programs = [str(Path(SYSROOT) / rel) for rel, _, _ in PROGRAMS.values()]
    programs += [str(Path(BUILD) / "tests/helpers" / name) for name in HELPERS]
    try:
        with private_daemon([], [a for p in programs for a in (option, p)], binary=Path(BUILD) / "headstartd") as d:
            yield d
    finally:
        if saved is None:
            del os.environ["QEMU_LD_PREFIX"]
        else:
            os.environ["QEMU_LD_PREFIX"] = saved


def run(argv: list[str], stdin: bytes, env: dict[str, str]) -> Result:
    p = subprocess.run(argv, input=stdin, env=env, capture_output=True, timeout=120, start_new_session=True)
    return Result(p.returncode, p.stdout, p.stderr)


def client(daemon: RunningDaemon) -> list[str]:
    return [str(Path(BUILD) / "headstart-run"), "--socket", str(daemon.socket)]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_arm64_debian_program_same_as_exec(a64_daemon, files, name):
    rel, args, stdin = PROGRAMS[name]
    argv = [
        str(Path(SYSROOT) / rel),
        *(a.replace("{TEXT}", files["TEXT"]).replace("{PPM}", files["PPM"]) for a in args),
    ]
    want = run(argv, stdin, qemu_env())
    before = a64_daemon.launches_started()
    got = run(client(a64_daemon) + argv, stdin, qemu_env())
    assert a64_daemon.launches_started() == before + 1, "not served"
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)
    assert want.stdout or want.stderr


@pytest.mark.parametrize("name", HELPERS)
def test_arm64_library_binds_to_the_program(a64_daemon, name):
    argv = [str(Path(BUILD) / "tests/helpers" / name), "-a", "-b", "v", "operand"]
    want = run(argv, b"", qemu_env())
    before = a64_daemon.launches_started()
    got = run(client(a64_daemon) + argv, b"", qemu_env())
    assert a64_daemon.launches_started() == before + 1, "not served"
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)
    for line in (
        b"bumped by the library: 8, seen by the program: 8",
        b"optind=4, first operand: operand",
        b"hook: the program's hook",
    ):
        assert line in got.stdout
