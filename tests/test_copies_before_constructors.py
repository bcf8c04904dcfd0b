"""Copy relocations are filled before the program's constructors run, as exec's loader fills them
(issue 30: the corpus run found Debian's pdftotext refusing every command line when served, its
static initialiser having read 0 for poppler's minColSpacing1_default). dlopen looked the copy up
in the program itself and copied it onto itself; the daemon's loadable copy of the program now has
those symbols undefined, and each launch defines them again in memory, so that the dynamic loader
still finds the program's copies afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import Served, base_env, daemon_in_mode, helper_path, run_exec, run_served
from headstart.daemon import RunningDaemon

PROGRAMS = {
    "copies-in-constructor": [str(helper_path("copies-in-constructor"))],
    "pdftotext -v": ["/usr/bin/pdftotext", "-v"],
    "pdftotext bad page": ["/usr/bin/pdftotext", "-f", "x", "/nonexistent.pdf", "-"],
    # The state main starts in: errno 0, as exec leaves it.
    "errno-at-main": [str(helper_path("errno-at-main"))],
    # A constructor's arguments (the daemon's, from dlopen), and its change of a copied variable.
    "constructor-args": [str(helper_path("constructor-args")), "one", "two words"],
}


@pytest.fixture(scope="module", params=["preload", "warm", "pool"])
def copies_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    programs = sorted({argv[0] for argv in PROGRAMS.values()})
    with daemon_in_mode(request.param, programs) as d:
        d.mode = request.param  # type: ignore[attr-defined]
        yield d


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_constructors_see_the_copies_as_under_exec(copies_daemon, name):
    argv = PROGRAMS[name]
    env = base_env()
    want = run_exec(argv, env=env)
    with Served(copies_daemon):
        got = run_served(copies_daemon, argv, env=env)
    if name == "constructor-args" and copies_daemon.mode != "preload":
        # Warm, its constructors ran once in the daemon, with the daemon's arguments (limitations.md).
        assert got.returncode == 0 and b"constructor: argc=" in got.stdout and b"[one]" not in got.stdout
        return
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)
    if name == "copies-in-constructor":
        assert b"constructor saw counter=7 greeting=hello from the library" in got.stdout
        assert b"the loader finds the program's copy: 1" in got.stdout
    if name == "constructor-args":
        assert got.stdout.startswith(b"constructor: argc=3 [") and b"[one] [two words]" in got.stdout
        assert b"environment is main's: 1, its argv is main's: 1\nmain: argc=3 opterr=5\n" in got.stdout
    if name == "errno-at-main":
        assert got.stdout == b"errno at main: 0\n"
    if name == "pdftotext -v":
        assert got.returncode == 0 and b"pdftotext version" in got.stderr
