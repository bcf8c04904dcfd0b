"""The profiler on real programs: libheadstart-probe.so's timeline, `headstart profile` warm and cold,
its flags and bad input, and `headstart report` rendered in headless Chromium."""

from __future__ import annotations

import io
import json
import os
import select
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import chrome_trace
import jsonschema
import pytest
from conftest import SANITIZED, bin_path, charts_in_chromium, helper_path
from headstart import binaries, relocations
from headstart.errors import HeadstartError
from headstart.profiling import after_main, after_main_shares, after_main_trace, syscalls, toolkit_settings
from headstart.reporters.profile import render

pytestmark = pytest.mark.skipif(SANITIZED, reason="the probe and the profiled programs are the normal build's")

SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "schema"
PROBE_SCHEMA = json.loads((SCHEMAS / "probe-trace.schema.json").read_text())
PROFILE_SCHEMA = json.loads((SCHEMAS / "profile.schema.json").read_text())


def probe_lines(argv: list[str], tmp_path: Path, **extra: str) -> list[dict]:
    out = tmp_path / "probe.jsonl"
    env = dict(os.environ, LD_AUDIT=str(binaries.find("probe")), HEADSTART_PROBE_OUTPUT=str(out), **extra)
    env.pop("DISPLAY", None)
    done = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert b'"event"' not in done.stdout + done.stderr  # never mixed with the program's output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    for line in lines:
        jsonschema.validate(line, PROBE_SCHEMA)
    return lines


def check_timeline(lines: list[dict], program: Path) -> None:
    events = [r["event"] for r in lines]
    assert events[0] == "start"
    maps = [r for r in lines if r["event"] == "map"]
    assert maps[0]["kind"] == "program" and maps[0]["path"] == str(program.resolve())
    # Every library was asked for by an object mapped before it.
    for m in maps:
        if m["kind"] == "library":
            assert m["needed_by"] is not None and m["needed_by"] < m["index"], m
    # Exactly the closure the system loader reports, in time order.
    mapped = {os.path.realpath(m["path"]) for m in maps if m["kind"] in ("library", "loader")}
    assert mapped == {os.path.realpath(p) for p in relocations.closure(program)}
    times = [m["t"] for m in maps]
    assert times == sorted(times)
    at = {r["event"]: r["t"] for r in lines if r["event"] != "map" and r["event"] != "binding"}
    assert (
        at["start"] <= times[0] <= times[-1] <= at["relocated"] <= at["constructors_done"] <= at["main"] <= at["exit"]
    )
    assert next(r for r in lines if r["event"] == "main")["via"] == "libc_start_main"


def test_probe_timeline_of_the_gtk_sample(tmp_path):
    gtk = binaries.find("gtk-hello")
    lines = probe_lines([str(gtk)], tmp_path, HEADSTART_LAUNCH_START_NS="12345")
    check_timeline(lines, gtk)
    assert lines[0]["launch_start"] == 12345
    names = [r["name"] for r in lines if r["event"] == "map"]
    assert names.index("libgtk-3.so.0") < names.index("libgdk-3.so.0") < names.index("libglib-2.0.so.0")
    assert len(names) > 50


@pytest.mark.parametrize("program", ["binds-now", "binds-lazy"])
def test_probe_sees_main_bound_now_and_lazily(tmp_path, program):
    path = helper_path(program)
    lines = probe_lines([str(path), "word"], tmp_path, HEADSTART_PROBE_BINDINGS="1")
    check_timeline(lines, path)
    # The program's calls of printf and strlen are bindings from it (index 0) to libc.
    libc = next(r["index"] for r in lines if r["event"] == "map" and r["name"] == "libc.so.6")
    pair = next(r for r in lines if r["event"] == "binding" and r["from"] == 0 and r["to"] == libc)
    if program == "binds-now":
        assert pair["before_main"] >= 2 and pair["after_main"] == 0
    else:
        assert pair["after_main"] >= 2  # bound at the first call, in main


def test_probe_is_quiet_without_destination(tmp_path):
    env = dict(os.environ, LD_AUDIT=str(binaries.find("probe")))
    done = subprocess.run([str(helper_path("binds-now")), "x"], env=env, capture_output=True, cwd=tmp_path)
    assert done.stdout == b"argument x, 1 bytes\n" and done.stderr == b""
    assert list(tmp_path.iterdir()) == []


