"""headstart bench: its JSON against the documented schema, its HTML report in Chromium, an
unmodified program marked by the preloaded marker, and modes whose daemon is missing or broken."""

from __future__ import annotations

import json
import os
import shutil
import stat
import statistics
import subprocess
import sys
import time
from pathlib import Path

import chrome_trace
import jsonschema
import pytest
from conftest import SANITIZED, charts_in_chromium, headstart_without_matplotlib, helper_path
from headstart import binaries
from headstart.benchmark.timing import summarize_rows

pytestmark = pytest.mark.skipif(
    SANITIZED, reason="the programs and the marker run uninstrumented; the daemon's own checks run elsewhere"
)
SCHEMA = json.loads((Path(__file__).parents[1] / "docs/schema/bench.schema.json").read_text())
PLAIN_KEYS = ["exec", "run@preload", "direct@preload", "run@warm", "direct@warm", "run@pool", "direct@pool"]
ALL_KEYS = [*PLAIN_KEYS, "run@learned", "direct@learned", "run@warm-up", "direct@warm-up"]


def bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headstart", "bench", *args], capture_output=True, text=True, timeout=600, env=env
    )


def bench_json(tmp_path: Path, *args: str, returncode: int = 0) -> dict:
    """bench --json with its results in tmp_path/out: the exit status asked for, the schema kept."""
    done = bench(*args, "--json", "-o", str(tmp_path / "out"))
    assert done.returncode == returncode, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


def setuid_copy(tmp_path: Path) -> Path:
    """cjpeg, set-user-ID: the daemon declines it, and headstart-run execs it without a word."""
    setuid = tmp_path / "cjpeg-setuid"
    shutil.copy("/usr/bin/cjpeg", setuid)
    setuid.chmod(0o755 | stat.S_ISUID)
    return setuid


