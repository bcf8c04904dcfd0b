#!/usr/bin/env python3
"""`make link-demo`: link advice end to end on a real library-heavy program we build, exiv2 0.27.6
from Debian's source (libexiv2, C++, with its bundled XMP toolkit; expat and zlib from Debian), built
with CMake as Debian builds it: libexiv2.so and the exiv2 program linking it.

`headstart link --json` analyses `exiv2 -pa IMAGE` as built; the advice that holds for what we built
is applied by linking the same object files again (nothing is compiled again); the outputs are
compared and `headstart link check --after` times both builds by exec, alternately, with the first
served warm by headstartd beside them.

usage: demo.py WORKDIR [RUNS]"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

EXIV2_URL = "http://deb.debian.org/debian/pool/main/e/exiv2/exiv2_0.27.6.orig.tar.gz"


def sh(*args: str, cwd: Path | None = None) -> str:
    print("+", " ".join(args), flush=True)
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


def headstart(*args: str) -> str:
    return sh(sys.executable, "-m", "headstart", *args)


def build(work: Path) -> Path:
    tarball = work / "exiv2.orig.tar.gz"
    if not tarball.exists():
        print("+ fetch", EXIV2_URL, flush=True)
        urllib.request.urlretrieve(EXIV2_URL, tarball)
    src = work / "exiv2-0.27.6"
    if not src.exists():
        sh("tar", "xzf", str(tarball), "-C", str(work))
    out = src / "build"
    if not (out / "bin" / "exiv2").exists():
        out.mkdir(exist_ok=True)
        sh(
            "cmake",
            "..",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DBUILD_SHARED_LIBS=ON",
            "-DEXIV2_BUILD_SAMPLES=OFF",
            "-DEXIV2_ENABLE_NLS=OFF",
            "-DEXIV2_ENABLE_BMFF=ON",
            cwd=out,
        )
        sh("make", "-j2", cwd=out)
    return out


def relink(out: Path, advice: list[dict], dest: Path) -> tuple[Path, list[str]]:
    """exiv2 linked again from CMake's objects, with the advice that holds for what we built."""
    objs = out / "src" / "CMakeFiles"
    program = sorted(str(p) for p in (objs / "exiv2.dir").glob("*.o"))
    library = sorted(str(p) for d in ("exiv2lib.dir", "exiv2lib_int.dir") for p in (objs / d).glob("*.o"))
    xmp = str(out / "lib" / "libexiv2-xmp.a")
    chosen = [a for a in advice if a["holds"] and a["yours"] and a["flags"]]
    applied, flags = [], []
    merged = any(a["advice"] == "link-into-program" for a in chosen)
    lib_flags: list[str] = []
    for a in chosen:
        on_program = Path(a["path"]).name == "exiv2"
        if a["advice"] in ("link-into-program", "keep-lazy"):
            continue
        if a["advice"] in ("Bsymbolic", "hide-unimported", "export-only-imported") and a["symbols"]:
            listing = dest / f"{a['advice']}.list"
            if a["advice"] == "hide-unimported":
                listing.write_text("{ global: " + "".join(f"{s}; " for s in a["symbols"]) + "local: *; };\n")
                these = [f"-Wl,--version-script={listing}"]
            else:
                listing.write_text("{\n" + "".join(f"  {s};\n" for s in a["symbols"]) + "};\n")
                these = [f"-Wl,--dynamic-list={listing}"]
                if a["advice"] == "export-only-imported" and len(a["symbols"]) <= 8:
                    these = [f"-Wl,--export-dynamic-symbol={s}" for s in a["symbols"]]
        else:
            these = list(a["flags"])
        if on_program or (merged and a["advice"] == "pack-relative-relocs"):
            # Linked in, the library's relocations are the program's: packing them is its flag.
            if these[0] in flags:
                continue
            flags += these
        elif not merged:
            lib_flags += these
        else:
            continue
        applied.append(f"{a['advice']} ({a['object']})")
    dest.mkdir(parents=True, exist_ok=True)
    after = dest / "exiv2"
    if merged:
        applied.append("link-into-program (libexiv2.so.27)")
        sh("c++", "-O3", "-o", str(after), *program, *library, xmp, "-lexpat", "-lz", *flags)
    else:
        lib = dest / "libexiv2.so.27"
        sh(
            "c++",
            "-O3",
            "-shared",
            "-Wl,-soname,libexiv2.so.27",
            "-o",
            str(lib),
            *library,
            xmp,
            "-lexpat",
            "-lz",
            *lib_flags,
        )
        sh("c++", "-O3", "-o", str(after), *program, f"-Wl,-rpath,{dest}", str(lib), *flags)
    return after, applied


def main() -> int:
    work = Path(sys.argv[1]).resolve()
    runs = sys.argv[2] if len(sys.argv) > 2 else "100"
    work.mkdir(parents=True, exist_ok=True)
    out = build(work)
    image = work / "sample.jpg"
    shutil.copy(work / "exiv2-0.27.6" / "test" / "data" / "DSC_3079.jpg", image)
    before = out / "bin" / "exiv2"
    argv = [str(before), "-pa", str(image)]
    report = headstart("link", "--runs", "10", "--", *argv)
    print(report)
    data = json.loads(headstart("link", "--runs", "10", "--json", "--", *argv))
    after, applied = relink(out, data["advice"], work / "relinked")
    print("applied:", ", ".join(applied), flush=True)
    print(headstart("link", "check", "--runs", runs, "--after", str(after), "--", *argv))
    print(headstart("link", "check", "--runs", runs, "--json", "--after", str(after), "--", *argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