def headstart(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    return subprocess.run(
        [sys.executable, "-m", "headstart", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def profile_json(*args: str) -> dict:
    done = headstart("profile", "--json", *args)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, PROFILE_SCHEMA)
    return data


def test_the_lookups_given_are_the_loaders_for_an_exec():
    """The timed launches run under the probe, whose auditing makes the loader look up more (b2sum:
    184 instead of 91): the lookups given are those of a launch without it, as an exec's."""
    from headstart.relocations import parse_loader_statistics

    argv = ["/usr/bin/b2sum", "/etc/hostname"]
    plain = subprocess.run(argv, env=dict(os.environ, LD_DEBUG="statistics"), capture_output=True, text=True)
    counts = parse_loader_statistics(plain.stderr)
    warm = profile_json("--runs", "2", "--", *argv)["warm"]
    assert warm["symbol_lookups"]["median"] == counts["relocations"]
    assert warm["lookups_from_cache"]["median"] == counts["from_cache"]
    assert warm["relative_relocations"]["median"] == counts["relative"]


@pytest.fixture(scope="module")
def gtk_profile(tmp_path_factory) -> Path:
    # A copy that no other process maps (a daemon of another test may hold the built one), so that
    # eviction empties it from the cache.
    tmp = tmp_path_factory.mktemp("profile")
    program = tmp / "gtk-hello"
    shutil.copy2(binaries.find("gtk-hello"), program)
    out = tmp / "gtk.json"
    trace = tmp / "gtk.trace.json"
    done = headstart("profile", "--runs", "3", "--cold", "-o", str(out), "--trace", str(trace), "--", str(program))
    assert done.returncode == 0, done.stderr
    assert "Launch phases" in done.stdout and "to main" in done.stdout
    # A file's size, which a new user read as the pages its launch touched: said as a size.
    assert "size (pages)" in done.stdout
    return out


def test_profile_warm_and_cold(gtk_profile):
    data = json.loads(gtk_profile.read_text())
    jsonschema.validate(data, PROFILE_SCHEMA)
    warm, cold = data["warm"], data["cold"]
    assert warm["launches"] == 3 and cold["launches"] == 3
    assert warm["major_faults"]["median"] == 0
    assert cold["major_faults"]["median"] > 0
    assert warm["symbol_lookups"]["median"] > 1000 and warm["relative_relocations"]["median"] > 1000
    assert warm["pss_kb"]["median"] > 0
    for phase, s in warm["phases_us"].items():
        assert s is not None and s["median"] >= 0, phase
    gtk = next(f for f in data["files"] if "libgtk-3.so" in f["path"])
    assert gtk["code"] and gtk["bytes_mapped"] > 0
    # Pages another process maps stay cached (a daemon of another test may hold GTK): the kernel
    # keeps them, and the profile says so. The program's private copy is evicted entirely, then
    # touched by the launch.
    assert gtk["cold"]["resident_after_evict"] < gtk["pages"]
    program = next(f for f in data["files"] if f["path"] == data["program"][0])
    cold = program["cold"]
    assert cold["resident_after_evict"] == 0
    assert 0 < cold["mapped"] <= cold["resident_after_launch"] <= program["pages"]
    libs = {lib["name"]: lib for lib in data["libraries"]}
    assert libs["libgtk-3.so.0"]["needed_by"] == 0 and libs["libgtk-3.so.0"]["bindings_from"] > 0


def check_launch(trace: dict, pid: int, record: dict, libraries: list[dict]) -> None:
    """One launch's process in the trace against its record in the profile: the phases' slices last
    as long as the profile's phases, main and ready are where the profile has them, each object of
    the initial set has its mapping slice inside the load phase, and the page faults end at the
    launch's counts."""
    slices = chrome_trace.events(trace, "X", pid, pid)
    phases = {e["name"]: e for e in slices if e.get("args", {}).get("phase")}
    assert set(phases) == {p for p, us in record["phases_us"].items() if us is not None}
    for name, e in phases.items():
        assert e["dur"] == pytest.approx(record["phases_us"][name], abs=1e-3), name
    instants = {e["name"]: e["ts"] for e in chrome_trace.events(trace, "i", pid, pid)}
    assert instants["main"] == pytest.approx(record["to_main_us"], abs=1e-3)
    assert instants["ready"] == pytest.approx(record["to_ready_us"], abs=1e-3)
    assert phases["constructors"]["ts"] + phases["constructors"]["dur"] == pytest.approx(instants["main"], abs=1e-3)
    maps = [e for e in slices if e["name"].startswith("map ")]
    assert [e["name"] for e in maps] == [f"map {lib['name']}" for lib in libraries]
    load = phases["load"]
    assert maps[0]["ts"] == load["ts"]
    assert maps[-1]["ts"] + maps[-1]["dur"] == pytest.approx(load["ts"] + load["dur"], abs=1e-3)
    counters = [e["args"] for e in chrome_trace.events(trace, "C", pid) if e["name"] == "page faults"]
    if record["minor_faults"] is None:
        assert counters == []
    else:
        assert counters[-1] == {"minor": record["minor_faults"], "major": record["major_faults"]}


def test_profile_trace_matches_the_profile(gtk_profile):
    data = json.loads(gtk_profile.read_text())
    trace = chrome_trace.read(gtk_profile.parent / "gtk.trace.json")
    pids = chrome_trace.processes(trace)
    counts = {"warm": 0, "cold": 0}
    labels = []
    for r in data["launches"]:
        kind = "cold" if r["cold"] else "warm"
        counts[kind] += 1
        labels.append(f"gtk-hello: {kind} launch {counts[kind]}")
    assert set(labels) < set(pids)
    for label, record in zip(labels, data["launches"], strict=True):
        check_launch(trace, pids[label], record, data["libraries"])
    # The launch traced with strace: its system calls, the files they name, the loader relocating
    # each object (the gap before its RELRO is made read-only), main.
    (traced,) = [pid for name, pid in pids.items() if "traced launch" in name]
    main = chrome_trace.threads(trace, traced)["main thread"]
    calls = chrome_trace.events(trace, "X", traced, main)
    # Files by their real path (strace -y): libgtk-3.so.0.2404.32.
    assert any(e["name"].startswith("openat libgtk-3.so.0") and "/libgtk-3.so" in e["args"]["file"] for e in calls)
    relocated = [e["args"]["object"] for e in calls if e["name"].startswith("relocate ")]
    assert any("/libgtk-3.so.0" in path for path in relocated)
    assert [e["name"] for e in chrome_trace.events(trace, "i", traced, main)] == ["main", "end of trace"]


def test_profile_trace_of_a_launch_recorded_elsewhere(tmp_path):
    probe_trace, out = tmp_path / "trace.jsonl", tmp_path / "perfetto.json"
    record_trace([str(binaries.find("fft")), "64"], probe_trace, binaries.find("probe"))
    data = profile_json("--from", str(probe_trace), "--trace", str(out))
    trace = chrome_trace.read(out)
    ((name, pid),) = chrome_trace.processes(trace).items()
    assert name == "fft: warm launch 1"
    check_launch(trace, pid, data["launches"][0], data["libraries"])
    maps = [e for e in chrome_trace.events(trace, "X", pid) if e["name"].startswith("map ")]
    for e, lib in zip(maps, data["libraries"], strict=True):
        assert e["dur"] == pytest.approx(lib["map_us"], abs=1e-3)  # one launch: its own times
        assert e["ts"] + e["dur"] == pytest.approx(lib["mapped_at_us"], abs=1e-3)


def test_profile_flags_data_read_with_read_not_mapped(tmp_path):
    data_file = tmp_path / "data.bin"
    data_file.write_bytes(os.urandom(4 << 20))
    program = str(helper_path("startup-data"))
    read = profile_json("--runs", "1", "--", program, "read", str(data_file))
    mapped = profile_json("--runs", "1", "--", program, "map", str(data_file))
    assert [f["path"] for f in read["flags"]] == [str(data_file)]
    assert read["flags"][0]["bytes_read"] == 4 << 20
    assert mapped["flags"] == []
    row = next(f for f in mapped["files"] if f["path"] == str(data_file))
    assert row["bytes_mapped"] == 4 << 20 and row["bytes_read"] == 0


def test_profile_ready_pattern_and_overhead():
    data = profile_json("--runs", "2", "--overhead", "--ready", "^window|^no display", "--",
                        str(binaries.find("gtk-hello")))  # fmt: skip
    assert data["ready"] == {"pattern": "^window|^no display"}
    warm = data["warm"]
    assert warm["to_ready_us"]["median"] > warm["to_main_us"]["median"]
    assert data["overhead"]["with_probe_us"]["count"] == 2 and data["overhead"]["without_probe_us"]["count"] == 2


def test_bindings_of_a_program_stopped_at_ready_are_not_measured_rather_than_none():
    """The probe writes its binding counts as the program exits: one stopped at its ready line never
    does, and its libraries' bindings are unknown (null, '-' in the table), not 0."""
    argv = ["--runs", "1", "--ready", "^ready", "--", "/bin/sh", "-c", "echo ready; sleep 30"]
    data = profile_json(*argv)
    assert data["libraries"] and all(lib["bindings_from"] is None for lib in data["libraries"])
    # dash is linked -z now: it makes no lazy binding, and says so with 0 when left to exit.
    exited = profile_json("--runs", "1", "--", "/bin/sh", "-c", "echo ready")
    assert exited["libraries"] and all(lib["bindings_from"] == 0 for lib in exited["libraries"])


def test_profile_of_a_program_that_runs_others():
    # The shell's children inherit the probe; only the launched process is stopped at exit and profiled.
    data = profile_json("--runs", "2", "--timeout", "20", "--", "/bin/sh", "-c", "/bin/true; /bin/echo done")
    assert data["warm"]["launches"] == 2 and data["libraries"][0]["path"] == os.path.realpath("/bin/sh")


def test_profile_via_daemon():
    data = profile_json("--runs", "2", "--via-daemon", "--", str(binaries.find("jpeg-encode")), "85")
    modes = data["via_daemon"]["modes"]
    assert set(modes) == {"exec", "direct@warm", "direct@pool"}
    assert all(m["to_main_us"] is not None for m in modes.values())


def one_line_error(done: subprocess.CompletedProcess[str], text: str) -> None:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert text in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_progress_is_drawn_on_a_terminal_and_nothing_in_a_pipe():
    """rich's bars on standard error when it is a terminal (a pty under script(1)); off a terminal not
    one byte of them, not even the newline a stopped live display leaves."""
    argv = ["profile", "--runs", "2", "--", "/bin/true"]
    piped = headstart(*argv)
    assert piped.returncode == 0 and piped.stderr == ""
    command = shlex.join([sys.executable, "-m", "headstart", *argv]) + " >/dev/null"
    env = dict(os.environ, TERM="xterm")
    shown = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, timeout=300, env=env)
    assert shown.returncode == 0, shown.stdout
    assert b"\x1b[?25l" in shown.stdout and "━".encode() in shown.stdout  # the cursor hidden, a bar drawn


def test_profile_bad_input(tmp_path):
    one_line_error(headstart("profile", "--", "/no/such/program"), "no such program")
    one_line_error(headstart("profile"), "name the program")
    crash = headstart("profile", "--runs", "1", "--", shutil.which("sh") or "/bin/sh", "-c", "kill -SEGV $$")
    one_line_error(crash, "killed by SIGSEGV")
    never = headstart("profile", "--runs", "1", "--ready", "NEVER", "--timeout", "2", "--", "/bin/sleep", "30")
    one_line_error(never, "did not print a line matching 'NEVER' within 2 s")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    nowhere = subprocess.run([sys.executable, "-m", "headstart", "profile", "--ready-window", "--", "/bin/true"],
                             capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    one_line_error(nowhere, "--ready-window: neither WAYLAND_DISPLAY nor DISPLAY is set")
    ended = headstart("profile", "--runs", "1", "--ready", "NEVER", "--", "/bin/sh", "-c", "echo no >&2; exit 3")
    one_line_error(
        ended, "exited with status 3 without printing a line matching 'NEVER' in the traced launch; its last line: no"
    )
    static = helper_path("observe-static")
    one_line_error(headstart("profile", "--", str(static)), "not dynamically linked")
    text = tmp_path / "text"
    text.write_text("#!/bin/sh\n")
    text.chmod(0o755)
    one_line_error(headstart("profile", "--", str(text)), "not an ELF program")


def test_a_program_the_probe_cannot_see_is_named_before_a_launch(tmp_path):
    """A 32-bit program got "the loader ignores LD_AUDIT for setuid programs" from profile and "did
    not reach main" from link, after launches; the header says it at once."""
    other = tmp_path / "other-machine"
    data = bytearray(Path("/bin/true").read_bytes())
    data[18:20] = (183).to_bytes(2, "little")  # e_machine: EM_AARCH64
    other.write_bytes(bytes(data))
    other.chmod(0o755)
    for command in ("profile", "link"):
        one_line_error(headstart(command, "--", str(other)), "a 64-bit AARCH64 program; headstart's probe and daemon")
    if os.geteuid() == 0 and not os.statvfs(tmp_path).f_flag & os.ST_NOSUID:  # the loader's secure mode
        setuid = tmp_path / "setuid-true"
        shutil.copy("/bin/true", setuid)
        os.chown(setuid, 65534, 65534)
        setuid.chmod(0o4755)
        checks = (["order", "check"], ["lazy", "check", "--after", "/bin/true"], ["order", "record", "--pages"])
        for command in (["profile"], ["link"], *checks):
            if command[0] in ("order", "lazy"):  # a new user's trial: "its memory could not be read at ready"
                command = [*command, "--runs", "1"] + (["-o", str(tmp_path / "o.json")] if "record" in command else [])
            done = headstart(*command, "--", str(setuid))
            one_line_error(done, "set-user-ID, so the loader runs it in secure mode")


def test_report_renders_in_chromium(gtk_profile, tmp_path):
    second = tmp_path / "jpeg.json"
    done = headstart("profile", "--runs", "2", "-o", str(second), "--", str(binaries.find("jpeg-encode")), "85")
    assert done.returncode == 0, done.stderr
    report = tmp_path / "report.html"
    done = headstart("report", str(gtk_profile), str(second), "-o", str(report))
    assert done.returncode == 0, done.stderr
    page = report.read_text()
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page  # nothing to fetch
    charts = charts_in_chromium(report)
    # phases, warm/cold, then per trace a waterfall and (gtk only, which has cold launches) pages
    assert len(charts) == 5, charts
    for alt, complete, width, height in charts:
        assert complete and width > 100 and height > 100, alt


def test_report_bad_input(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a profile"}')
    one_line_error(headstart("report", str(bad), "-o", str(tmp_path / "r.html")), "not a profile")
    one_line_error(headstart("report", str(tmp_path / "none.json"), "-o", str(tmp_path / "r.html")), "cannot read")


XVFB = shutil.which("Xvfb")


@pytest.fixture(scope="module")
def x_server() -> Iterator[str]:
    """A private Xvfb; -displayfd: it picks a free display number and writes it once it accepts clients."""
    if XVFB is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb, or make deps): GTK shows no window without it")
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [XVFB, "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0", "1024x768x24"],
        pass_fds=(write_end,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 30)
        number = os.read(read_end, 32).decode().strip() if ready else ""
        assert number.isdigit(), "Xvfb did not start within 30 s"
        yield f":{number}"
    finally:
        os.close(read_end)
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def gtk_window_profile(x_server, tmp_path_factory) -> tuple[dict, Path, Path]:
    """`headstart profile` of the GTK sample showing its window: the profile, --write-preload's file
    and -o's file."""
    tmp = tmp_path_factory.mktemp("after-main")
    preload, saved = tmp / "after-main.conf", tmp / "gtk-window.json"
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "profile", "--json", "--runs", "2", "--ready", "window shown",
         "-o", str(saved), "--write-preload", str(preload), "--", str(binaries.find("gtk-hello"))],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, DISPLAY=x_server),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    jsonschema.validate(data, PROFILE_SCHEMA)
    return data, preload, saved


