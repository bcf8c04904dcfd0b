"""headstart link on real launches: the C++ sample with a thousand globals (libstdc++ binds most of
its own symbols by lookup; only the program needs it, so it may be linked in), the library of our own
(libhs-catalog.so looks up two thousand of its own symbols: -Bsymbolic holds, unless something
interposes one), an unmodified Debian program no other test uses (cmake: every object is Debian's,
so no change is ours to make), and `link check`, which relinks the samples with the advice applied
and times both builds by exec, the GTK and Qt ones under Xvfb."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from headstart import binaries
from headstart.link.objects import read_object

# headstart link loads the probe and libheadstart-mark-main into the programs it execs: the sanitizer
# pass's are instrumented (AddressSanitizer must come first in a process), and the daemon, which that
# pass is for, plays no part in what these tests check: they run in the normal pass only.
pytestmark = pytest.mark.skipif(os.environ.get("HEADSTART_SANITIZED") == "1", reason="run in the normal pass")


def headstart(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headstart", *args], capture_output=True, text=True, timeout=900, env=env
    )


def link_json(*argv: str, env: dict[str, str] | None = None) -> dict:
    done = headstart("link", "--runs", "3", "--json", "--", *argv, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def advice(data: dict, kind: str, obj: str) -> dict:
    found = [a for a in data["advice"] if a["advice"] == kind and a["object"] == obj]
    assert found, f"no {kind} for {obj}: {[(a['advice'], a['object']) for a in data['advice']]}"
    return found[0]


def row(data: dict, name: str) -> dict:
    return next(r for r in data["objects"] if r["name"] == name)


@pytest.fixture(scope="module")
def many_globals() -> dict:
    return link_json(str(binaries.find("many-globals")))


def loader_count(argv: list[str], **env: str) -> dict[str, int]:
    """The loader's own statistics for one exec with main marked (as headstart link counts)."""
    from headstart.relocations import parse_loader_statistics

    run_env = dict(os.environ, LD_DEBUG="statistics", LD_PRELOAD=str(binaries.find("mark-main")), **env)
    done = subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=60)
    return parse_loader_statistics(done.stderr)


def test_the_start_up_lookups_are_the_loaders_count_for_an_exec():
    """Counted under the probe they were twice the loader's for b2sum (184 against 91): its auditing
    makes the loader look up more. They are now those of a launch without it."""
    argv = ["/usr/bin/b2sum", "/etc/hostname"]
    d = link_json(*argv)
    plain, now = loader_count(argv), loader_count(argv, LD_BIND_NOW="1")
    assert d["loader"]["lookups"] == plain["relocations"] and d["loader"]["from_cache"] == plain["from_cache"]
    assert d["loader"]["lookups_bind_now"] == now["relocations"]


def test_many_globals_libstdcxx_lookups_and_its_advice(many_globals):
    d = many_globals
    stdcxx = row(d, "libstdc++.so.6")
    # libstdc++ looks up most of its own symbols (it is not linked -Bsymbolic): Debian's to change.
    assert stdcxx["lookups_self"] > 1000 and not stdcxx["yours"]
    # The loader's own count of start-up lookups matches what the bindings log split at main.
    assert abs(d["loader"]["lookups"] - d["loader"]["bindings_before_main"]) <= 0.1 * d["loader"]["lookups"]
    assert d["costs"]["lookup_ns"] > 0
    program = row(d, "many-globals")
    assert program["yours"] and program["relative"] > 7000 and not program["relr"]
    relr = advice(d, "pack-relative-relocs", "many-globals")
    facts = read_object(program["path"])
    assert relr["holds"] and relr["saves"]["table_bytes"] == facts.relative_in_rela * 24 - facts.relr_bytes_if_packed
    cxx = advice(d, "static-libstdc++", "many-globals")
    assert cxx["holds"] and any(p.endswith("libstdc++.so.6") for p in cxx["drops"])
    assert cxx["saves"]["lookups"] > 1000 and cxx["saves"]["us"] > 0
    exports = advice(d, "export-only-imported", "many-globals")
    assert exports["symbols"] == ["main"] and "-rdynamic" in exports["remove_flags"]
    # Debian's libstdc++: -Bsymbolic would hold only with operator new and delete left interposable.
    bsym = advice(d, "Bsymbolic", "libstdc++.so.6")
    assert not bsym["yours"] and {"_Znam", "_ZdlPv"} <= set(bsym["symbols"])


def test_the_terminal_report_names_objects_and_advice(tmp_path):
    done = headstart("link", "--runs", "2", "--", str(binaries.find("many-globals")))
    assert done.returncode == 0, done.stderr
    assert "libstdc++.so.6" in done.stdout and "static-libstdc++" in done.stdout
    assert "Advice for what you build" in done.stdout


def catalog_program() -> Path:
    return binaries.find("catalog")


