"""Libraries that define a symbol of the C library ahead of it (issue 30). Under exec the program
and all its libraries bind such a name to that library, which comes first in the lookup order; a
served program looks in the daemon's global scope first, where the C library is: man-db's libman
carries gnulib's argp, and served `man --help` printed glibc's help. The daemon binds every
reference to the library, as exec does, for the families that keep no state the daemon's C library
could have set up (gnulib's obstack in gettext's libgettextlib, gnulib's argp in libman, libunwind's
backtrace in Xvfb); a library with an allocator of its own (binutils' libgprofng defines free) is
sent to exec, named. Programs whose libraries only define versioned glibc symbols (libm's finite)
are not concerned."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Served, base_env, daemon_in_mode, helper_path
from headstart import binaries
from headstart.daemon import RunningDaemon, private_daemon
from test_fallback import assert_fallback

PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "hello"
msgstr "bonjour"

#, fuzzy
msgid "world"
msgstr "monde"

msgid "untranslated"
msgstr ""
"""

SOURCE = """#include <libintl.h>
#define _(s) gettext (s)
int main (void) { puts (_("hello")); puts (_("world")); return 0; }
"""

# Each program with its libraries' redefinition, and how it is run ({DIR}: a folder with PO and SOURCE).
CASES = {
    "whatis --help": ["/usr/bin/whatis", "--help"],  # gnulib's argp_help, from libman
    "man --usage": ["/usr/bin/man", "--usage"],
    "man --version": ["/usr/bin/man", "--version"],
    "manpath bad option": ["/usr/bin/manpath", "--no-such-option"],  # argp_error
    "msgfmt --help": ["/usr/bin/msgfmt", "--help"],
    "msgfmt compile": ["/usr/bin/msgfmt", "--statistics", "-o", "-", "{DIR}/fr.po"],  # gnulib's obstack
    "msgattrib --only-fuzzy": ["/usr/bin/msgattrib", "--only-fuzzy", "{DIR}/fr.po"],
    "xgettext": ["/usr/bin/xgettext", "--omit-header", "-k_", "-o", "-", "{DIR}/hello.c"],
    "Xvfb -version": ["/usr/bin/Xvfb", "-version"],  # libunwind's backtrace
}
SAMPLE = "uses-redefines"  # tests/helpers/redefines.c: what each definition returns tells whose it is
PROGRAMS = sorted({argv[0] for argv in CASES.values()})


def verdict(program: str) -> dict:
    out = subprocess.run([str(binaries.find("headstartd")), "--check", program], capture_output=True, text=True)
    return json.loads(out.stdout)


def redefines(library: str, symbol: str) -> bool:
    out = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True, check=True)
    return any(line.split()[-1] == symbol for line in out.stdout.splitlines())


@pytest.fixture(scope="module", params=["preload", "warm", "pool"])
def interposed_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    with daemon_in_mode(request.param, [*PROGRAMS, str(helper_path(SAMPLE))]) as d:
        yield d


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("gettext")
    (d / "fr.po").write_text(PO)
    (d / "hello.c").write_text(SOURCE)
    return d


def run_both(daemon: RunningDaemon, argv: list[str], cwd: Path) -> tuple[bytes, bytes]:
    """stdout, stderr and the exit status, by exec and served."""
    client = [str(binaries.find("headstart-run")), "--socket", str(daemon.socket)]
    outs = []
    for prefix in ([], client):
        p = subprocess.run(prefix + argv, stdin=subprocess.DEVNULL, capture_output=True, env=base_env(), cwd=cwd,
                           start_new_session=True, timeout=60)  # fmt: skip
        outs.append(b"stdout:\n%s\nstderr:\n%s\nexit %d\n" % (p.stdout, p.stderr, p.returncode))
    return outs[0], outs[1]


def test_the_libraries_redefine_c_library_symbols():
    """What the cases rest on: without these redefinitions the tests below prove nothing."""
    assert redefines("/usr/lib/man-db/libman-2.11.2.so", "argp_parse")
    assert redefines("/lib/x86_64-linux-gnu/libgettextlib-0.21.so", "_obstack_begin")
    assert redefines("/lib/x86_64-linux-gnu/libunwind.so.8", "backtrace")


def test_our_program_reaches_the_library_s_definitions(interposed_daemon, tmp_path):
    """Functions called by the program and by the library itself, and a variable the program copies
    (its source is the library's): the served program prints what exec prints, the library's values."""
    with Served(interposed_daemon):
        by_exec, served = run_both(interposed_daemon, [str(helper_path(SAMPLE))], tmp_path)
    assert served == by_exec
    for line in (b"_obstack_memory_used: 4242", b"backtrace: -7", b"the library's own call: -7",
                 b"the program sees the library's handler: 1", b"the library sees its handler: 1"):  # fmt: skip
        assert line in served


@pytest.mark.parametrize("name", sorted(CASES))
def test_served_as_exec_binds_them(interposed_daemon, inputs, name):
    argv = [a.replace("{DIR}", str(inputs)) for a in CASES[name]]
    with Served(interposed_daemon):
        by_exec, served = run_both(interposed_daemon, argv, inputs)
    assert served == by_exec


def test_an_allocator_of_its_own_sends_the_program_to_exec():
    program = "/usr/bin/x86_64-linux-gnu-gprofng"
    v = verdict(program)
    assert v["mode"] == "exec"
    assert "free in /lib/x86_64-linux-gnu/libgprofng.so.0" in v["reason"]


def test_such_a_program_runs_by_exec_with_the_reason():
    program = "/usr/bin/x86_64-linux-gnu-gprofng"
    with private_daemon([], extra_args=["--app", program]) as d:
        assert_fallback(d, [program, "--version"], b"defines a symbol of the C library")


@pytest.mark.parametrize("program", ["/usr/bin/ls", "/usr/bin/sqlite3", "/usr/bin/lame", "/usr/bin/qpdf"])
def test_libm_and_other_libraries_do_not_count(program):
    assert verdict(program)["mode"] == "warm"
