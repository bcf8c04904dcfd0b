"""One launch of a program under measurement: started, watched until it is ready, its memory read
while it still lives, then reaped with its resource usage.

Ready is either the process exiting (the probe stops it at exit, so that its memory can still be
read), a line of its output matching a pattern, or its first window shown (bench's window-shown:
mapped on X, or on Wayland its first frame, seen by window-shown as the proxy between the program and
the compositor), after which the program is terminated.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from headstart import binaries
from headstart.errors import HeadstartError
from headstart.processes import terminate
from headstart.profiling import timeline
from headstart.profiling.memory import Memory, read_memory
from headstart.relocations import parse_loader_statistics


@dataclass
class LaunchOptions:
    argv: list[str]
    ready: re.Pattern[str] | None  # None: ready when the process exits (or its window shows)
    timeout: float
    ready_window: bool = False  # ready at its first window: mapped on $DISPLAY, or a frame on $WAYLAND_DISPLAY
    probe: bool = True  # load libheadstart-probe.so
    bindings: bool = False  # have the probe count every symbol binding (slower)
    mark_main: bool = False  # preload libheadstart-mark-main.so and time main through it (no memory read)
    wrapper: list[str] = field(default_factory=list)  # a command that runs the program (strace)
    env: dict[str, str] = field(default_factory=dict)  # added to the environment (HEADSTART_ORDER_OUTPUT)
    # Called while the program is stopped at its ready line (--ready), before it is let go to end:
    # what it wrote until then is what it did before ready (order record copies its file there).
    at_ready_stop: Callable[[], None] | None = None


@dataclass
class Launch:
    exit_status: int  # as subprocess gives it: negative for a signal
    to_ready_ns: int | None
    to_main_marked_ns: int | None  # through libheadstart-mark-main.so, when asked
    minor_faults: int | None  # None: not measured (a trace recorded elsewhere)
    major_faults: int | None
    loader: dict[str, int]
    timeline: timeline.Timeline | None
    memory: Memory | None
    stderr_tail: str
    stopped_at_ready: bool = False  # ended by our SIGTERM once its ready line came, not by itself
    options: LaunchOptions | None = None  # what it was launched with
    stdout_tail: str = ""  # some programs say why they stop there (l3afpad's "Cannot open display")

    def last_words(self) -> str:
        """The last line the program wrote: on stderr, else on stdout."""
        lines = self.stderr_tail.splitlines() or self.stdout_tail.splitlines()
        return lines[-1] if lines else ""

    # With bindings: the loader's own account (LD_DEBUG=bindings), (from, to) object -> symbols bound.
    # Written as they happen, so a program stopped at ready keeps them, unlike the probe's counts.
    loader_bindings: dict[tuple[str, str], int] = field(default_factory=dict)


class _Output:
    """Reads one of the program's output pipes line by line, noting when a line matches `ready`, and
    then calling `on_ready` at once, from this thread."""

    def __init__(
        self,
        pipe: IO[bytes],
        ready: re.Pattern[str] | None,
        wake: threading.Event,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.tail: list[str] = []
        self.ready_at: int | None = None
        self._on_ready = on_ready
        self._thread = threading.Thread(target=self._read, args=(pipe, ready, wake), daemon=True)
        self._thread.start()

    def _read(self, pipe: IO[bytes], ready: re.Pattern[str] | None, wake: threading.Event) -> None:
        for raw in pipe:
            now = time.monotonic_ns()
            line = raw.decode(errors="replace").rstrip("\n")
            if ready and self.ready_at is None and ready.search(line):
                if self._on_ready:
                    self._on_ready()
                self.ready_at = now
                wake.set()
            self.tail = [*self.tail[-9:], line]
        pipe.close()

    def join(self) -> None:
        self._thread.join(timeout=5)


class _Reaper:
    """Waits for the child in a thread of its own: for the stop at exit and for the end."""

    def __init__(self, pid: int, wake: threading.Event) -> None:
        self.pid = pid
        self.wake = wake
        self.stopped = threading.Event()
        self.ended = threading.Event()
        self.status = 0
        self.rusage: object | None = None
        threading.Thread(target=self._wait, daemon=True).start()

    def _wait(self) -> None:
        while True:
            try:
                _, status, rusage = os.wait4(self.pid, os.WUNTRACED)
            except ChildProcessError:
                # Reaped by the cleanup of a command interrupted meanwhile (Ctrl-C): its traceback,
                # printed after "headstart: interrupted", made that not the last line (seen in CI).
                self.ended.set()
                self.wake.set()
                return
            if os.WIFSTOPPED(status):
                self.stopped.set()
                self.wake.set()
                continue
            self.status, self.rusage = status, rusage
            self.ended.set()
            self.wake.set()
            return


def _environment(opts: LaunchOptions, tmp: Path) -> dict[str, str]:
    env = dict(os.environ, **opts.env)
    env.update(LD_DEBUG="statistics", LD_DEBUG_OUTPUT=str(tmp / "ld"))
    if opts.probe:
        env.update(LD_AUDIT=str(binaries.find("probe")), HEADSTART_PROBE_OUTPUT=str(tmp / "probe.jsonl"))
        env["HEADSTART_PROBE_BINDINGS"] = "1" if opts.bindings else "0"
        if opts.bindings:
            env["LD_DEBUG"] = "statistics,bindings"
        # Stopped at exit so that its memory can be read, unless only main is timed: reading it is
        # enough Python work to disturb the next launch. Also with a ready pattern: a program whose
        # ready line reaches us only as it exits (stdout to a pipe is block-buffered) is read there.
        stop = not opts.wrapper and not opts.mark_main
        env["HEADSTART_PROBE_STOP_AT_EXIT"] = str(os.getpid()) if stop else "0"
    if opts.mark_main:
        env["LD_PRELOAD"] = str(binaries.find("mark-main"))
    return env


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def run(opts: LaunchOptions) -> Launch:
    with tempfile.TemporaryDirectory(prefix="headstart-profile-") as tmpdir:
        return _run(opts, Path(tmpdir))


_WINDOW_SHOWN = re.compile(r"^(mapped|shown)$")


def _watch_windows(wake: threading.Event, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], _Output]:
    """window-shown, watching the display before the program starts; its "mapped" (X) or "shown"
    (Wayland) line is ready. With Wayland it is the program's compositor as far as the program can
    tell: `env`, the program's, gets the WAYLAND_DISPLAY it names (its socket). It runs without the
    probe and the loader's debugging, which are for the program alone."""
    if not env.get("WAYLAND_DISPLAY") and not env.get("DISPLAY"):
        raise HeadstartError(
            "--ready-window: neither WAYLAND_DISPLAY nor DISPLAY is set: run it in a graphical session or under a "
            "display of its own (a compositor or an X server)"
        )
    watcher = subprocess.Popen(
        [str(binaries.find("window-shown"))],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={k: v for k, v in env.items() if not k.startswith(("LD_", "HEADSTART_"))},
    )
    assert watcher.stdout is not None
    first = watcher.stdout.readline().decode(errors="replace").split()
    if first[:1] != ["watching"]:
        watcher.wait()
        message = watcher.stderr.read().decode(errors="replace").strip() if watcher.stderr else ""
        wayland = env.get("WAYLAND_DISPLAY")
        where = "the Wayland compositor ($WAYLAND_DISPLAY)" if wayland else "the X display ($DISPLAY)"
        raise HeadstartError(f"--ready-window: cannot watch {where}: {message or 'no display'}")
    for assignment in first[1:]:
        name, _, value = assignment.partition("=")
        env[name] = value
    env.pop("WAYLAND_SOCKET", None)
    return watcher, _Output(watcher.stdout, _WINDOW_SHOWN, wake)


