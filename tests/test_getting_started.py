"""What a newcomer meets after `make build`: the man pages readable from .venv, headstartd's bash
completion working (it needs Debian's bash-completion, which `make deps` installs), and meson
configuring without a warning."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import bin_path

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted(p.name for p in (REPO / "packaging/man").glob("*.1"))
BASH_COMPLETION = Path("/usr/share/bash-completion/bash_completion")


def test_make_build_puts_the_man_pages_in_the_venv(tmp_path):
    venv = tmp_path / "venv"
    planned = subprocess.run(["make", "-n", "-C", str(REPO), f"VENV={venv}", "build"], capture_output=True, text=True)
    for page in PAGES:
        assert f"packaging/man/{page} {venv}/share/man/man1/{page}" in planned.stdout, planned.stdout
    targets = [str(venv / "share/man/man1" / page) for page in PAGES]
    done = subprocess.run(["make", "-C", str(REPO), f"VENV={venv}", *targets], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    if shutil.which("man") is None:
        return
    for page in PAGES:
        found = subprocess.run(["man", "-M", str(venv / "share/man"), "-w", page.removesuffix(".1")],
                               capture_output=True, text=True)  # fmt: skip
        assert found.stdout.strip() == str(venv / "share/man/man1" / page), found.stderr


@pytest.mark.skipif(not BASH_COMPLETION.exists(), reason="bash-completion is not installed (make deps installs it)")
def test_headstartd_bash_completion_completes_its_options():
    script = f"""
source {BASH_COMPLETION}
source {REPO}/packaging/completion/headstartd.bash
PATH={bin_path("headstartd").parent}:$PATH
COMP_WORDS=(headstartd --no-le); COMP_CWORD=1; COMP_LINE="headstartd --no-le"; COMP_POINT=${{#COMP_LINE}}
complete=$(complete -p headstartd | sed -E 's/.*-F ([^ ]+).*/\\1/')
"$complete" headstartd --no-le headstartd
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["--no-learn"], done.stderr


def test_meson_configures_without_warnings(tmp_path):
    done = subprocess.run(["meson", "setup", str(tmp_path / "build"), "-Dsamples=enabled"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [line for line in (done.stdout + done.stderr).splitlines() if re.search(r"warn|deprecat", line, re.I)]
    assert warnings == []
