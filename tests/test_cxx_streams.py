"""C++ programs that copy libstdc++'s standard streams (issue 30): std::cout and the others are built
by ios_base::Init, point into themselves and at each other (cin, cerr tied to cout). Under exec they
are built in the program's copies; the daemon moves them there, and every pointer into them, so a
served program sees what exec gives: its streams tied to its own cout, their storage inside them,
and cerr flushing a buffered cout first.

Our sample (tests/helpers/cxx-streams.cpp) prints each of those; Debian's qpdf, cmake's tools and
mkvtoolnix copy the streams too (by copy relocations, as Debian builds them)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from conftest import Served, base_env, daemon_in_mode, helper_path
from headstart import binaries
from headstart.daemon import RunningDaemon

SAMPLE = "cxx-streams"
# Debian's programs reaching a stream by a copy relocation, and how each is run.
DEBIAN = {
    "qpdf --version": ["/usr/bin/qpdf", "--version"],
    "qpdf --check": ["/usr/bin/qpdf", "--check", "{PDF}"],
    "qpdf bad option": ["/usr/bin/qpdf", "--no-such-option"],
}


def copies_streams(path: str) -> bool:
    out = subprocess.run(["readelf", "-rW", path], capture_output=True, text=True, check=True).stdout
    return any("R_X86_64_COPY" in line and "_ZSt" in line for line in out.splitlines())


@pytest.fixture(scope="module", params=["preload", "warm", "pool"])
def streams_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    programs = [str(helper_path(SAMPLE)), "/usr/bin/qpdf"]
    with daemon_in_mode(request.param, programs) as d:
        yield d


def run_both(daemon: RunningDaemon, argv: list[str], stdin: bytes) -> tuple[bytes, bytes]:
    """stdout and stderr into one pipe, so that the order of their writes shows; (exec, served)."""
    client = [str(binaries.find("headstart-run")), "--socket", str(daemon.socket)]
    env = base_env()
    outs = []
    for prefix in ([], client):
        p = subprocess.run(prefix + argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                           start_new_session=True, timeout=60)  # fmt: skip
        outs.append(p.stdout + b"\nexit %d\n" % p.returncode)
    return outs[0], outs[1]


@pytest.mark.parametrize("args", [[], ["--unsync"]])
def test_streams_are_built_in_the_programs_copies(streams_daemon, args):
    argv = [str(helper_path(SAMPLE)), *args]
    assert copies_streams(argv[0])
    with Served(streams_daemon):
        by_exec, served = run_both(streams_daemon, argv, b"ab\ncd\n")
    assert served == by_exec
    for line in (b"cin tied to cout: 1", b"cerr tied to cout: 1", b"wcin tied to wcout: 1",
                 b"cout's words inside it: 1", b"cin's words inside it: 1", b"read 4 bytes from cin"):  # fmt: skip
        assert line in served
    if args:
        assert b"buffered in cout, flushed by the tie; then cerr\ncout again\n" in served


@pytest.mark.parametrize("name", sorted(DEBIAN))
def test_debian_cxx_program_as_exec(streams_daemon, name, tmp_path):
    pdf = tmp_path / "empty.pdf"
    subprocess.run(["qpdf", "--empty", str(pdf)], check=True)
    argv = [a.replace("{PDF}", str(pdf)) for a in DEBIAN[name]]
    assert copies_streams(argv[0])
    with Served(streams_daemon):
        by_exec, served = run_both(streams_daemon, argv, b"")
    assert served == by_exec
