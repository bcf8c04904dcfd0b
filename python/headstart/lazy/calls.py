"""Whether a program linked with -z now calls a library before it is ready, told by a run with the
library's drop-in stubs in place (build.py): the real library is loaded at the first call of one of
its functions, so finding it mapped by ready is the proof of a call, and not finding it that none
came. Bindings cannot tell it (the loader binds every symbol at start), nor the probe's PLT hooks
(la_pltenter does not fire for a program bound at start).

Each profile's launch is run again as the profile ran it (its arguments, its ready), with the drop-in
first in LD_LIBRARY_PATH; its maps are read at ready (or at exit, where the probe stops it), and
the probe's account of the objects loaded by then is read after."""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headstart.errors import HeadstartError
from headstart.lazy.build import build
from headstart.profiling.launch import Launch, LaunchOptions, run

TIMEOUT_S = 30.0


@dataclass
class Calls:
    called: bool | None  # None: not told (why says why)
    why: str


def _options(profile: dict[str, Any], drop_in: Path) -> LaunchOptions:
    ready = profile.get("ready")
    pattern = re.compile(ready["pattern"]) if isinstance(ready, dict) else None
    path = ":".join(p for p in (str(drop_in), os.environ.get("LD_LIBRARY_PATH")) if p)
    return LaunchOptions([str(a) for a in profile["program"]], pattern, TIMEOUT_S, ready_window=ready == "window",
                         env={"LD_LIBRARY_PATH": path})  # fmt: skip


def _same_file(mapped: str, identity: tuple[int, int]) -> bool:
    try:
        st = os.stat(mapped)
    except OSError:  # "(deleted)" and the like: not the library, which is there
        return False
    return (st.st_dev, st.st_ino) == identity


def _loaded_by_ready(launch: Launch) -> list[str] | None:
    """The files mapped at ready (its maps, read then) and the objects the loader loaded by then (the
    probe's account, which a program that ends without the probe's stop at exit still leaves)."""
    found = list(launch.memory.file_pages) if launch.memory else []
    tl = launch.timeline
    if tl:
        begin = tl.launch_start if tl.launch_start is not None else tl.start
        ready = None if launch.to_ready_ns is None else begin + launch.to_ready_ns
        found += [o.path for o in tl.objects if ready is None or o.t <= ready]
    return found if launch.memory or tl else None


def _stub_said(launch: Launch) -> str | None:
    """What a stub said as it ended the run: it could not load the library or find a function, or
    was called by the library's own constructors (their calls bind to the drop-in). Any of them
    comes at a first call, which started the load."""
    return next((line for line in launch.stderr_tail.splitlines() if line.startswith("headstart lazy:")), None)


def _failed(launch: Launch) -> str | None:
    if launch.exit_status < 0 and not launch.stopped_at_ready:
        tail = launch.stderr_tail.strip().splitlines()
        return f"the run with the stubs was killed by signal {-launch.exit_status}" + (f": {tail[-1]}" if tail else "")
    return None


def called_before_ready(profiles: list[dict[str, Any]], program: Path, soname: str, path: str) -> Calls:
    """program: the file read here; path: the library as the profiles found it."""
    st = os.stat(path)
    identity = (st.st_dev, st.st_ino)
    with tempfile.TemporaryDirectory(prefix="headstart-lazy-calls-") as tmp:
        try:
            build(program, Path(path), soname, Path(tmp), runtime_path=path, drop_in=True)
        except HeadstartError as e:
            return Calls(None, f"no stubs to run it with ({e})")
        for profile in profiles:
            try:
                launch = run(_options(profile, Path(tmp)))
            except HeadstartError as e:
                return Calls(None, f"the run with the stubs failed: {e}")
            said = _stub_said(launch)
            if said and not launch.stopped_at_ready:
                return Calls(True, f"called before ready: its stubs ended the run at the first call ({said})")
            failure = _failed(launch)
            if failure:
                return Calls(None, failure)
            mapped = _loaded_by_ready(launch)
            if mapped is None:
                return Calls(None, "neither its maps at ready nor the probe's account of its loads could be read")
            if any(_same_file(path, identity) for path in mapped):
                run_of = " ".join(profile["program"])
                return Calls(True, f"called before ready: loaded by its stubs in the run of {run_of}")
    return Calls(False, "-z now: bound at start, but not called before ready (a run with its stubs left it unloaded)")
