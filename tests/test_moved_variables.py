"""Library variables with pointers into themselves that Debian programs copy, other than libstdc++'s
streams (issue 30; bind-plan.c's MOVABLE): the daemon moves them into the program's copy with every
pointer into them, where exec builds them.

- apt's c1out, an std::ostream that libapt-private's constructor builds: apt-get and apt-mark copy
  it, and print through it.
- libbfd's _bfd_std_section, the four standard sections (*ABS*, *UND*, *COM*, *IND*), which
  relocations against their own symbol point at themselves: binutils' cross tools copy it, and
  compare sections with it (nm's U and C, size's totals, objcopy's and ld's output).

Each is run by exec and through the daemon in preload, warm and pool mode: stdout, stderr, exit
status and the files written, byte for byte."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SANITIZED, Served, base_env, daemon_in_mode
from headstart import binaries
from headstart.daemon import RunningDaemon

CROSS = "/usr/bin/aarch64-linux-gnu-"
PROGRAMS = ["/usr/bin/apt-get", "/usr/bin/apt-mark"] + [CROSS + t for t in ("ld.bfd", "nm", "objcopy", "size", "strip")]

# An object with a symbol in each standard section: undefined, common, absolute; and a program's
# sections and relocations for ld, objcopy and strip to write.
SOURCE = """
extern int undefined_variable;
extern int undefined_function(int);
int common_variable;
static int local_counter;
__asm__(".globl absolute_symbol\\n.set absolute_symbol, 0x1234");
int defined_function(int x) { local_counter += x; return undefined_function(x) + undefined_variable; }
const char message[] = "moved";
"""

# apt's package cache, which a container's apt configuration (docker-clean) keeps from being written:
# without it each run parses the package lists again, seconds a run.
APT_CACHE = ["-o", "Dir::Cache::pkgcache={APT}/pkgcache.bin", "-o", "Dir::Cache::srcpkgcache={APT}/srcpkgcache.bin"]

# {OBJ} is the object above, {OUT} a file the program writes (one by exec, another served), {APT}
# the folder of apt's cache, made before.
CASES = {
    "apt-get --version": ["/usr/bin/apt-get", "--version"],
    "apt-get --help": ["/usr/bin/apt-get", "--help"],
    "apt-get -s remove": ["/usr/bin/apt-get", *APT_CACHE, "-s", "remove", "bc"],
    "apt-get -s -qq remove": ["/usr/bin/apt-get", *APT_CACHE, "-s", "-qq", "remove", "bc"],
    "apt-get bad command": ["/usr/bin/apt-get", "no-such-command"],
    "apt-mark showmanual": ["/usr/bin/apt-mark", *APT_CACHE, "showmanual"],
    "apt-mark --version": ["/usr/bin/apt-mark", "--version"],
    "nm": [CROSS + "nm", "{OBJ}"],
    "nm -A -S": [CROSS + "nm", "-A", "-S", "{OBJ}"],
    "nm --help": [CROSS + "nm", "--help"],
    "nm missing file": [CROSS + "nm", "/nonexistent.o"],
    "size": [CROSS + "size", "{OBJ}"],
    "size -A": [CROSS + "size", "-A", "{OBJ}"],
    "size --version": [CROSS + "size", "--version"],
    "objcopy": [CROSS + "objcopy", "{OBJ}", "{OUT}"],
    "objcopy -O binary": [CROSS + "objcopy", "-O", "binary", "{OBJ}", "{OUT}"],
    "strip": [CROSS + "strip", "-o", "{OUT}", "{OBJ}"],
    "ld.bfd -r": [CROSS + "ld.bfd", "-r", "-o", "{OUT}", "{OBJ}"],
    "ld.bfd undefined": [CROSS + "ld.bfd", "-o", "{OUT}", "{OBJ}"],
    "ld.bfd --version": [CROSS + "ld.bfd", "--version"],
}


@pytest.fixture(scope="module")
def obj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("moved")
    (d / "sample.c").write_text(SOURCE)
    subprocess.run([CROSS + "gcc", "-fcommon", "-O1", "-c", "-o", str(d / "sample.o"), str(d / "sample.c")], check=True)
    return d / "sample.o"


@pytest.fixture(scope="module")
def apt_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("apt")
    subprocess.run(
        ["apt-cache", *(a.replace("{APT}", str(d)) for a in APT_CACHE), "stats"], capture_output=True, check=True
    )
    return d


def copies(program: str, symbol: str) -> bool:
    out = subprocess.run(["readelf", "-rW", program], capture_output=True, text=True, check=True).stdout
    return any("R_X86_64_COPY" in line and f" {symbol}" in line for line in out.splitlines())


def test_the_programs_copy_the_variables():
    """What makes the case: each program copies one of the variables (none does without)."""
    for program in PROGRAMS:
        assert copies(program, "c1out@APTPRIVATE" if "apt-" in program else "_bfd_std_section"), program


@pytest.fixture(scope="module", params=["preload", "warm", "pool"])
def moved_daemon(request: pytest.FixtureRequest) -> Iterator[RunningDaemon]:
    with daemon_in_mode(request.param, PROGRAMS) as d:
        yield d


def run(argv: list[str], out: Path) -> tuple[int, bytes, bytes, bytes | None]:
    """Exit status, stdout, stderr and the written file, with the file's name as the same word."""
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=base_env(), start_new_session=True,
                       timeout=60)  # fmt: skip
    written = out.read_bytes() if out.exists() else None
    name = str(out).encode()
    return p.returncode, p.stdout.replace(name, b"OUT"), p.stderr.replace(name, b"OUT"), written


# Under the sanitizers each program once: what the daemon moves, and how, is the program's, whatever
# its arguments (the cases above check the program's own work).
SANITIZED_CASES = {"apt-get --version", "apt-mark --version", "nm", "size", "objcopy", "strip", "ld.bfd -r"}
assert SANITIZED_CASES <= CASES.keys()


ONCE_UNDER_SANITIZERS = pytest.mark.skipif(
    SANITIZED, reason="under the sanitizers each program runs once (SANITIZED_CASES)"
)


@pytest.mark.parametrize(
    "name", [n if n in SANITIZED_CASES else pytest.param(n, marks=ONCE_UNDER_SANITIZERS) for n in sorted(CASES)]
)
def test_served_as_exec(moved_daemon, obj, name, tmp_path, request):
    client = [str(binaries.find("headstart-run")), "--socket", str(moved_daemon.socket)]
    apt_cache = request.getfixturevalue("apt_cache") if any("{APT}" in a for a in CASES[name]) else ""
    results = []
    for how, prefix in (("exec", []), ("served", client)):
        out = tmp_path / how
        argv = [
            a.replace("{OBJ}", str(obj)).replace("{OUT}", str(out)).replace("{APT}", str(apt_cache))
            for a in CASES[name]
        ]
        with Served(moved_daemon, count=1 if prefix else 0):
            results.append(run(prefix + argv, out))
    by_exec, served = results
    assert served == by_exec