def test_a_library_of_our_own_binds_its_own_symbols_and_bsymbolic_holds():
    d = link_json(str(catalog_program()))
    lib = row(d, "libhs-catalog.so")
    assert lib["yours"] and lib["lookups_self"] >= 2000
    bsym = advice(d, "Bsymbolic", "libhs-catalog.so")
    assert bsym["holds"] and bsym["flags"] == ["-Wl,-Bsymbolic"] and bsym["saves"]["lookups"] >= 2000
    hide = advice(d, "hide-unimported", "libhs-catalog.so")
    assert hide["symbols"] == ["catalog_total"]
    assert advice(d, "link-into-program", "libhs-catalog.so")["holds"]


def test_an_interposed_symbol_stays_interposable(tmp_path):
    """A preloaded object defines catalog_weight, which the library calls: -Bsymbolic would bypass it,
    so the advice keeps it in a --dynamic-list and binds the rest locally."""
    if not shutil.which("cc"):
        pytest.skip("no C compiler")
    src = tmp_path / "weight.c"
    src.write_text("double catalog_weight(double x) { return x; }\n")
    lib = tmp_path / "libweight.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    d = link_json(str(catalog_program()), env=dict(os.environ, LD_PRELOAD=str(lib)))
    bsym = advice(d, "Bsymbolic", "libhs-catalog.so")
    assert "catalog_weight" in bsym["symbols"] and any("--dynamic-list" in f for f in bsym["flags"])
    assert "catalog_weight" in bsym["why"] or "interposable" in bsym["why"]


def test_a_program_that_loads_modules_keeps_its_exports(tmp_path):
    """A program linked with -rdynamic so that the modules it dlopens bind to its API (an interpreter's
    C modules, as lua's): no module is loaded in this launch, and hiding its exports would break the
    ones loaded in others (a new user's lua, 2026-11-30). The same program without dlopen is advised."""
    if not shutil.which("cc"):
        pytest.skip("no C compiler")
    api = "".join(f"int api_{i}(int x) {{ return x + {i}; }}\n" for i in range(80))
    for name, body in [("loads", 'return dlopen(argc > 5 ? argv[1] : "", RTLD_NOW) != 0;'), ("plain", "return 0;")]:
        src = tmp_path / f"{name}.c"
        src.write_text(f"#include <dlfcn.h>\n{api}int main(int argc, char **argv) {{ (void) argv; {body} }}\n")
        subprocess.run(["cc", "-rdynamic", "-o", str(tmp_path / name), str(src)], check=True)
    loads = advice(link_json(str(tmp_path / "loads")), "export-only-imported", "loads")
    assert not loads["holds"] and "calls dlopen" in loads["why"]
    assert advice(link_json(str(tmp_path / "plain")), "export-only-imported", "plain")["holds"]


def test_an_unmodified_debian_program_gets_no_advice_of_its_own():
    """cmake, from Debian and used by no other test: 40-odd objects, all the system's."""
    cmake = shutil.which("cmake")
    if not cmake:
        pytest.skip("cmake is not installed (make deps installs it)")
    d = link_json(cmake, "--version")
    assert len(d["objects"]) > 20 and d["loader"]["lookups"] > 1000
    assert not any(a["yours"] for a in d["advice"])
    assert not any(a["advice"] == "static-libstdc++" for a in d["advice"])  # the program is not ours to relink
    assert any(a["advice"] == "Bsymbolic" and not a["yours"] for a in d["advice"])
    done = headstart("link", "--runs", "2", "--", cmake, "--version")
    assert done.returncode == 0 and "no link change of yours applies" in done.stdout


def check(samples: str, runs: str, out: Path, env: dict[str, str] | None = None) -> dict:
    done = headstart("link", "check", "--samples", samples, "--runs", runs, "-o", str(out), "--json", env=env)
    assert done.returncode == 0, done.stderr
    return {p["name"]: p for p in json.loads(done.stdout)["programs"]}


def test_check_relinks_many_globals_and_our_library(tmp_path):
    found = check("many-globals,catalog", "15", tmp_path)
    mg, cat = found["many-globals"], found["catalog"]
    for p in (mg, cat):
        assert "error" not in p, p
        assert p["output_identical"]
        assert p["counts_after"]["lookups"] < p["counts_before"]["lookups"] / 5
        assert p["exec_before_us"]["count"] == 15 and p["exec_after_us"]["count"] == 15
    assert "static-libstdc++" in mg["applied"] and "pack-relative-relocs" in mg["applied"]
    assert mg["counts_after"]["objects"] < mg["counts_before"]["objects"]
    after = read_object(mg["after"])
    assert after.relr and not read_object(mg["before"]).relr
    assert (
        cat["applied"] == ["link-into-program"]
        and cat["counts_after"]["objects"] == cat["counts_before"]["objects"] - 1
    )
    assert "warm_client_us" in mg, mg.get("warm_error")


