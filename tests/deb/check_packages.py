#!/usr/bin/env python3
"""`make test-deb` (opt-in, minutes, root): the Debian packages of build-deb/ used as a product team
would use them, in a clean Debian 12 root that mmdebstrap builds from Debian's mirror (nothing from
this machine): installed with apt, the daemon started as the packaged user unit starts it, a program
served through headstart-run exactly as exec runs it, `headstart check` and `man headstartd` working;
then removed and purged, leaving no file behind.

systemd cannot run in a chroot: the unit's ExecStart line is read from the installed unit and run
as the unit would run it (its specifiers expanded for the user).

usage: check_packages.py BUILD_DEB_DIR"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

USER, UID = "alice", 1000
# What apt and dpkg keep for themselves, and logs: not the packages' files.
NOT_OURS = ("/var/lib/apt/", "/var/lib/dpkg/", "/var/cache/", "/var/log/", "/tmp/", "/root/", "/run/", "/proc/",
            "/dev/", "/etc/ld.so.cache", "/var/lib/systemd/deb-systemd", "/var/lib/ucf/")  # fmt: skip


class Failure(Exception):
    pass


def run(
    root: Path, *argv: str, user: bool = False, check: bool = True, **kw: object
) -> subprocess.CompletedProcess[str]:
    prefix = ["chroot", f"--userspec={USER}:{USER}", str(root)] if user else ["chroot", str(root)]
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8", "HOME": f"/home/{USER}" if user else "/root",
           "XDG_RUNTIME_DIR": f"/run/user/{UID}"}  # fmt: skip
    done = subprocess.run([*prefix, *argv], capture_output=True, text=True, env=env, timeout=900)
    if check and done.returncode != 0:
        raise Failure(f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done


@contextlib.contextmanager
def mounted(root: Path) -> Iterator[None]:
    subprocess.run(["mount", "-t", "proc", "proc", str(root / "proc")], check=True)
    subprocess.run(["mount", "--rbind", "/dev", str(root / "dev")], check=True)
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(root / "dev")], check=False)
        subprocess.run(["umount", "-l", str(root / "proc")], check=False)


def files(root: Path) -> set[str]:
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = "/" + os.path.relpath(dirpath, root)
        if rel.startswith(NOT_OURS) or rel.rstrip("/") + "/" in NOT_OURS:
            dirnames.clear()
            continue
        for name in filenames + dirnames:
            path = os.path.normpath(f"{rel}/{name}")
            if not path.startswith(NOT_OURS):
                out.add(path)
    return out


def unit_command(root: Path) -> list[str]:
    """ExecStart of the user unit, its specifiers expanded as systemd would for the user."""
    unit = (root / "usr/lib/systemd/user/headstart.service").read_text()
    line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    expanded = line.removeprefix("ExecStart=").replace("%E", f"/home/{USER}/.config").replace("%t", f"/run/user/{UID}")
    return expanded.split()


def wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            raise Failure(f"{path} did not appear")
        time.sleep(0.1)


def check(root: Path, debs: list[Path]) -> list[str]:
    said = []
    run(root, "useradd", "-m", "-u", str(UID), USER)
    runtime = root / f"run/user/{UID}"
    runtime.mkdir(parents=True)
    os.chown(runtime, UID, UID)
    runtime.chmod(0o700)
    before = files(root)
    (root / "tmp/debs").mkdir()
    for d in debs:
        shutil.copy(d, root / "tmp/debs")
    run(root, "apt-get", "update", "-q")  # mmdebstrap leaves no package lists behind
    run(root, "apt-get", "install", "-y", "-q", *[f"/tmp/debs/{d.name}" for d in debs])
    said.append(f"installed with apt: {', '.join(d.name for d in debs)}")
    # debhelper's scripts enable pind's units (they start only with a plan) and stop them at removal:
    # Debian 12's looks for units in /lib/systemd/system only.
    wants = {"headstart-pind.service": "multi-user", "headstart-pind-prefetch.service": "sysinit"}
    missing = [u for u, t in wants.items() if not (root / f"etc/systemd/system/{t}.target.wants/{u}").is_symlink()]
    if missing:
        raise Failure(f"installing did not enable {', '.join(missing)}")
    prerm = (root / "var/lib/dpkg/info/headstart-pind.prerm").read_text()
    if "headstart-pind.service" not in prerm:
        raise Failure("headstart-pind's prerm does not stop its unit")
    said.append("pind's units enabled by the package's scripts, and stopped by its prerm")

    # The daemon, as the user unit starts it (no configuration written: the unit allows that).
    command = unit_command(root)
    env = {"PATH": "/usr/bin:/bin", "HOME": f"/home/{USER}", "XDG_RUNTIME_DIR": f"/run/user/{UID}"}
    daemon = subprocess.Popen(["/usr/sbin/chroot", f"--userspec={USER}:{USER}", str(root), *command], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        wait_for(runtime / "headstart/socket")
        want = run(root, "/usr/bin/gzip", "--version", user=True)
        got = run(root, "headstart-run", "/usr/bin/gzip", "--version", user=True)
        if (got.stdout, got.stderr) != (want.stdout, want.stderr):
            raise Failure(f"served gzip differs from exec'd: {got.stdout!r} {got.stderr!r}")
        status = run(root, "headstart-run", "--status", user=True).stdout
        if "launches: 1" not in status:
            raise Failure(f"gzip was not served through the daemon:\n{status}")
        said.append(f"the packaged unit's command: {' '.join(command)}; gzip --version served (launches: 1)")
    finally:
        daemon.terminate()
        log = daemon.communicate(timeout=30)[0]
    if daemon.returncode != 0:
        raise Failure(f"the daemon ended with {daemon.returncode}:\n{log}")

    verdict = run(root, "headstart", "check", "/usr/bin/gzip", user=True).stdout
    if "gzip" not in verdict:
        raise Failure(f"headstart check said: {verdict}")
    said.append("headstart check /usr/bin/gzip: " + " ".join(verdict.split())[:120])
    # The samples come with a checkout, and none of the Debian programs bench knows is installed here.
    bench = run(root, "headstart", "bench", "--quick", user=True, check=False)
    if bench.returncode == 0 or bench.stderr.count("\n") != 1 or "--programs" not in bench.stderr:
        raise Failure(f"headstart bench with nothing to bench: exit {bench.returncode}\n{bench.stderr[-1500:]}")
    said.append("headstart bench with no program to bench: " + bench.stderr.strip()[:100])
    # Every module imports with Debian 12's own libraries (jsonschema 4.10, pyelftools 0.29, rich 13.3).
    walk = ("import importlib, pkgutil, headstart\n"
            "names = [m.name for m in pkgutil.walk_packages(headstart.__path__, 'headstart.')"
            " if 'main' not in m.name]\n"
            "[importlib.import_module(n) for n in names]\nprint(len(names))")  # fmt: skip
    modules = run(root, "python3", "-c", walk, user=True).stdout.strip()
    said.append(f"python3-headstart: all {modules} modules import with Debian's libraries")
    page = run(root, "man", "-P", "cat", "headstartd").stdout
    if "headstartd" not in page or "--app" not in page:
        raise Failure(f"man headstartd: {page[:500]}")
    said.append("man headstartd shows the page")

    # What the system instance keeps (StateDirectory=headstart/%i), made as systemd would make it.
    state = root / f"var/lib/headstart/{USER}"
    state.mkdir(parents=True)
    os.chown(state, UID, UID)
    (state / "learned").write_text("# headstart: objects loaded after main, learned by headstartd (version 1)\nend\n")

    names = [d.name.split("_")[0] for d in debs]
    listed = run(root, "dpkg", "-L", *names).stdout.split()
    # Files and links to files: /lib is the system's link to usr/lib (merged /usr), which dpkg lists
    # for the units' folder.
    shipped = [f for f in listed if (root / f.lstrip("/")).is_file() or
               ((root / f.lstrip("/")).is_symlink() and not (root / f.lstrip("/")).is_dir())]  # fmt: skip
    run(root, "apt-get", "remove", "-y", "-q", *names)
    if (root / "usr/bin/headstartd").exists() or not state.exists():
        raise Failure("removal left the programs, or took the state that only purge should take")
    run(root, "dpkg", "--purge", *names)
    run(root, "apt-get", "autoremove", "--purge", "-y", "-q")
    shutil.rmtree(root / "tmp/debs")
    # Ours: every file the packages shipped, and anything new with headstart in its name (state,
    # byte-compiled Python). Their dependencies' own leftovers (ca-certificates' links) are theirs.
    new = files(root) - before
    left = sorted({f for f in shipped if os.path.lexists(root / f.lstrip("/"))} | {f for f in new if "headstart" in f})
    if left:
        raise Failure("left behind after purge:\n  " + "\n  ".join(left[:40]))
    said.append(
        f"removed and purged: none of the {len(shipped)} files shipped and nothing named headstart left, "
        f"state included ({len(new)} other new files belong to dependencies apt brought)"
    )
    return said


def main() -> int:
    build = Path(sys.argv[1]).resolve()
    debs = sorted(p for p in build.glob("*.deb") if "-dbgsym_" not in p.name)
    if os.geteuid() != 0:
        print("test-deb needs root (mmdebstrap into a directory, chroot, mounts)", file=sys.stderr)
        return 1
    root = build / "root"
    if root.exists():
        subprocess.run(["umount", "-R", "-l", str(root / "dev")], check=False, capture_output=True)
        subprocess.run(["umount", "-l", str(root / "proc")], check=False, capture_output=True)
        shutil.rmtree(root)
    started = time.monotonic()
    subprocess.run(
        ["mmdebstrap", "--variant=apt", "--include=man-db,gzip", "--quiet", "bookworm", str(root)], check=True
    )
    try:
        with mounted(root):
            for line in check(root, debs):
                print(line, flush=True)
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    print(f"test-deb passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
