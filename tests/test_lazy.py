"""headstart lazy plan on a program that uses libjpeg only after it is ready, zlib before, and
imports libm's data: libjpeg can be deferred, zlib is used, libm is refused with its reason; a
profile of the path that does use libjpeg before its end keeps it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import helper_path


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
