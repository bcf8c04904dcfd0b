"""Errors a user can cause get one clear line and a non-zero exit, never a traceback, and lose
nothing: a program the daemon cannot register is left to exec while the others are served; a
directory or a file without execute permission is called what it is; a reader that goes away
(`| head`) and a full disk are not tracebacks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SANITIZED, Served, bin_path, headstart_without_matplotlib, run_exec, run_served
from headstart.daemon import private_daemon

HEADSTART = [sys.executable, "-m", "headstart"]


def test_an_app_that_cannot_be_registered_is_logged_and_the_others_served(tmp_path):
    (tmp_path / "dir").mkdir()
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    observe = str(bin_path("observe"))
    # A program whose library is gone: the loader's failure is the reason then.
    (tmp_path / "gone.c").write_text("int gone(void) { return 0; }\n")
    (tmp_path / "uses.c").write_text("int gone(void);\nint main(void) { return gone(); }\n")
    cc = shutil.which("cc") or "cc"
    subprocess.run([cc, "-shared", "-fPIC", str(tmp_path / "gone.c"), "-o", str(tmp_path / "libgone.so")], check=True)
    uses = tmp_path / "uses"
    subprocess.run([cc, str(tmp_path / "uses.c"), f"-L{tmp_path}", "-lgone", "-o", str(uses)], check=True)
    (tmp_path / "libgone.so").unlink()
    args = ["--app", "/no/such/program", "--warm", str(tmp_path / "dir"), "--app", str(script), "--app", str(uses)]
    args += ["--app", observe]
    with private_daemon([], extra_args=args) as d:
        log = d.log_text()
        assert "--app /no/such/program: cannot find the program; its clients will exec it" in log
        assert f"--warm {tmp_path / 'dir'}: a directory, not a program" in log
        # Its kind, not the loader's failure to list libraries it does not have (a new user's trial).
        assert f"--app {script}: not an ELF file (a script?): exec runs it through its interpreter" in log
        assert f"--app {uses}: the dynamic loader cannot resolve its libraries (`ld.so --list PROGRAM`" in log
        assert "Error 21" not in log and "invalid ELF header" not in log
        assert d.status()["program"] == [f"preload {observe}"]
        with Served(d):
            got = run_served(d, [observe, "exit", "3"])
        assert got.returncode == run_exec([observe, "exit", "3"]).returncode == 3


def test_check_says_what_a_file_is(tmp_path):
    (tmp_path / "dir").mkdir()
    text = tmp_path / "notes"
    text.write_text("hello\n")
    done = subprocess.run(
        [*HEADSTART, "check", "--json", str(tmp_path / "dir"), str(text)], capture_output=True, text=True
    )
    reasons = [line for line in done.stdout.splitlines()]
    assert '"reason": "a directory, not a program"' in reasons[0]
    assert '"reason": "not executable (no execute permission): exec would refuse it too"' in reasons[1]
    assert "Error 21" not in done.stderr and "error while loading shared libraries" not in done.stderr


def test_a_reader_that_goes_away_is_not_a_traceback():
    programs = ["/bin/ls"] * 20
    cmd = " ".join([*HEADSTART, "check", "--json", *programs]) + " | true"
    done = subprocess.run(["sh", "-c", f"{cmd}; echo status ${{PIPESTATUS:-}}"], capture_output=True, text=True)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small file system needs root")
def test_a_full_disk_is_one_line(tmp_path):
    trace = tmp_path / "trace.jsonl"
    env = dict(os.environ, HEADSTART_PROBE_OUTPUT=str(trace), LD_AUDIT=str(bin_path("probe")))
    subprocess.run([str(bin_path("fft")), "64"], env=env, check=True, capture_output=True)
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], check=True)
    try:
        (full / "fill").write_bytes(b"\0" * 60 * 1024)
        report = full / "report.html"
        done = subprocess.run([*HEADSTART, "report", str(trace), "-o", str(report)], capture_output=True, text=True)
    finally:
        subprocess.run(["umount", str(full)], check=True)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].endswith("No space left on device"), done.stderr
    assert "Traceback" not in done.stderr


def test_a_program_that_is_a_directory_is_refused_by_the_client(tmp_path):
    got = subprocess.run([str(bin_path("headstart-run")), str(tmp_path)], capture_output=True, text=True)
    assert got.returncode != 0 and got.stderr.count("\n") == 1, got.stderr
    assert Path(tmp_path).is_dir()


def test_without_matplotlib_commands_work_and_a_chart_asks_for_it_in_one_line(tmp_path):
    done = headstart_without_matplotlib("check", "/bin/true")
    assert done.returncode == 0, done.stderr
    # Neither is imported by a command that does not draw or read a JSON file: they took about
    # 1.1 s of every command's start.
    assert done.stderr.splitlines()[-1] == "imported:"
    console = Path(__file__).parent / "boot" / "fixtures" / "qemu-initcall-debug.log"
    done = headstart_without_matplotlib("boot", "analyze", str(console), "--ready", "headstart-ready")
    assert done.returncode == 0 and "initramfs unpacking" in done.stdout, done.stderr
    done = headstart_without_matplotlib("boot", "analyze", str(console), "-o", str(tmp_path / "boot.html"))
    assert done.returncode == 1 and not (tmp_path / "boot.html").exists()
    assert done.stderr.splitlines()[0] == (
        "headstart: drawing a report's charts needs matplotlib "
        "(Debian: apt install python3-matplotlib; pip: matplotlib)"
    )


# launch-timer preloads its main marker into itself too, which a sanitizer build refuses.
NOT_SANITIZED = pytest.mark.skipif(SANITIZED, reason="bench's timer cannot run a sanitizer build")


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """--quick: the fewest preload points; what these tests give the bench is checked before any."""
    return subprocess.run(
        [*HEADSTART, "bench", "--quick", "--modes", "exec", "--runs", "2", "-o", str(cwd / "out"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


@NOT_SANITIZED
def test_bench_of_a_service_ready_at_a_line_stops_it_there(tmp_path):
    """A service runs on after its "listening" line, which bench was told is ready: it was left to
    run to --timeout at every launch, and then waited for to exit after its memory was read, which
    ended the bench in a traceback."""
    service = f"{sys.executable} -c \"import time; print('LISTENING', flush=True); time.sleep(100)\""
    done = bench("--programs", service, "--ready", "LISTENING", "--timeout", "20", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@NOT_SANITIZED
def test_bench_of_a_program_that_never_exits_stops_at_its_first_launch(tmp_path):
    done = bench("--programs", "/usr/bin/sleep 100", "--timeout", "2", cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == "headstart: sleep, exec (fork + exec): not ended within 2 s; the bench stopped there"


@NOT_SANITIZED
@pytest.mark.parametrize("modes", ["pool", "pool,exec"])
def test_bench_times_exec_first_whatever_modes_are_asked(modes, tmp_path):
    """Every ratio is to exec: `--modes pool` ran every launch and then ended in a KeyError, and
    `--modes pool,exec` printed exec as a daemon mode's column and left one of pool's out."""
    done = bench("--programs", "/bin/true", "--modes", modes, "--json", cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    data = json.loads(done.stdout)
    assert data["modes"] == ["exec", "run@pool", "direct@pool"]
    assert data["mean_ready_ratio_to_exec"]["exec"] == 1.0
    tables = bench("--programs", "/bin/true", "--modes", modes, cwd=tmp_path)
    assert tables.returncode == 0 and "Traceback" not in tables.stderr, tables.stderr


@NOT_SANITIZED
def test_bench_times_a_mode_or_client_named_twice_once(tmp_path):
    done = bench("--programs", "/bin/true", "--modes", "exec,pool,pool", "--clients", "run,run", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["modes"] == ["exec", "run@pool"]


def test_bench_of_a_script_without_a_shebang_is_one_line(tmp_path):
    script = tmp_path / "script"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    done = bench("--programs", str(script), cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert f"{script}: not an ELF program" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["profile", "--runs", "1000000000", "--", "/bin/true"], "argument --runs: expected a whole number from 1"),
        (["bench", "--runs", "0", "--programs", "/bin/true"], "argument --runs: expected a whole number from 1"),
        (["profile", "-o", "/nonexistent-folder/p.json", "--", "/bin/true"], "no such folder: /nonexistent-folder"),
        (["bench", "-o", "/proc/cpuinfo", "--programs", "/bin/true"], "/proc/cpuinfo: not a folder"),
        (["bench", "-o", "/proc/nope", "--programs", "/bin/true"], "/proc/nope: cannot be written in"),
    ],
)
def test_runs_and_outputs_are_checked_before_anything_runs(args, message):
    """A billion runs ran silently until killed, and a place results cannot be written was said only
    after every launch had run."""
    done = subprocess.run([*HEADSTART, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def _processes_with_argv(argv: list[str]) -> list[int]:
    wanted = ("\0".join(argv) + "\0").encode()
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and Path(f"/proc/{entry}/cmdline").read_bytes() == wanted:
                found.append(int(entry))
        except OSError:
            pass
    return found


@pytest.mark.parametrize(("sig", "status", "said"), [(2, 130, "interrupted"), (15, 143, "stopped by SIGTERM")])
def test_a_command_stopped_by_a_signal_ends_what_it_measures(tmp_path, sig, status, said):
    # The profiled program runs in a session of its own, which the terminal's Ctrl-C does not reach:
    # left behind, it ran on as an orphan (stopped, when at its ready line). `timeout` and service
    # managers stop a command with SIGTERM, which must also put back what it changed.
    sleeper = ["sleep", "31.25"]
    argv = [
        *HEADSTART,
        "profile",
        "--runs",
        "3",
        "--ready",
        "^ready",
        "--timeout",
        "60",
        "--",
        "/bin/sh",
        "-c",
        "sleep 31.25; echo ready",
    ]
    # SIGINT as a terminal's shell leaves it: a suite started in the background (`cmd &` in a script)
    # inherits it ignored, and Python keeps it so.
    default_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 30
        while not _processes_with_argv(sleeper):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()  # not left to run on (and to be found by the next case) when this one failed
        proc.wait()
    assert proc.returncode == status and err.strip().splitlines()[-1] == f"headstart: {said}", err
    deadline = time.monotonic() + 5
    while _processes_with_argv(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes_with_argv(sleeper)


def test_a_program_built_with_address_sanitizer_is_left_to_exec_and_the_daemon_serves_on(tmp_path):
    # Its runtime must be the first object of its process: loaded into the zygote, it ended it, and
    # the daemon with it (and `headstartd --check` printed nothing for it).
    if not shutil.which("cc"):
        pytest.skip("no C compiler")
    (tmp_path / "a.c").write_text('#include <stdio.h>\nint main(void) { puts("sanitized"); return 3; }\n')
    built = subprocess.run(["cc", "-fsanitize=address", "-o", str(tmp_path / "a"), str(tmp_path / "a.c")])
    if built.returncode != 0:
        pytest.skip("no AddressSanitizer runtime")
    program, observe = str(tmp_path / "a"), str(bin_path("observe"))
    with private_daemon([], extra_args=["--app", program, "--app", observe]) as d:
        assert f"--app {program}: built with a sanitizer whose runtime must be the first object" in d.log_text()
        got = run_served(d, [program])
        assert (got.returncode, got.stdout) == (3, b"sanitized\n")
        with Served(d):
            assert run_served(d, [observe, "exit", "4"]).returncode == 4
    check = subprocess.run([str(bin_path("headstartd")), "--check", program], capture_output=True, text=True)
    assert check.returncode == 0 and '"mode": "exec"' in check.stdout and "sanitizer" in check.stdout
