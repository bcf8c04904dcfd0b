"""headstart order on the seed's synthetic program (bench/order/synthetic.py, made small): an
instrumented build records the startup functions in the order main calls them; the order, written
for lld, gold and GNU ld, links builds whose output is the original's and whose startup functions
lie together in that order; a cold launch of such a build touches far fewer text pages."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SANITIZED, bin_path

# The sanitizer build's libheadstart-order needs the ASan runtime loaded first, which the
# synthetic program (built here without it) does not have; the normal build's run tests ordering.
pytestmark = pytest.mark.skipif(SANITIZED, reason="libheadstart-order built with ASan cannot load into it")

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS, CALLED = 1000, 100


def headstart(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "headstart", *args], capture_output=True, text=True, timeout=timeout)


def cc(*args: str) -> None:
    subprocess.run(["gcc", "-O1", *args], check=True, capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("order")
    source = d / "synthetic.c"
    subprocess.run([sys.executable, str(ROOT / "bench/order/synthetic.py"), str(source), str(FUNCTIONS), str(CALLED)],
                   check=True)  # fmt: skip
    runtime = bin_path("order-runtime").parent
    cc("-finstrument-functions", str(source), "-o", str(d / "instrumented"), f"-L{runtime}", "-lheadstart-order",
       f"-Wl,-rpath,{runtime}")  # fmt: skip
    cc("-ffunction-sections", "-c", str(source), "-o", str(d / "synthetic.o"))
    cc(str(d / "synthetic.o"), "-o", str(d / "plain"))
    return {"dir": d, "source": source, "instrumented": d / "instrumented", "object": d / "synthetic.o",
            "plain": d / "plain"}  # fmt: skip


def startup_calls(source: Path) -> list[str]:
    """The functions main calls, in its order, from the generated source."""
    main = source.read_text().split("int main(", 1)[1]
    return re.findall(r"x = (f\d+)\(x\);", main.split("if (argc > 1", 1)[0])


def text_functions(binary: Path) -> list[str]:
    out = subprocess.run(["nm", "-n", str(binary)], capture_output=True, text=True, check=True).stdout
    return [line.split()[2] for line in out.splitlines() if re.match(r"^\S+ [tT] (main|f\d+)$", line)]


@pytest.fixture(scope="module")
def order(synthetic: dict[str, Path]) -> Path:
    out = synthetic["dir"] / "order.json"
    done = headstart("order", "record", "--runs", "2", "-o", str(out), "--", str(synthetic["instrumented"]))
    assert done.returncode == 0, done.stderr
    return out


def test_record_gives_the_first_call_order(synthetic, order):
    data = json.loads(order.read_text())
    (program,) = data["objects"]
    assert data["method"] == "instrumented" and program["path"] == str(synthetic["instrumented"].resolve())
    assert program["functions"] == ["main", *startup_calls(synthetic["source"])]


@pytest.mark.parametrize("linker", ["lld", "gold", "gnu-ld"])
def test_each_linker_packs_the_startup_functions_in_order_with_the_same_output(synthetic, order, linker):
    if linker == "lld" and not shutil.which("ld.lld"):
        pytest.skip("lld is not installed")
    d = synthetic["dir"]
    done = headstart("order", "emit", str(order), "--linker", linker, "--match", str(synthetic["plain"]),
                     "-o", str(d / f"order.{linker}"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"{CALLED + 1} of {CALLED + 1} names are functions of" in done.stderr
    flags = done.stderr.strip().splitlines()[-1].split("link with ", 1)[1].split()
    cc(str(synthetic["object"]), "-o", str(d / f"ordered-{linker}"), *flags)
    for args in ([], ["all"]):
        want = subprocess.run([str(synthetic["plain"]), *args], capture_output=True, check=True).stdout
        assert subprocess.run([str(d / f"ordered-{linker}"), *args], capture_output=True, check=True).stdout == want
    placed = text_functions(d / f"ordered-{linker}")
    expected = ["main", *startup_calls(synthetic["source"])]
    at = placed.index("main")
    assert placed[at : at + len(expected)] == expected  # together, in the recorded order


def test_names_missing_from_the_build_are_reported_not_fatal_and_mold_says_why_not(synthetic, order, tmp_path):
    data = json.loads(order.read_text())
    data["objects"][0]["functions"].insert(3, "renamed_since")
    edited = tmp_path / "order.json"
    edited.write_text(json.dumps(data))
    done = headstart("order", "emit", str(edited), "--linker", "lld", "--match", str(synthetic["plain"]))
    assert done.returncode == 0 and "renamed_since" not in done.stdout.split()
    assert f"{CALLED + 1} of {CALLED + 2} names" in done.stderr and "left out: renamed_since" in done.stderr
    # a stripped build, or another program: one line, nothing written (a new user's trial: an empty order, 0)
    stripped = synthetic["dir"] / "stripped"
    subprocess.run(["strip", "-o", str(stripped), str(synthetic["plain"])], check=True)
    for other in (stripped, Path("/usr/bin/true")):
        done = headstart("order", "emit", str(edited), "--linker", "gnu-ld", "--match", str(other))
        assert done.returncode == 1 and "defines none of the order's" in done.stderr and not done.stdout
    done = headstart("order", "emit", str(edited), "--linker", "mold")
    assert done.returncode == 1 and "no --symbol-ordering-file" in done.stderr
    fragment = headstart("order", "emit", str(order), "--linker", "gnu-ld-2.43")
    assert fragment.stdout.startswith(".text : {\n    *(.text.main ") and fragment.stdout.endswith("}\n")


def test_a_program_not_instrumented_gets_a_clear_message(synthetic, tmp_path):
    done = headstart("order", "record", "--runs", "1", "-o", str(tmp_path / "o.json"), "--", str(synthetic["plain"]))
    assert done.returncode == 1 and "is not instrumented" in done.stderr and "--pages" in done.stderr


def test_check_counts_far_fewer_startup_pages_after_ordering(synthetic, order):
    d = synthetic["dir"]
    done = headstart("order", "emit", str(order), "--linker", "gnu-ld", "-o", str(d / "order.script"))
    assert done.returncode == 0, done.stderr
    cc(str(synthetic["object"]), "-o", str(d / "ordered"), "-fuse-ld=bfd", f"-Wl,-T,{d / 'order.script'}")
    done = headstart("order", "check", "--runs", "1", "--json", "--after", str(d / "ordered"), "--",
                     str(synthetic["plain"]))  # fmt: skip
    assert done.returncode == 0, done.stderr
    before, after = (next(o for o in b["objects"] if o["program"]) for b in json.loads(done.stdout)["builds"])
    assert before["text_pages"] == after["text_pages"]  # the same code, placed otherwise
    assert after["touched"] * 2 < before["touched"], (before, after)


def test_record_takes_a_programs_own_exit_status(tmp_path):
    """A program that ends with a status of its own (here 3, as diff's 1) is recorded as check and link
    take it: its record is whole at any exit (a new user's trial; it was refused). A signal is not."""
    source = tmp_path / "three.c"
    source.write_text(
        "#include <signal.h>\n__attribute__((noinline)) int helper(int x) { return x + 1; }\n"
        "int main(int argc, char **argv) { (void) argv; if (argc > 1) raise(SIGSEGV); return helper(2); }\n"
    )
    runtime = bin_path("order-runtime").parent
    cc("-finstrument-functions", str(source), "-o", str(tmp_path / "three"), f"-L{runtime}", "-lheadstart-order",
       f"-Wl,-rpath,{runtime}")  # fmt: skip
    assert subprocess.run([str(tmp_path / "three")]).returncode == 3
    out = tmp_path / "o.json"
    done = headstart("order", "record", "--runs", "1", "-o", str(out), "--", str(tmp_path / "three"))
    assert done.returncode == 0, done.stderr
    assert {"main", "helper"} <= set(json.loads(out.read_text())["objects"][0]["functions"])
    done = headstart("order", "record", "--runs", "1", "-o", str(out), "--", str(tmp_path / "three"), "crash")
    assert done.returncode == 1 and "SIGSEGV" in done.stderr


def test_check_takes_a_programs_own_exit_status_but_not_two_builds_that_differ(tmp_path):
    """diff ends with 1 when its files differ, which check called a failed launch."""
    (tmp_path / "a").write_text("a\n")
    (tmp_path / "b").write_text("b\n")
    diff = ["/usr/bin/diff", str(tmp_path / "a"), str(tmp_path / "b")]
    done = headstart("order", "check", "--runs", "1", "--json", "--after", "/usr/bin/diff", "--", *diff)
    assert done.returncode == 0, done.stderr
    assert all(b["cold_ready_ms"]["median"] > 0 for b in json.loads(done.stdout)["builds"])
    done = headstart("order", "check", "--runs", "1", "--after", "/bin/false", "--", "/bin/true")
    assert done.returncode == 1 and "false exited with status 1 in a cold launch, /usr/bin/true with 0" in done.stderr


def test_check_not_as_root_evicts_every_file_a_build_mapped_and_says_so(synthetic, monkeypatch):
    """Without root, the cache cannot be dropped: before each timed launch the files the build mapped
    are evicted (the program's and its libraries', where only the program's were before), and the
    report says the launches were partly cold (a new user's trial)."""
    import io

    from headstart.ordering import check, pages
    from headstart.profiling import files
    from headstart.profiling.launch import LaunchOptions
    from headstart.reporters import order as order_report

    evicted: list[list[str]] = []
    monkeypatch.setattr(pages.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(check.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(files, "evict", lambda paths: evicted.append(list(paths)))
    data = check.check([LaunchOptions([str(synthetic["plain"])], None, 60.0)], 1, None)
    assert data["cache_emptied"] == "its files"
    timed = evicted[-1]
    assert str(synthetic["plain"]) in timed and any(Path(f).name.startswith("libc.so") for f in timed)
    out = io.StringIO()
    order_report.render_check(data, out)
    assert "partly cold launches" in " ".join(out.getvalue().split())
    # Two builds of one name are told apart by their paths (it printed "lua / lua")
    twice = data | {"builds": [data["builds"][0], data["builds"][0] | {"program": ["/elsewhere/plain"]}]}
    twice["ratio_to_first"] = {"median": 1.0, "low": 0.9, "high": 1.1, "n": 1}
    out = io.StringIO()
    order_report.render_check(twice, out, width=300)
    assert f"/elsewhere/plain / {synthetic['plain']}" in out.getvalue()


@pytest.mark.skipif(os.geteuid() != 0, reason="an exact page count needs root (drop_caches, readahead off)")
def test_record_by_pages_finds_the_startup_functions_of_a_build_not_instrumented(synthetic, tmp_path):
    out = tmp_path / "pages.json"
    done = headstart("order", "record", "--pages", "--runs", "1", "-o", str(out), "--", str(synthetic["plain"]))
    assert done.returncode == 0, done.stderr
    (program,) = json.loads(out.read_text())["objects"]
    assert {"main", *startup_calls(synthetic["source"])} <= set(program["functions"])


def test_a_recorded_name_stands_for_its_clones_in_the_release_build_not_its_cold_part():
    from headstart.ordering.emit import match_names

    kept, missing = match_names(
        ["main", "parse", "helper", "gone"],
        ["main", "parse.isra.0", "parse.cold", "helper", "helper.constprop.0", "other"],
    )
    assert kept == ["main", "parse.isra.0", "helper", "helper.constprop.0"] and missing == ["gone"]


@pytest.mark.skipif(not shutil.which("clang"), reason="clang is not installed")
def test_clang_entry_bare_instrumentation_records_the_same_order(tmp_path):
    source = tmp_path / "small.c"
    subprocess.run([sys.executable, str(ROOT / "bench/order/synthetic.py"), str(source), "300", "30"], check=True)
    runtime = bin_path("order-runtime").parent
    program = tmp_path / "bare"
    subprocess.run(["clang", "-O1", "-finstrument-function-entry-bare", str(source), "-o", str(program),
                    f"-L{runtime}", f"-Wl,-rpath,{runtime}", "-lheadstart-order"], check=True, timeout=600)  # fmt: skip
    out = tmp_path / "order.json"
    done = headstart("order", "record", "--runs", "1", "-o", str(out), "--", str(program))
    assert done.returncode == 0, done.stderr
    (recorded,) = json.loads(out.read_text())["objects"]
    assert recorded["functions"] == ["main", *startup_calls(source)]


@pytest.mark.skipif(os.geteuid() != 0, reason="an exact page count needs root (drop_caches, readahead off)")
def test_record_by_pages_of_a_stripped_program_or_one_never_ready_is_one_line(synthetic, tmp_path):
    """Debian's programs are stripped: an empty order (exit 0) used to be all a user got."""
    stripped = tmp_path / "stripped"
    subprocess.run(["strip", "--strip-all", "-o", str(stripped), str(synthetic["plain"])], check=True)
    out = tmp_path / "o.json"
    done = headstart("order", "record", "--pages", "--runs", "1", "-o", str(out), "--", str(stripped))
    assert done.returncode == 1 and not out.exists()
    assert done.stderr.strip() == (
        f"headstart: {stripped} names none of its functions (no symbol table: stripped): record a build with "
        "symbols, as the order is for the program you link"
    )
    done = headstart("order", "record", "--pages", "--runs", "1", "--ready", "never printed", "-o", str(out), "--",
                     str(synthetic["plain"]))  # fmt: skip
    assert done.returncode == 1 and not out.exists()
    assert "exited with status 0 without printing a line matching 'never printed' in the cold launch" in done.stderr
