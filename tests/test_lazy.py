"""headstart lazy plan on a program that uses libjpeg only after it is ready, zlib before, and
imports libm's data: libjpeg can be deferred, zlib is used, libm is refused with its reason; a
profile of the path that does use libjpeg before its end keeps it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import base_env, helper_path, run_served
from headstart.daemon import private_daemon


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


def test_a_library_used_only_after_ready_is_deferrable_and_the_others_say_why_not(profiles):
    found = verdicts(profiles["ready"])
    assert found["libjpeg.so.62"]["verdict"] == "defer" and found["libjpeg.so.62"]["bindings_before_ready"] == 0
    assert found["libz.so.1"]["verdict"] == "used before ready" and found["libz.so.1"]["bindings_before_ready"] > 0
    libm = found["libm.so.6"]
    # its data is bound at start (the copy relocation), so it is used before ready too
    assert libm["verdict"] != "defer" and any("__signgam" in r for r in libm["refusals"])
    plan = json.loads(headstart("lazy", "plan", "--json", str(profiles["ready"])).stdout)
    assert plan["deferred_bytes"] == found["libjpeg.so.62"]["size"] > 0


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
"""

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
int main(void) {
        printf("ready\n");
        fflush(stdout);
        usleep(200000); /* the profile stops it at ready: nothing of the library is called before */
        pthread_t t[8];
        pthread_barrier_init(&start, NULL, 8);
        for (long i = 0; i < 8; i++) pthread_create(&t[i], NULL, call, (void *) i);
        for (int i = 0; i < 8; i++) { pthread_join(t[i], NULL); printf("%d\n", results[i]); }
        return 0;
}
"""


def test_stubs_defer_the_library_to_the_first_call_from_many_threads_and_say_so_when_it_is_missing(tmp_path):
    if os.uname().machine != "x86_64":
        pytest.skip("lazy stubs are built for x86-64 only so far")
    (tmp_path / "lib.c").write_text(LIBRARY)
    (tmp_path / "main.c").write_text(PROGRAM)
    libdir = tmp_path / "lib"
    libdir.mkdir()
    cc = ["gcc", "-O1"]
    subprocess.run([*cc, "-shared", "-fPIC", "-Wl,-soname,libhslazy.so.1", str(tmp_path / "lib.c"),
                    "-o", str(libdir / "libhslazy.so.1")], check=True)  # fmt: skip
    subprocess.run([*cc, "-c", str(tmp_path / "main.c"), "-o", str(tmp_path / "main.o")], check=True)
    eager = tmp_path / "eager"
    subprocess.run([*cc, str(tmp_path / "main.o"), str(libdir / "libhslazy.so.1"), "-o", str(eager),
                    f"-Wl,-rpath,{libdir}"], check=True)  # fmt: skip
    profile = tmp_path / "p.json"
    done = headstart("profile", "--runs", "1", "--ready", "^ready", "-o", str(profile), "--", str(eager))
    assert done.returncode == 0, done.stderr
    done = headstart("lazy", "build", str(profile), "--library", "libhslazy.so.1", "-o", str(tmp_path / "stubs"))
    assert done.returncode == 0 and "3 functions stubbed" in done.stdout, done.stderr
    archive = tmp_path / "stubs/libhslazy-lazy.a"
    lazy = tmp_path / "lazy"
    subprocess.run([*cc, str(tmp_path / "main.o"), str(archive), "-o", str(lazy), "-pthread"], check=True)
    needed = subprocess.run(["readelf", "-d", str(lazy)], capture_output=True, text=True, check=True).stdout
    assert "libhslazy" not in needed  # not loaded at start any more
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir))
    want = subprocess.run([str(eager)], capture_output=True, check=True).stdout
    for _ in range(10):  # the race at the first call, many times
        assert subprocess.run([str(lazy)], capture_output=True, env=env, check=True).stdout == want
    with private_daemon([], extra_args=["--warm", str(lazy), "--no-learn"], env=env) as daemon:
        served = run_served(daemon, [str(lazy)], env=base_env(LD_LIBRARY_PATH=str(libdir)))
        assert (served.returncode, served.stdout) == (0, want)  # a served stubbed program loads it too
        assert daemon.launches_started() == 1
    gone = subprocess.run([str(lazy)], capture_output=True, text=True)  # the library nowhere to be found
    assert gone.stdout == "ready\n" and gone.returncode < 0
    assert gone.stderr.count("headstart lazy: cannot load libhslazy.so.1") == 1, gone.stderr


def test_a_library_that_cannot_be_deferred_gets_no_stubs(profiles, tmp_path):
    done = headstart("lazy", "build", str(profiles["ready"]), "--library", "libm.so.6", "-o", str(tmp_path))
    assert done.returncode == 1 and "cannot be deferred" in done.stderr and "__signgam" in done.stderr
