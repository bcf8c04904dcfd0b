"""Unmodified executables (-fPIE, no exported main, copy relocations) behave through the daemon
exactly as by exec, and the ones it cannot make faithful go to exec with the reason."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import Served, base_env, daemon_in_mode, helper_path, run_exec, run_served
from headstart.daemon import RunningDaemon
from test_fallback import assert_fallback

SERVED = ("uses-copyvars", "observe-copyreloc", "observe-noexport")
REFUSED = ("uses-selfref", "reads-exe")

# What a served program sees differently by design: its own session (docs/limitations.md).
SESSION_LINES = (b"own_process_group=", b"session_leader=")


@pytest.fixture(scope="module", params=["preload", "warm", "pool"])
def unmodified_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    programs = [str(helper_path(p)) for p in (*SERVED, *REFUSED)]
    with daemon_in_mode(request.param, programs) as d:
        yield d


def same_as_exec(daemon: RunningDaemon, argv: list[str], env: dict[str, str] | None = None) -> bytes:
    env = env or base_env(COPYVARS="from the client")
    want = run_exec(argv, env=env)
    with Served(daemon):
        got = run_served(daemon, argv, env=env)
    assert (got.returncode, got.stderr) == (want.returncode, want.stderr)
    assert got.stdout == want.stdout
    return got.stdout


@pytest.mark.parametrize("args", [["-a", "-b", "value", "operand"], ["-b"], ["-z", "x"], []])
def test_copy_relocations_and_getopt_as_exec(unmodified_daemon, args):
    out = same_as_exec(unmodified_daemon, [str(helper_path("uses-copyvars")), *args])
    if args and args[0] == "-a":
        # Each of these fails if a library keeps its own copy: getopt's optind and optarg, the
        # library's counter, the program's hook, environ.
        assert b"option b value\noptind=4, first operand: operand\n" in out
        assert b"bumped by the library: 8, seen by the program: 8\n" in out
        assert b"hook: the program's hook\n" in out
        assert b"environ has COPYVARS=from the client\n" in out


@pytest.mark.parametrize("variant", ["observe-copyreloc", "observe-noexport"])
def test_what_an_unmodified_program_observes_is_as_exec(unmodified_daemon, variant):
    argv = [str(helper_path(variant)), "report", "x"]
    env = base_env(ONLY="client")
    want = run_exec(argv, env=env)
    with Served(unmodified_daemon):
        got = run_served(unmodified_daemon, argv, env=env)

    def comparable(report: bytes) -> bytes:
        return b"\n".join(line for line in report.split(b"\n") if not line.startswith(SESSION_LINES))

    assert got.returncode == want.returncode == 0
    assert comparable(got.stdout) == comparable(want.stdout)
    for line in (f"execfn={argv[0]}".encode(), b"auxv_entry_in_program=1", b"auxv_phdr_in_program=1"):
        assert line in got.stdout


@pytest.mark.parametrize(
    ("program", "reason"),
    [("uses-selfref", b"pointers into itself"), ("reads-exe", b"/proc/self/exe")],
)
def test_unfaithful_programs_go_to_exec(unmodified_daemon, program, reason):
    assert_fallback(unmodified_daemon, [str(helper_path(program))], reason)


def check(*programs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headstart", "check", "--json", *programs], capture_output=True, text=True
    )


@pytest.mark.parametrize(
    ("program", "reason"),
    [
        ("uses-copyvars", None),
        ("observe-noexport", None),
        ("observe-copyreloc", None),
        ("uses-selfref", "pointers into itself"),
        ("reads-exe", "/proc/self/exe"),
        ("qt-app-dir", None),
        ("observe-tls", "thread-local storage"),
        ("observe-nopie", "not position-independent"),
        ("observe-static", "statically linked"),
    ],
)
def test_check_gives_the_daemons_verdict(program, reason):
    path = helper_path(program)
    if not path.exists():
        pytest.skip(f"{program} was not built")
    p = check(str(path))
    assert p.returncode == (0 if reason is None else 1), p.stderr  # 1: not served
    (verdict,) = [json.loads(line) for line in p.stdout.splitlines()]
    if reason is None:
        assert verdict["mode"] == "warm" and verdict["modes"] == ["preload", "warm"], verdict
    else:
        assert verdict["mode"] == "exec" and verdict["modes"] == [] and reason in verdict["reason"], verdict


def test_check_setuid_and_missing_programs(tmp_path):
    copy = tmp_path / "observe-setuid"
    shutil.copy(helper_path("observe"), copy)
    copy.chmod(0o755 | stat.S_ISUID)
    p = check(str(copy), str(tmp_path / "missing"))
    assert p.returncode == 1
    verdicts = [json.loads(line) for line in p.stdout.splitlines()]
    assert "set-user-ID" in verdicts[0]["reason"]
    assert verdicts[1]["reason"] == "cannot find the program"
    assert "cannot find" in p.stderr and "Traceback" not in p.stderr


def headstart(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "headstart", *args], capture_output=True, text=True, input=stdin)


def test_check_many_programs_from_a_folder_a_package_and_a_list(tmp_path):
    """A folder's ELF programs (not its script, not a link to one already counted), a package's, a
    list's: one verdict each, and a summary counting the verdicts by reason."""
    shutil.copy(helper_path("observe"), tmp_path / "observe")
    shutil.copy(helper_path("observe-tls"), tmp_path / "observe-tls")
    (tmp_path / "observe-link").symlink_to(tmp_path / "observe")
    (tmp_path / "script").write_text("#!/bin/sh\n")
    (tmp_path / "script").chmod(0o755)
    setuid = tmp_path / "observe-setuid"
    shutil.copy(helper_path("observe"), setuid)
    setuid.chmod(0o4755)
    got = headstart("check", "--json", "--dir", str(tmp_path))
    verdicts = {json.loads(line)["program"]: json.loads(line) for line in got.stdout.splitlines()}
    assert sorted(verdicts) == [str(tmp_path / n) for n in ("observe", "observe-setuid", "observe-tls")]
    assert got.returncode == 1  # two go to exec
    table = headstart("check", "--dir", str(tmp_path)).stdout
    assert "3 programs" in table and "set-user-ID" in table and "thread-local storage" in table

    package = headstart("check", "--json", "--package", "gzip")
    assert package.returncode == 0, package.stderr
    names = {json.loads(line)["program"].rsplit("/", 1)[-1] for line in package.stdout.splitlines()}
    assert "gzip" in names and "zcat" not in names  # zcat is a script
    # xz's links (unxz, xzcat, lzma...) are xz: judged once, not once a name (ssh and slogin were twice).
    package = headstart("check", "--json", "--package", "xz-utils")
    real = [os.path.realpath(json.loads(line)["program"]) for line in package.stdout.splitlines()]
    assert real.count(os.path.realpath("/usr/bin/xz")) == 1, real
    # A package with no program says so in one line; it used to ask for a program to check.
    data_only = headstart("check", "--package", "tzdata")
    assert (
        data_only.returncode == 1 and data_only.stderr == "headstart: no program in package tzdata: nothing to check\n"
    )

    listed = headstart("check", "--json", "--list", "-", stdin=f"# a comment\n{helper_path('observe')}\n\n")
    assert [json.loads(line)["mode"] for line in listed.stdout.splitlines()] == ["warm"]
    nothing = headstart("check", "--dir", str(tmp_path / "script"))
    assert nothing.returncode != 0 and nothing.stderr.count("\n") == 1 and "not a folder" in nothing.stderr
    none = headstart("check")
    assert none.returncode == 2 and "no program to check" in none.stderr
