"""The floating-point environment a served program starts with (rounding, flush-to-zero).

exec starts every program with the default; a forked child keeps its parent's. A library built with
-ffast-math by GCC before 13 carries crtfastmath.o, whose constructor sets flush-to-zero and
denormals-are-zero as it loads: preloaded for one registered program, it set them in the zygote,
and every program the daemon served computed so (mawk printed 0 for 1e-300 * 1e-10, 1e-310 by
exec). Such a library is now left out of the zygote like one that starts a thread, and its
programs go to exec."""

from __future__ import annotations

import pytest
from conftest import Served, helper_path, run_exec, run_served
from headstart.daemon import private_daemon

MAWK = "/usr/bin/mawk"
DENORMAL = ["BEGIN { x = 1e-300; print x * 1e-10 }"]


def fast_math_program() -> str:
    program = str(helper_path("links-fast-math"))
    if run_exec([program]).stdout != b"0\n":
        pytest.skip("this compiler does not link crtfastmath.o into a -ffast-math shared library")
    return program


@pytest.mark.parametrize("option", ["--app", "--warm"])
def test_a_fast_math_library_of_one_program_leaves_the_others_exact(option):
    fast = fast_math_program()
    with private_daemon([], extra_args=[option, fast, option, MAWK, "--pool", "1"]) as d:
        with Served(d, count=1):
            served = run_served(d, [MAWK, *DENORMAL])
        assert served == run_exec([MAWK, *DENORMAL])
        assert served.stdout == b"1e-310\n"
        # Its own program still computes as its library makes it, by exec.
        assert run_served(d, [fast]) == run_exec([fast])
        status = d.status()
    reason = f"preloading {helper_path('libhs-fast-math.so')} (and the libraries it needs) changed the floating-point"
    assert any(p.startswith(f"exec {fast} -- {reason}") for p in status["program"]), status
