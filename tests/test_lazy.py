"""headstart lazy plan on a program that uses libjpeg only after it is ready, zlib before, and
imports libm's data: libjpeg can be deferred, zlib is used, libm is refused with its reason; a
profile of the path that does use libjpeg before its end keeps it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import SANITIZED, base_env, helper_path, run_served
from headstart.daemon import private_daemon

# Tests of the probe and the stubs in exec'd programs: nothing of the daemon runs in them, so the
# sanitizer pass (which is for the daemon and client) leaves them to the normal one.
EXEC_ONLY = pytest.mark.skipif(SANITIZED, reason="run in the normal pass")


def headstart(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "headstart", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    program = helper_path("lazy-sample")
    if not program.exists():
        pytest.skip("lazy-sample was not built (libjpeg or zlib headers missing)")
    d = tmp_path_factory.mktemp("lazy")
    ready, save = d / "ready.json", d / "save.json"
    done = headstart("profile", "--runs", "1", "--ready", "^ready", "-o", str(ready), "--", str(program))
    assert done.returncode == 0, done.stderr
    done = headstart("profile", "--runs", "1", "-o", str(save), "--", str(program), "save")  # ready at exit
    assert done.returncode == 0, done.stderr
    return {"ready": ready, "save": save}


def verdicts(*paths: Path) -> dict[str, dict]:
    done = headstart("lazy", "plan", "--json", *map(str, paths))
    assert done.returncode == 0, done.stderr
    return {d["soname"]: d for d in json.loads(done.stdout)["dependencies"]}


@EXEC_ONLY
def test_what_a_program_does_after_sigterm_is_not_before_ready(tmp_path):
    """Stopped by SIGTERM alone, a program that handles it (GLib's g_unix_signal_add) went on binding
    symbols, and they counted as before ready: libjpeg, used a moment later, was "used before ready".
    The program is now stopped (SIGSTOP) as its ready line is read, and its bindings end there."""
    program = helper_path("lazy-sample")
    if not program.exists():
        pytest.skip("lazy-sample was not built (libjpeg or zlib headers missing)")
    late = tmp_path / "late.json"
    done = headstart("profile", "--runs", "1", "--ready", "^ready", "-o", str(late), "--", str(program), "late")
    assert done.returncode == 0, done.stderr
    found = verdicts(late)
    assert found["libjpeg.so.62"]["verdict"] == "defer" and found["libjpeg.so.62"]["bindings_before_ready"] == 0
    assert found["libz.so.1"]["bindings_before_ready"] > 0  # what it did before its ready line still counts


def test_a_library_used_only_after_ready_is_deferrable_and_the_others_say_why_not(profiles):
    found = verdicts(profiles["ready"])
    assert found["libjpeg.so.62"]["verdict"] == "defer" and found["libjpeg.so.62"]["bindings_before_ready"] == 0
    assert found["libz.so.1"]["verdict"] == "used before ready" and found["libz.so.1"]["bindings_before_ready"] > 0
    libm = found["libm.so.6"]
    # its data is bound at start (the copy relocation), so it is used before ready too
    assert libm["verdict"] != "defer" and any("__signgam" in r for r in libm["refusals"])
    plan = json.loads(headstart("lazy", "plan", "--json", str(profiles["ready"])).stdout)
    assert plan["deferred_bytes"] == found["libjpeg.so.62"]["size"] > 0
    # the file's bytes, not the span the loader mapped (which holds alignment gaps)
    assert found["libjpeg.so.62"]["size"] == os.stat(found["libjpeg.so.62"]["path"]).st_size


def test_a_profile_that_uses_it_keeps_it(profiles):
    assert verdicts(profiles["save"])["libjpeg.so.62"]["verdict"] == "used before ready"
    assert verdicts(profiles["ready"], profiles["save"])["libjpeg.so.62"]["verdict"] == "used before ready"


def test_bad_input_is_one_line(profiles, tmp_path):
    (tmp_path / "x.json").write_text("[1, 2]")
    done = headstart("lazy", "plan", str(tmp_path / "x.json"))
    assert done.returncode == 1 and "not a profile" in done.stderr and done.stderr.count("\n") == 1
    other = tmp_path / "other.json"
    data = json.loads(profiles["ready"].read_text())
    data["program"] = ["/usr/bin/true"]
    other.write_text(json.dumps(data))
    done = headstart("lazy", "plan", str(profiles["ready"]), str(other))
    assert done.returncode == 1 and "different programs" in done.stderr


LIBRARY = r"""
#include <stdarg.h>
#include <stdio.h>
int lazy_add(int a, int b) { return a + b; }
double lazy_scale(double x, float y) { return x * y; }
int lazy_sum(int n, ...) {
        va_list ap; int s = 0; va_start(ap, n);
        for (int i = 0; i < n; i++) s += va_arg(ap, int);
        va_end(ap); return s;
}
#ifdef WITH_CONSTRUCTOR
__attribute__((constructor)) static void hello(void) { fputs("loaded\n", stderr); }
#endif
#ifdef WITH_SELF_CALL /* as Debian's libgdal: its constructors call its own exported functions */
#include <stdlib.h>
__attribute__((constructor)) static void self_call(void) { if (lazy_add(1, 1) != 2) abort(); }
#endif
#ifdef WITH_THREAD
#include <pthread.h>
#include <unistd.h>
static void *idle(void *arg) { for (;;) pause(); return arg; }
__attribute__((constructor)) static void start_worker(void) {
        pthread_t t;
        pthread_create(&t, NULL, idle, NULL);
        pthread_detach(t);
}
#endif
"""
# The program binds each function to a version, which the stubs must keep.
VERSIONS = "HSLAZY_1 { global: lazy_add; lazy_scale; local: *; };\nHSLAZY_2 { global: lazy_sum; } HSLAZY_1;\n"

PROGRAM = r"""
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
int lazy_add(int, int); double lazy_scale(double, float); int lazy_sum(int, ...);
static pthread_barrier_t start;
static int results[8];
static void *call(void *arg) {
        long i = (long) arg;
        pthread_barrier_wait(&start); /* all at once: the first call races in every thread */
        results[i] = lazy_add((int) i, 100) + (int) lazy_scale(2.5, 4.0f) + lazy_sum(3, 1, 2, (int) i);
        return NULL;
}
int main(int argc, char **argv) {
        if (argc > 1 && argv[1][0] == 'e') /* "early": a call before ready */
                printf("early %d\n", lazy_add(1, 2));
        if (argc > 1 && argv[1][0] == 'q') /* "quit", ready at its _exit, past the probe's stop; "qc": after a call */
                _exit(argv[1][1] == 'c' ? lazy_add(-3, 3) : 0);
        printf("ready\n");
        fflush(stdout);
        if (argc > 1) /* the path that stops at ready, for a profile */
                return 0;
        usleep(300000); /* the profile stops it at ready, and the test reads its maps */
        pthread_t t[8];
        pthread_barrier_init(&start, NULL, 8);
        for (long i = 0; i < 8; i++) pthread_create(&t[i], NULL, call, (void *) i);
        for (int i = 0; i < 8; i++) { pthread_join(t[i], NULL); printf("%d\n", results[i]); }
        return 0;
}
"""
SONAME = "libhslazy.so.1"


@dataclass
class Sample:
    """The test library and a program linked with it as usual (eager), for one machine."""

    dir: Path
    cc: list[str]
    libdir: Path
    eager: Path

    def build_lazy(self, archive: Path) -> Path:
        lazy = self.dir / "lazy"
        subprocess.run([*self.cc, str(self.dir / "main.o"), str(archive), "-o", str(lazy), "-pthread"], check=True)
        return lazy


def make_sample(d: Path, gcc: str = "gcc", define: str | None = None, link: tuple[str, ...] = ()) -> Sample:
    (d / "lib.c").write_text(LIBRARY)
    (d / "lib.map").write_text(VERSIONS)
    (d / "main.c").write_text(PROGRAM)
    libdir = d / "lib"
    libdir.mkdir()
    cc = [gcc, "-O1"]
    subprocess.run([*cc, "-shared", "-fPIC", f"-Wl,-soname,{SONAME}", f"-Wl,--version-script={d / 'lib.map'}",
                    *([f"-D{define}"] if define else []), "-pthread", str(d / "lib.c"),
                    "-o", str(libdir / SONAME)], check=True)  # fmt: skip
    subprocess.run([*cc, "-c", str(d / "main.c"), "-o", str(d / "main.o")], check=True)
    eager = d / "eager"
    subprocess.run([*cc, str(d / "main.o"), str(libdir / SONAME), "-o", str(eager), f"-Wl,-rpath,{libdir}",
                    "-pthread", *link], check=True)  # fmt: skip
    return Sample(d, cc, libdir, eager)


def native_sample(d: Path, define: str | None = None, link: tuple[str, ...] = ()) -> tuple[Sample, Path]:
    """The sample and its profile, stopped at ready."""
    if os.uname().machine != "x86_64":
        pytest.skip("the native stub tests run on x86-64; aarch64 is tested under qemu-user")
    sample = make_sample(d, define=define, link=link)
    profile = d / "p.json"
    done = headstart("profile", "--runs", "1", "--ready", "^ready", "-o", str(profile), "--", str(sample.eager))
    assert done.returncode == 0, done.stderr
    return sample, profile


def maps_at_ready(argv: list[str], env: dict[str, str]) -> tuple[str, bytes, str, int]:
    """The program's memory map when it says ready, then its whole output, stderr and status."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    maps = Path(f"/proc/{proc.pid}/maps").read_text()
    out, err = proc.communicate(timeout=60)
    return maps, first + out, err.decode(), proc.returncode


def deferred_loads(argv: list[str], env: dict[str, str]) -> list[str]:
    """The objects a profile to exit shows loaded after main by lazy stubs at their first call."""
    done = subprocess.run([sys.executable, "-m", "headstart", "profile", "--runs", "1", "--json", "--", *argv],
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [r["object"] for r in json.loads(done.stdout)["after_main"]["loads"] if r["deferred_by_stubs"]]


def test_stubs_defer_the_library_to_the_first_call_from_many_threads_and_say_so_when_it_is_missing(tmp_path):
    sample, profile = native_sample(tmp_path)
    done = subprocess.run([sys.executable, "-m", "headstart", "lazy", "build", str(profile), "--library", SONAME,
                           "-o", "stubs"], cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0 and "3 functions stubbed" in done.stdout, done.stderr  # -o relative to the cwd
    lazy = sample.build_lazy(tmp_path / "stubs/libhslazy-lazy.a")
    needed = subprocess.run(["readelf", "-d", str(lazy)], capture_output=True, text=True, check=True).stdout
    assert "libhslazy" not in needed  # not loaded at start any more
    env = dict(os.environ, LD_LIBRARY_PATH=str(sample.libdir))
    want = subprocess.run([str(sample.eager)], capture_output=True, check=True).stdout
    for _ in range(10):  # the race at the first call, many times
        assert subprocess.run([str(lazy)], capture_output=True, env=env, check=True).stdout == want
    maps, out, _, status = maps_at_ready([str(lazy)], env)
    assert SONAME not in maps and (out, status) == (want, 0)
    assert deferred_loads([str(lazy)], env) == [str(sample.libdir / SONAME)]
    assert deferred_loads([str(sample.eager)], env) == []  # loaded at start: no load after main at all
    with private_daemon([], extra_args=["--warm", str(lazy), "--no-learn"], env=env) as daemon:
        served = run_served(daemon, [str(lazy)], env=base_env(LD_LIBRARY_PATH=str(sample.libdir)))
        assert (served.returncode, served.stdout) == (0, want)  # a served stubbed program loads it too
        assert daemon.launches_started() == 1, daemon.log_text()
    # Served, the library is learned as a load after main and preloaded: the first call finds it.
    learn = ["--warm", str(lazy), "--learn-file", str(tmp_path / "learned")]
    with private_daemon([], extra_args=learn, env=env) as daemon:
        for _ in range(2):
            served = run_served(daemon, [str(lazy)], env=base_env(LD_LIBRARY_PATH=str(sample.libdir)))
            assert (served.returncode, served.stdout) == (0, want)
            deadline = time.monotonic() + 60
            while not any(v.endswith(f"/{SONAME}") for v in daemon.status().get("learned", [])
                          if v.startswith("preloaded ")):  # fmt: skip
                assert time.monotonic() < deadline, daemon.log_text()
                time.sleep(0.05)
    gone = subprocess.run([str(lazy)], capture_output=True, text=True)  # the library nowhere to be found
    assert gone.stdout == "ready\n" and gone.returncode < 0
    assert gone.stderr.count(f"headstart lazy: cannot load {SONAME}") == 1, gone.stderr


def test_a_drop_in_defers_the_library_of_the_unmodified_program(tmp_path):
    sample, profile = native_sample(tmp_path)
    stubs = tmp_path / "stubs"
    done = headstart("lazy", "build", str(profile), "--library", SONAME, "--drop-in", "-o", str(stubs))
    assert done.returncode == 0 and f"LD_LIBRARY_PATH={stubs}" in done.stdout, done.stderr
    defs = subprocess.run(["readelf", "-V", str(stubs / SONAME)], capture_output=True, text=True, check=True).stdout
    assert "HSLAZY_1" in defs and "HSLAZY_2" in defs  # the versions the program binds to
    want = subprocess.run([str(sample.eager)], capture_output=True, check=True).stdout
    env = dict(os.environ, LD_LIBRARY_PATH=str(stubs))
    for _ in range(5):
        maps, out, err, status = maps_at_ready([str(sample.eager)], env)
        assert (out, status) == (want, 0), err
        assert str(stubs / SONAME) in maps and str(sample.libdir / SONAME) not in maps  # the stub, not it
    assert deferred_loads([str(sample.eager)], env) == [str(sample.libdir / SONAME)]
    with private_daemon([], extra_args=["--warm", str(sample.eager), "--no-learn"], env=env) as daemon:
        served = run_served(daemon, [str(sample.eager)], env=base_env(LD_LIBRARY_PATH=str(stubs)))
        assert (served.returncode, served.stdout) == (0, want)
        assert daemon.launches_started() == 1, daemon.log_text()
    (sample.libdir / SONAME).rename(tmp_path / "moved")
    _, out, err, status = maps_at_ready([str(sample.eager)], env)
    assert out == b"ready\n" and status < 0 and err.count(f"headstart lazy: cannot load {SONAME}") == 1, err


def test_a_plugin_loaded_after_ready_binds_to_the_drop_in_what_the_program_does_not_call(tmp_path):
    """The drop-in has the library's soname, so a plugin that needs the library gets it: it must
    stand for every function of the library, not only the program's (lazy_sum, which only the
    plugin calls, made dlopen fail with 'undefined symbol')."""
    if os.uname().machine != "x86_64":
        pytest.skip("the native stub tests run on x86-64")
    sample = make_sample(tmp_path)
    (tmp_path / "host.c").write_text(
        "#include <dlfcn.h>\n#include <stdio.h>\nint lazy_add(int, int);\n"
        "int main(int argc, char **argv) {\n"
        '        printf("ready\\n");\n        fflush(stdout);\n'
        "        if (argc < 2) return 0;\n"
        "        void *h = dlopen(argv[1], RTLD_NOW);\n"
        '        if (!h) { fprintf(stderr, "%s\\n", dlerror()); return 2; }\n'
        '        int (*run)(void) = (int (*)(void)) dlsym(h, "plugin_run");\n'
        '        printf("plugin %d, program %d\\n", run(), lazy_add(2, 3));\n'
        "        return 0;\n}\n"
    )
    (tmp_path / "plugin.c").write_text(
        "int lazy_sum(int, ...);\nint plugin_run(void) { return lazy_sum(2, 20, 22); }\n"
    )
    host, plugin = tmp_path / "host", tmp_path / "plugin.so"
    subprocess.run(["gcc", str(tmp_path / "host.c"), str(sample.libdir / SONAME), "-o", str(host),
                    f"-Wl,-rpath,{sample.libdir}"], check=True)  # fmt: skip
    subprocess.run(["gcc", "-shared", "-fPIC", str(tmp_path / "plugin.c"), str(sample.libdir / SONAME), "-o",
                    str(plugin)], check=True)  # fmt: skip
    profile = tmp_path / "host.json"
    done = headstart("profile", "--runs", "1", "--ready", "^ready", "-o", str(profile), "--", str(host))
    assert done.returncode == 0, done.stderr
    stubs = tmp_path / "stubs"
    stubs.write_text("a file, not a folder\n")  # it said "File exists" (a new user's trial)
    done = headstart("lazy", "build", str(profile), "--library", SONAME, "--drop-in", "-o", str(stubs))
    assert done.returncode == 1 and f"-o {stubs}: not a directory" in done.stderr
    stubs.unlink()
    done = headstart("lazy", "build", str(profile), "--library", SONAME, "--drop-in", "-o", str(stubs))
    assert done.returncode == 0, done.stderr
    want = subprocess.run([str(host), str(plugin)], capture_output=True, text=True)
    assert (want.returncode, want.stdout) == (0, "ready\nplugin 42, program 5\n"), want.stderr
    got = subprocess.run([str(host), str(plugin)], capture_output=True, text=True,
                         env=dict(os.environ, LD_LIBRARY_PATH=str(stubs)))  # fmt: skip
    assert (got.returncode, got.stdout) == (0, want.stdout), got.stderr


@EXEC_ONLY
def test_check_times_both_and_names_what_the_stubs_kept_from_loading(tmp_path):
    sample, profile = native_sample(tmp_path)
    stubs = tmp_path / "stubs"
    assert headstart("lazy", "build", str(profile), "--library", SONAME, "--drop-in", "-o", str(stubs)).returncode == 0
    done = headstart("lazy", "check", "--runs", "1", "--json", "--drop-in", str(stubs), "--ready", "^ready",
                     "--", str(sample.eager))  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["schema"] == "headstart-lazy-check 1" and list(data["not_loaded_by_ready"]) == [
        str(sample.libdir / SONAME)
    ]
    assert all(b["cold_ready_ms"]["median"] > 0 for b in data["builds"]) and data["ratio_to_eager"] > 0
    archive = tmp_path / "archive"
    assert headstart("lazy", "build", str(profile), "--library", SONAME, "-o", str(archive)).returncode == 0
    sample.build_lazy(archive / "libhslazy-lazy.a")
    done = subprocess.run([sys.executable, "-m", "headstart", "lazy", "check", "--runs", "1", "--json", "--after",
                           "lazy", "--ready", "^ready", "--", str(sample.eager)], cwd=tmp_path, capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr  # --after relative to the cwd; the program itself is not counted
    assert list(json.loads(done.stdout)["not_loaded_by_ready"]) == [str(sample.libdir / SONAME)]
    done = headstart("lazy", "check", "--runs", "0", "--drop-in", str(stubs), "--", str(sample.eager))
    assert done.returncode != 0 and "--runs" in done.stderr and done.stderr.count("\n") == 1
    # Stubs of a library the program does not load: one line, not a ratio of noise.
    done = headstart("lazy", "check", "--runs", "1", "--drop-in", str(stubs), "--", "/bin/true")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"true loads none of its libraries ({SONAME}): its stubs would change nothing" in done.stderr


@EXEC_ONLY
def test_a_drop_in_defers_pcre2_for_debian_git_which_still_greps_with_it(tmp_path):
    """git links libpcre2-8 for `git grep -P` alone: deferred from a profile of `git status`."""
    git = shutil.which("git")
    if git is None or os.uname().machine != "x86_64":
        pytest.skip("needs Debian's git on x86-64")
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("make test\nmake  demo\nmake it\n")
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True)
    profile, stubs = tmp_path / "status.json", tmp_path / "stubs"
    done = headstart("profile", "--runs", "1", "-o", str(profile), "--", git, "-C", str(repo), "status", "--short")
    assert done.returncode == 0, done.stderr
    done = headstart("lazy", "build", str(profile), "--library", "libpcre2-8.so.0", "--drop-in", "-o", str(stubs))
    assert done.returncode == 0, done.stderr
    env = dict(os.environ, LD_LIBRARY_PATH=str(stubs))
    for argv in (["status", "--short"], ["grep", "-P", "-n", r"make\s+(test|demo)"], ["grep", "-P", "("]):
        want = subprocess.run([git, "-C", str(repo), *argv], capture_output=True)
        got = subprocess.run([git, "-C", str(repo), *argv], capture_output=True, env=env)
        assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr), argv
    assert deferred_loads([git, "-C", str(repo), "status", "--short"], env) == []  # never loaded
    loads = deferred_loads([git, "-C", str(repo), "grep", "-P", "-c", "make"], env)
    assert len(loads) == 1 and Path(loads[0]).name.startswith("libpcre2-8.so"), loads  # at its first call


@EXEC_ONLY
def test_a_library_with_constructors_gets_stubs_to_relink_with_but_no_drop_in(tmp_path):
    sample, profile = native_sample(tmp_path, define="WITH_CONSTRUCTOR")
    done = headstart("lazy", "build", str(profile), "--library", SONAME, "--drop-in", "-o", str(tmp_path / "s"))
    assert done.returncode == 1 and "constructors" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    done = headstart("lazy", "build", str(profile), "--library", SONAME, "-o", str(tmp_path / "s"))
    assert done.returncode == 0, done.stderr
    lazy = sample.build_lazy(tmp_path / "s/libhslazy-lazy.a")
    env = dict(os.environ, LD_LIBRARY_PATH=str(sample.libdir))
    got = subprocess.run([str(lazy)], capture_output=True, env=env, check=True)
    assert got.stderr == b"loaded\n"  # at the first call, not at start: the plan's note says so
    assert got.stdout == subprocess.run([str(sample.eager)], capture_output=True, check=True).stdout


@EXEC_ONLY
def test_a_library_whose_constructor_starts_a_thread_is_refused(tmp_path):
    _, profile = native_sample(tmp_path, define="WITH_THREAD")
    found = verdicts(profile)[SONAME]
    assert found["verdict"] == "refused" and any("starts 1 thread" in r for r in found["refusals"]), found
    done = headstart("lazy", "build", str(profile), "--library", SONAME, "-o", str(tmp_path / "s"))
    assert done.returncode == 1 and "starts 1 thread" in done.stderr


A64_BUILD = os.environ.get("HEADSTART_AARCH64_BUILD")
A64_SYSROOT = os.environ.get("HEADSTART_AARCH64_SYSROOT")


@pytest.mark.skipif(not (A64_BUILD and A64_SYSROOT), reason="the aarch64 build and sysroot come with make test")
def test_aarch64_stubs_and_drop_in_run_the_program_as_eagerly_under_qemu(tmp_path):
    """Profiled where it runs (the aarch64 probe under qemu-user), stubbed here with the cross compiler."""
    sample = make_sample(tmp_path, gcc="aarch64-linux-gnu-gcc")
    env = {"PATH": "/usr/bin:/bin", "QEMU_LD_PREFIX": str(A64_SYSROOT)}
    trace, profile = tmp_path / "trace.jsonl", tmp_path / "p.json"
    probe = {"HEADSTART_PROBE_OUTPUT": str(trace), "LD_AUDIT": str(Path(str(A64_BUILD)) / "libheadstart-probe.so")}
    subprocess.run([str(sample.eager), "stop-at-ready"], env=env | probe, check=True, capture_output=True)
    done = headstart("profile", "--from", str(trace), "-o", str(profile))
    assert done.returncode == 0, done.stderr
    plan = json.loads(headstart("lazy", "plan", "--json", "--sysroot", str(A64_SYSROOT), str(profile)).stdout)
    assert {d["soname"]: d["verdict"] for d in plan["dependencies"]}[SONAME] == "defer"
    want = subprocess.run([str(sample.eager)], env=env, capture_output=True, check=True).stdout
    assert want.startswith(b"ready\n") and len(want.splitlines()) == 9
    sysroot = ["--sysroot", str(A64_SYSROOT)]
    done = headstart("lazy", "build", str(profile), "--library", SONAME, *sysroot, "-o", str(tmp_path / "a"))
    assert done.returncode == 0 and "3 functions stubbed" in done.stdout, done.stderr
    lazy = sample.build_lazy(tmp_path / "a/libhslazy-lazy.a")
    lib_env = env | {"LD_LIBRARY_PATH": str(sample.libdir)}
    for _ in range(3):
        assert subprocess.run([str(lazy)], env=lib_env, capture_output=True, check=True).stdout == want
    drop_in = tmp_path / "d"
    done = headstart("lazy", "build", str(profile), "--library", SONAME, "--drop-in", *sysroot, "-o", str(drop_in))
    assert done.returncode == 0, done.stderr
    in_env = env | {"LD_LIBRARY_PATH": str(drop_in)}
    for _ in range(3):
        assert subprocess.run([str(sample.eager)], env=in_env, capture_output=True, check=True).stdout == want
    (sample.libdir / SONAME).rename(tmp_path / "moved")  # both now reach the stub that says so
    for argv, run_env in (([str(lazy)], lib_env), ([str(sample.eager)], in_env)):
        gone = subprocess.run(argv, env=run_env, capture_output=True, text=True)
        assert gone.stdout == "ready\n" and gone.returncode != 0 and "headstart lazy: cannot load" in gone.stderr


def test_a_library_that_cannot_be_deferred_gets_no_stubs(profiles, tmp_path):
    done = headstart("lazy", "build", str(profiles["ready"]), "--library", "libm.so.6", "-o", str(tmp_path))
    assert done.returncode == 1 and "cannot be deferred" in done.stderr and "__signgam" in done.stderr


def bind_now(program: Path | str) -> bool:
    flags = subprocess.run(["readelf", "-d", str(program)], capture_output=True, text=True, check=True).stdout
    return "BIND_NOW" in flags or re.search(r"FLAGS_1.*\bNOW\b", flags) is not None


@EXEC_ONLY
def test_z_now_a_library_bound_at_start_but_called_only_after_ready_is_deferred(tmp_path):
    """-z now binds every call at start: the plan tells use by a run with the stubs, the drop-in defers it."""
    sample, profile = native_sample(tmp_path, link=("-Wl,-z,now",))
    assert bind_now(sample.eager)
    found = verdicts(profile)[SONAME]
    assert found["bindings_before_ready"] > 0  # all bound at start: the old plan said "used before ready"
    assert (found["verdict"], found["called_before_ready"]) == ("defer", False), found
    plan = json.loads(headstart("lazy", "plan", "--json", str(profile)).stdout)
    assert plan["bind_now"] and plan["deferred_bytes"] == found["size"] > 0
    early = tmp_path / "early.json"
    done = headstart("profile", "--runs", "1", "--ready", "^ready", "-o", str(early), "--", str(sample.eager), "e")
    assert done.returncode == 0, done.stderr
    called = verdicts(early)[SONAME]  # the run with the stubs loads it at its call, before ready
    assert (called["verdict"], called["called_before_ready"]) == ("used before ready", True), called
    assert verdicts(profile, early)[SONAME]["verdict"] == "used before ready"
    stubs = tmp_path / "stubs"
    done = headstart("lazy", "build", str(profile), "--library", SONAME, "--drop-in", "-o", str(stubs))
    assert done.returncode == 0, done.stderr
    want = subprocess.run([str(sample.eager)], capture_output=True, check=True)
    env = dict(os.environ, LD_LIBRARY_PATH=str(stubs))
    for _ in range(5):
        maps, out, err, status = maps_at_ready([str(sample.eager)], env)
        assert (out, err.encode(), status) == (want.stdout, want.stderr, 0)
        assert str(stubs / SONAME) in maps and str(sample.libdir / SONAME) not in maps
    assert deferred_loads([str(sample.eager)], env) == [str(sample.libdir / SONAME)]  # at its first call


@EXEC_ONLY
def test_z_now_debian_gpg_defers_libbz2_until_it_decompresses(tmp_path):
    """Debian's gpg (-z now) links libbz2 for bzip2 packets alone: `gpg --version` never calls it."""
    gpg = shutil.which("gpg")
    if gpg is None or os.uname().machine != "x86_64" or not bind_now(gpg):
        pytest.skip("needs Debian's gpg, linked with -z now, on x86-64")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (tmp_path / "in.txt").write_text("".join(f"{i}\n" for i in range(3000)))
    packed = tmp_path / "in.gpg"  # a literal packet compressed with bzip2, no key needed
    subprocess.run([gpg, "--homedir", str(home), "--batch", "--store", "--compress-algo", "bzip2", "-o", str(packed),
                    str(tmp_path / "in.txt")], check=True, capture_output=True)  # fmt: skip
    base = [gpg, "--homedir", str(home), "--batch"]
    profile, stubs = tmp_path / "version.json", tmp_path / "stubs"
    done = headstart("profile", "--runs", "1", "-o", str(profile), "--", *base, "--version")
    assert done.returncode == 0, done.stderr
    found = verdicts(profile)["libbz2.so.1.0"]
    assert found["bindings_before_ready"] > 0 and found["verdict"] == "defer" and found["called_before_ready"] is False
    done = headstart("lazy", "build", str(profile), "--library", "libbz2.so.1.0", "--drop-in", "-o", str(stubs))
    assert done.returncode == 0, done.stderr
    env = dict(os.environ, LD_LIBRARY_PATH=str(stubs))
    for argv in (["--version"], ["-d", str(packed)], ["--list-packets", str(packed)], ["-d", str(tmp_path)]):
        want = subprocess.run([*base, *argv], capture_output=True)
        got = subprocess.run([*base, *argv], capture_output=True, env=env)
        assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr), argv
    assert deferred_loads([*base, "--version"], env) == []  # never loaded
    loads = deferred_loads([*base, "-d", str(packed)], env)
    assert len(loads) == 1 and Path(loads[0]).name.startswith("libbz2.so"), loads  # at its first call


@EXEC_ONLY
def test_z_now_a_run_a_stub_ends_at_a_first_call_before_ready_counts_as_a_call(tmp_path):
    """With the drop-in, the library's constructor calling its own function reaches a stub, which ends
    the run (docs/lazy.md): that came at a first call of the program, so it is a call, not unknown."""
    sample, profile = native_sample(tmp_path, define="WITH_SELF_CALL", link=("-Wl,-z,now",))
    assert verdicts(profile)[SONAME]["verdict"] == "defer"
    early = tmp_path / "early.json"
    done = headstart("profile", "--runs", "1", "--ready", "^ready", "-o", str(early), "--", str(sample.eager), "e")
    assert done.returncode == 0, done.stderr
    found = verdicts(early)[SONAME]
    assert (found["verdict"], found["called_before_ready"], found["refusals"]) == ("used before ready", True, [])
    assert any("called while its library loads" in n for n in found["notes"]), found


@EXEC_ONLY
def test_z_now_calls_are_told_for_a_program_that_ends_without_the_probe_stopping_it(tmp_path):
    """_exit skips the loader's closing of objects, where the probe stops the program for its maps
    (as gpg-agent and the JDK's launchers end): the probe's account of the loads tells instead."""
    sample, _ = native_sample(tmp_path, link=("-Wl,-z,now",))
    found = {}
    for arg in ("q", "qc"):
        profile = tmp_path / f"{arg}.json"
        done = headstart("profile", "--runs", "1", "-o", str(profile), "--", str(sample.eager), arg)
        assert done.returncode == 0, done.stderr
        found[arg] = verdicts(profile)[SONAME]
    assert (found["q"]["verdict"], found["q"]["called_before_ready"]) == ("defer", False), found["q"]
    assert (found["qc"]["verdict"], found["qc"]["called_before_ready"]) == ("used before ready", True), found["qc"]
