"""Libraries that define a symbol of the C library ahead of it (issue 30): man-db's libman carries
gnulib's argp, and under exec man, whatis and the others bind argp_parse to it; a served program
looks in the daemon's global scope first, where the C library is, and printed glibc's help instead
(the corpus run found it). The daemon sends such programs to exec, saying which symbol; programs
whose libraries only define versioned glibc symbols (libm's finite) stay served."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from conftest import bin_path
from headstart.daemon import RunningDaemon, private_daemon
from test_fallback import assert_fallback


def verdict(program: str) -> dict:
    out = subprocess.run([str(bin_path("headstartd")), "--check", program], capture_output=True, text=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def man_daemon() -> Iterator[RunningDaemon]:
    with private_daemon([], extra_args=["--warm", "/usr/bin/whatis"]) as d:
        yield d


def test_a_library_interposing_on_the_c_library_sends_the_program_to_exec():
    v = verdict("/usr/bin/whatis")
    assert v["mode"] == "exec"
    assert "argp_parse in /usr/lib/man-db/libman" in v["reason"]


def test_such_a_program_runs_by_exec_with_the_reason(man_daemon):
    assert_fallback(man_daemon, ["/usr/bin/whatis", "--help"], b"defines a symbol of the C library")


@pytest.mark.parametrize("program", ["/usr/bin/ls", "/usr/bin/sqlite3", "/usr/bin/lame", "/usr/bin/qpdf"])
def test_libm_and_other_libraries_do_not_count(program):
    assert verdict(program)["mode"] == "warm"
