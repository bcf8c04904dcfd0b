"""A warm program's constructors run once, in the daemon, and what they store in a library every
program shares stays there for every launch after (issue 30: tesseract's training tools, warm side
by side in the corpus run, each listed the others' parameters). Such a program is served in preload
mode, its constructors run in each launch's child: our registers-a and registers-b add themselves
to libregistry's list and print it, and served they print what exec prints, only themselves."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from conftest import Served, base_env, helper_path
from headstart import binaries
from headstart.daemon import RunningDaemon, private_daemon

PROGRAMS = [str(helper_path("registers-a")), str(helper_path("registers-b"))]


@pytest.fixture(scope="module", params=[[], ["--pool", "2"]], ids=["warm", "pool"])
def registry_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    extra = [arg for p in PROGRAMS for arg in ("--warm", p)] + request.param
    with private_daemon([], extra_args=extra) as d:
        yield d


def test_check_says_why_it_is_not_warm():
    out = subprocess.run([str(binaries.find("headstartd")), "--check", PROGRAMS[0]], capture_output=True, text=True)
    v = json.loads(out.stdout)
    assert v["mode"] == "preload"
    assert "its constructors change the data of" in v["warm_reason"] and "libregistry.so" in v["warm_reason"]


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_sees_only_itself_served_as_by_exec(registry_daemon, program):
    client = [str(binaries.find("headstart-run")), "--socket", str(registry_daemon.socket)]
    by_exec = subprocess.run([program], capture_output=True, env=base_env())
    with Served(registry_daemon):
        served = subprocess.run([*client, program], capture_output=True, env=base_env())
    assert by_exec.stdout == b"registered: %s\n" % program.rsplit("/", 1)[1].encode()
    assert (served.stdout, served.stderr, served.returncode) == (by_exec.stdout, by_exec.stderr, by_exec.returncode)


def test_the_daemon_log_says_preload_mode(registry_daemon):
    assert "cannot be warm: its constructors change the data of" in registry_daemon.log_text()