def test_after_main_objects_of_a_gtk_window(gtk_window_profile):
    """Under a real X server GTK loads its GL stack after main (libepoxy asks for libGL, which asks
    for Mesa's GLX, which asks for the software rasteriser): listed, each with who asked for it, its
    mapping, and its cost loaded apart, which the advice names as the saving of preloading them."""
    data, _, _ = gtk_window_profile
    after = data["after_main"]
    by_name = {Path(r["object"]).name: r for r in after["loads"]}
    assert by_name["swrast_dri.so"]["requested_by"] == "libGLX_mesa.so.0", by_name
    assert by_name["libGLX_mesa.so.0"]["requested_by"] == "libGLX.so.0"
    assert "libLLVM-15.so.1" in [Path(p).name for p in by_name["swrast_dri.so"]["with"]]
    names = [Path(p).name for p in after["objects"]]
    assert len(names) == len(set(names)) == sum(1 + len(r["with"]) for r in after["loads"])
    assert not set(names) & {lib["name"] for lib in data["libraries"]}  # none of the initial set
    for r in after["loads"]:
        assert r["cost_ms"] > 0 and r["at_ms"] > 0 and r["launches"] == 2, r
        assert r["dlopen_ms"] is not None and r["dlopen_ms"] > 0, r
    assert [r["at_ms"] for r in after["loads"]] == sorted(r["at_ms"] for r in after["loads"])
    saving = sum(r["dlopen_ms"] for r in after["loads"])
    preload = next(a for a in after["advice"] if a.startswith("preload these"))
    assert preload.startswith(f"preload these {len(names)} objects, saving about {saving:.1f} ms per launch")
    assert "`preload = PATH`" in preload and "adaptive preload" in preload


