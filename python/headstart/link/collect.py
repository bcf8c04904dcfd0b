"""The launches `headstart link` measures, all by exec:

- one counted launch, with the loader's own account (LD_DEBUG=bindings,statistics): every symbol it
  looked up, from which object to which, split at main (libheadstart-mark-main.so stops the process
  as main is entered, the log's length is noted, then it goes on to exit or ready);
- timed launches under the probe (libheadstart-probe.so, LD_AUDIT): the objects mapped and the time
  each took, and the loader's phases to main; alternately as the program is linked and with
  LD_BIND_NOW=1, which makes the loader look up every PLT slot at load. The extra lookups against the
  extra time give what one lookup costs in this program's scope, measured rather than assumed."""

from __future__ import annotations

import os
import re
import select
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from headstart import binaries
from headstart.errors import HeadstartError
from headstart.profiling.launch import LaunchOptions, run
from headstart.relocations import parse_loader_statistics

_BINDING = re.compile(r"binding file (.*?) \[\d+\] to (.*?) \[\d+\]: (\w+) symbol `([^']*)'")
_INIT = re.compile(r"calling init: (.*)$", re.M)


@dataclass
class Binding:
    source: str  # the object whose relocation or call needed the symbol
    target: str  # the object that defined it
    symbol: str
    before_main: bool


@dataclass
class Counted:
    """The loader's own account of one launch."""

    bindings: list[Binding]
    statistics: dict[str, int]  # at start-up: relocations (lookups), from_cache, relative (RELA ones)
    init_order: list[str]  # the objects whose constructors ran before main, in order
    exit_status: int | None  # None: stopped by us (ready, or out of time)
    reached_ready: bool
    stdout: bytes = b""


@dataclass
class Timed:
    """Medians of the timed launches, one set as linked and one with LD_BIND_NOW=1."""

    runs: int
    to_main_us: list[float]
    phases_us: dict[str, float]  # median of each phase (exec, load, relocate, constructors)
    relocate_us: list[float]
    relocate_now_us: list[float]
    lookups: int  # the loader's count of lookups at start-up, as linked
    lookups_now: int  # with LD_BIND_NOW=1
    from_cache: int
    map_us: dict[str, float]  # object path -> median time to find, open and map it
    objects: list[str]  # paths of the objects mapped before main, in order
    loaded_after_main: list[str] = field(default_factory=list)  # dlopened later (until exit or ready)

    @property
    def lookup_ns(self) -> float | None:
        """What one symbol lookup costs in this launch: the extra relocation time of LD_BIND_NOW over
        its extra lookups. None when too few lookups differ to tell (< 50) or the time did not grow."""
        extra = self.lookups_now - self.lookups
        if extra < 50:
            return None
        grown = statistics.median(self.relocate_now_us) - statistics.median(self.relocate_us)
        return grown * 1000 / extra if grown > 0 else None


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ, **extra)
    for name in ("LD_DEBUG", "LD_DEBUG_OUTPUT", "LD_AUDIT", "LD_BIND_NOW"):
        if name not in extra:
            env.pop(name, None)
    return env