def test_without_matplotlib_the_bench_keeps_its_measurements_and_says_why_there_is_no_report(tmp_path):
    done = headstart_without_matplotlib("bench", "--quick", "--programs", "fft", "--runs", "2", "-o", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "bench.json").exists() and (tmp_path / "trace.json").exists()
    assert not (tmp_path / "report.html").exists()
    assert "report:  not drawn: drawing a report's charts needs matplotlib" in done.stdout
    assert "normalized to exec" in done.stdout  # the tables, as with a report


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    done = bench("--quick", "--programs", "fft", "--runs", "3", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert str(out / "report.html") in done.stdout and str(out / "trace.json") in done.stdout
    assert "normalized to exec" in done.stdout
    return out


def test_quick_json_has_every_field_of_its_schema(quick_run):
    data = json.loads((quick_run / "bench.json").read_text())
    jsonschema.validate(data, SCHEMA)  # every field required, nothing undocumented
    assert data["quick"] and data["modes"] == ALL_KEYS
    (program,) = data["programs"]
    assert program["served"] == program["requested"] == 3 * 10
    for key, mode in program["modes"].items():
        assert mode["status"] == "ok" and not mode["errors"], (key, mode)
        assert mode["to_main_us"]["count"] == 3
        assert 0 < mode["to_main_us"]["median"] <= mode["to_exit_us"]["median"]
        assert mode["to_ready_us"] == mode["to_exit_us"]  # fft is ready when it exits
        assert 0 < mode["after_main_us"]["median"] < mode["to_ready_us"]["median"]
        assert mode["memory_at_main"]["pss_kb"] > 0
    relocations = {k: m["relocations_in_child"] for k, m in program["modes"].items()}
    assert relocations["exec"]["symbolic"] > relocations["run@preload"]["symbolic"] > 0
    assert relocations["run@warm"] == relocations["direct@pool"] == {"relative": 0, "symbolic": 0, "lazy_plt": 0}
    assert program["modes"]["exec"]["ratio_to_exec"] == 1.0
    assert [p["libraries"] for p in data["preload_scaling"]] == [10, 50, 100]
    assert all(p["time_us"]["median"] > 0 and p["error"] is None for p in data["preload_scaling"])
    repeated = data["repeated_launches"]
    # Repeated launches compare the daemons that need no training.
    assert set(repeated["total_ms"]) == set(PLAIN_KEYS) and set(repeated["startup_ms"]) == {"preload", "warm", "pool"}
    for key, totals in repeated["total_ms"].items():
        assert len(totals) == 50 and totals == sorted(totals), key  # --quick: 50 launches
        assert key == "exec" or totals[0] > repeated["startup_ms"][key.partition("@")[2]]


def test_quick_trace_has_every_launch_per_mode(quick_run):
    """trace.json beside bench.json (Chrome's JSON trace format, read back as Perfetto reads it): the
    program a process, each mode a thread, each launch "to ready" with "to main" inside it; the
    medians of the slices are bench.json's, and round r starts at the same time in every mode."""
    data = json.loads((quick_run / "bench.json").read_text())
    trace = chrome_trace.read(quick_run / "trace.json")
    (program,) = data["programs"]
    assert chrome_trace.processes(trace) == {"fft": 1}
    tracks = chrome_trace.threads(trace, 1)
    assert list(tracks) == list(program["modes"])
    starts = []
    for key, mode in program["modes"].items():
        slices = chrome_trace.events(trace, "X", 1, tracks[key])
        to_main = [e for e in slices if e["name"] == "to main"]
        to_ready = [e for e in slices if e["name"] == "to ready"]
        assert len(to_main) == len(to_ready) == mode["to_main_us"]["count"] == 3
        assert statistics.median(e["dur"] for e in to_main) == pytest.approx(mode["to_main_us"]["median"], abs=1e-3)
        assert statistics.median(e["dur"] for e in to_ready) == pytest.approx(mode["to_ready_us"]["median"], abs=1e-3)
        assert [e["ts"] for e in to_main] == [e["ts"] for e in to_ready]
        starts.append([e["ts"] for e in to_main])
    assert all(s == starts[0] for s in starts) and starts[0] == sorted(set(starts[0]))


def test_quick_report_renders_in_chromium(quick_run):
    charts = charts_in_chromium(quick_run / "report.html")
    # ready, main and exit ratios, relocations, memory, preload time, repeated launches
    assert len(charts) == 7, charts
    for alt, complete, width, height in charts:
        assert complete and width > 100 and height > 100, alt


def test_report_command_draws_a_saved_benchmark(quick_run, tmp_path):
    report = tmp_path / "again.html"
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "report", str(quick_run / "bench.json"), "-o", str(report)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert report.read_text().count('class="chart"') == 7


def test_bench_marks_main_of_an_unmodified_program(tmp_path):
    done = bench(
        "--programs",
        "/usr/bin/cjpeg -version",
        "--runs",
        "3",
        "--modes",
        "exec,warm",
        "--quick",
        "--json",
        "-o",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    (program,) = json.loads(done.stdout)["programs"]
    assert program["argv"][1:] == ["-version"]
    assert program["served"] == program["requested"] > 0
    for mode, result in program["modes"].items():
        assert not result["errors"], (mode, result["errors"])
        assert result["to_main_us"]["median"] <= result["to_exit_us"]["median"]
        assert result["memory_at_main"]["pss_kb"] > 0


def test_a_mode_whose_launches_ran_by_exec_is_not_read_as_the_daemons(tmp_path):
    """A set-user-ID program is declined, and headstart-run then execs it without a word: its times are
    exec's. The bench says so in the mode's status and errors, and leaves it out of the mean."""
    setuid = setuid_copy(tmp_path)
    data = bench_json(tmp_path, "--quick", "--programs", f"{setuid} -version", "--runs", "2", "--modes", "exec,pool",
                      returncode=1)  # fmt: skip
    (program,) = data["programs"]
    assert program["served"] == 0 and program["requested"] == 4
    for key in ("run@pool", "direct@pool"):
        mode = program["modes"][key]
        assert mode["status"] == "failed"
        assert "0 of 4 launches through the pool daemon were served; the rest ran by exec" in mode["errors"]
        assert data["mean_ready_ratio_to_exec"][key] is None
    assert program["modes"]["exec"]["status"] == "ok" and data["mean_ready_ratio_to_exec"]["exec"] == 1.0


def test_a_declined_program_leaves_a_learning_daemon_to_train_and_serve_the_others(tmp_path):
    """Under --shared-daemon, one program the daemon declines (zenity once: WebKit starts a thread)
    made the learning modes unavailable for every program, training having failed on it."""
    setuid = setuid_copy(tmp_path)
    data = bench_json(
        tmp_path, "--quick", "--shared-daemon", "--programs", "/usr/bin/cjpeg -version", f"{setuid} -version",
        "--runs", "2", "--modes", "exec,learned", "--clients", "direct", returncode=1,
    )  # fmt: skip
    served, declined = data["programs"]
    assert served["modes"]["direct@learned"]["status"] == "ok", served["modes"]["direct@learned"]["errors"]
    assert served["served"] == served["requested"] == 2
    mode = declined["modes"]["direct@learned"]
    assert mode["status"] == "failed" and declined["served"] == 0
    assert any(e.startswith("declined: ") for e in mode["errors"]), mode["errors"]


def test_a_program_the_daemon_serves_in_preload_mode_is_not_read_as_warm(tmp_path):
    """Its constructor starts a thread, so headstartd serves it in preload mode although the warm
    and pool daemons were asked to hold it warm: those modes say so, with the daemon's reason, and
    count the relocations the child really does (it was once shown as warm, with none)."""
    program = helper_path("constructor-thread")
    data = bench_json(tmp_path, "--quick", "--programs", str(program), "--runs", "2", "--modes", "exec,preload,pool")
    (result,) = data["programs"]
    assert result["served"] == result["requested"] == 8
    preload = result["modes"]["run@preload"]
    assert preload["status"] == "ok" and preload["errors"] == []
    for key in ("run@pool", "direct@pool"):
        mode = result["modes"][key]
        assert mode["status"] == "preload"  # served, and not a failure: the run ends with status 0
        assert mode["errors"] == [
            "the daemon serves it in preload mode, not warm: it starts a thread while it loads, and the daemon forks"
        ]
        assert mode["relocations_in_child"] == preload["relocations_in_child"]
        assert mode["relocations_in_child"]["relative"] > 0
        assert data["mean_ready_ratio_to_exec"][key] is None


def test_a_program_not_ready_within_the_timeout_stops_the_bench_in_one_line(tmp_path):
    """--timeout for the programs given by path: without it this waited 30 s per launch mode."""
    start = time.monotonic()
    done = bench(
        "--quick", "--programs", "/bin/sleep 30", "--ready", "never printed", "--timeout", "1", "--runs", "2",
        "--modes", "exec,pool", "-o", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "headstart: sleep, exec (fork + exec): not ready within 1 s; the bench stopped there"
    )
    assert time.monotonic() - start < 25


def test_a_broken_daemon_and_a_missing_program_are_reported_and_the_rest_runs(tmp_path):
    """A build whose headstartd cannot start: every daemon mode is reported unavailable, exec is
    still measured, and the run exits non-zero."""
    build = tmp_path / "build"
    for name in ("headstart-run", "launch-timer", "mark-main"):
        target = build / binaries._BUILD_PATHS[name]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(binaries.find(name))
    broken = build / "headstartd"
    broken.write_text("#!/bin/sh\necho 'headstartd: cannot start here (test)' >&2\nexit 1\n")
    broken.chmod(0o755)
    env = dict(os.environ, HEADSTART_BUILD_DIR=str(build), HEADSTART_APPS_BUILD_DIR=str(binaries.apps_build_dir()))
    done = bench("--quick", "--programs", "fft", "--runs", "2", "-o", str(tmp_path / "out"), env=env)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    data = json.loads((tmp_path / "out" / "bench.json").read_text())
    jsonschema.validate(data, SCHEMA)
    (program,) = data["programs"]
    assert program["modes"]["exec"]["status"] == "ok" and program["modes"]["exec"]["to_main_us"]["count"] == 2
    for key in ALL_KEYS[1:]:
        mode = program["modes"][key]
        assert mode["status"] == "unavailable" and mode["to_main_us"] is None, key
        assert "cannot start here (test)" in mode["errors"][0]
    assert all(p["error"] and p["time_us"] is None for p in data["preload_scaling"])
    assert set(data["repeated_launches"]["total_ms"]) == {"exec"}
    assert charts_in_chromium(tmp_path / "out" / "report.html")


XVFB = any((Path(d) / "Xvfb").exists() for d in os.environ.get("PATH", "").split(":"))


@pytest.mark.skipif(not XVFB, reason="Xvfb is not installed (make deps installs it)")
def test_bench_times_windows_to_ready_under_its_own_x_server(tmp_path):
    """The GTK sample is ready at its "window shown" line; an unmodified Debian GUI program at its
    first window mapped, after which the bench stops it. The learned mode preloads what GTK loads
    after main, so fewer objects load in the child: its time to main and ready are there to compare."""
    done = bench(
        "--quick", "--programs", "gtk-hello", "--runs", "3", "--modes", "exec,learned", "--json", "-o", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, SCHEMA)
    (gtk,) = data["programs"]
    assert gtk["ready"] == "line /^window shown$/"
    for key, mode in gtk["modes"].items():
        assert mode["status"] == "ok", (key, mode["errors"])
        assert mode["to_main_us"]["median"] < mode["to_ready_us"]["median"] <= mode["to_exit_us"]["median"]
    assert data["mean_ready_ratio_to_exec"]["direct@learned"] is not None
    exec_mode = gtk["modes"]["exec"]
    share = exec_mode["after_main_us"]["median"] / exec_mode["to_ready_us"]["median"]
    assert gtk["after_main_share_of_exec"] == pytest.approx(share) and 0 < share < 1
    assert gtk["modes"]["direct@learned"]["after_main_ratio_to_exec"] > 0
    learned = gtk["daemon_memory"]["learned"]
    assert learned["zygote_pss_kb"] > 0 and learned["pool_children"] == 4

    if not Path("/usr/bin/galculator").is_file():
        pytest.skip("galculator is not installed (make deps installs it)")
    done = bench(
        "--quick", "--programs", "/usr/bin/galculator", "--ready-window", "--runs", "2", "--modes", "exec,pool",
        "--clients", "run", "--json", "-o", str(tmp_path / "gui"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (calc,) = json.loads(done.stdout)["programs"]
    assert calc["ready"] == "window shown"
    for key, mode in calc["modes"].items():
        assert mode["status"] == "ok", (key, mode["errors"])
        assert mode["to_ready_us"]["count"] == 2 and mode["to_exit_us"] is None  # stopped once shown


def test_time_after_main_is_taken_launch_by_launch():
    """Main to ready per launch, then its median: not the difference of the two medians, which mixes
    launches. A launch that failed, or one that never reached main, is left out."""
    rows = [
        {"mode": "exec", "to_main_ns": 10_000, "to_ready_ns": 110_000, "stopped": True},
        {"mode": "exec", "to_main_ns": 50_000, "to_ready_ns": 60_000, "stopped": True},
        {"mode": "exec", "to_main_ns": 20_000, "to_ready_ns": 90_000, "stopped": True},
        {"mode": "exec", "to_main_ns": None, "to_ready_ns": 80_000, "stopped": True},
        {"mode": "exec", "error": "not ready within 1 s", "stopped": True},
    ]
    (exec_mode,) = summarize_rows(rows, ["exec"]).values()
    assert exec_mode.status == "failed" and exec_mode.after_main_us is not None
    assert exec_mode.after_main_us.count == 3 and exec_mode.after_main_us.median == 70.0  # 100, 10, 70 µs
    assert exec_mode.to_ready_us is not None and exec_mode.to_main_us is not None
    assert exec_mode.to_ready_us.median - exec_mode.to_main_us.median == 65.0  # what medians' difference says


def test_a_missing_program_fails_the_run_before_it_starts(tmp_path):
    """Checked before any launch, and nothing is written (tests/test_bad_input.py has more)."""
    done = bench("--quick", "--programs", "/nonexistent", "--runs", "1", "--modes", "exec", "-o", str(tmp_path))
    assert done.returncode == 2, done.stdout
    assert "/nonexistent: no such sample app, file or program on PATH" in done.stderr and "Traceback" not in done.stderr
    assert not any(tmp_path.iterdir())


def test_a_display_without_ready_window_is_said_to_give_the_programs_none(tmp_path):
    """A new user's trial: `--display wayland` without --ready-window ran the program given with no
    display at all, and said nothing of it."""
    args = ("--quick", "--programs", "cjpeg -version", "--runs", "1", "--modes", "exec")
    done = bench(*args, "--display", "x11", "-o", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    assert "without it the programs given are timed to their exit, with no display" in done.stderr
    assert "with no display" not in bench(*args, "-o", str(tmp_path / "b")).stderr


def test_a_program_named_as_in_a_shell_is_found_on_path(tmp_path):
    (program,) = bench_json(tmp_path, "--quick", "--programs", "cjpeg -version", "--runs", "1", "--modes", "exec")[
        "programs"
    ]
    assert program["argv"] == [str(Path(shutil.which("cjpeg") or "").resolve()), "-version"]


def test_no_repeated_launches_when_only_exec_would_be_compared(tmp_path):
    """A learning mode's daemon start includes its training, so repeated launches leave it out: with
    exec and such modes alone, 100 launches of exec would compare nothing."""
    data = bench_json(tmp_path, "--quick", "--programs", "fft", "--runs", "1", "--modes", "exec,learned")
    assert data["repeated_launches"] is None


def test_programs_from_a_list_file(tmp_path):
    """--programs @FILE: a sample and a path with its arguments, a comment and a blank line skipped,
    beside a program given on the command line; a list that cannot be read or names nothing is one line."""
    listed = tmp_path / "programs.txt"
    listed.write_text("# programs for the test\nfft\n\n/usr/bin/cjpeg -version  # a path with its argument\n")
    done = bench(
        "--programs", "many-globals", f"@{listed}", "--runs", "1", "--modes", "exec", "--quick", "--json",
        "-o", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    programs = json.loads(done.stdout)["programs"]
    assert [p["program"] for p in programs] == ["many-globals", "fft", "cjpeg"]
    assert programs[2]["argv"][1:] == ["-version"]

    (tmp_path / "empty.txt").write_text("# nothing\n")
    for word, message in ((f"@{tmp_path}/absent.txt", "No such file"), (f"@{tmp_path}/empty.txt", "lists no program")):
        done = bench("--programs", word, "--runs", "1", "--modes", "exec", "-o", str(tmp_path / "none"))
        assert done.returncode == 2, done.stdout
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not (tmp_path / "none").exists()


def test_warm_up_names_the_warm_up_modes_steps():
    """bench --warm-up STEPS reaches the warm-up mode's daemon only; fontconfig by default."""
    from headstart.benchmark.daemons import mode_args

    assert mode_args("warm-up")[-2:] == ["--warm-up", "fontconfig"]
    assert mode_args("warm-up", "gtk4-classes,fontconfig")[-2:] == ["--warm-up", "gtk4-classes,fontconfig"]
    assert "--warm-up" not in mode_args("learned", "gtk4-classes")
    done = bench("--warm-up", "gtk4-classes", "--help")
    assert done.returncode == 0 and "gtk4-classes" in done.stdout


def test_a_ratio_says_when_its_launches_cannot_tell_the_two_apart():
    from headstart.stats import ratio

    same = ratio([10.0, 12, 9, 11, 14, 10, 13], [11.0, 10, 13, 9, 12, 14, 10])
    assert not same.resolved and same.low is not None and same.low < 1 < same.high
    assert "no difference these launches can resolve" in same.describe()
    faster = ratio([20.0, 21, 19, 22, 20, 21, 20], [10.0, 11, 10, 9, 10, 11, 10])
    assert faster.resolved and faster.high < 0.6 and "resolve" not in faster.describe()
    few = ratio([10.0, 11], [5.0, 6])
    assert few.low is None and not few.resolved and "too few launches" in few.describe()


# A child that leaves an orphan burning 0.3 s of CPU, the way a daemon's supervisor leaves its zygote;
# the watch around it, in a process of its own (a subreaper stays one). Prints the CPU time counted
# as the watcher's own.
ORPHAN_WATCH = """
import os, subprocess, sys, time
from headstart.benchmark import cpu_use
if sys.argv[1] == "not adopting":
    cpu_use.adopt_orphans = lambda: False
watch = cpu_use.CpuWatch()
burn = "import os, time\\nprint(os.getpid(), flush=True)\\nwhile time.process_time() < 0.3: pass"
parent = subprocess.run(
    [sys.executable, "-c", f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {burn!r}])"],
    stdout=subprocess.PIPE, text=True, check=True,
)
orphan = int(parent.stdout)
while True:  # until it ended: a zombie of ours, or reaped by another reaper
    try:
        if open(f"/proc/{orphan}/stat").read().rsplit(")", 1)[1].split()[0] == "Z":
            break
    except FileNotFoundError:
        break
    time.sleep(0.01)
print(watch.finish().own_s)
"""


@pytest.mark.parametrize("adopting", [True, False])
def test_the_cpu_time_of_an_orphan_of_the_run_counts_as_the_benchs_own(adopting):
    """A zygote left by its supervisor was reaped by init, and its CPU time, and its programs', was
    counted as other work (13-22 % of an idle machine). The bench adopts such orphans: without that
    the orphan's 0.3 s are not counted, so the check can fail."""
    argv = [sys.executable, "-c", ORPHAN_WATCH, "adopting" if adopting else "not adopting"]
    own = float(subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120).stdout)
    assert (own >= 0.3) == adopting, own


def test_the_bench_says_how_much_other_work_there_was_and_warns_above_a_tenth():
    from headstart.reporters.bench import cpu_note

    use = {"cpus": 2, "elapsed_s": 30.0, "busy_share": 0.62, "own_share": 0.48, "other_share": 0.14}
    line, noisy = cpu_note({"cpu_use": use})
    assert noisy and line.startswith("the 2 CPUs were busy 62% of the run's 30 s: the bench and what it started 48%")
    assert "other work 14%; with that much other work" in line
    line, noisy = cpu_note({"cpu_use": dict(use, busy_share=0.5, other_share=0.02)})
    assert not noisy and line.endswith("other work 2%")
    assert cpu_note({"cpu_use": None}) is None and cpu_note({}) is None
