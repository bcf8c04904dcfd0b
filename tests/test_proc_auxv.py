"""/proc/self/auxv of a served program describes the program, as getauxval() does.

The kernel's copy of the auxiliary vector is the one exec gave the daemon: a served program read
headstartd's entry point, program headers and file name in /proc/self/auxv (od showed them) while
getauxval() answered the program's. The child now gives the kernel the vector it adopted (PR_SET_MM_MAP)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import Served, daemon_in_mode, run_exec, run_served
from headstart.daemon import RunningDaemon

OD = "/usr/bin/od"
DUMP = [OD, "-A", "n", "-t", "u8", "-w16", "/proc/self/auxv"]
AT_PHDR, AT_PHNUM, AT_ENTRY = 3, 5, 9


@pytest.fixture(scope="module", params=["preload", "warm", "pool"])
def od_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    with daemon_in_mode(request.param, [OD]) as d:
        yield d


def vector(stdout: bytes) -> dict[int, int]:
    pairs = [line.split() for line in stdout.decode().splitlines() if line.strip()]
    return {int(t): int(v) for t, v in pairs}


def test_proc_self_auxv_names_the_program(od_daemon):
    by_exec = run_exec(DUMP)
    with Served(od_daemon):
        served = run_served(od_daemon, DUMP)
    assert served.returncode == by_exec.returncode == 0, served
    e, s = vector(by_exec.stdout), vector(served.stdout)
    assert sorted(s) == sorted(e)
    assert s[AT_PHNUM] == e[AT_PHNUM]
    # Where od is loaded differs from run to run; where its headers lie from its entry does not.
    assert s[AT_PHDR] - s[AT_ENTRY] == e[AT_PHDR] - e[AT_ENTRY]
