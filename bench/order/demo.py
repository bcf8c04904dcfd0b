#!/usr/bin/env python3
"""`make order-demo`: startup function ordering end to end, on the seed's synthetic program and on
a real one, zstd 1.5.4 built from Debian's source (1.1 MB of text at -O3, upstream's default).

For each: an instrumented build records the startup functions (`headstart order record`), the order
is written for GNU ld (`headstart order emit`, matched against the release build), the release build
is linked again with it, both outputs are compared, and `headstart order check` counts the startup
text pages of a cold launch and times cold launches of both builds, with the device's readahead as
it is and at 128 KiB (a common eMMC setting). Needs root (drop_caches, readahead).

usage: demo.py WORKDIR BUILD_DIR [RUNS]"""

from __future__ import annotations

import filecmp
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

ZSTD_URL = "http://deb.debian.org/debian/pool/main/libz/libzstd/libzstd_1.5.4+dfsg2.orig.tar.xz"
HERE = Path(__file__).resolve().parent


def sh(*args: str, cwd: Path | None = None) -> str:
    print("+", " ".join(args), flush=True)
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


def headstart(*args: str) -> str:
    return sh(sys.executable, "-m", "headstart", *args)


def order_and_check(name: str, work: Path, instrumented: Path, plain: Path,
                    build_ordered: Callable[[Path], Path], argv: list[str], runs: str) -> None:  # fmt: skip
    order, script = work / f"{name}.order.json", work / f"{name}.ld"
    headstart("order", "record", "--runs", "3", "-o", str(order), "--", str(instrumented), *argv)
    headstart("order", "emit", str(order), "--linker", "gnu-ld", "--match", str(plain), "-o", str(script))
    ordered = build_ordered(script)
    a = subprocess.run([str(plain), *argv], capture_output=True, check=True).stdout
    b = subprocess.run([str(ordered), *argv], capture_output=True, check=True).stdout
    print(f"{name}: output of the ordered build {'identical' if a == b else 'DIFFERENT'}", flush=True)
    for kib in ([], ["--read-ahead-kb", "128"]):
        print(headstart("order", "check", "--runs", runs, *kib, "--after", str(ordered), "--", str(plain), *argv))


def synthetic(work: Path, runtime: Path, runs: str) -> None:
    source = work / "synthetic.c"
    sh(sys.executable, str(HERE / "synthetic.py"), str(source))
    link = [f"-L{runtime}", "-lheadstart-order", f"-Wl,-rpath,{runtime}"]
    sh("gcc", "-O1", "-finstrument-functions", str(source), "-o", str(work / "synthetic-instrumented"), *link)
    sh("gcc", "-O1", "-ffunction-sections", "-c", str(source), "-o", str(work / "synthetic.o"))
    sh("gcc", str(work / "synthetic.o"), "-o", str(work / "synthetic"))

    def ordered(script: Path) -> Path:
        sh("gcc", str(work / "synthetic.o"), "-o", str(work / "synthetic-ordered"), "-fuse-ld=bfd", f"-Wl,-T,{script}")
        return work / "synthetic-ordered"

    order_and_check("synthetic", work, work / "synthetic-instrumented", work / "synthetic", ordered, [], runs)


def zstd(work: Path, runtime: Path, runs: str) -> None:
    tarball = work / "zstd.orig.tar.xz"
    if not tarball.exists():
        print("+ fetch", ZSTD_URL, flush=True)
        urllib.request.urlretrieve(ZSTD_URL, tarball)
    src = work / "zstd-1.5.4"
    if not src.exists():
        sh("tar", "xf", str(tarball), "-C", str(work))

    def build(out: str, cflags: str, ldflags: str = "", ldlibs: str = "") -> Path:
        sh("make", "-s", "-C", "programs", "zstd", "-j2", f"CFLAGS=-O3 {cflags}", f"LDFLAGS={ldflags}",
           f"LDLIBS={ldlibs}", "HAVE_ZLIB=0", "HAVE_LZMA=0", "HAVE_LZ4=0", cwd=src)  # fmt: skip
        sh("cp", str(src / "programs/zstd"), str(work / out))
        return work / out

    # -lheadstart-order after the objects (LDLIBS): glibc has an empty __cyg_profile_func_enter too
    instrumented = build("zstd-instrumented", "-finstrument-functions", f"-L{runtime} -Wl,-rpath,{runtime}",
                         "-lheadstart-order")  # fmt: skip
    plain = build("zstd", "-ffunction-sections")
    sample = work / "sample.txt"
    sample.write_bytes((HERE.parent.parent / "README.md").read_bytes() * 4)
    order_and_check("zstd", work, instrumented, plain,
                    lambda script: build("zstd-ordered", "-ffunction-sections", f"-fuse-ld=bfd -Wl,-T,{script}"),
                    ["-q", "-c", str(sample)], runs)  # fmt: skip
    assert not filecmp.cmp(plain, work / "zstd-ordered", shallow=False)  # really another layout


def main() -> int:
    work, build = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    runs = sys.argv[3] if len(sys.argv) > 3 else "20"
    work.mkdir(parents=True, exist_ok=True)
    synthetic(work, build, runs)
    zstd(work, build, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
