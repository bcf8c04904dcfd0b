"""A warm program's constructors run once, in the daemon, and what they leave for the exit (a C++
static object's destructor registered with __cxa_atexit, the program's own destructors) then ran at
the exit of every program the daemon served: a C program served beside a warm C++ one died of
SIGSEGV in that one's destructor, which wrote to its own copy of std::cout; text a warm program's
constructor left in stdio's buffer was printed by every served program (a new user's trial,
2026-11-29). What the constructors register is now recorded in the daemon and registered again in
each of the program's own launches, so such a program stays warm; one with destructors of its own,
or leaving output, is served in preload mode. So is one whose constructors call exit(): the trial
read its verdict from the child's exit status, so exit(0) passed as fine and the program was loaded
warm, and its constructor ended the daemon's zygote."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Served, base_env, bin_path
from headstart.daemon import private_daemon

SOURCES = {
    # A static object whose destructor writes with std::cout: registered with __cxa_atexit.
    "static-dtor.cc": '#include <iostream>\nstruct G { ~G() { std::cout << "static dtor" << std::endl; } };\n'
    'static G g;\nint main() { std::cout << "static main" << std::endl; return 0; }\n',
    # Registered from a C constructor: atexit (through libc_nonshared's __cxa_atexit), on_exit with
    # an argument, at_quick_exit (main leaves by quick_exit), in an order their output shows.
    "ctor-atexit.c": "#include <stdio.h>\n#include <stdlib.h>\nstatic int n = 7;\n"
    'static void a(void) { puts("atexit"); }\nstatic void q(void) { puts("quick"); }\n'
    'static void o(int status, void *arg) { printf("on_exit %d %d\\n", status, *(int *) arg); }\n'
    "__attribute__((constructor)) static void c(void) { atexit(a); on_exit(o, &n); at_quick_exit(q); }\n"
    "int main(int argc, char **argv) {\n  setvbuf(stdout, NULL, _IONBF, 0); /* quick_exit flushes nothing */\n"
    '  n = argc; puts("main"); if (argc > 1) quick_exit(4); return 5; }\n',
    # A destructor of the program's own (DT_FINI_ARRAY), which the loader runs at exit.
    "own-dtor.c": '#include <stdio.h>\n__attribute__((destructor)) static void d(void) { puts("own dtor"); }\n'
    'int main(void) { puts("own main"); return 0; }\n',
    # A constructor whose output waits in stdout's buffer (the daemon's stdout is not a terminal).
    "ctor-output.c": '#include <stdio.h>\n__attribute__((constructor)) static void c(void) { puts("ctor says"); }\n'
    'int main(void) { puts("ctor main"); return 0; }\n',
    # Constructors that end the process, as a program that checks its environment before main may.
    "ctor-exit0.c": "#include <stdlib.h>\n__attribute__((constructor)) static void c(void) { exit(0); }\n"
    "int main(void) { return 1; }\n",
    "ctor-exit3.c": "#include <stdlib.h>\n__attribute__((constructor)) static void c(void) { exit(3); }\n"
    "int main(void) { return 1; }\n",
    # A destructor named to the linker (DT_FINI), which the loader runs at exit.
    "own-fini.c": '#include <unistd.h>\nvoid fini(void) { (void) !write(1, "own fini\\n", 9); }\n'
    "int main(void) { return 0; }\n",
    "plain.c": '#include <stdio.h>\nint main(void) { puts("plain"); return 0; }\n',
}
LINK_FLAGS = {"own-fini": ["-Wl,-fini=fini"]}
WARM = ["static-dtor", "ctor-atexit", "plain"]
REASONS = {
    "own-dtor": "it has destructors",
    "own-fini": "a destructor of its own (DT_FINI",
    "ctor-output": "leave output in stdio's buffers",
    "ctor-exit0": "its constructors end the process (exit status 0)",
    "ctor-exit3": "its constructors end the process (exit status 3)",
}


def build(tmp: Path) -> dict[str, Path]:
    built = {}
    for name, text in SOURCES.items():
        compiler = "g++" if name.endswith(".cc") else "cc"
        if not shutil.which(compiler):
            pytest.skip(f"needs {compiler}")
        (tmp / name).write_text(text)
        out = tmp / name.rsplit(".", 1)[0]
        flags = LINK_FLAGS.get(out.name, [])
        subprocess.run([compiler, "-O2", "-o", str(out), str(tmp / name), *flags], check=True)
        built[out.name] = out
    return built


def test_what_a_warm_program_leaves_for_the_exit_reaches_no_other_program(tmp_path):
    programs = build(tmp_path)
    bystander = tmp_path / "bystander"
    shutil.copy(programs["plain"], bystander)
    extra = ["--pool", "1", *(arg for p in programs.values() for arg in ("--warm", str(p)))]
    with private_daemon([bystander], extra_args=extra) as d:
        status = d.status()["program"]
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        # Twice each: the registrations are made in each launch, never kept in the daemon.
        for program, args in [(p, a) for p in [bystander, *programs.values()] for a in ([], ["x"])] * 2:
            by_exec = subprocess.run([str(program), *args], capture_output=True, env=base_env())
            with Served(d):
                served = subprocess.run([*client, str(program), *args], capture_output=True, env=base_env())
            expected = (by_exec.returncode, by_exec.stdout, b"")
            assert (served.returncode, served.stdout, served.stderr) == expected, (program, args)
    assert subprocess.run([str(programs["ctor-atexit"])], capture_output=True).stdout == b"main\non_exit 5 1\natexit\n"
    assert subprocess.run([str(programs["ctor-atexit"]), "x"], capture_output=True).stdout == b"main\nquick\n"
    for name in WARM:
        assert f"warm {programs[name]}" in status, status
    for name, why in REASONS.items():
        (line,) = [s for s in status if s.split(" -- ")[0].endswith(f"/{name}")]
        assert line.startswith("preload ") and why in line, line


def test_a_warm_up_step_that_calls_exit_is_refused_and_the_daemon_serves_on(tmp_path):
    """A warm-up step (--warm-up LIBRARY:FUNCTION) is tried in a throwaway child first; the child's
    exit status was its verdict, so a step that called exit(0) passed, and ran in the zygote."""
    if not shutil.which("cc"):
        pytest.skip("needs cc")
    (tmp_path / "ends.c").write_text("#include <stdlib.h>\nvoid *ends(void) { exit(0); }\n")
    (tmp_path / "uses.c").write_text('#include <stdio.h>\nvoid *ends(void);\nint main(void) { puts("uses"); }\n')
    library, program = tmp_path / "libends.so", tmp_path / "uses"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(tmp_path / "ends.c")], check=True)
    link = ["-Wl,--no-as-needed", f"-L{tmp_path}", "-lends", f"-Wl,-rpath,{tmp_path}"]
    subprocess.run(["cc", "-o", str(program), str(tmp_path / "uses.c"), *link], check=True)
    with private_daemon([program], extra_args=["--warm-up", f"{library}:ends"]) as d:
        (step,) = d.status()["warm-up"]
        assert step == f"refused {library}:ends -- it ended the test child (exit status 0): it would end the daemon"
        client = [str(bin_path("headstart-run")), "--socket", str(d.socket)]
        with Served(d):
            served = subprocess.run([*client, str(program)], capture_output=True, env=base_env())
        assert (served.returncode, served.stdout) == (0, b"uses\n")