def count(argv: list[str], ready: re.Pattern[str] | None, timeout: float, env: dict[str, str] | None = None) -> Counted:
    """One launch under LD_DEBUG=bindings,statistics, its log split at main."""
    with tempfile.TemporaryDirectory(prefix="headstart-link-") as tmp:
        log = Path(tmp) / "ld"
        mark_r, mark_w = os.pipe()
        extra = {
            "LD_DEBUG": "bindings,statistics",
            "LD_DEBUG_OUTPUT": str(log),
            "LD_PRELOAD": " ".join(p for p in (str(binaries.find("mark-main")), os.environ.get("LD_PRELOAD")) if p),
            "HEADSTART_MARK_FD": str(mark_w),
            "HEADSTART_MARK_STOP": "1",
            **(env or {}),
        }
        try:
            proc = subprocess.Popen(
                argv,
                env=_env(extra),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(mark_w,),
                start_new_session=True,
            )
        except OSError as e:
            raise HeadstartError(f"cannot start {argv[0]}: {e.strerror}") from e
        finally:
            os.close(mark_w)
        try:
            main_offset, output, ready_seen, status = _follow(proc, mark_r, log, ready, timeout)
        finally:
            os.close(mark_r)
            if proc.poll() is None:
                _kill(proc)
        text = "".join(p.read_text(errors="replace") for p in sorted(Path(tmp).glob("ld.*")))
        own = log.parent / f"ld.{proc.pid}"
        mine = own.read_text(errors="replace") if own.exists() else text
        if main_offset is None:
            raise HeadstartError(f"{argv[0]} did not reach main (exit status {status})")
        before, after = mine[:main_offset], mine[main_offset:]
        bindings = [Binding(m.group(1), m.group(2), m.group(4), True) for m in _BINDING.finditer(before)]
        bindings += [Binding(m.group(1), m.group(2), m.group(4), False) for m in _BINDING.finditer(after)]
        return Counted(bindings, parse_loader_statistics(before), _INIT.findall(before), status, ready_seen, output)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _follow(
    proc: subprocess.Popen[bytes], mark_r: int, log: Path, ready: re.Pattern[str] | None, timeout: float
) -> tuple[int | None, bytes, bool, int | None]:
    """Waits for main (the mark), notes the log's length there, lets the program go on, and waits for
    its exit or its ready line. Returns (offset of main in the log, output, ready seen, exit status)."""
    deadline = time.monotonic() + timeout
    own = log.parent / f"ld.{proc.pid}"
    chunks: list[bytes] = []
    ready_event = threading.Event()

    def read_output() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            chunks.append(line)
            if ready and ready.search(line.decode(errors="replace")):
                ready_event.set()

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    main_offset = None
    while main_offset is None:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            break
        readable, _, _ = select.select([mark_r], [], [], min(left, 0.1))
        if readable:
            line = os.read(mark_r, 64).decode().split()
            if not line:
                break
            # Stopped in main (HEADSTART_MARK_STOP): everything the loader logged so far was before it.
            os.waitpid(proc.pid, os.WUNTRACED)
            main_offset = len(own.read_text(errors="replace")) if own.exists() else 0
            os.kill(proc.pid, signal.SIGCONT)
    status = None
    while main_offset is not None:
        if ready_event.is_set() or time.monotonic() >= deadline:
            break
        try:
            status = proc.wait(timeout=0.02)
            break
        except subprocess.TimeoutExpired:
            continue
    if status is None and proc.poll() is not None:
        status = proc.returncode
    if status is None:
        _kill(proc)
    reader.join(timeout=2)
    return main_offset, b"".join(chunks), ready_event.is_set(), status


def timed(
    argv: list[str], ready: re.Pattern[str] | None, timeout: float, runs: int, env: dict[str, str] | None = None
) -> Timed:
    """`runs` launches as linked and `runs` with LD_BIND_NOW=1, alternately, under the probe."""
    lazy: list[tuple[float, float, dict[str, float], dict[str, int], dict[str, float], list[str], list[str]]] = []
    now: list[tuple[float, dict[str, int]]] = []
    for _ in range(runs):
        for bind_now in (False, True):
            extra = dict(env or {}, **({"LD_BIND_NOW": "1"} if bind_now else {}))
            launch = run(LaunchOptions(argv, ready, timeout, env=extra))
            tl = launch.timeline
            if tl is None or tl.main is None:
                raise HeadstartError(f"{argv[0]}: the probe saw no main (exit status {launch.exit_status})")
            phases = {k: (v or 0) / 1000 for k, v in tl.phases_ns().items()}
            if bind_now:
                now.append((phases["relocate"], launch.loader))
                continue
            initial = tl.initial_objects()
            maps = {o.path: o.map_ns / 1000 for o in initial if o.kind in ("library", "program")}
            later = [o.path for o in tl.objects if o not in initial and o.kind == "library"]
            to_main = (tl.to_main_ns() or 0) / 1000
            lazy.append(
                (
                    to_main,
                    phases["relocate"],
                    phases,
                    launch.loader,
                    maps,
                    [o.path for o in initial if o.kind in ("library", "program")],
                    later,
                )
            )
    med = statistics.median
    paths = lazy[0][5]
    return Timed(
        runs=runs,
        to_main_us=[r[0] for r in lazy],
        phases_us={k: med(r[2][k] for r in lazy) for k in lazy[0][2]},
        relocate_us=[r[1] for r in lazy],
        relocate_now_us=[r[0] for r in now],
        lookups=int(med(r[3].get("relocations", 0) for r in lazy)),
        lookups_now=int(med(r[1].get("relocations", 0) for r in now)),
        from_cache=int(med(r[3].get("from_cache", 0) for r in lazy)),
        map_us={p: med(r[4].get(p, 0.0) for r in lazy) for p in paths},
        objects=paths,
        loaded_after_main=sorted({p for r in lazy for p in r[6]}),
    )
