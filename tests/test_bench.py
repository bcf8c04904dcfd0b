"""headstart bench on an unmodified program: main is marked by the preloaded marker in every mode,
and every daemon launch is served."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import SANITIZED


@pytest.mark.skipif(SANITIZED, reason="the marker is preloaded into the daemon, where ASan's runtime must come first")
def test_bench_marks_main_of_an_unmodified_program():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "headstart",
            "bench",
            "--programs",
            "/usr/bin/cjpeg -version",
            "--runs",
            "3",
            "--modes",
            "exec,warm",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    (program,) = json.loads(p.stdout)["programs"]
    assert program["argv"][1:] == ["-version"]
    assert program["served"] == program["requested"] > 0
    for mode, result in program["modes"].items():
        assert not result["errors"], (mode, result["errors"])
        assert result["to_main_us"]["median"] > 0
        assert result["to_main_us"]["median"] <= result["to_exit_us"]["median"]
