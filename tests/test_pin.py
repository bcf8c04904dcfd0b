"""headstart-pind keeps the planned ranges resident within its budget, most valuable first; re-pins a
file replaced on disk, drops one changed in place, survives one truncated; reports bad plan lines
and a small RLIMIT_MEMLOCK in one line each. `headstart pin plan` writes plans from cold profiles."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import SANITIZED, bin_path
from headstart.profiling import files

# AddressSanitizer's interceptor turns mlock into a no-op (it would lock the shadow memory too).
pytestmark = pytest.mark.skipif(SANITIZED, reason="ASan makes mlock a no-op; the normal build's run tests pinning")

MIB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


def data_file(path: Path, size: int = 8 * MIB) -> Path:
    path.write_bytes(os.urandom(size))
    os.sync()
    return path


def write_plan(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(["headstart-pin-plan 1", *lines, "end"]) + "\n")
    return path


@contextmanager
def pind(plan: Path, budget: str, log: Path, prefix: list[str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    cmd = [*(prefix or []), str(bin_path("headstart-pind")), "--plan", str(plan), "--budget", budget, "--interval", "1"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 30
        while "ready: pinning" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def locked_kib(proc: subprocess.Popen[bytes]) -> int:
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("VmLck:"):
            return int(line.split()[1])
    raise AssertionError("no VmLck")


def resident_after_evict(path: Path) -> int:
    files.evict([str(path)])
    return files.residency(str(path)) or 0


def test_pinned_ranges_stay_resident_within_the_budget_most_valuable_first(tmp_path):
    data = data_file(tmp_path / "data.bin")
    plan = write_plan(
        tmp_path / "plan",
        [f"file {8 * MIB} {data}", f"range 0 {MIB // 2} 5", f"range {4 * MIB} {MIB} 9", f"range {6 * MIB} {MIB} 1"],
    )
    assert resident_after_evict(data) == 0  # nothing keeps it cached before pinning
    with pind(plan, "1M", tmp_path / "log") as proc:
        assert locked_kib(proc) == 1024  # the weight-9 MiB; the others do not fit the budget
        assert resident_after_evict(data) == MIB // PAGE
    assert resident_after_evict(data) == 0  # released when it stops
    assert "pinned 1024 KiB of " + str(data) in (tmp_path / "log").read_text()


def test_bad_plan_lines_and_missing_files_are_one_line_each_and_the_rest_is_pinned(tmp_path):
    data = data_file(tmp_path / "data.bin", MIB)
    plan = write_plan(
        tmp_path / "plan",
        ["this is not a plan line", f"file 10 {tmp_path / 'missing'}", "range 0 10 3", f"file {MIB} {data}",
         f"range 0 {MIB} 2", f"file 5 {data}", "range 0 5 7"],
    )  # fmt: skip
    with pind(plan, "64M", tmp_path / "log") as proc:
        assert locked_kib(proc) == 1024
    log = (tmp_path / "log").read_text()
    assert log.count("skipped, not a plan line") == 1
    assert log.count("missing: cannot open it; not pinned") == 1
    assert log.count("where the plan has 5; not pinned") == 1
    done = subprocess.run([str(bin_path("headstart-pind")), "--plan", str(data)], capture_output=True, text=True)
    assert done.returncode == 1 and "is not a pin plan" in done.stderr and done.stderr.count("\n") == 1


def test_a_replaced_file_is_pinned_anew_and_one_changed_in_place_is_dropped(tmp_path):
    data = data_file(tmp_path / "lib.so", 2 * MIB)
    plan = write_plan(tmp_path / "plan", [f"file {2 * MIB} {data}", f"range 0 {2 * MIB} 1"])
    log = tmp_path / "log"
    with pind(plan, "64M", log) as proc:
        old_inode = data.stat().st_ino
        new = data_file(tmp_path / "lib.so.new", 2 * MIB)
        new.rename(data)  # what a package upgrade does
        assert data.stat().st_ino != old_inode
        deadline = time.monotonic() + 30
        while "pinning again" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        time.sleep(0.3)
        assert locked_kib(proc) == 2048 and resident_after_evict(data) == 2 * MIB // PAGE
        with open(data, "r+b") as f:  # changed in place: the plan's ranges may hold other data now
            f.write(b"changed")
        while "changed in place" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        time.sleep(0.3)
        assert locked_kib(proc) == 0
        os.truncate(data, PAGE)  # cut short under a mapping: no SIGBUS for the daemon
        time.sleep(1.5)
        assert proc.poll() is None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_a_small_memlock_limit_is_one_clear_line_and_what_fits_is_pinned():
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # pytest's are closed to other users
        tmp_path = Path(tmp)
        tmp_path.chmod(0o755)
        small_memlock(tmp_path)


def small_memlock(tmp_path: Path) -> None:
    data = data_file(tmp_path / "data.bin", 2 * MIB)
    data.chmod(0o644)
    plan = write_plan(tmp_path / "plan", [f"file {2 * MIB} {data}", f"range 0 {MIB} 2", f"range {MIB} {MIB} 1"])
    plan.chmod(0o644)
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "prlimit", "--memlock=1100000:1100000"]
    with pind(plan, "64M", tmp_path / "log", nobody) as proc:
        assert locked_kib(proc) == 1024
    log = (tmp_path / "log").read_text()
    assert "RLIMIT_MEMLOCK (1074 KiB) stops pinning at 1024 KiB of the 2048 KiB planned" in log, log
    assert "LimitMEMLOCK=" in log


def test_pin_plan_from_a_cold_profile(tmp_path):
    profile = tmp_path / "fft.json"
    fft = str(bin_path("fft"))
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "profile", "--runs", "1", "--cold", "-o", str(profile), "--", fft, "64"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    plan = tmp_path / "plan"
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "pin", "plan", str(profile), "--budget", "256K", "-o", str(plan)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = plan.read_text().splitlines()
    assert lines[0] == "headstart-pin-plan 1" and lines[-1] == "end"
    ranges = [line.split() for line in lines if line.startswith("range ")]
    assert ranges and sum(int(r[2]) for r in ranges) <= 256 * 1024
    assert any(line.startswith("file ") and line.endswith("libc.so.6") for line in lines)
    with pind(plan, "64M", tmp_path / "log") as proc:  # headstart-pind takes it as it is
        assert 0 < locked_kib(proc) <= 256
    warm = subprocess.run(
        [sys.executable, "-m", "headstart", "profile", "--runs", "1", "-o", str(tmp_path / "warm.json"), "--", fft],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "pin", "plan", str(tmp_path / "warm.json")], capture_output=True, text=True
    )
    assert warm.returncode == 0 and done.returncode == 1 and "profile with --cold" in done.stderr
