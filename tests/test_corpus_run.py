"""The corpus run (issue 30), a small fixed slice of it: the same code as `make corpus` over a dozen
unmodified Debian programs (C and C++, one of each reason for exec that `make deps` installs): each
one's verdict, the served ones launched through a real headstartd and by exec with --version,
--help and a sample stdin, and no difference. The whole run is `make corpus` (docs/results.md)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from headstart.corpus.cases import HELP, VERSION
from headstart.corpus.daemons import batch_daemon
from headstart.corpus.launch import run_exec, run_served, session_members
from headstart.corpus.report import describe, render
from headstart.corpus.run import Settings, environment, run_corpus, unprivileged

SERVED = ["/usr/bin/gzip", "/usr/bin/sort", "/usr/bin/cat", "/usr/bin/sed", "/usr/bin/xxd", "/usr/bin/jq",
          "/usr/bin/sqlite3", "/usr/bin/qpdf", "/usr/bin/exiv2", "/usr/bin/m4"]  # fmt: skip
EXEC = {
    "/usr/bin/gawk": "not position-independent (ET_EXEC)",
    "/usr/bin/perl": "has thread-local storage in the executable",
    "/usr/bin/passwd": "set-user-ID or set-group-ID",
}


def test_the_slice_is_served_and_identical_to_exec():
    results = run_corpus([*SERVED, *EXEC], Settings(timeout=30, batch=5, who=unprivileged()), lambda what, n: None)
    by_path = {r.path: r for r in results}
    for path, reason in EXEC.items():
        assert by_path[path].outcome == "exec" and by_path[path].why.startswith(reason), by_path[path]
        assert not by_path[path].launches
    for path in SERVED:
        r = by_path[path]
        # Served is what the daemon's log says it started, for every launch, warm as registered (the
        # C++ ones, qpdf and exiv2, with their static destructors registered in each launch).
        assert (r.outcome, r.served_mode) == ("served", "warm"), (path, r.outcome, r.why)
        assert [x.case for x in r.launches][:2] == [VERSION.label, HELP.label]
        for x in r.launches:
            assert x.result == "same", f"{path} {x.case}: {describe(x.exec_run, x.served_run)}"
    # cat, sort, sed, gzip and m4 say in their help that they read standard input: filters.
    assert {p for p in SERVED if len(by_path[p].launches) == 3} >= {"/usr/bin/cat", "/usr/bin/sort"}
    out = io.StringIO()
    render(results, out)
    assert "| served (warm) | 10 |" in out.getvalue()
    assert "Differences between served and exec (0):" in out.getvalue()


def test_a_program_that_hangs_is_stopped_both_ways():
    """A launch that does not end is stopped after the timeout, by exec and served (the served
    program is the daemon's child, in a session of its own), and nothing of it stays."""
    who = unprivileged()
    argv = ["/usr/bin/sleep", "600"]
    with tempfile.TemporaryDirectory() as tmp, batch_daemon(["/usr/bin/sleep"], who) as daemon:
        os.chmod(tmp, 0o755)  # the launches run as nobody when we are root
        env = environment(Path(tmp) / "home")
        started = time.monotonic()
        by_exec = run_exec(argv, b"", env, who, 1.0)
        served = run_served(daemon, argv, b"", env, who, 1.0)
        assert time.monotonic() - started < 20
        pid = int(daemon.log_text().split("started /usr/bin/sleep as ")[1].split()[0])
    assert by_exec.status is None and served.status is None
    assert served.served == "warm"
    assert session_members(pid) == []


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--batch", "0", "argument --batch: expected a whole number from 1"),  # was a traceback
        ("--batch", "-1", "argument --batch: expected a whole number from 1"),  # ran no program, status 0
        ("--timeout", "nan", "argument --timeout: not a number of seconds above 0"),  # was a traceback
        ("--timeout", "0", "argument --timeout: not a number of seconds above 0"),  # every launch a "hang"
        ("--json", "/nonexistent/corpus.json", "no such folder: /nonexistent"),  # a traceback after the run
    ],
)
def test_options_are_checked_before_anything_runs(option, value, said):
    done = subprocess.run([sys.executable, "-m", "headstart.corpus", "--programs", "/bin/true", option, value],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert said in done.stderr
