"""Bad input to the `headstart` commands (issue 25): a file that is not UTF-8, JSON nested too deep,
a profile, an order or a probe trace whose fields have the wrong types, an endless file, a path that
is not UTF-8, a bad regular expression. Each is one line and a non-zero exit, never a traceback, and
the files are checked at the door against their schemas in docs/schema/."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import SANITIZED, bin_path
from headstart import inputfile, jsonfile
from headstart.benchmark.timing import LAUNCHERS, MODES, mode_keys
from headstart.errors import HeadstartError
from headstart.ordering.record import SCHEMA as ORDER_SCHEMA
from headstart.reporters import bench_charts, profile_charts
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex

ROOT = Path(__file__).resolve().parents[1]
HEADSTART = [sys.executable, "-m", "headstart"]
# What headstart's Python commands refuse before any C part of ours runs: nothing for the sanitizers.
PYTHON_ONLY = pytest.mark.skipif(SANITIZED, reason="no C part of ours runs: the normal pass checks it")


def headstart(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HEADSTART, *args], capture_output=True, text=True, **{"timeout": 120, **kw})


def one_line(done: subprocess.CompletedProcess[str], text: str, status: int = 1) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == status, done.stderr
    assert text in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real profile with cold launches (pin plan wants them): of /bin/true, once."""
    path = tmp_path_factory.mktemp("profile") / "true.json"
    done = headstart("profile", "--runs", "1", "--cold", "-o", str(path), "--", "/bin/true")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(path.read_text())
    return data


# Each command that reads a file, with what it needs besides the file.
READERS = {
    "pin plan": (["pin", "plan"], []),
    "lazy plan": (["lazy", "plan"], []),
    "lazy build": (["lazy", "build"], ["--library", "libc.so.6", "-o", "OUT"]),
    "order emit": (["order", "emit"], ["--linker", "lld"]),
    "report": (["report"], ["-o", "OUT/r.html"]),
    "profile --from": (["profile", "--from"], []),
}


