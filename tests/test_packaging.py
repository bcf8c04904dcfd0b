"""What `meson install` ships: man pages and shell completions generated from the programs' own
options (and kept current), the docs, and systemd units (a user pair, and a system pair that runs
one user's daemon) that systemd itself accepts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import bin_path

ROOT = Path(__file__).resolve().parents[1]
BUILD = bin_path("headstartd").parent
GENERATED = [
    "man/headstartd.1",
    "man/headstart-pind.1",
    "man/headstart-run.1",
    "man/headstart.1",
    "completion/headstart.bash",
    "completion/_headstart",
]


def test_generated_man_pages_and_completions_are_current(tmp_path):
    subprocess.run([str(ROOT / "packaging/generate-docs"), str(BUILD), str(tmp_path)], check=True, capture_output=True)
    stale = [name for name in GENERATED if (tmp_path / name).read_text() != (ROOT / "packaging" / name).read_text()]
    assert not stale, f"run `make docs` and commit: {stale} no longer match the programs' options"


def long_options(program: str) -> set[str]:
    text = subprocess.run([str(bin_path(program)), "--help"], capture_output=True, text=True).stdout
    return set(re.findall(r"(--[a-z][a-z-]+)", text))


def test_man_pages_document_every_option():
    for program in ("headstartd", "headstart-run", "headstart-pind"):
        page = (ROOT / "packaging/man" / f"{program}.1").read_text().replace("\\-", "-")
        missing = [o for o in long_options(program) if o not in page]
        assert not missing, (program, missing)
    page = (ROOT / "packaging/man/headstart.1").read_text().replace("\\-", "-")
    for command in ("bench", "boot record", "boot analyze", "boot compare", "check", "profile", "report"):
        assert f"'headstart {command}'" in page, command
    assert "--ready-window" in page and "--via-daemon" in page


def test_install_ships_man_pages_completions_docs_and_units(tmp_path):
    subprocess.run(["meson", "install", "-C", str(BUILD), "--quiet", "--destdir", str(tmp_path)], check=True)
    share = next(tmp_path.rglob("share/man")).parent
    for name in ("headstartd", "headstart-run", "headstart", "headstart-pind"):
        assert (share / "man/man1" / f"{name}.1").is_file()
        assert (share / "bash-completion/completions" / name).is_file()
        assert (share / "zsh/site-functions" / f"_{name}").is_file()
    assert (share / "doc/headstart/architecture.md").is_file()
    # What the man pages, the units and the example configuration point to is installed beside them.
    pointers = [*(ROOT / "packaging/man").glob("*.1"), *(ROOT / "packaging").glob("*.in"),
                ROOT / "packaging/headstart.conf.example"]  # fmt: skip
    named = {m for f in pointers for m in re.findall(r"([a-z-]+\.md)", f.read_text())}
    assert "scheduling.md" in named and not [n for n in named if not (share / "doc/headstart" / n).is_file()]
    lib = share.parent / "lib/systemd"
    for unit in (
        "user/headstart.service",
        "user/headstart.socket",
        "system/headstart@.service",
        "system/headstart@.socket",
        "system/headstart-pind.service",
        "system/headstart-pind-prefetch.service",
    ):
        text = (lib / unit).read_text()
        assert "Documentation=man:headstart" in text and "@BINDIR@" not in text and "@DOCDIR@" not in text


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("kind", ["user", "system"])
def test_systemd_accepts_the_units(tmp_path, kind):
    names = (
        ["headstart.service", "headstart.socket"]
        if kind == "user"
        else ["headstart@.service", "headstart@.socket", "headstart-pind.service", "headstart-pind-prefetch.service"]
    )
    units = []
    for name in names:
        source = ROOT / "packaging" / (name + ".in" if (ROOT / "packaging" / (name + ".in")).exists() else name)
        text = source.read_text().replace("@BINDIR@", str(BUILD)).replace("@DOCDIR@", str(ROOT / "docs"))
        unit = tmp_path / name.replace("@", "@daemon")  # an instance for a system user that exists
        unit.write_text(text)
        units.append(str(unit))
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))
    flags = ["--user"] if kind == "user" else []
    done = subprocess.run(
        ["systemd-analyze", "verify", *flags, "--man=no", *units], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "Unknown" not in done.stderr and "Failed" not in done.stderr, done.stderr
