"""The zygote asks the dynamic loader for each registered program's libraries (`ld.so --list`) only
when something the loader's answer depends on changed since its last start: on the virtual device
that question took 1.5 s of the daemon's start at boot (docs/results.md). The answers are kept beside
the learned file (`closures`); one that no longer holds must never be used, or served programs would
run with other libraries than exec gives them."""

from __future__ import annotations

import os
import re
import shutil
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from conftest import run_exec, run_served
from headstart.daemon import RunningDaemon, private_daemon
from test_refresh_names import build_lib, build_program


@pytest.fixture(autouse=True)
def _compiler() -> None:
    if not shutil.which("cc"):
        pytest.skip("no C compiler")


def taken_from_last_start(d: RunningDaemon) -> int:
    """How many programs' libraries this zygote took from its last start's answers (its log)."""
    found = re.findall(r"resolved the libraries of \d+ programs in \d+ us \((\d+) as at the last start\)", d.log_text())
    assert found, d.log_text()
    return int(found[-1])


def start(prog: Path, state: Path) -> AbstractContextManager[RunningDaemon]:
    return private_daemon([prog], ["--learn-file", str(state / "learned")])


def served_says(d: RunningDaemon, prog: Path) -> bytes:
    before = d.launches_started()
    out = run_served(d, [str(prog)]).stdout
    assert d.launches_started() == before + 1, d.log_text()
    return out


@pytest.fixture
def uses_hsfoo(tmp_path: Path) -> tuple[Path, Path]:
    """A program whose RUNPATH names an empty folder before the one its library is in."""
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    build_lib(tmp_path / "second" / "libhsfoo.so.1", "second")
    prog = build_program(
        tmp_path / "uses-hsfoo", tmp_path / "second" / "libhsfoo.so.1", runpath="$ORIGIN/first:$ORIGIN/second"
    )
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    return prog, state


def test_a_restart_takes_the_libraries_from_the_last_start(uses_hsfoo):
    prog, state = uses_hsfoo
    with start(prog, state) as d:
        assert taken_from_last_start(d) == 0
        assert served_says(d, prog) == b"second\n"
    assert (state / "closures").is_file()
    with start(prog, state) as d:
        assert taken_from_last_start(d) == 1
        assert served_says(d, prog) == run_exec([str(prog)]).stdout == b"second\n"


@pytest.mark.parametrize(
    ("folder", "says"),
    [
        # The loader looked in `first` and found nothing: a library put there since is what exec loads.
        ("first", "first"),
        # A new file at the name it took (another inode) may need other libraries: the loader is asked.
        ("second", "second, rebuilt"),
    ],
)
def test_a_library_put_since_at_a_name_the_loader_looked_at_is_what_the_next_start_serves(uses_hsfoo, folder, says):
    prog, state = uses_hsfoo
    with start(prog, state):
        pass
    build_lib(prog.parent / folder / "libhsfoo.so.1", says)
    with start(prog, state) as d:
        assert taken_from_last_start(d) == 0
        assert served_says(d, prog) == run_exec([str(prog)]).stdout == f"{says}\n".encode()


@pytest.mark.parametrize("content", [b"not ours\n", b"headstart-closures 1\n", b"\x00\xff"])
def test_a_file_that_is_no_cache_of_ours_is_a_warning_and_written_again(uses_hsfoo, content):
    prog, state = uses_hsfoo
    (state / "closures").write_bytes(content)
    (state / "closures").chmod(0o600)
    with start(prog, state) as d:
        assert taken_from_last_start(d) == 0
        assert re.search(r"closures: malformed; the dynamic loader is asked", d.log_text()), d.log_text()
        assert served_says(d, prog) == b"second\n"
    with start(prog, state) as d:
        assert taken_from_last_start(d) == 1


def test_a_cache_another_user_could_have_written_is_not_read(uses_hsfoo):
    """It names what the zygote preloads: only a file of the daemon's own user is read."""
    prog, state = uses_hsfoo
    with start(prog, state):
        pass
    if os.geteuid() != 0:
        pytest.skip("giving the file to another user needs root")
    os.chown(state / "closures", 65534, 65534)
    with start(prog, state) as d:
        assert taken_from_last_start(d) == 0
        assert "closures: owned by another user" in d.log_text(), d.log_text()