def test_after_main_trace_of_a_gtk_window(gtk_window_profile):
    """Files, threads, fontconfig, and the longest stretches without a system call, which are never
    time the main thread spent blocked in a call."""
    trace = gtk_window_profile[0]["after_main"]["trace"]
    assert trace["found_main"] and trace["traced_ms"] > 0
    paths = {f["path"]: f for f in trace["files"]}
    assert "/etc/fonts/fonts.conf" in paths and not any(p.endswith("probe.jsonl") for p in paths)
    assert all(f["first_ms"] >= 0 and f["calls"] > 0 for f in trace["files"])
    font = trace["fontconfig"]
    assert font["files"] == trace["fontconfig_files"] > 10 and font["ms"] > 0 and font["fc_init_ms"] > 0
    assert trace["threads_started"] == sum(1 for s in trace["started"] if s["kind"] == "thread") > 0
    assert all(s["by"] == trace["main_thread"] for s in trace["started"] if s["kind"] == "thread")
    gaps, waits = trace["gaps"], trace["waits"]
    assert 0 < len(gaps) <= 5 and [g["ms"] for g in gaps] == sorted((g["ms"] for g in gaps), reverse=True)
    for g in gaps:
        for w in waits:  # a gap lies between the main thread's calls, never inside one
            assert g["at_ms"] + g["ms"] <= w["at_ms"] + 1e-6 or w["at_ms"] + w["ms"] <= g["at_ms"] + 1e-6, (g, w)
    advice = gtk_window_profile[0]["after_main"]["advice"]
    warm_up = next(a for a in advice if a.startswith("warm-up = fontconfig"))
    assert f"saving about {font['fc_init_ms']:.1f} ms" in warm_up


def test_after_main_shares_of_a_gtk_window(gtk_window_profile):
    """The main thread's time from main to ready, every moment in one kind: the X connection (never
    takeable), the loader and fontconfig (takeable by preload and warm-up), the rest as is."""
    data = gtk_window_profile[0]
    shares, traced = data["after_main"]["shares"], data["after_main"]["trace"]
    assert abs(shares["traced_ms"] - traced["traced_ms"]) < 1e-6
    kinds = {k["kind"]: k for k in shares["kinds"]}
    assert abs(sum(k["ms"] for k in kinds.values()) - shares["traced_ms"]) < 0.01 * shares["traced_ms"]
    assert abs(shares["never_share"] + shares["could_share"] + shares["as_is_share"] - 1) < 0.01
    assert kinds["display"]["ms"] > 0 and kinds["loading objects"]["ms"] > 0 and kinds["fontconfig"]["ms"] >= 0
    assert kinds["loading objects"]["share"] + kinds["fontconfig"]["share"] == pytest.approx(shares["could_share"])
    out = io.StringIO()
    render(data, out, width=200)
    assert f"never takeable {shares['never_share']:.0%}" in out.getvalue()
    # The split is of the time after main: the title says how much came before, which a daemon takes.
    before = data["warm"]["to_main_us"]["median"] / data["warm"]["to_ready_us"]["median"]
    assert f"({1 - before:.0%} of the time to ready; the {before:.0%} before main is exec's and the" in out.getvalue()