def _end_watcher(watcher: subprocess.Popen[bytes]) -> None:
    """SIGTERM: a proxy removes its socket as it ends."""
    terminate(watcher, timeout=5)


def _run(opts: LaunchOptions, tmp: Path) -> Launch:
    env = _environment(opts, tmp)
    mark_r, mark_w = os.pipe() if opts.mark_main else (-1, -1)
    if opts.mark_main:
        env["HEADSTART_MARK_FD"] = str(mark_w)
    wake = threading.Event()  # set by the threads below whenever something happened
    watcher, window = _watch_windows(wake, env) if opts.ready_window else (None, None)
    start = time.monotonic_ns()
    env["HEADSTART_LAUNCH_START_NS"] = str(start)
    try:
        proc = subprocess.Popen(
            [*opts.wrapper, *opts.argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own group: terminating it reaches what it started
            pass_fds=(mark_w,) if opts.mark_main else (),
        )
    except OSError as e:
        raise HeadstartError(f"cannot start {opts.argv[0]}: {e.strerror}") from e
    finally:
        if opts.mark_main:
            os.close(mark_w)
    assert proc.stdout is not None and proc.stderr is not None
    reaper = _Reaper(proc.pid, wake)
    log = _LogEnd(tmp / f"ld.{proc.pid}")  # a program that handles SIGTERM goes on binding symbols after it
    # Not under a wrapper: a SIGSTOP would stop strace as well as what it traces.
    stop = _StopAtReady(proc.pid, log, opts.at_ready_stop) if opts.ready is not None and not opts.wrapper else None
    outputs = [_Output(pipe, opts.ready, wake, stop) for pipe in (proc.stdout, proc.stderr)]
    try:
        memory = _wait_ready(opts, proc.pid, reaper, [*outputs, *([window] if window else [])], wake)
    finally:
        if watcher:
            _end_watcher(watcher)
    reaper.ended.wait()
    proc.returncode = _exit_status(reaper.status)  # reaped here, not by Popen
    for o in [*outputs, *([window] if window else [])]:
        o.join()
    ready_at = next((o.ready_at for o in [*outputs, window] if o and o.ready_at is not None), None)
    tl = _read_timeline(tmp, proc.pid) if opts.probe and not opts.wrapper else None
    if opts.ready is None and not opts.ready_window:
        ready_at = tl.exit if tl and tl.exit is not None else time.monotonic_ns()
    rusage = reaper.rusage
    return Launch(
        exit_status=proc.returncode,
        to_ready_ns=None if ready_at is None else ready_at - start,
        to_main_marked_ns=_read_mark(mark_r, start) if opts.mark_main else None,
        minor_faults=getattr(rusage, "ru_minflt", 0),
        major_faults=getattr(rusage, "ru_majflt", 0),
        loader=_read_loader_statistics(tmp, proc.pid),
        loader_bindings=_read_loader_bindings(log) if opts.bindings else {},
        timeline=tl,
        memory=memory,
        stderr_tail="\n".join(outputs[1].tail),
        stdout_tail="\n".join(outputs[0].tail),
        stopped_at_ready=(opts.ready is not None or opts.ready_window) and ready_at is not None,
        options=opts,
    )


def checked(result: Launch, what: str) -> Launch:
    """A launch that died of a signal, ended before its ready point, or failed after its window
    showed, is an error: its times would be those of a failure, not of the program's launch. `what`
    names the launch in the message ("traced")."""
    opts = result.options
    assert opts is not None
    argv = opts.argv
    # Labelled as the program's: its words after ours could read as ours ("...: no such file").
    tail = f"; its last line: {result.last_words()}" if result.last_words() else ""
    if result.exit_status < 0 and not result.stopped_at_ready:
        sig = signal.Signals(-result.exit_status).name
        raise HeadstartError(f"{argv[0]} was killed by {sig} in the {what} launch{tail}")
    if opts.ready_window and result.exit_status > 0 and result.to_ready_ns is not None:
        # Its window came, then it failed before our SIGTERM (which it would die of): weston's kiosk
        # shell refuses a window larger than its output with a protocol error, which ends the
        # program just after the frame counted.
        raise HeadstartError(
            f"{argv[0]} showed a window, then exited with status {result.exit_status} in the {what} launch{tail}"
        )
    if (opts.ready is not None or opts.ready_window) and result.to_ready_ns is None:
        ready = f"printing a line matching {opts.ready.pattern!r}" if opts.ready else "showing a window"
        status = result.exit_status
        raise HeadstartError(f"{argv[0]} exited with status {status} without {ready} in the {what} launch{tail}")
    return result


def _wait_ready(
    opts: LaunchOptions, pid: int, reaper: _Reaper, outputs: list[_Output], wake: threading.Event
) -> Memory | None:
    """Waits until the program is ready (or ends, or runs out of time); its memory at that moment."""
    deadline = time.monotonic() + opts.timeout
    memory = None
    while True:
        wake.clear()
        # Ready first: a program stopped at its ready line (_Output) must not be let go on below.
        if (opts.ready is not None or opts.ready_window) and any(o.ready_at is not None for o in outputs):
            memory = memory or read_memory(pid)  # read at its exit already, if the line came with it
            _stop(pid, reaper, stopped_by_us=not opts.wrapper)
            return memory
        if reaper.stopped.is_set():  # the probe stopped it at exit
            reaper.stopped.clear()
            memory = read_memory(pid)
            os.kill(pid, signal.SIGCONT)
        if reaper.ended.is_set():
            return memory
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        wake.wait(remaining)
    _kill_group(pid, signal.SIGKILL)
    reaper.ended.wait()
    what = "show a window (mapped on X, a frame on Wayland)" if opts.ready_window else "exit"
    what = f"print a line matching {opts.ready.pattern!r}" if opts.ready else what
    raise HeadstartError(f"{opts.argv[0]} did not {what} within {opts.timeout:g} s (see --timeout, --ready)")


def _stop(pid: int, reaper: _Reaper, stopped_by_us: bool) -> None:
    _kill_group(pid, signal.SIGTERM)
    if stopped_by_us:  # at its ready line, or at its exit by the probe (never under strace, which a SIGCONT upsets)
        _kill_group(pid, signal.SIGCONT)
    if not reaper.ended.wait(2):
        _kill_group(pid, signal.SIGKILL)
        reaper.ended.wait()


def _exit_status(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _read_timeline(tmp: Path, pid: int) -> timeline.Timeline | None:
    path = tmp / "probe.jsonl"
    if not path.exists():
        return None
    return timeline.read(path, pid)


def _read_loader_statistics(tmp: Path, pid: int) -> dict[str, int]:
    path = tmp / f"ld.{pid}"
    return parse_loader_statistics(path.read_text(errors="replace")) if path.exists() else {}


_BINDING = re.compile(r"binding file (.*?) \[\d+\] to (.*?) \[\d+\]: ")


class _StopAtReady:
    """Stops the program's process group (SIGSTOP) as its ready line is read, once (stdout and
    stderr may both match): what it does after the line (calls that bind symbols, functions it runs)
    must not count as before ready, and every moment spent in Python lets it go on. What ends there
    is noted while it is stopped."""

    def __init__(self, group: int, log: _LogEnd, also: Callable[[], None] | None) -> None:
        self.group, self.log, self.also = group, log, also
        self._lock = threading.Lock()
        self._done = False

    def __call__(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            _kill_group(self.group, signal.SIGSTOP)
            self.log.note()
            if self.also:
                self.also()


class _LogEnd:
    """The loader's log of the program (LD_DEBUG_OUTPUT) and its length when the program was stopped
    at ready, which is where the bindings before ready end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.at_stop: int | None = None

    def note(self) -> None:
        try:
            self.at_stop = self.path.stat().st_size
        except OSError:
            self.at_stop = 0  # nothing written before ready

    def text(self) -> str:
        if not self.path.exists():
            return ""
        with open(self.path, "rb") as f:
            return f.read(self.at_stop if self.at_stop is not None else -1).decode(errors="replace")


def _read_loader_bindings(log: _LogEnd) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for m in _BINDING.finditer(log.text()):
        counts[(m.group(1), m.group(2))] = counts.get((m.group(1), m.group(2)), 0) + 1
    return counts


def _read_mark(fd: int, start: int) -> int | None:
    try:
        data = os.read(fd, 64)
    finally:
        os.close(fd)
    first = data.split(b"\n", 1)[0]
    return int(first) - start if first.isdigit() else None
