"""Lists the environment variables GTK 3 and GTK 4 read through getenv as a prepared child starts
them, on a private Wayland compositor and a private X server (the bench's), for the table in
src/launcher/zygote/toolkit-variables.c. Run from the checkout after `make build`:

    .venv/bin/python tools/toolkit-variables/trace.py

glibc's own reads inside setlocale and tzset do not go through the interposed getenv: the table
adds them by hand."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "python"))

from headstart.benchmark import display  # noqa: E402


def build(out: Path) -> dict[str, Path]:
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", HERE / "getenv-log.c", "-o", out / "libgetenv-log.so"], check=True)
    programs = {}
    for name, package in (("start-gtk3", "gtk+-3.0"), ("start-gtk4", "gtk4")):
        pkg_config = ["pkg-config", "--cflags", "--libs", package]
        flags = subprocess.run(pkg_config, check=True, capture_output=True, text=True)
        cmd = ["cc", "-O2", HERE / f"{name}.c", "-o", out / name, out / "libgetenv-log.so", f"-Wl,-rpath,{out}"]
        subprocess.run([*cmd, *flags.stdout.split()], check=True)
        programs[name] = out / name
    return programs


def main() -> int:
    names: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        programs = build(Path(tmp))
        log = Path(tmp) / "names"
        for kind in ("wayland", "x11"):
            with display.private_display(kind) as env:
                for program in programs.values():
                    subprocess.run([program], env={**os.environ, **env, "LOG_FILE": str(log)}, check=True)
        names = set(log.read_text().split())
    print("\n".join(sorted(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