def test_after_main_is_rendered_in_the_terminal_and_the_report(gtk_window_profile, tmp_path):
    data, _, saved = gtk_window_profile
    out = io.StringIO()
    render(data, out, width=200)
    text = out.getvalue()
    for title in ("objects loaded", "files by time", "threads and processes", "longest system calls",
                  "longest stretches without a system call", "advice: preload these"):  # fmt: skip
        assert title in text, title
    assert "swrast_dri.so" in text and "libGLX_mesa.so.0" in text
    report = tmp_path / "report.html"
    done = headstart("report", str(saved), "-o", str(report))
    assert done.returncode == 0, done.stderr
    page = report.read_text()
    assert "Objects loaded after main" in page and "swrast_dri.so" in page and "asked for by" in page


def test_write_preload_is_configuration_headstartd_loads(gtk_window_profile):
    from headstart.daemon import private_daemon

    data, preload, _ = gtk_window_profile
    objects = data["after_main"]["objects"]
    lines = [line for line in preload.read_text().splitlines() if not line.startswith("#")]
    assert lines == [f"preload = {p}" for p in objects] and all(Path(p).is_absolute() for p in objects)
    with private_daemon([], extra_args=["--config", str(preload), "--no-learn"]) as d:
        maps = Path(f"/proc/{d.zygote_pid()}/maps").read_text()
    for path in objects:
        assert os.path.realpath(path) in maps, path


def test_write_preload_leaves_out_what_cannot_be_loaded_outside_the_program(tmp_path):
    """A plugin that needs a function of its program (as PHP's extensions need php's) was written as a
    preload line, and headstartd, told to preload it, refused to start."""
    from headstart.daemon import private_daemon

    preload = tmp_path / "plugin.conf"
    plugin = os.path.realpath(helper_path("hs-plugin-needs-program.so"))
    program = helper_path("uses-plugin-api")
    data = profile_json("--runs", "2", "--write-preload", str(preload), "--", str(program), plugin)
    after = data["after_main"]
    assert plugin in after["objects"]
    lines = preload.read_text().splitlines()
    assert f"# {plugin}" in lines and f"preload = {plugin}" not in lines, lines
    assert any("could not be loaded outside the program" in a for a in after["advice"]), after["advice"]
    with private_daemon([], extra_args=["--config", str(preload), "--no-learn"]) as d:
        assert d.process.poll() is None


