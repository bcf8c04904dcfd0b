"""--app-later: programs whose libraries the first zygote leaves out, so that it is ready sooner for
the programs a device boots with; a fresh zygote loads them once the start is over. On the virtual
device, the second app's 13 libraries made the daemon's zygote ready 0.6 s later at boot
(docs/results.md). Until then their clients exec them; after, they are served as exec would run them."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from conftest import run_exec, run_served
from headstart.daemon import RunningDaemon, prepared_pending, private_daemon
from test_refresh import wait_generation
from test_refresh_names import build_lib, build_program

TRUE = Path("/usr/bin/true")


@pytest.fixture(autouse=True)
def _compiler() -> None:
    if not shutil.which("cc"):
        pytest.skip("no C compiler")


@pytest.fixture
def later(tmp_path: Path) -> Path:
    """A program whose library nothing else loads."""
    (tmp_path / "lib").mkdir()
    lib = build_lib(tmp_path / "lib" / "libhsfoo.so.1", "later")
    return build_program(tmp_path / "uses-hsfoo", lib, runpath="$ORIGIN/lib")


def loaded_by_zygote(d: RunningDaemon, name: str) -> bool:
    return name in Path(f"/proc/{d.zygote_pid()}/maps").read_text()


def programs(d: RunningDaemon) -> dict[str, str]:
    """The status's registered programs: path -> `MODE` or `MODE -- why`."""
    out = {}
    for line in d.status()["program"]:
        mode, _, rest = line.partition(" ")
        path, _, why = rest.partition(" -- ")
        out[path] = f"{mode} -- {why}" if why else mode
    return out


def test_the_first_zygote_leaves_them_out_and_the_next_one_serves_them(later):
    with private_daemon([TRUE], ["--app-later", str(later)]) as d:
        assert d.status()["generation"] == ["1"]
        assert programs(d)[str(later)].startswith("exec -- --app-later"), programs(d)
        assert not loaded_by_zygote(d, "libhsfoo"), d.log_text()
        before = d.launches_started()
        assert run_served(d, [str(later)]).stdout == run_exec([str(later)]).stdout == b"later\n"
        assert d.launches_started() == before, "a later program is exec'd until the next zygote"

        assert run_served(d, [str(TRUE)]).returncode == 0  # the start's first launch
        status = wait_generation(d, 2, timeout=30)
        assert status["started-because"][0].startswith("--app-later: "), status
        assert programs(d) == {str(TRUE): "preload", str(later): "preload"}
        assert loaded_by_zygote(d, "libhsfoo")
        before = d.launches_started()
        assert run_served(d, [str(later)]).stdout == b"later\n"
        assert d.launches_started() == before + 1, d.log_text()


def test_without_any_launch_the_next_zygote_still_comes(later):
    """A daemon nobody launches through in its first 20 s (at most 60 s on busy CPUs)."""
    with private_daemon([TRUE], ["--app-later", str(later)]) as d:
        status = wait_generation(d, 2, timeout=75)
        assert "no launch came" in status["started-because"][0], status
        assert run_served(d, [str(later)]).stdout == b"later\n"


def test_the_loaders_answers_for_a_later_program_outlive_the_first_zygote(later, tmp_path):
    """The first zygote writes the answers file without asking about the later program: its entry
    must stay for the zygote that loads it, or the loader is asked again at every boot."""
    first = tmp_path / "first"
    shutil.copy(TRUE, first)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    args = ["--app-later", str(later), "--learn-file", str(state / "learned")]
    log = ""
    for _ in range(2):
        # A new file at the first program's name: the first zygote asks the loader for it and writes
        # the file again, each time.
        shutil.copy(TRUE, tmp_path / "first.new")
        (tmp_path / "first.new").rename(first)
        with private_daemon([first], args) as d:
            assert run_served(d, [str(first)]).returncode == 0
            wait_generation(d, 2, timeout=30)
            log = d.log_text()
    assert "[zygote 1]: resolved the libraries of 1 programs in" in log and "(0 as at the last start)" in log, log
    assert "[zygote 2]: resolved the libraries of 2 programs in" in log, log
    zygote2 = log[log.index("[zygote 2]: resolved") :].splitlines()[0]
    assert zygote2.endswith("(2 as at the last start)"), zygote2


def test_a_program_registered_both_ways_is_served_from_the_start(later):
    with private_daemon([later], ["--app-later", str(later)]) as d:
        assert "is registered already" in d.log_text(), d.log_text()
        assert programs(d) == {str(later): "preload"}
        before = d.launches_started()
        assert run_served(d, [str(later)]).stdout == b"later\n"
        assert d.launches_started() == before + 1
        time.sleep(0.5)
        assert d.status()["generation"] == ["1"], "nothing was left for a next zygote"


def test_its_prepared_child_is_due_until_the_next_zygote(later):
    """What a benchmark waits on before it measures a launch (`prepared_pending`): a later program's
    child is still to come while the first zygote serves, not refused."""
    with private_daemon([TRUE], ["--app-later", str(later), "--prepare-display", str(later)]) as d:
        line = d.prepared_line(str(later))
        assert line is not None and prepared_pending(line) and "--app-later" in line, line
        assert "--prepare-display" not in d.log_text(), "no warning for a program the next zygote prepares"
        assert run_served(d, [str(TRUE)]).returncode == 0
        wait_generation(d, 2, timeout=30)
        line = d.prepared_line(str(later))
        assert line is not None and line.startswith("refused "), line  # it links no toolkit
