"""headstart-pind keeps the planned ranges resident within its budget, most valuable first, each page
once however many ranges list it; re-pins a file replaced on disk, drops one changed in place,
survives one truncated; reports bad plan lines and a small RLIMIT_MEMLOCK in one line each; refuses a
plan that other users could change; loads a large plan fast, and stops while loading at SIGTERM.
`headstart pin plan` writes plans from cold profiles."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import chrome_trace
import pytest
from conftest import SANITIZED, base_env, bin_path, run_served
from headstart.daemon import private_daemon
from headstart.profiling import files

# AddressSanitizer's interceptor turns mlock into a no-op (it would lock the shadow memory too).
pytestmark = pytest.mark.skipif(SANITIZED, reason="ASan makes mlock a no-op; the normal build's run tests pinning")

MIB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


def data_file(path: Path, size: int = 8 * MIB) -> Path:
    path.write_bytes(os.urandom(size))
    os.sync()
    return path


def write_plan(path: Path, lines: list[str], programs: list[tuple[Path | str, float]] | None = None) -> Path:
    """A plan with its programs (path, launches; by default one program launched once) and lines."""
    declared = [f"program {i} {n} {p}" for i, (p, n) in enumerate(programs or [("/usr/bin/true", 1)])]
    path.write_text("\n".join(["headstart-pin-plan 2", *declared, *lines, "end"]) + "\n")
    return path


@contextmanager
def pind(
    plan: Path, budget: str, log: Path, prefix: list[str] | None = None, extra: list[str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    cmd = [*(prefix or []), str(bin_path("headstart-pind")), "--plan", str(plan), "--budget", budget, "--interval", "1"]
    cmd += extra or ["--launch-socket", "none"]
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
    config = data_file(tmp_path / "config", 100)
    plan = write_plan(
        tmp_path / "plan",
        [f"file {8 * MIB} {data}", f"range 0 {MIB // 2} 0", f"range {4 * MIB} {MIB} 1,2", f"range {6 * MIB} {MIB} 2",
         f"file 100 {config}"],
        [("/usr/bin/a", 5), ("/usr/bin/b", 8), ("/usr/bin/c", 1)],
    )  # fmt: skip
    assert resident_after_evict(data) == 0  # nothing keeps it cached before pinning
    with pind(plan, "1M", tmp_path / "log") as proc:
        assert locked_kib(proc) == 1024  # the MiB worth 8+1 launches; the others do not fit the budget
        held = {os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{proc.pid}/fd")}
        assert str(config) in held  # a file with no range: held open, its inode and path cached
        if os.geteuid() == 0:  # the whole page cache dropped: the pinned MiB stays, nothing else
            files.drop_all()
            assert files.resident_pages(str(data)) == set(range(4 * MIB // PAGE, 5 * MIB // PAGE))
        assert resident_after_evict(data) == MIB // PAGE
        log = tmp_path / "log"
        # At start one line sums it up: a device loads its plan at every boot, hundreds of files.
        assert "pinned 1024 KiB of the budget's 1024 KiB (files: 1, programs: 3)" in log.read_text()
        assert f"KiB of {data}" not in log.read_text()
        proc.send_signal(signal.SIGUSR1)
        wait_for(lambda: f"pinned 1024 KiB of {data}" in log.read_text(), "no status on SIGUSR1", log)
    assert resident_after_evict(data) == 0  # released when it stops


def wait_for(condition, what: str, log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}; log:\n{log.read_text()}"
        time.sleep(0.1)


def two_programs_plan(tmp_path: Path, often: Path) -> tuple[Path, Path, Path]:
    """A plan where /usr/bin/true (5 launches so far) needs one file and `often` (1) another, and a
    budget of 1M holds only one of them."""
    first, second = data_file(tmp_path / "true.data", MIB), data_file(tmp_path / "often.data", MIB)
    plan = write_plan(
        tmp_path / "plan",
        [f"file {MIB} {first}", f"range 0 {MIB} 0", f"file {MIB} {second}", f"range 0 {MIB} 1"],
        [("/usr/bin/true", 5), (often, 1)],
    )
    return plan, first, second


def pages_move_to(often: Path, second: Path, first: Path, log: Path) -> None:
    wait_for(lambda: "re-pinned after launch counts changed" in log.read_text(), "no re-pin", log)
    assert resident_after_evict(second) == MIB // PAGE
    assert resident_after_evict(first) == 0


def test_served_launches_move_the_pages_to_the_program_launched_often(tmp_path):
    fft = bin_path("fft")
    plan, first, second = two_programs_plan(tmp_path, fft)
    sock, log = tmp_path / "launches.socket", tmp_path / "log"
    extra = ["--half-life", "1", "--launch-socket", str(sock)]  # the daemon beside it, as installed
    with private_daemon([fft], extra_args=["--no-learn", "--report-launches", str(sock)]) as daemon:
        with pind(plan, "1M", log, extra=extra) as proc:
            assert locked_kib(proc) == 1024 and resident_after_evict(first) == MIB // PAGE
            # Any user may write to the socket; a report from another program than headstartd (a
            # user steering the pages away from the home screen) is not counted.
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                for _ in range(1000):
                    s.sendto(str(fft).encode(), str(sock))
            time.sleep(2.5)  # two re-scorings (--interval 1): counted, 1000 launches would win the budget
            assert "re-pinned after launch counts changed" not in log.read_text(), log.read_text()
            assert resident_after_evict(first) == MIB // PAGE
            for _ in range(8):
                assert run_served(daemon, [str(fft), "16"], env=base_env()).returncode == 0
            pages_move_to(fft, second, first, log)
            assert locked_kib(proc) == 1024  # the budget holds
            proc.send_signal(signal.SIGUSR1)
            wait_for(lambda: f"program {fft}: " in log.read_text(), "no status on SIGUSR1", log)


def test_launches_of_users_not_named_by_launch_users_do_not_count(tmp_path):
    # Any user can raise a count (a program its headstartd serves can send any report); a device
    # names the user whose launches matter.
    fft = bin_path("fft")
    plan, first, _ = two_programs_plan(tmp_path, fft)
    sock, log = tmp_path / "launches.socket", tmp_path / "log"
    other = "nobody" if os.geteuid() != 65534 else "root"
    extra = ["--half-life", "1", "--launch-socket", str(sock), "--launch-users", other]
    with private_daemon([fft], extra_args=["--no-learn", "--report-launches", str(sock)]) as daemon:
        with pind(plan, "1M", log, extra=extra):
            for _ in range(8):
                assert run_served(daemon, [str(fft), "16"], env=base_env()).returncode == 0
            time.sleep(2.5)  # two re-scorings (--interval 1)
            assert "re-pinned after launch counts changed" not in log.read_text(), log.read_text()
            assert resident_after_evict(first) == MIB // PAGE


@pytest.mark.skipif(os.geteuid() != 0, reason="fanotify (counting launches by exec) needs CAP_SYS_ADMIN")
def test_launches_by_exec_are_counted_too(tmp_path):
    often = tmp_path / "often"
    shutil.copy(bin_path("fft"), often)
    plan, first, second = two_programs_plan(tmp_path, often)
    with pind(plan, "1M", tmp_path / "log", extra=["--half-life", "1", "--launch-socket", "none"]):
        assert resident_after_evict(first) == MIB // PAGE
        for _ in range(8):
            subprocess.run([str(often), "16"], check=True, capture_output=True)
        pages_move_to(often, second, first, tmp_path / "log")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="drops CAP_SYS_ADMIN from root")
def test_without_fanotify_it_says_which_launches_are_counted(tmp_path):
    """Without CAP_SYS_ADMIN no exec is seen; with --launch-socket none no served launch either, which
    it said it counted (a new user's trial)."""
    shutil.copy(bin_path("fft"), tmp_path / "often")
    plan, _, _ = two_programs_plan(tmp_path, tmp_path / "often")
    no_admin = ["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin"]
    with pind(plan, "1M", tmp_path / "log", prefix=no_admin):
        pass
    said = (tmp_path / "log").read_text()
    assert "launches by exec are not counted" in said and "nor are those headstartd serves" in said
    sock = tmp_path / "launches.sock"
    with pind(plan, "1M", tmp_path / "log2", prefix=no_admin, extra=["--launch-socket", str(sock)]):
        pass
    assert "those headstartd serves are" in (tmp_path / "log2").read_text()


def one_readahead_limit(path: Path) -> int:
    """The most one readahead(2) reads on the disk that holds path: its read_ahead_kb or max_sectors_kb."""
    st = os.stat(path)
    disk = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    queue = disk / "queue" if (disk / "queue").exists() else disk / ".." / "queue"  # a partition's disk
    try:
        return max(int((queue / name).read_text()) for name in ("read_ahead_kb", "max_sectors_kb")) * 1024
    except OSError:  # not a block device (overlayfs, tmpfs): a common limit
        return 8 * MIB


def traced_prefetch(
    plan: Path, data: Path, trace: Path, prefetched: int, budget: str = "64M", as_user: list[str] | None = None
) -> dict[str, list[tuple[int, int]]]:
    """headstart-pind --prefetch run under strace (as_user: the command that runs it as another user),
    which says it prefetched that many bytes of data: its readahead and pread64 calls on data, each as
    its offset and length (a pread's: the bytes it read), and its mlock calls on anything."""
    argv = [*(as_user or []), str(bin_path("headstart-pind")), "--plan", str(plan), "--budget", budget, "--prefetch"]
    calls = "trace=pread64,readahead,mlock,mlock2,mlockall"
    done = subprocess.run(["strace", "-f", "-y", "-e", calls, "-o", str(trace), *argv], capture_output=True, text=True)
    said = f"prefetched {prefetched // 1024} KiB from 1 files"
    assert done.returncode == 0 and said in done.stderr, done.stderr
    found: dict[str, list[tuple[int, int]]] = {"pread64": [], "readahead": [], "mlock": []}
    for line in trace.read_text().splitlines():
        if re.search(r"\bmlock(2|all)?\(", line):
            found["mlock"].append((0, 0))
        elif line.split("(")[0].split()[-1] == "readahead" and str(data) in line:
            m = re.search(r", (\d+), (\d+)\) = 0$", line)
            assert m, line
            found["readahead"].append((int(m[1]), int(m[2])))
        elif "pread64(" in line and str(data) in line and (m := re.search(r", (\d+)\) = (\d+)$", line)):
            found["pread64"].append((int(m[1]), int(m[2])))
    return found


def prefetch_preads(plan: Path, data: Path, trace: Path, as_user: list[str] | None = None) -> list[tuple[int, int]]:
    """Each pread of data by headstart-pind --prefetch, which prefetched all of it, as its offset and
    the bytes it read."""
    return traced_prefetch(plan, data, trace, data.stat().st_size, as_user=as_user)["pread64"]


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_prefetch_reads_the_ranges_within_the_budget_and_locks_nothing(tmp_path):
    """What pind asks the kernel to read, not what the cache holds after: a shared machine's cache may
    drop the pages before a test could look."""
    # Ranges longer than one readahead(2) reads on this disk, which must still be asked for whole.
    size = (2 * one_readahead_limit(tmp_path) + MIB - 1) // MIB * MIB
    data = data_file(tmp_path / "data.bin", 2 * size + MIB)
    plan = write_plan(
        tmp_path / "plan",
        [f"file {2 * size + MIB} {data}", f"range 0 {size} 1", f"range {size + MIB} {size} 0"],
        [("/usr/bin/a", 1), ("/usr/bin/b", 3)],
    )
    assert resident_after_evict(data) == 0
    calls = traced_prefetch(plan, data, tmp_path / "strace", size, budget=f"{size // MIB}M")
    asked = {page for offset, length in calls["readahead"] + calls["pread64"]
             for page in range(offset // PAGE, (offset + length + PAGE - 1) // PAGE)}  # fmt: skip
    assert set(range(size // PAGE)) <= asked, "the range worth 3 launches was not read whole"
    assert not asked & set(range((size + MIB) // PAGE, (2 * size + MIB) // PAGE)), "the other range was read"
    assert calls["mlock"] == []


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_prefetch_copies_out_only_pages_the_cache_lacks(tmp_path):
    """The second pass reads (pread) only what the first one's readahead left uncached: a file cached
    whole costs no copy, one cached in its first half costs reads of the second half alone."""
    data = data_file(tmp_path / "data.bin", 4 * MIB)
    plan = write_plan(tmp_path / "plan", [f"file {4 * MIB} {data}", f"range 0 {4 * MIB} 0"])
    data.read_bytes()
    assert prefetch_preads(plan, data, tmp_path / "strace") == []
    files.evict([str(data)])
    with open(data, "rb") as f:  # the first half cached again, the second not: no readahead
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        f.read(2 * MIB)
    cached = files.resident_pages(str(data))
    assert set(range(2 * MIB // PAGE)) <= cached and len(cached) < 4 * MIB // PAGE
    offsets = [offset for offset, _ in prefetch_preads(plan, data, tmp_path / "strace")]
    assert all(offset >= 2 * MIB for offset in offsets), offsets  # none, if the readahead ended first
    assert set(range(4 * MIB // PAGE)) <= files.resident_pages(str(data))


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("strace") is None or shutil.which("setpriv") is None,
    reason="needs root, strace and setpriv",
)
def test_prefetch_by_a_user_mincore_lies_to_reads_every_range_again():
    """Linux tells a file's page cache through mincore only to its owner, a writer or CAP_FOWNER, and
    tells anyone else every page is cached: pind run as another user, on root's files, cannot skip
    the second pass's reads on its word."""
    folder = Path(tempfile.mkdtemp(prefix="headstart-pind-"))  # under /tmp, where nobody may look
    try:
        folder.chmod(0o755)
        data = data_file(folder / "data.bin", 2 * MIB)
        data.chmod(0o644)
        plan = write_plan(folder / "plan", [f"file {2 * MIB} {data}", f"range 0 {2 * MIB} 0"])
        plan.chmod(0o644)
        data.read_bytes()  # all cached, which mincore would say to anyone anyway
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        reads = prefetch_preads(plan, data, folder / "strace", as_user=nobody)
        assert sum(read for _, read in reads) == 2 * MIB, reads
    finally:
        shutil.rmtree(folder)


def test_bad_plan_lines_and_missing_files_are_one_line_each_and_the_rest_is_pinned(tmp_path):
    data = data_file(tmp_path / "data.bin", 2 * MIB)
    # A range under a malformed file line is that line's, not the file's above it (it once was).
    plan = write_plan(
        tmp_path / "plan",
        ["this is not a plan line", f"file 10 {tmp_path / 'missing'}", "range 0 10 0", f"file {2 * MIB} {data}",
         f"range 0 {MIB} 0", "range 0 10 1", "file xyz /usr/lib/other", f"range {MIB} {MIB} 0", f"file 5 {data}",
         "range 0 5 0", f"file 4096 {tmp_path}", "range 0 4096 0"],
    )  # fmt: skip
    with pind(plan, "64M", tmp_path / "log") as proc:
        assert locked_kib(proc) == 1024
    log = (tmp_path / "log").read_text()
    assert log.count("skipped, not a plan line") == 3  # the text, a range naming no declared program, a file line
    assert re.search(r"/plan:\d+: skipped, a range of the file line skipped above", log), log
    assert log.count("missing: cannot open it; not pinned") == 1
    assert log.count("where the plan has 5; not pinned") == 1
    assert log.count(f"{tmp_path}: not a regular file; not pinned") == 1  # was "4096 bytes where the plan has 4096"
    done = subprocess.run([str(bin_path("headstart-pind")), "--plan", str(data)], capture_output=True, text=True)
    assert done.returncode == 1 and "is not a pin plan" in done.stderr and done.stderr.count("\n") == 1
    (tmp_path / "old").write_text(f"headstart-pin-plan 1\nfile {MIB} {data}\nrange 0 {MIB} 1\nend\n")
    old = [str(bin_path("headstart-pind")), "--plan", str(tmp_path / "old")]
    done = subprocess.run(old, capture_output=True, text=True)
    assert done.returncode == 1 and "of another version" in done.stderr and done.stderr.count("\n") == 1


def test_overlapping_ranges_count_and_lock_each_page_once(tmp_path):
    data = data_file(tmp_path / "data.bin")
    # The same 8 MiB listed for each of 8 programs (plans merged): 8192 KiB of the budget, not 65536.
    programs: list[tuple[Path | str, float]] = [(f"/usr/bin/p{i}", 1) for i in range(8)]
    plan = write_plan(tmp_path / "plan", [f"file {8 * MIB} {data}", *[f"range 0 {8 * MIB} {i}" for i in range(8)]],
                      programs)  # fmt: skip
    log = tmp_path / "log"
    with pind(plan, "64M", log) as proc:
        assert locked_kib(proc) == 8192
        proc.send_signal(signal.SIGUSR1)
        wait_for(lambda: log.read_text().count(" launches, 8192 KiB of its pages pinned") == 8, "no status", log)
    text = log.read_text()
    assert "pinned 8192 KiB of the budget's 65536 KiB" in text and f"pinned 8192 KiB of {data}" in text, text
    # a needs [0, 6M), b needs [2M, 8M): the 4 MiB both need are worth 2 launches, the rest 1.
    lines = [f"file {8 * MIB} {data}", f"range 0 {6 * MIB} 0", f"range {2 * MIB} {6 * MIB} 1"]
    plan = write_plan(tmp_path / "plan", lines, [("/usr/bin/a", 1), ("/usr/bin/b", 1)])
    assert resident_after_evict(data) == 0
    with pind(plan, "4M", tmp_path / "log4") as proc:  # neither whole range fits; what both need does
        assert locked_kib(proc) == 4096
        files.evict([str(data)])
        assert files.resident_pages(str(data)) == set(range(2 * MIB // PAGE, 6 * MIB // PAGE))
    with pind(plan, "8M", tmp_path / "log8") as proc:  # each page once: all of it fits
        assert locked_kib(proc) == 8192
    assert "pinned 8192 KiB of the budget's 8192 KiB" in (tmp_path / "log8").read_text()


def large_plan(folder: Path, nranges: int = 400_000, nfiles: int = 1000, nprograms: int = 4000) -> Path:
    """Many one-page ranges over sparse files, each named by two of thousands of programs."""
    per = nranges // nfiles
    size = 2 * per * PAGE
    lines = [f"program {i} {i % 7 + 1} /usr/bin/true" for i in range(nprograms)]
    for f in range(nfiles):
        with open(folder / f"f{f}", "wb") as out:
            out.truncate(size)
        lines.append(f"file {size} {folder / f'f{f}'}")
        lines += [f"range {2 * j * PAGE} {PAGE} {(f + j) % nprograms},{(f + j + 1) % nprograms}" for j in range(per)]
    path = folder / "plan"
    path.write_text("\n".join(["headstart-pin-plan 2", *lines, "end"]) + "\n")
    return path


def sigterm_blocked(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return bool(int(line.split()[1], 16) & (1 << (15 - 1)))
    return False


def test_a_large_plan_loads_fast_and_sigterm_stops_it_while_loading(tmp_path):
    """400,000 ranges and 4,000 programs: the status asked each program's bytes of every range, about
    16 s here. SIGTERM waited for the end of loading."""
    plan = large_plan(tmp_path)
    log = tmp_path / "log"
    start = time.monotonic()
    with pind(plan, "64M", log) as proc:
        took = time.monotonic() - start
        assert locked_kib(proc) == 65536
    assert took < 4, f"{took:.1f} s to load"
    cmd = [str(bin_path("headstart-pind")), "--plan", str(plan), "--launch-socket", "none"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=out)
    try:
        while not sigterm_blocked(proc.pid):  # from then on it reads, maps and locks the plan
            assert proc.poll() is None, log.read_text()
            time.sleep(0.001)
        proc.terminate()
        start = time.monotonic()
        assert proc.wait(timeout=30) == 0
        assert time.monotonic() - start < 1, f"{time.monotonic() - start:.1f} s from SIGTERM to exit"
    finally:
        proc.kill()
    text = log.read_text()
    assert "stopped while loading the plan" in text and "ready" not in text, text


def test_a_plan_that_other_users_could_change_is_refused_in_one_line(tmp_path):
    data = data_file(tmp_path / "data.bin", MIB)
    lines = [f"file {MIB} {data}", f"range 0 {MIB} 0"]

    def refused(plan: Path, reason: str, *extra: str) -> None:
        cmd = [str(bin_path("headstart-pind")), "--plan", str(plan), "--launch-socket", "none", *extra]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert f"refusing the plan {plan}: {reason}" in done.stderr, done.stderr

    plan = write_plan(tmp_path / "plan", lines)
    plan.chmod(0o664)
    refused(plan, f"{plan} is writable by its group (mode 0664)")
    refused(plan, f"{plan} is writable by its group (mode 0664)", "--prefetch")
    plan.chmod(0o646)
    refused(plan, f"{plan} is writable by other users (mode 0646)")
    plan.chmod(0o644)
    if os.geteuid() == 0:
        os.chown(plan, 65534, 65534)
        refused(plan, f"{plan} is owned by uid 65534, neither root nor uid 0")
        os.chown(plan, 0, 0)
    shared = tmp_path / "shared"  # writable by all, not sticky: anyone may replace the plan
    shared.mkdir()
    shared.chmod(0o777)
    inside = write_plan(shared / "plan", lines)
    refused(inside, f"{shared} is writable by other users (mode 0777)")
    (tmp_path / "link").symlink_to(inside)  # a link leads through what it points to
    refused(tmp_path / "link", f"{shared} is writable by other users")
    if os.geteuid() == 0:
        sticky = tmp_path / "sticky"  # like /tmp: a name another user made there first is theirs
        sticky.mkdir()
        sticky.chmod(0o1777)
        theirs = write_plan(sticky / "plan", lines)
        os.chown(theirs, 65534, 65534)
        refused(theirs, f"{theirs} is owned by uid 65534, neither root nor uid 0")
        (sticky / "link").symlink_to(plan)  # and a link there is whoever made it's choice
        os.lchown(sticky / "link", 65534, 65534)
        refused(sticky / "link", f"{sticky / 'link'} is owned by uid 65534")
    os.mkfifo(tmp_path / "fifo")
    refused(tmp_path / "fifo", "not a regular file")
    (tmp_path / "good").symlink_to("plan")  # a link from a trusted folder to a trusted plan is followed
    with pind(tmp_path / "good", "64M", tmp_path / "log") as proc:
        assert locked_kib(proc) == 1024


def test_a_replaced_file_is_pinned_anew_and_one_changed_in_place_is_dropped(tmp_path):
    data = data_file(tmp_path / "lib.so", 2 * MIB)
    plan = write_plan(tmp_path / "plan", [f"file {2 * MIB} {data}", f"range 0 {2 * MIB} 0"])
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
def test_a_small_memlock_limit_is_one_clear_line_and_what_fits_is_pinned(trusted_tmp):
    small_memlock(trusted_tmp)  # not tmp_path, which is root's alone: the daemon runs as nobody


def small_memlock(tmp_path: Path) -> None:
    data = data_file(tmp_path / "data.bin", 2 * MIB)
    data.chmod(0o644)
    lines = [f"file {2 * MIB} {data}", f"range 0 {MIB} 0", f"range {MIB} {MIB} 1"]
    plan = write_plan(tmp_path / "plan", lines, [("/usr/bin/a", 2), ("/usr/bin/b", 1)])
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
    assert lines[0] == "headstart-pin-plan 2" and lines[-1] == "end"
    assert lines[2] == f"program 0 1 {fft}"
    ranges = [line.split() for line in lines if line.startswith("range ")]
    assert ranges and sum(int(r[2]) for r in ranges) <= 256 * 1024
    assert any(line.startswith("file ") and line.endswith("libc.so.6") for line in lines)
    assert f"file {os.path.getsize('/etc/ld.so.cache')} /etc/ld.so.cache" in lines  # mapped, then unmapped
    run = bin_path("headstart-run")
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "pin", "plan", str(profile), "--include", str(run)],
        capture_output=True, text=True,
    )  # fmt: skip
    folder = subprocess.run([sys.executable, "-m", "headstart", "pin", "plan", str(profile), "--include", "/tmp"],
                            capture_output=True, text=True)  # fmt: skip
    assert (
        folder.returncode == 1
        and folder.stderr == "headstart: --include: /tmp: not a regular file (only a file's pages can be pinned)\n"
    )
    included = done.stdout.splitlines()
    at = included.index(f"file {run.stat().st_size} {run.resolve()}")
    assert included[at + 1] == f"range 0 {(run.stat().st_size + PAGE - 1) // PAGE * PAGE} 0"
    with pind(plan, "64M", tmp_path / "log") as proc:  # headstart-pind takes it as it is
        assert 0 < locked_kib(proc) <= 256
    pinned = tmp_path / "pinned.json"  # the pinned arm of the profile: cold launches with it running
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "profile", "--runs", "1", "--cold", "--pin-plan", str(plan),
         "-o", str(pinned), "--", fft, "64"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(pinned.read_text())
    assert data["cold_pinned"]["launches"] == 1 and data["cold"]["launches"] == 1
    assert 0 < data["pinned_bytes"] <= 256 * 1024
    warm = subprocess.run(
        [sys.executable, "-m", "headstart", "profile", "--runs", "1", "-o", str(tmp_path / "warm.json"), "--", fft],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "pin", "plan", str(tmp_path / "warm.json")], capture_output=True, text=True
    )
    assert warm.returncode == 0 and done.returncode == 1 and "profile with --cold" in done.stderr


def test_bench_cold_times_every_arm_side_by_side_and_locks_less_than_vmtouch(tmp_path):
    """A small program, one round: every arm and mode launched, nothing failed, and what pinning
    locks is the plan, which is within what vmtouch locks (the program's whole files)."""
    cmd = [sys.executable, "-m", "headstart", "bench", "--cold", "--programs", str(bin_path("fft")) + " 64"]
    cmd += ["--runs", "1", "--modes", "exec,pool", "-o", str(tmp_path), "--json"]
    if os.geteuid() == 0:
        cmd += ["--memory-max", "256M"]
    # Its plan goes below -o, which must be a folder headstart-pind trusts (not below /tmp).
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data == json.loads((tmp_path / "cold.json").read_text())
    arms = ["warm", "cold", "pinned", "vmtouch"] + (["pressure", "pressure+pinned"] if os.geteuid() == 0 else [])
    assert data["arms"] == arms and data["modes"] == ["exec", "run@pool"]
    (program,) = data["programs"]
    for key in data["modes"]:
        for arm in arms:
            result = program["modes"][key][arm]
            assert result["errors"] == [] and result["to_ready_us"]["count"] == 1, (key, arm)
            assert result["to_ready_ratio_to_warm"] > 0
    assert 0 < data["locked_bytes"]["pinned"] <= data["plan_bytes"] + 64 * PAGE
    assert data["locked_bytes"]["pinned"] <= data["locked_bytes"]["vmtouch"]
    # the plan holds whole pages of those files
    assert data["closure_bytes"] + data["closure_files"] * PAGE >= data["plan_bytes"]
    # cold-trace.json beside it: each arm and mode a track, its launch as long as cold.json says
    trace = chrome_trace.read(tmp_path / "cold-trace.json")
    tracks = chrome_trace.threads(trace, 1)
    assert set(tracks) == {f"{key} {arm}" for key in data["modes"] for arm in arms}
    for key in data["modes"]:
        for arm in arms:
            slices = chrome_trace.events(trace, "X", 1, tracks[f"{key} {arm}"])
            (ready,) = [e["dur"] for e in slices if e["name"] == "to ready"]
            assert ready == pytest.approx(program["modes"][key][arm]["to_ready_us"]["median"], abs=1e-3)


def test_bench_cold_refuses_what_it_cannot_do(tmp_path):
    def bench(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "headstart", "bench", *args, "-o", str(tmp_path)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60)

    done = bench("--pin-budget", "1M")
    assert done.returncode == 2 and "--pin-budget goes with --cold" in done.stderr
    done = bench("--pin-budget", "", "--programs", "true")  # empty: still given, not a plain bench
    assert done.returncode == 2 and "--pin-budget goes with --cold" in done.stderr
    done = bench("--cold", "--pin-budget", "", "--programs", "true")
    assert done.returncode == 2 and "--pin-budget: expected a size" in done.stderr
    done = bench("--cold", "--pin-plan", str(tmp_path / "missing"))
    assert done.returncode == 2 and "no such file" in done.stderr