def read(command: str, path: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    before, after = READERS[command]
    return headstart(*before, str(path), *(a.replace("OUT", str(tmp_path)) for a in after))


@PYTHON_ONLY
@pytest.mark.parametrize("command", READERS)
def test_a_file_that_is_not_utf8_is_one_line(command, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff{}")
    one_line(read(command, bad, tmp_path), "not UTF-8 text (byte 0xff at offset 0)")


@PYTHON_ONLY
@pytest.mark.parametrize("command", READERS)
def test_json_nested_100000_deep_is_one_line(command, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    one_line(read(command, deep, tmp_path), "not JSON" if command == "profile --from" else "nested too deep")


def _library_empty(p: dict[str, Any]) -> None:
    p["libraries"][0] = {}


def _median_string(p: dict[str, Any]) -> None:
    p["warm"]["to_main_us"]["median"] = "5"


def _null_range(p: dict[str, Any]) -> None:
    f = next(f for f in p["files"] if f["cold"] and f["cold"]["mapped_ranges"])
    f["cold"]["mapped_ranges"][0] = None


WRONG_TYPES = {
    "files a string": (lambda p: p.update(files="abc"), "$.files is a string, not an array"),
    "a library {}": (_library_empty, "$.libraries[0]: 'index' is a required property"),
    "a median a string": (_median_string, "$.warm.to_main_us.median is a string, not a number"),
    "a null range": (_null_range, "mapped_ranges[0] is null, not an array"),
    # The value came first and the reason last: cut at 160 characters, the reason was lost.
    "a long kind": (lambda p: p["libraries"][0].update(kind="x" * 300), "xxx... is not one of ['program', 'loader'"),
}


@PYTHON_ONLY
@pytest.mark.parametrize("case", WRONG_TYPES)
@pytest.mark.parametrize("command", ["pin plan", "lazy plan", "lazy build", "report"])
def test_a_profile_with_fields_of_the_wrong_type_is_refused_naming_the_field(profile, case, command, tmp_path):
    edit, message = WRONG_TYPES[case]
    data = copy.deepcopy(profile)
    edit(data)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    done = read(command, path, tmp_path)
    one_line(done, f"{path}: not a profile written by `headstart profile -o` (")
    assert message in done.stderr


def test_the_profile_read_back_is_valid_and_checking_it_changes_nothing(profile):
    jsonfile.check(profile, "profile", "the profile")


ORDER = {"schema": ORDER_SCHEMA, "program": ["/bin/true"], "method": "pages", "runs": 1,
         "objects": [{"path": "/bin/true", "functions": ["main", "helper"]}]}  # fmt: skip


@PYTHON_ONLY
def test_an_order_is_checked_against_its_schema(tmp_path):
    path = tmp_path / "order.json"
    path.write_text(json.dumps(ORDER))
    done = headstart("order", "emit", str(path), "--linker", "lld", "--object", "true")
    assert done.returncode == 0 and done.stdout.split() == ["main", "helper"], done.stderr
    bad = copy.deepcopy(ORDER)
    bad["objects"][0]["functions"] = "main"
    path.write_text(json.dumps(bad))
    one_line(headstart("order", "emit", str(path), "--linker", "lld"), "$.objects[0].functions is a string")
    schema = json.loads((ROOT / "docs/schema/order.schema.json").read_text())
    assert schema["properties"]["schema"]["const"] == ORDER_SCHEMA


@PYTHON_ONLY
def test_a_probe_trace_with_a_field_of_the_wrong_type_is_one_line(tmp_path):
    trace = tmp_path / "trace.jsonl"
    env = dict(os.environ, HEADSTART_PROBE_OUTPUT=str(trace), LD_AUDIT=str(bin_path("probe")))
    subprocess.run(["/bin/true"], env=env, check=True)
    assert headstart("profile", "--from", str(trace)).returncode == 0
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    at = next(i for i, r in enumerate(lines) if r["event"] == "relocated")
    lines[at]["t"] = "x"  # read into the timeline and compared later: a TypeError before
    trace.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in lines))  # as the probe writes
    for args in (["profile", "--from", str(trace)], ["report", str(trace), "-o", str(tmp_path / "r.html")]):
        one_line(headstart(*args), f"probe output line {at + 1} is not a probe record the way this version writes")


@PYTHON_ONLY
def test_an_endless_file_is_refused_at_the_cap():
    done = headstart("report", "/dev/zero", "-o", "/dev/null")
    one_line(done, "/dev/zero: larger than 256 MiB, the most headstart reads from one file")
    done = subprocess.run(f"yes | {' '.join(HEADSTART)} pin plan /dev/stdin", shell=True, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    one_line(done, "larger than 256 MiB")


def _bytes_read() -> int:
    return int(next(line for line in Path("/proc/self/io").read_text().splitlines() if line.startswith("rchar:"))[6:])


def test_reading_stops_one_byte_after_the_cap():
    before = _bytes_read()
    with pytest.raises(HeadstartError, match="larger than 1 MiB"):
        inputfile.read_bytes(Path("/dev/zero"), 1 << 20)
    assert (1 << 20) < _bytes_read() - before < (1 << 20) + 65536  # and what pytest and /proc/self/io read


@pytest.mark.parametrize(("name", "said"), [("binary", "not UTF-8 text"), ("/dev/zero", "larger than 1 MiB")])
def test_a_check_list_that_is_no_list_is_one_line(name, said, tmp_path):
    """A binary --list was a UnicodeDecodeError's traceback, and /dev/zero read until memory ran out."""
    (tmp_path / "binary").write_bytes(Path("/bin/true").read_bytes())
    done = headstart("check", "--list", name, cwd=tmp_path, timeout=30)
    one_line(done, f"headstart: --list {name}: ", status=2)
    assert said in done.stderr


def test_check_takes_a_path_that_is_not_utf8(tmp_path):
    program = os.fsdecode(bytes(tmp_path) + b"/prog\xff")
    Path(program).write_bytes(Path("/bin/true").read_bytes())
    Path(program).chmod(0o755)
    done = headstart("check", program, env=dict(os.environ, COLUMNS="300"))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "prog\\xff" in done.stdout and "1 of 1 served" in done.stdout
    done = headstart("check", "--json", program)
    assert done.returncode == 0 and json.loads(done.stdout)["path"] == program


@PYTHON_ONLY
@pytest.mark.parametrize(
    "args",
    [
        ["profile", "--ready", "(", "--", "/bin/true"],
        ["bench", "--ready", "(", "--programs", "/bin/true"],
        ["boot", "analyze", "--ready", "(", "log"],
        ["order", "check", "--ready", "(", "--", "/bin/true"],
        ["lazy", "check", "--drop-in", "/tmp", "--ready", "(", "--", "/bin/true"],
    ],
)
def test_a_bad_regular_expression_is_a_usage_error(args):
    done = headstart(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "argument --ready: bad regular expression '(': missing ), unterminated subpattern" in done.stderr


@PYTHON_ONLY
@pytest.mark.parametrize("value", ["-1", "0", "soon", "inf"])
@pytest.mark.parametrize(
    "command, rest",
    [
        (["profile"], ["--ready-window", "--", "/bin/true"]),
        (["bench"], ["--programs", "/bin/true"]),
        (["order", "record"], ["--pages", "-o", "/tmp/o.json", "--", "/bin/true"]),
        (["link"], ["--", "/bin/true"]),
    ],
)
def test_a_timeout_that_is_no_time_is_a_usage_error(command, rest, value):
    """Accepted once: -1 and 0 gave '... within -1 s' after a launch."""
    done = headstart(*command, "--timeout", value, *rest)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"argument --timeout: not a number of seconds above 0: '{value}'" in done.stderr


@pytest.mark.parametrize("value", ["", "0", "-1", "64X", "99999999999999999999G"])
def test_a_budget_that_is_no_size_is_refused_by_both_tools(value, tmp_path):
    """An empty budget was taken as none, and one past 2^64 bytes as given; headstart-pind refused
    both. Now both refuse them, each in one line. headstart-pind took -1 as no limit at all."""
    done = headstart("pin", "plan", "--budget", value, str(tmp_path / "profile.json"))
    assert done.returncode == 2 and done.stderr == f"headstart: --budget: expected a size such as 64M, got {value!r}\n"
    pind = subprocess.run([str(bin_path("headstart-pind")), "--plan", "/x", "--budget", value],
                          capture_output=True, text=True)  # fmt: skip
    assert pind.returncode != 0 and pind.stderr.count("\n") == 1 and "--budget" in pind.stderr


@PYTHON_ONLY
@pytest.mark.parametrize(
    ("command", "option", "value"),
    [
        (["boot", "record", "--device", "/dev/null", "-o", "/dev/null"], "--baud", "-5"),  # was a traceback
        (["boot", "record", "--device", "/dev/null", "-o", "/dev/null"], "--baud", "0"),  # was recorded as is
        (["order", "check", "--runs", "1"], "--read-ahead-kb", "-5"),  # was "root is needed"
        # Flagged every file read, 0 bytes too: "/etc/ld.so.cache: 0 KiB read with 0 read() calls".
        (["profile", "--runs", "1"], "--large-read", "0"),
        (["profile", "--from", "/nonexistent"], "--gaps", "-1"),  # refused only when a program was launched
    ],
)
def test_a_number_out_of_its_range_is_a_usage_error(command, option, value):
    program = ["--", "/bin/true"] if command[0] == "order" or command[1] == "--runs" else []
    done = headstart(*command, option, value, *program)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"argument {option}: expected a whole number from" in done.stderr


@PYTHON_ONLY
@pytest.mark.parametrize(
    "args",
    [
        ["link", "--runs", "1000000000", "--", "/bin/true"],  # ran until killed
        ["link", "check", "--runs", "0", "--after", "/bin/true", "--", "/bin/true"],  # reached launch-timer
        ["order", "record", "--runs", "1000000000", "-o", "/tmp/o.json", "--", "/bin/true"],
        ["order", "check", "--runs", "1000000000", "--", "/bin/true"],
        ["lazy", "check", "--runs", "1000000000", "--drop-in", "/tmp", "--", "/bin/true"],
    ],
)
def test_runs_beyond_any_wait_are_refused_in_one_line(args):
    done = headstart(*args, timeout=30)
    one_line(done, "--runs must be from 1 to 100000", status=2)


def test_pyproject_license_is_an_spdx_string():
    """A license table makes setuptools (77 and later) print a dozen lines of deprecation at install."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert any(d.startswith("jsonschema") for d in project["dependencies"])  # the files are checked at run time


def test_the_schemas_the_package_ships_are_those_in_docs():
    for path in (ROOT / "python/headstart/schema").iterdir():
        assert path.read_text() == (ROOT / "docs/schema" / path.name).read_text()
        jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


def test_check_exit_status_says_whether_everything_given_is_served(tmp_path):
    (tmp_path / "dir").mkdir()
    assert headstart("check", "/bin/true", "/bin/ls").returncode == 0  # all served
    for some_or_none in (["/bin/true", str(tmp_path / "dir")], [str(tmp_path / "dir")], ["/no/such/program"]):
        done = headstart("check", "--json", *some_or_none)
        assert done.returncode == 1 and len(done.stdout.splitlines()) == len(some_or_none), done.stderr
    assert headstart("check").returncode == 2  # usage
    help_text = " ".join(headstart("check", "--help").stdout.split())
    assert "exit status: 0 when headstartd serves every program given; 1 when it serves only some" in help_text
    assert "2 on a usage error" in help_text


def test_check_of_a_static_program_is_its_verdict_alone():
    """The loader's failure to list a static program's libraries was logged beside its verdict."""
    static = bin_path("observe").parent / "observe-static"
    if not static.exists():
        pytest.skip("no static build of observe (static linking unavailable)")
    done = subprocess.run([str(bin_path("headstartd")), "--check", str(static)], capture_output=True, text=True)
    assert json.loads(done.stdout)["mode"] == "exec" and done.stderr == "", done.stderr


def test_check_prints_the_daemons_log_only_when_asked():
    """Its reasons are in the table; the same words above it, as headstartd logged them, were noise."""
    program = str(bin_path("observe").parent / "constructor-thread")
    done = headstart("check", program, env=dict(os.environ, COLUMNS="300"))
    assert done.returncode == 0 and "not warm: it starts a thread while it loads" in done.stdout
    assert "headstartd" not in done.stderr, done.stderr
    done = headstart("check", "--verbose", program)
    assert done.returncode == 0 and f"headstartd: {program} starts a thread while it loads" in done.stderr


def test_check_on_a_narrow_terminal_folds_paths_and_reasons_rather_than_cutting_them():
    """On 60 columns the program's path and its reason wrap whole: a name cut to "…" could not be told."""
    program = str(bin_path("observe").parent / "constructor-thread")
    done = headstart("check", program, env=dict(os.environ, COLUMNS="60"))
    assert done.returncode == 0 and "…" not in done.stdout, done.stdout
    cells = "".join(line.strip("│ ").split("│")[0].strip() for line in done.stdout.splitlines() if "│" in line)
    assert program in cells, done.stdout


def test_the_man_page_gives_the_exit_status():
    page = (ROOT / "packaging/man/headstart.1").read_text()
    assert ".SH EXIT STATUS" in page and "\\fBheadstart check\\fR exits 0 when headstartd serves every program" in page


# Success on bad input becomes failure (issue 25, item 10).


def test_lazy_check_with_a_drop_in_directory_that_is_not_there_or_empty_fails(tmp_path):
    done = headstart("lazy", "check", "--drop-in", "/nonexistent", "--runs", "1", "--", "/bin/true")
    one_line(done, "--drop-in /nonexistent is not a directory", status=2)
    done = headstart("lazy", "check", "--drop-in", str(tmp_path), "--runs", "1", "--", "/bin/true")
    one_line(done, "holds no library: give the DIR of `headstart lazy build --drop-in -o DIR`", status=2)


ONE_BOOT = ROOT / "tests/boot/fixtures/qemu-default.log"


def test_boot_of_a_log_that_holds_one_boot_must_be_one():
    one_line(headstart("boot", "analyze", str(ONE_BOOT), "--boot", "99"), "holds 1 boot: there is no boot 99")
    one_line(headstart("boot", "compare", str(ONE_BOOT), str(ONE_BOOT), "--boot", "2"), "there is no boot 2")
    assert headstart("boot", "analyze", str(ONE_BOOT), "--boot", "1").returncode == 0


def test_bench_checks_every_program_before_running_any_and_writes_nothing(tmp_path):
    results = tmp_path / "bench-results"
    results.mkdir()
    (results / "bench.json").write_text("the last run's results\n")
    done = headstart("bench", "--programs", "fft", "/nonexistent", "/nope2", "-o", str(results), timeout=30)
    one_line(done, "/nonexistent: no such sample app, file or program on PATH", status=2)
    assert "not found either: /nope2" in done.stderr
    assert sorted(p.name for p in results.iterdir()) == ["bench.json"]
    assert (results / "bench.json").read_text() == "the last run's results\n"
    one_line(headstart("bench", "--programs", "'a", "-o", str(results)), "no closing quotation", status=2)
    one_line(headstart("bench", "--programs", "", "-o", str(results)), "an empty program", status=2)


# The HTML report's charts (issue 25, smaller items).


def _bench(programs: dict[str, float | None]) -> dict[str, Any]:
    """A bench.json as the charts read it: every mode, each program with its exit ratio (None: no exit)."""
    keys = mode_keys(list(MODES), list(LAUNCHERS))
    rows = [{"program": name, "modes": {k: {"ratio_to_exec": 1.0 + i / 10, "exit_ratio_to_exec": exit_ratio}
                                        for i, k in enumerate(keys)}}
            for name, exit_ratio in programs.items()]  # fmt: skip
    totals = {k: [1.0, 2.0] for k in keys}
    return {"modes": keys, "programs": rows, "repeated_launches": {"program": "fft", "total_ms": totals}}


def _bar_colours(fig: Any) -> dict[str, str]:
    (ax,) = fig.axes
    return {c.get_label(): to_hex(c.patches[0].get_facecolor()) for c in ax.containers}


def test_every_mode_has_its_own_colour_the_same_in_every_chart():
    data = _bench({"fft": 1.0, "galculator": None})
    colours = _bar_colours(bench_charts.launch_ratios(data))
    assert len(colours) == len(data["modes"]) == 13
    assert len(set(colours.values())) == 13, colours  # exec and the 11th series shared one before
    again = _bar_colours(bench_charts.launch_ratios(data, "exit_ratio_to_exec"))
    assert again == colours
    (ax,) = bench_charts.repeated(data).axes
    assert {line.get_label(): to_hex(line.get_color()) for line in ax.lines} == colours


def test_programs_without_an_exit_are_left_out_of_the_exit_chart():
    data = _bench({"fft": 1.0, "galculator": None, "featherpad": None, "exiv2": 0.9})
    (main,) = bench_charts.launch_ratios(data).axes
    (exit_,) = bench_charts.launch_ratios(data, "exit_ratio_to_exec").axes
    assert [t.get_text() for t in main.get_xticklabels()] == ["fft", "galculator", "featherpad", "exiv2"]
    assert [t.get_text() for t in exit_.get_xticklabels()] == ["fft", "exiv2"]  # no empty slot
    assert bench_charts.launch_ratios(_bench({"galculator": None}), "exit_ratio_to_exec") is None


def _legend_clear_of_axes(fig: Any) -> None:
    renderer = FigureCanvasAgg(fig).get_renderer()
    for ax in fig.axes:
        if ax.get_legend() is not None:
            box, axes = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
            assert box.x0 >= axes.x1, (ax.get_title(), box, axes)  # right of the axes: it covers no bar


def test_no_legend_covers_a_bar(profile):
    for fig in (profile_charts.phases([profile, profile]), profile_charts.warm_cold([profile]),
                profile_charts.waterfall(profile), profile_charts.pages(profile)):  # fmt: skip
        _legend_clear_of_axes(fig)
    data = _bench({"fft": 1.0})
    _legend_clear_of_axes(bench_charts.launch_ratios(data))
    _legend_clear_of_axes(bench_charts.repeated(data))


@pytest.mark.parametrize("kind", ["symlink", "empty", "no folder", "a folder"])
def test_a_learn_file_the_daemon_could_not_keep_is_refused_at_start(kind, tmp_path):
    """A symbolic link was refused when read, then replaced by a file at the first save; a missing
    folder or an empty name lost every save, with a warning each time."""
    target = tmp_path / "target"
    link = tmp_path / "link"
    link.symlink_to(target)
    file, said = {
        "symlink": (str(link), f"--learn-file {link}: a symbolic link, which each save would replace"),
        "empty": ("", "--learn-file: empty"),
        "no folder": (str(tmp_path / "none" / "learned"), "cannot write to its folder"),
        "a folder": (str(tmp_path), "not a regular file"),
    }[kind]
    cmd = [str(bin_path("headstartd")), "--allow-root", "--socket", str(tmp_path / "s" / "socket"),
           "--learn-file", file, "--app", "/bin/true"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert link.is_symlink() and not target.exists()


def test_an_empty_program_or_path_setting_is_refused_at_start(tmp_path):
    """`app =` started the daemon with a warning ("--app : cannot find the program")."""
    conf = tmp_path / "headstart.conf"
    conf.write_text("pool = 1\napp =\n")
    conf.chmod(0o600)
    for args, said in ((["--app", ""], "app: empty: name a file"), (["--config", str(conf)], f"{conf}:2: app: empty")):
        cmd = [str(bin_path("headstartd")), "--allow-root", "--socket", str(tmp_path / "s" / "socket"), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert done.returncode == 1 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    done = subprocess.run([str(bin_path("headstart-run")), "--socket"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr == "headstart-run: --socket needs a value (try --help)\n"


def test_json_cut_inside_a_string_is_named_without_a_doubled_word(tmp_path):
    """json says "Unterminated string starting at", and the line read "starting at at line 16"."""
    cut = tmp_path / "cut.json"
    cut.write_text('{"schema_version": "1')
    one_line(headstart("report", str(cut), "-o", str(tmp_path / "r.html")), "(Unterminated string starting at line 1)")


def test_checks_bad_arguments_say_what_is_wrong_with_the_same_status(tmp_path):
    """A path given was told to "give a path or put it on PATH"; a missing --dir or --package exited
    1 where a bad --list exits 2 (a new user's trial)."""
    missing = headstart("check", str(tmp_path / "nothing"))
    assert missing.returncode == 1 and missing.stderr.endswith("nothing: no such file\n"), missing.stderr
    for option in ("--dir", "--package", "--list"):
        one_line(headstart("check", option, str(tmp_path / "nothing")), f"headstart: {option} ", status=2)
