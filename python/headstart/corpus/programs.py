"""Which programs the corpus run takes: the ELF programs in /usr/bin and /usr/sbin of the listed
Debian packages, installed first with apt where missing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from headstart.errors import HeadstartError
from headstart.verdicts import programs_listed, programs_of_package

# The scope: programs a user runs from PATH (games and /usr/local are not a distribution's).
CORPUS_DIRS = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/")


def read_packages(path: Path) -> list[str]:
    try:
        with open(path) as f:
            return [line.split()[0] for line in programs_listed(f)]
    except OSError as e:
        raise HeadstartError(f"{path}: {e.strerror}") from None


def missing_packages(packages: list[str]) -> list[str]:
    done = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Status}\\n", *packages], capture_output=True, text=True)
    installed = {line.split()[0] for line in done.stdout.splitlines() if line.endswith("install ok installed")}
    return [p for p in packages if p not in installed]


def install(packages: list[str]) -> None:
    """apt-get install of what is missing (root, or sudo); one line and an error when it fails."""
    missing = missing_packages(packages)
    if not missing:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        done = subprocess.run(sudo + argv, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["failed"])[-1]
            raise HeadstartError(f"could not install the corpus packages ({' '.join(argv[:2])}): {last}")


def corpus_programs(packages: list[str]) -> list[str]:
    """Each package's programs in /usr/bin and /usr/sbin, a file reached by several paths (a link,
    /bin through the merged /usr) once, in the packages' order."""
    found, seen = [], set()
    for name in packages:
        for path in programs_of_package(name):
            if not path.startswith(CORPUS_DIRS):
                continue
            # /bin is /usr/bin on a merged /usr: the path a user's PATH finds first.
            shown = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                found.append(shown)
    return found
