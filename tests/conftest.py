"""Fixtures that start the real headstartd and run programs by exec and through it.

The binaries come from $HEADSTART_BUILD_DIR (default build/), the launched programs from
$HEADSTART_APPS_BUILD_DIR (default the same); `make test` runs this suite against the normal build
and again against the sanitizer build of the daemon and client.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from headstart import binaries
from headstart.daemon import RunningDaemon, private_daemon, stop

# Set by `make test` for its run against the AddressSanitizer build.
SANITIZED = os.environ.get("HEADSTART_SANITIZED") == "1"

# Variables the daemon has and a client must never see.
DAEMON_ONLY_VAR = "HEADSTART_TEST_DAEMON_ONLY"


@dataclass
class Result:
    returncode: int
    stdout: bytes
    stderr: bytes | None


def _trusted(folder: Path) -> bool:
    """The rule of src/common/trusted-path.h: the folder and each one above it owned by root or us,
    and writable by no one else."""
    for f in [folder, *folder.parents]:
        st = f.stat()
        if st.st_uid not in (0, os.geteuid()) or st.st_mode & 0o022:
            return False
    return True


def trusted_folder() -> Path:
    """A new folder that the daemons trust files in and that every user can read (pytest's tmp_path
    is root's alone), for a daemon run as another user. The caller removes it."""
    candidates = [os.environ.get("XDG_RUNTIME_DIR", ""), "/run", os.path.expanduser("~")]
    for base in (Path(c) for c in candidates if c):
        if base.is_dir() and os.access(base, os.W_OK) and _trusted(base.resolve()):
            folder = Path(tempfile.mkdtemp(prefix="headstart-test-", dir=base.resolve()))
            folder.chmod(0o755)  # some daemons under test run as nobody
            return folder
    pytest.skip("no folder here that only root or this user can write to")


@pytest.fixture
def trusted_tmp() -> Iterator[Path]:
    """A temporary folder every user can read, in a folder the daemons trust (trusted_folder)."""
    folder = trusted_folder()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bin_path(name: str) -> Path:
    return binaries.find(name)


def helper_path(name: str) -> Path:
    """A test program built beside observe (tests/helpers)."""
    return bin_path("observe").parent / name


# A warm-up step that takes as long as a file exists and writes the pid of the process that waits:
# a zygote still starting, for as long as a test wants.
SLOW_START = [
    "--app",
    str(helper_path("uses-plugin")),
    "--warm-up",
    "libhs-framework.so:framework_slow_init",
    "--no-learn",
]


def slow_start_env(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """The environment for SLOW_START, the file that holds the start, and where its pid goes."""
    slow, pid = tmp_path / "slow", tmp_path / "slow.pid"
    return dict(os.environ, HS_FRAMEWORK_SLOW_WHILE=str(slow), HS_FRAMEWORK_SLOW_PID=str(pid)), slow, pid


def base_env(**extra: str) -> dict[str, str]:
    """A small, explicit environment, the same for exec and served runs."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C", "HOME": os.environ.get("HOME", "/root")}
    for key in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        if key in os.environ:
            env[key] = os.environ[key]
    env.update(extra)
    return env


def run_exec(argv: list[str], **kw: object) -> Result:
    return _run(argv, **kw)


def run_served(daemon: RunningDaemon, argv: list[str], **kw: object) -> Result:
    client = [str(bin_path("headstart-run")), "--socket", str(daemon.socket)]
    return _run(client + argv, **kw)


def _run(argv: list[str], env: dict[str, str] | None = None, timeout: float = 60, **kw: object) -> Result:
    # A session of our own: with a controlling terminal, headstart-run would choose exec.
    # stderr=subprocess.STDOUT puts both on one pipe (then Result.stderr is None).
    kw.setdefault("stderr", subprocess.PIPE)
    p = subprocess.run(
        argv,
        env=env if env is not None else base_env(),
        stdout=subprocess.PIPE,
        timeout=timeout,
        start_new_session=True,
        **kw,  # type: ignore[arg-type]
    )
    return Result(p.returncode, p.stdout, p.stderr)


def proc_fields(pid: int | str) -> list[str]:
    """/proc/PID/stat's fields after the command's name, which may hold spaces or ')': state,
    ppid, pgrp... (fields 3 on; utime is [11])."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


@contextlib.contextmanager
def daemon_stopped(d: RunningDaemon) -> Iterator[int]:
    """The zygote (its pid yielded) and its supervisor, which would otherwise continue it, stopped
    while the block runs, so that what a test does meanwhile surely comes first; both run again
    after."""
    zygote = d.zygote_pid()
    os.kill(d.process.pid, signal.SIGSTOP)
    os.kill(zygote, signal.SIGSTOP)
    try:
        yield zygote
    finally:
        os.kill(zygote, signal.SIGCONT)
        os.kill(d.process.pid, signal.SIGCONT)


def wait_for_log(d: RunningDaemon, text: str, timeout: float = 10.0) -> str:
    """The daemon's log once it holds `text`."""
    deadline = time.monotonic() + timeout
    while text not in (log := d.log_text()):
        assert time.monotonic() < deadline, log
        time.sleep(0.01)
    return log


def waiting_children(d: RunningDaemon, expect: int, timeout: float = 10.0) -> list[int]:
    """The daemon's children once there are `expect` of them (no program is running in these tests)."""
    pid = d.zygote_pid()
    deadline = time.monotonic() + timeout
    while True:
        kids = [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        if len(kids) == expect or time.monotonic() > deadline:
            return kids
        time.sleep(0.02)


def daemon_fd_count(daemon: RunningDaemon, expect: int | None = None, timeout: float = 5.0) -> int:
    """The daemon's open fds once it has settled. The daemon finishes its clean-up of a launch (or
    of a connection a test dropped) just after the client has its answer, so we wait up to
    `timeout` for the count to reach `expect`, or without `expect` to stay the same for 0.2 s."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    pid = daemon.zygote_pid()
    while True:
        n = len(os.listdir(f"/proc/{pid}/fd"))
        now = time.monotonic()
        if n != last:
            last, since = n, now
        settled = n == expect if expect is not None else now - since >= 0.2
        if settled or now > deadline:
            return n
        time.sleep(0.02)


class Served:
    """Asserts that the launches inside the block were served by the daemon, not sent to exec."""

    def __init__(self, daemon: RunningDaemon, count: int = 1) -> None:
        self.daemon = daemon
        self.count = count

    def __enter__(self) -> Served:
        self.before = self.daemon.launches_started()
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            started = self.daemon.launches_started() - self.before
            assert started == self.count, f"expected {self.count} served launches, daemon started {started}"


@pytest.fixture(scope="session", params=["preload", "warm", "pool"])
def daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    """A daemon serving the samples and test programs: registered with --app (preload mode), with
    --warm (the program images loaded in the daemon too), and warm with a pool of waiting children.
    Every test that takes this fixture runs in all three."""
    apps = [bin_path(a) for a in (*binaries.SAMPLE_APPS, "observe")]
    extra = [arg for app in apps for arg in ("--warm", str(app))] if request.param != "preload" else []
    if request.param == "pool":
        extra += ["--pool", "2"]
    os.environ[DAEMON_ONLY_VAR] = "1"
    try:
        with private_daemon([] if extra else apps, extra_args=extra) as d:
            d.mode = request.param  # type: ignore[attr-defined]
            yield d
    finally:
        del os.environ[DAEMON_ONLY_VAR]
    assert d.process.returncode == 0, d.log_text()


def charts_in_chromium(report: Path) -> list[list[object]]:
    """Each chart image of an HTML report as headless Chromium loads it: alt, complete, width, height."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
    try:
        driver.get(report.as_uri())
        return driver.execute_script(
            "return Array.from(document.querySelectorAll('img.chart'))"
            ".map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight]);"
        )
    finally:
        driver.quit()


@contextlib.contextmanager
def daemon_in_mode(mode: str, programs: list[str]) -> Iterator[RunningDaemon]:
    """A private daemon serving PROGRAMS in one of the modes the faithfulness tests compare:
    "preload" (--app), "warm" (--warm) or "pool" (--warm with two children forked ahead)."""
    option = "--app" if mode == "preload" else "--warm"
    extra = [arg for p in programs for arg in (option, p)]
    if mode == "pool":
        extra += ["--pool", "2"]
    with private_daemon([], extra_args=extra) as d:
        yield d
        # Generous: a serving zygote under the sanitizers finishes its programs slowly. (A zygote
        # still starting, which once took over 10 s scanning libLLVM for pointers, now ends at once.)
        stop(d, timeout=120)
        log = d.log_text()  # here: the daemon's folder goes when private_daemon ends
    assert d.process.returncode == 0, log


# Runs the headstart command in a Python that cannot import matplotlib (a device installed without
# recommends has none), and says which heavy modules it imported.
WITHOUT_MATPLOTLIB = """
import sys
class NoMatplotlib:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "matplotlib":
            raise ImportError("No module named 'matplotlib' (hidden by the test)")
sys.meta_path.insert(0, NoMatplotlib())
from headstart import cli
status = cli.main(sys.argv[1:])
print("imported:", *sorted(m for m in ("matplotlib", "jsonschema") if m in sys.modules), file=sys.stderr)
sys.exit(status)
"""


def headstart_without_matplotlib(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_MATPLOTLIB, *args], capture_output=True, text=True)