@pytest.mark.parametrize("program", ["gtk-hello", "/usr/bin/galculator"])
def test_profile_via_daemon_waits_for_the_window(x_server, program):
    """--ready-window and --timeout reach the launches through the daemon too: they once waited for an
    exit, which galculator never makes (the timer spinning, and left running after the command)."""
    path = binaries.find(program) if "/" not in program else Path(program)
    if not path.exists():
        pytest.skip(f"{program} is not installed (make deps installs it)")
    done = subprocess.run(
        [sys.executable, "-m", "headstart", "profile", "--json", "--runs", "1", "--ready-window", "--timeout", "20",
         "--via-daemon", "--", str(path)],
        capture_output=True, text=True, timeout=180, env=dict(os.environ, DISPLAY=x_server),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    via = json.loads(done.stdout)["via_daemon"]
    assert via["ready"] == "window shown"
    assert set(via["modes"]) == {"exec", "direct@warm", "direct@pool"}
    for mode in via["modes"].values():
        assert mode["status"] == "ok" and mode["errors"] == [], mode
        assert mode["to_ready_us"]["median"] > mode["to_main_us"]["median"]
        assert mode["to_exit_us"] is None  # stopped once its window showed


def test_no_objects_after_main_for_a_program_that_loads_none(tmp_path):
    preload = tmp_path / "none.conf"
    data = profile_json("--runs", "1", "--write-preload", str(preload), "--", str(binaries.find("fft")), "64")
    after = data["after_main"]
    assert after["loads"] == [] and after["objects"] == [] and after["load_ms"] == 0
    assert after["trace"]["found_main"] and after["trace"]["threads_started"] == 0 and after["trace"]["started"] == []
    assert after["trace"]["fontconfig"]["files"] == 0
    assert not any(a.startswith(("preload", "warm-up")) for a in after["advice"])
    assert [line for line in preload.read_text().splitlines() if not line.startswith("#")] == []


# strace -f -ttt -T -y of two threads: main (100) blocks in futex while thread 101 reads fontconfig's
# configuration; the loader maps and relocates an object (its RELRO made read-only after 20 ms).
SYNTHETIC_TRACE = """\
100 10.000000 openat(AT_FDCWD</x>, "/tmp/probe.jsonl", O_WRONLY) = 4</tmp/probe.jsonl> <0.000010>
100 10.001000 mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, 3</usr/lib/libx.so>, 0) = 0x7f0000000000 <0.000010>
100 10.001500 lseek(3</usr/lib/libx.so>, 4000, SEEK_SET) = 4000 <0.000005>
100 10.002000 mprotect(0x7f0000001000, 4096, PROT_READ) = 0 <0.000010>
100 10.022000 mprotect(0x7f0000002000, 4096, PROT_READ) = 0 <0.000010>
100 10.023000 clone3({flags=CLONE_VM|CLONE_THREAD, child_tid=0x1}, 88) = 101 <0.000050>
100 10.024000 clone(child_stack=NULL, flags=SIGCHLD) = 102 <0.000100>
102 10.024500 execve("/usr/bin/nothing", ["nothing"], 0x1 /* 1 vars */) = -1 ENOENT (No such file) <0.000010>
100 10.025000 futex(0x1, FUTEX_WAIT_PRIVATE, 0, NULL <unfinished ...>
101 10.026000 openat(AT_FDCWD</x>, "/etc/fonts/fonts.conf", O_RDONLY) = 5</etc/fonts/fonts.conf> <0.000020>
101 10.027000 read(5</etc/fonts/fonts.conf>, ""..., 4096) = 120 <0.000030>
100 10.075000 <... futex resumed>) = 0 <0.050000>
100 10.076000 getpid() = 100 <0.000005>
"""


def test_main_in_a_trace_is_the_probes_mark_not_its_first_write():
    """The probe writes its output whenever its buffer fills, which loading a program of 215
    libraries (ffprobe) does before main: the first open of that file put main among the loader's
    work, and the profile called relocation after-main computation. Main is the probe's mark."""
    trace = (
        '100 10.000000 openat(AT_FDCWD</x>, "/tmp/probe.jsonl", O_WRONLY) = 4</tmp/probe.jsonl> <0.000010>\n'
        "100 10.001000 mprotect(0x7f0000001000, 4096, PROT_READ) = 0 <0.000010>\n"
        '100 10.002000 openat(AT_FDCWD</x>, "/tmp/probe.jsonl", O_WRONLY) = 4</tmp/probe.jsonl> <0.000010>\n'
        f'100 10.002100 access("{after_main_trace.MAIN_MARK}", F_OK) = -1 ENOTDIR (Not a directory) <0.000002>\n'
        "100 10.003000 getpid() = 100 <0.000005>\n"
    )
    calls = syscalls.parse(trace)
    assert [c.name for c in after_main_trace.after_main(calls)] == ["access", "getpid"]


def test_the_gaps_name_the_probes_own_calls_as_its_not_as_main():
    """The probe writes its record when its buffer fills and at exit: a gap ending at exit was
    shown as "after main" at 6.5 ms (gucharmap --version), beside the real main at 0 ms."""
    trace = (
        f'100 10.000000 access("{after_main_trace.MAIN_MARK}", F_OK) = -1 ENOTDIR (Not a directory) <0.000002>\n'
        "100 10.004000 getpid() = 100 <0.000005>\n"
        '100 10.010000 write(4</tmp/probe.jsonl>, "{}"..., 2) = 2 <0.000010>\n'
        "100 10.011000 exit_group(0) = ?\n"
    )
    gaps = after_main_trace.summary(syscalls.parse(trace), top=3)["gaps"]
    assert [(g["after"], g["before"]) for g in gaps] == [
        ("getpid", "the probe writing its record"),
        ("main (the probe's mark)", "getpid"),
        ("the probe writing its record", "exit_group"),
    ]


def test_the_probe_marks_main_for_a_system_call_trace(tmp_path):
    out = tmp_path / "trace"
    env = dict(os.environ, LD_AUDIT=str(bin_path("probe")), HEADSTART_PROBE_OUTPUT=str(tmp_path / "p"))
    subprocess.run(["strace", "-f", "-qq", "-o", str(out), str(bin_path("observe")), "exit", "0"], env=env, check=True)
    assert after_main_trace.MAIN_MARK in out.read_text()


def test_after_main_trace_of_a_synthetic_launch(monkeypatch):
    """Calls split by another thread are joined; gaps run from one call's end to the next's start."""
    monkeypatch.setattr(os.path, "isfile", lambda p: p in ("/etc/fonts/fonts.conf", "/usr/lib/libx.so"))
    monkeypatch.setattr(os.path, "getsize", lambda p: 120)
    calls = syscalls.parse(SYNTHETIC_TRACE)
    futex = next(c for c in calls if c.name == "futex")
    assert futex.pid == 100 and futex.start == 10.025 and abs(futex.ms - 50) < 1e-6
    trace = after_main_trace.summary(calls, top=3)
    assert trace["main_thread"] == 100 and abs(trace["traced_ms"] - 76.005) < 1e-6
    longest = trace["gaps"][0]
    assert abs(longest["ms"] - 19.99) < 1e-6 and longest["relocating"] == "/usr/lib/libx.so"
    assert longest["before"] == "mprotect libx.so"
    assert all(g["ms"] < 2 for g in trace["gaps"][1:])  # the 50 ms in futex is no gap
    assert trace["waits"][0]["call"] == "futex" and abs(trace["waits"][0]["ms"] - 50) < 1e-6
    assert [(s["kind"], s["id"], s["executed"], s["exec_failed"]) for s in trace["started"]] == [
        ("thread", 101, None, False),
        ("process", 102, "/usr/bin/nothing", True),
    ]
    font = trace["fontconfig"]
    assert font["files"] == 1 and font["threads"] == [101] and abs(font["main_thread_in_calls_ms"] - 1.03) < 1e-6
    fonts = next(f for f in trace["files"] if f["path"] == "/etc/fonts/fonts.conf")
    assert fonts["bytes_read"] == 120 and fonts["calls"] == 2 and abs(fonts["first_ms"] - 26) < 1e-6
    # An lseek's result is an offset, not bytes read (l3afpad's cursor theme: 1 MiB read, counted as 36).
    assert next(f for f in trace["files"] if f["path"] == "/usr/lib/libx.so")["bytes_read"] == 0


def record_trace(argv: list[str], trace: Path, probe: Path, env: dict[str, str] | None = None) -> None:
    """What a device without Python does: run the program once under the probe alone."""
    run_env = dict(env if env is not None else os.environ, HEADSTART_PROBE_OUTPUT=str(trace), LD_AUDIT=str(probe))
    subprocess.run(argv, env=run_env, check=True, capture_output=True, timeout=120)


def test_a_trace_recorded_elsewhere_is_profiled_and_reported(tmp_path):
    trace = tmp_path / "trace.jsonl"
    record_trace([str(binaries.find("fft")), "64"], trace, binaries.find("probe"))
    data = profile_json("--from", str(trace))
    assert data["program"] == [str(binaries.find("fft"))] and data["runs"] == 1
    assert data["warm"]["to_main_us"]["median"] > 0 and data["warm"]["minor_faults"] is None
    assert any(lib["name"].startswith("libfftw3") for lib in data["libraries"])
    report = tmp_path / "report.html"
    done = headstart("report", str(trace), "-o", str(report))
    assert done.returncode == 0, done.stderr
    assert 'class="chart"' in report.read_text()
    done = headstart("profile", "--from", str(tmp_path / "missing.jsonl"))
    assert done.returncode == 1 and done.stderr.startswith("headstart: cannot read") and "Traceback" not in done.stderr
    profile = tmp_path / "profile.json"  # a profile given for the probe's trace: "line 1 is not JSON: '{'"
    profile.write_text(json.dumps(data, indent=2))
    done = headstart("profile", "--from", str(profile))
    assert done.returncode == 1 and "a JSON document over many lines, not the probe's output" in done.stderr


AARCH64_BUILD = os.environ.get("HEADSTART_AARCH64_BUILD")
AARCH64_SYSROOT = os.environ.get("HEADSTART_AARCH64_SYSROOT")


@pytest.mark.skipif(not (AARCH64_BUILD and AARCH64_SYSROOT), reason="the aarch64 build and sysroot come with make test")
def test_a_trace_recorded_on_aarch64_is_profiled_on_the_host(tmp_path):
    """The aarch64 probe, run by qemu-user with Debian's arm64 gzip, writes a trace this host reads."""
    trace = tmp_path / "arm64.jsonl"
    probe = Path(str(AARCH64_BUILD)) / "libheadstart-probe.so"
    gzip = Path(str(AARCH64_SYSROOT)) / "bin/gzip"
    env = {"PATH": "/usr/bin:/bin", "QEMU_LD_PREFIX": str(AARCH64_SYSROOT)}
    record_trace([str(gzip), "--version"], trace, probe, env)
    data = profile_json("--from", str(trace))
    assert data["program"][0].endswith("/gzip")
    assert any("libc.so.6" in lib["path"] for lib in data["libraries"])
    assert data["warm"]["to_main_us"]["median"] > 0


def test_memory_is_read_when_the_ready_line_comes_only_at_exit():
    """stdout to a pipe is block-buffered: the line arrives as the program exits. Its memory is then
    read where the probe stops it at exit, not from the zombie (which would read as 0)."""
    observe = str(binaries.find("observe"))
    data = profile_json("--runs", "2", "--cold", "--ready", "^exiting with 0", "--", observe, "exit", "0")
    for kind in ("warm", "cold"):
        assert data[kind]["pss_kb"]["median"] > 0, kind
    libc = next(f for f in data["files"] if f["path"].endswith("/libc.so.6"))
    assert libc["cold"]["mapped"] > 0


def test_after_main_shares_name_what_a_wait_was_for():
    """A wait of the main thread that ends just after another thread's call on the bus counts as the
    bus; one that ends long after the other thread's last call is its threads' own work; the display
    socket is named by its connect; every moment from main to the end is in one kind."""
    trace = (
        '100 10.000000 openat(AT_FDCWD</x>, "/tmp/probe.jsonl", O_WRONLY) = 4</tmp/probe.jsonl> <0.000010>\n'
        '100 10.001000 connect(5<socket:[11]>, {sa_family=AF_UNIX, sun_path=@"/tmp/.X11-unix/X3"}, 20) = 0 <0.000010>\n'
        "100 10.002000 sendmsg(5<socket:[11]>, {msg_name=NULL}, 0) = 32 <0.001000>\n"
        '101 10.003000 connect(6<socket:[12]>, {sa_family=AF_UNIX, sun_path="/tmp/b/bus-1"}, 20) = 0 <0.000010>\n'
        "100 10.004000 futex(0x1, FUTEX_WAIT_PRIVATE, 0, NULL) = 0 <0.010000>\n"
        "101 10.013000 recvmsg(6<socket:[12]>, {msg_name=NULL}, 0) = 64 <0.000500>\n"
        "100 10.020000 futex(0x2, FUTEX_WAIT_PRIVATE, 0, NULL) = 0 <0.020000>\n"
        "100 10.050000 getpid() = 100 <0.000005>\n"
    )
    calls = syscalls.parse(trace)
    shares = after_main_shares.shares(after_main_trace.after_main(calls), calls)
    kinds = {k["kind"]: k["ms"] for k in shares["kinds"]}
    assert kinds["display"] == pytest.approx(1.01) and kinds["session bus"] == pytest.approx(10.0)
    assert kinds["waiting for its threads"] == pytest.approx(20.0)
    assert sum(kinds.values()) == pytest.approx(shares["traced_ms"]) and shares["traced_ms"] == pytest.approx(50.005)


def test_after_main_shares_count_a_poll_on_the_display_and_no_futex_wake_as_a_wait():
    """A new user's trial: the main loop's poll on the X socket read as other system calls (strace
    printed its array as `[...]`), and a one-thread program's FUTEX_WAKE as waiting for its threads."""
    trace = (
        '100 10.000000 connect(5<socket:[11]>, {sa_family=AF_UNIX, sun_path=@"/tmp/.X11-unix/X3"}, 20) = 0 <0.000010>\n'
        "100 10.001000 poll([{fd=4<anon_inode:[eventfd]>, events=POLLIN}, {fd=5<socket:[11]>, events=POLLIN}], 2, -1)"
        " = 1 ([{fd=5, revents=POLLIN}]) <0.020000>\n"
        "100 10.030000 futex(0x7f0000001000, FUTEX_WAKE_PRIVATE, 2147483647) = 0 <0.003000>\n"
        "100 10.040000 futex(0x7f0000002000, FUTEX_WAIT_BITSET_PRIVATE|FUTEX_CLOCK_REALTIME, 0, NULL, "
        "FUTEX_BITSET_MATCH_ANY) = 0 <0.005000>\n"
        "100 10.050000 getpid() = 100 <0.000005>\n"
    )
    calls = syscalls.parse(trace)
    kinds = {k["kind"]: k["ms"] for k in after_main_shares.shares(calls, calls)["kinds"]}
    assert kinds["display"] == pytest.approx(20.01)
    assert kinds["other system calls"] == pytest.approx(3.005)
    assert kinds["waiting for its threads"] == pytest.approx(5.0)


def test_the_after_main_trace_names_each_descriptor_a_poll_waits_on(tmp_path):
    """The real strace, as the after-main profile runs it: a poll's descriptors are there to name."""
    out = tmp_path / "trace"
    script = "import select, socket; a, b = socket.socketpair(); p = select.poll(); p.register(a); p.poll(1)"
    subprocess.run([*after_main.trace_command(out), sys.executable, "-c", script], check=True)
    (poll,) = [c for c in syscalls.parse(out.read_text()) if c.name == "poll"]
    assert "<socket:[" in poll.rest, poll.rest


def test_a_library_mapped_whole_then_segment_by_segment_counts_its_bytes_once():
    """The loader reserves an object's whole span, then maps its segments over it (MAP_FIXED):
    "mapped KiB" summed them, twice the span (a new user's trial: libcrypto 8,477 KiB of a 4,637 KiB
    file). Two processes mapping it count twice."""
    from headstart.profiling import files

    lib = "/usr/lib/x86_64-linux-gnu/libc.so.6" if Path("/usr/lib/x86_64-linux-gnu/libc.so.6").exists() else "/bin/sh"
    trace = "".join(
        f"{pid} mmap(NULL, 8192, PROT_READ, MAP_PRIVATE|MAP_DENYWRITE, 3<{lib}>, 0) = 0x7f0000000000\n"
        f"{pid} mmap(0x7f0000000000, 4096, PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_FIXED|MAP_DENYWRITE, 3<{lib}>, 0)"
        " = 0x7f0000000000\n"
        f"{pid} mmap(0x7f0000001000, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_DENYWRITE, 3<{lib}>, "
        "0x1000) = 0x7f0000001000\n"
        for pid in (100, 101)
    )
    use = files.parse_trace(trace)[lib]
    assert use.bytes_mapped == 2 * 8192 and use.mapped_exec


def test_toolkit_settings_apply_by_the_objects_a_launch_loaded_and_its_environment():
    """Which comparisons a launch gets (toolkit_settings.py): the toolkit's own library and the
    evidence (a Mesa driver; libwayland-cursor on a Wayland display), unless the variable is set."""
    lib = "/usr/lib/x86_64-linux-gnu"
    gtk4 = [f"{lib}/libgtk-4.so.1", f"{lib}/libwayland-cursor.so.0"]
    swrast, iris, gallium = f"{lib}/dri/swrast_dri.so", f"{lib}/dri/iris_dri.so", f"{lib}/libgallium-24.2.8.so"
    wayland = {"WAYLAND_DISPLAY": "wayland-0"}

    def found(paths: list[str], env: dict[str, str]) -> list[tuple[str, str, str]]:
        return [(s.toolkit, s.variable, evidence) for s, evidence in toolkit_settings.applicable(paths, env)]

    assert found(gtk4, wayland) == [], "no GL driver loaded, and GTK 4 loads cursors as it shows them"
    assert found([*gtk4, swrast], wayland) == [("GTK 4", "GSK_RENDERER", swrast)]
    assert found([*gtk4, swrast], {**wayland, "GSK_RENDERER": "gl"}) == []
    assert found([f"{lib}/libQt6Quick.so.6", iris], {}) == [("Qt 6 Quick", "QT_QUICK_BACKEND", iris)]
    assert found([f"{lib}/libQt6Widgets.so.6", swrast], {}) == [], "Qt widgets have no scene graph to switch"
    gtk3 = [f"{lib}/libgtk-3.so.0", f"{lib}/libwayland-cursor.so.0"]
    assert found(gtk3, wayland) == [("GTK 3", "XCURSOR_PATH", gtk3[1])]
    assert found(gtk3, {**wayland, "GDK_BACKEND": "x11"}) == [] and found(gtk3, {"DISPLAY": ":1"}) == []
    assert [toolkit_settings.drawn_by_cpu(d) for d in (swrast, iris, gallium)] == [True, False, None]


def test_a_toolkit_setting_the_program_cannot_run_with_ends_its_comparison_not_the_profile():
    """One launch not ready either way stops the comparison, which says why (toolkit_settings.measure);
    the launches here are the harness's (a clock), the bookkeeping is what is checked."""
    setting = next(s for s in toolkit_settings.SETTINGS if s.variable == "GSK_RENDERER")
    calls: list[dict[str, str]] = []

    def time_to_ready(env: dict[str, str]) -> int | None:
        calls.append(env)
        if env and len(calls) > 2:
            raise HeadstartError("/usr/bin/x did not show a window within 1 s")
        return 50_000_000 if env else 100_000_000

    found = toolkit_settings.measure(setting, "/usr/lib/dri/swrast_dri.so", time_to_ready, runs=5)
    assert calls == [{}, {"GSK_RENDERER": "cairo"}, {}, {"GSK_RENDERER": "cairo"}]
    assert found["error"] == "with GSK_RENDERER=cairo: /usr/bin/x did not show a window within 1 s"
    assert found["ratio"] is None and found["as_is_ms"]["count"] == 2 and found["changed_ms"]["count"] == 1
    assert toolkit_settings.advice(found) is None
    assert toolkit_settings.no_gain(found).endswith("not compared (" + found["error"] + ")")

    calls.clear()
    found = toolkit_settings.measure(setting, "/usr/lib/dri/swrast_dri.so", lambda env: 10**8 // (1 + bool(env)), 3)
    assert (found["error"], found["ratio"], found["as_is_ms"]["count"]) == (None, 0.5, 3)
    assert "GSK_RENDERER=cairo" in (toolkit_settings.advice(found) or "")


def test_time_in_nested_loads_is_counted_once():
    """A plugin loaded by another's constructor is relocated inside the other's span: summed, qt5ct's
    loads took 581 ms "in the traced launch" of 452 ms."""
    assert after_main.union_ms([(1.0, 1.5), (1.1, 1.2), (1.4, 1.6), (2.0, 2.1)]) == pytest.approx(700)
    assert after_main.union_ms([]) == 0


def test_a_program_that_failed_in_every_launch_is_said_to_have():
    """`profile -- ls /nonexistent` profiled ls's error path without a word; and the advice named the
    profiler's own output file (after close .../probe.jsonl) for a stretch of 0.1 ms."""
    data = profile_json("--runs", "2", "--", "/usr/bin/ls", "/nonexistent-headstart-test")
    advice = data["after_main"]["advice"]
    assert advice[0].startswith("the program exited with status 2 in every launch"), advice
    assert not any("probe.jsonl" in a for a in advice), advice
