"""Where the C parts are: $HEADSTART_BUILD_DIR, else the build/ folder of this source tree, else where
a package installs them (PATH for the programs, lib/<multiarch>/headstart for the probe and the order
runtime, libexec/headstart for the bench's own tools).

Programs that are launched rather than part of headstart (the sample apps, the test helpers) may
come from another build, $HEADSTART_APPS_BUILD_DIR: a sanitizer build of the daemon must still run
uninstrumented programs, since instrumented ones carry DT_PREINIT_ARRAY and go to exec.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

from headstart.errors import HeadstartError

SOURCE_ROOT = Path(__file__).resolve().parents[2]

# Where each binary sits inside a Meson build directory.
_BUILD_PATHS = {
    "headstartd": "headstartd",
    "headstart-run": "headstart-run",
    "headstart-pind": "headstart-pind",
    "launch-timer": "bench/launch-timer",
    "window-shown": "bench/window-shown",
    "order-runtime": "libheadstart-order.so",
    "mark-main": "bench/libheadstart-mark-main.so",
    "probe": "libheadstart-probe.so",
    "gtk-hello": "bench/gtk-hello",
    "gtk4-tiles": "bench/gtk4-tiles",
    "jpeg-encode": "bench/jpeg-encode",
    "mp3-encode": "bench/mp3-encode",
    "fft": "bench/fft",
    "many-globals": "bench/many-globals",
    "qt-widgets": "bench/qt-widgets",
    "qml-tiles": "bench/qml-tiles",
    "catalog": "bench/catalog",  # on libhs-catalog.so, a library of our own (headstart link check)
    "observe": "tests/helpers/observe",
}

SAMPLE_APPS = ("gtk-hello", "gtk4-tiles", "jpeg-encode", "mp3-encode", "fft", "many-globals", "qt-widgets", "qml-tiles")

# Programs of the checkout's own, built there and never installed.
_CHECKOUT_PROGRAMS = (*SAMPLE_APPS, "catalog", "observe")

_LAUNCHED = ("probe", *_CHECKOUT_PROGRAMS)

# Installed by `meson install` (and the Debian package): file names in lib/<multiarch>/headstart/
# (meson.build's private_lib_dir), and the tools in libexec/headstart/ (bench/meson.build).
_INSTALLED_LIBRARIES = {
    "probe": "libheadstart-probe.so",
    "order-runtime": "libheadstart-order.so",
    "mark-main": "libheadstart-mark-main.so",
}
_INSTALLED_TOOLS = {"launch-timer": "launch-timer", "window-shown": "window-shown"}


def _installed(name: str) -> Path | None:
    prefixes = [Path(sys.prefix), Path("/usr/local"), Path("/usr")]
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    if name in _INSTALLED_LIBRARIES:
        folders = [p / "lib" / multiarch / "headstart" for p in prefixes] + [p / "lib" / "headstart" for p in prefixes]
        file = _INSTALLED_LIBRARIES[name]
    elif name in _INSTALLED_TOOLS:
        folders = [p / "libexec" / "headstart" for p in prefixes]
        file = _INSTALLED_TOOLS[name]
    else:
        return None
    return next((f / file for f in folders if (f / file).is_file()), None)


def build_dir() -> Path:
    return Path(os.environ.get("HEADSTART_BUILD_DIR", SOURCE_ROOT / "build"))


def apps_build_dir() -> Path:
    return Path(os.environ.get("HEADSTART_APPS_BUILD_DIR", build_dir()))


def in_checkout() -> bool:
    """Run from a source checkout (the samples are built there), not installed from the packages."""
    return (SOURCE_ROOT / "meson.build").is_file()


def is_built(name: str) -> bool:
    try:
        find(name)
    except HeadstartError:
        return False
    return True


def find(name: str) -> Path:
    """The path of one of our binaries, or a clear error saying how to build it."""
    rel = _BUILD_PATHS.get(name)
    if rel:
        base = apps_build_dir() if name in _LAUNCHED else build_dir()
        candidate = base / rel
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.absolute()
    found = _installed(name) or shutil.which(name)
    if found:
        return Path(found)
    if not in_checkout():
        package = "headstart-pind" if name == "headstart-pind" else "headstart"
        if name in _CHECKOUT_PROGRAMS:
            raise HeadstartError(f"cannot find {name}: the sample programs come with a source checkout "
                                 "(`make build`), not with the packages; name programs of your own")  # fmt: skip
        raise HeadstartError(f"cannot find {name}: install the {package} package")
    raise HeadstartError(f"cannot find {name}: build it with `make build` or set HEADSTART_BUILD_DIR")