@pytest.mark.skipif(not shutil.which("Xvfb"), reason="Xvfb is not installed (make deps installs it)")
def test_check_on_the_gtk_and_qt_samples(tmp_path):
    found = check("gtk-hello,qt-widgets", "2", tmp_path)
    for p in found.values():
        assert "error" not in p, p
        assert p["output_identical"]
        # Their cost is in the toolkits' libraries, which are Debian's: the relink changes little.
        assert p["counts_after"]["objects"] == p["counts_before"]["objects"]


def test_a_program_that_exits_with_a_status_of_its_own_is_analysed(tmp_path):
    """diff ends with 1 when its files differ: link said "no launch reached main" and gave nothing."""
    (tmp_path / "a").write_text("a\n")
    (tmp_path / "b").write_text("b\n")
    argv = ["/usr/bin/diff", str(tmp_path / "a"), str(tmp_path / "b")]
    d = link_json(*argv)
    assert d["loader"]["exit_status"] == 1 and d["to_main_us"]["median"] > 0
    assert d["loader"]["lookups"] == loader_count(argv)["relocations"]
    # The terminal report says so too (a new user read curl's 37 as a normal run there).
    done = headstart("link", "--runs", "2", "--", *argv)
    assert done.returncode == 0 and "the program exited with status 1\n" in done.stdout, done.stdout


def test_usage_errors():
    done = headstart("link", "check", "--samples", "nothing")
    assert done.returncode != 0 and "not a sample" in done.stderr
    done = headstart("link", "--samples", "catalog", "--", "/bin/true")
    assert done.returncode != 0 and "link check" in done.stderr
    done = headstart("link", "check", "--after", "/nonexistent", "--", "/bin/true")
    assert done.returncode != 0 and "no such file" in done.stderr


def test_a_program_that_runs_on_after_its_ready_line_is_stopped_there(tmp_path):
    """Found by a new user: the untraced timed launches were left to run to --timeout after the
    ready line (speedcrunch: 62 s for --runs 3 --timeout 20), although --help says the program is
    stopped there. Here a launch not stopped would write its file 3 s after its ready line."""
    left = tmp_path / "ran-on"
    script = f"import time; print('ready', flush=True); time.sleep(3); open({str(left)!r}, 'a').write('x')"
    d = json.loads(
        headstart("link", "--runs", "2", "--ready", "^ready$", "--json", "--", sys.executable, "-c", script).stdout
    )
    assert d["loader"]["reached_ready"] and d["to_main_us"]["count"] == 2
    assert not left.exists(), f"{len(left.read_text())} launches ran on after their ready line"


def test_as_needed_is_advised_for_an_unused_library_and_not_for_one_with_a_constructor(tmp_path):
    """Every object the toolchain links has crtbeginS.o's frame_dummy in .init_array and crti.o's
    _init: they are no constructors of the library's own, which would no longer run without it."""
    if not shutil.which("cc"):
        pytest.skip("no C compiler")
    (tmp_path / "ctor.c").write_text(
        '#include <stdio.h>\n__attribute__((constructor)) static void hello(void) { fputs("ctor\\n", stderr); }\n'
        "int ctor_value(void) { return 1; }\n"
    )
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libctor.so"), str(tmp_path / "ctor.c")], check=True)
    (tmp_path / "main.c").write_text('#include <stdio.h>\nint main(void) { puts("ready"); return 0; }\n')
    program = tmp_path / "app"
    subprocess.run(
        [
            "cc",
            "-o",
            str(program),
            str(tmp_path / "main.c"),
            f"-L{tmp_path}",
            f"-Wl,-rpath,{tmp_path}",
            "-Wl,--no-as-needed",
            "-lz",
            "-lctor",
        ],
        check=True,
    )
    d = link_json(str(program))
    zlib = advice(d, "as-needed", "app")
    found = [a for a in d["advice"] if a["advice"] == "as-needed"]
    by_drop = {Path(a["drops"][0]).name: a for a in found}
    assert by_drop["libz.so.1"]["holds"] and "constructor" not in by_drop["libz.so.1"]["why"], zlib
    assert not by_drop["libctor.so"]["holds"] and "1 constructor(s)" in by_drop["libctor.so"]["why"]
    assert row(d, "libz.so.1")["constructors"] == 0 and row(d, "libctor.so")["constructors"] == 1


def test_link_check_runs_as_many_launches_as_asked_even_the_plain_default():
    """`link check --runs 10` ran 100: 10 was taken for the plain command's default."""
    done = headstart("link", "check", "--runs", "10", "--json", "--after", "/bin/true", "--", "/bin/true")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["runs"] == 10 and data["programs"][0]["exec_before_us"]["count"] == 10
