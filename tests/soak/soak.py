#!/usr/bin/env python3
"""`make test-soak` (opt-in, minutes; docs/reliability.md): a live daemon (`--warm` a test program,
`--pool 2`) under what a device sees in months, with the supervisor's and the zygote's open fds and
RSS sampled between phases:

1. idle connections: thousands held open while a launch must still be served;
2. mutated requests: mutations of real requests (fuzz/corpus/request) sent whole, cut short, or
   with a lying header, a real launch checked after every 1,000;
3. launches: real launches, each exit status checked;
4. the zygote SIGKILLed every 2 s under launches: each launch served or exec'd, none lost, none
   with a wrong status;
5. SIGHUP every 100 ms under launches: the same;
then, each with a daemon of its own: 6. only 48 fds, 60 idle connections held, launches;
7. the cache directory on a full filesystem, launches;
8. (as root) the daemon as an unprivileged user at a small RLIMIT_NPROC: launches while other
   processes of the user fill the limit now and then, the zygote is SIGKILLed, the zygote alone or
   with the supervisor is SIGSTOPped for longer than a client waits: every launch runs exactly once,
   with its exit status;
9. a daemon with --prepare-display under a private weston: launches of a GTK program each taken by
   a child prepared ahead, each printing what exec prints, the zygote's fds the same after them.

Exits 1 when a launch is lost or wrong, the daemon dies, or fds grow; RSS is reported (its growth
over a second run of phase 2 tells a leak from the allocator's high-water mark).

usage: soak.py BUILD_DIR [--requests N] [--launches N] [--idle N] [--fault-seconds S]
               [--pressure-seconds S] [--prepared-takes N]"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from headstart.daemon import RunningDaemon, private_daemon, stop

HERE = Path(__file__).resolve().parent
SEEDS = [p.read_bytes()[1:] for p in sorted((HERE.parent.parent / "fuzz/corpus/request").iterdir())]


def sample(pid: int) -> tuple[int, int]:
    """Open fds and RSS (KiB) of a process."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("VmRSS:"))  # fmt: skip
    return fds, rss


class Soak:
    def __init__(self, daemon: RunningDaemon, build: Path, program: Path) -> None:
        self.daemon, self.program = daemon, program
        self.client = [str(build / "headstart-run"), "--socket", str(daemon.socket)]
        self.failures: list[str] = []
        self.launches = 0
        self.log = ""
        self.samples: list[tuple[str, tuple[int, int], tuple[int, int]]] = []

    def zygote(self) -> int:
        out = subprocess.run([*self.client, "--status", "--json"], capture_output=True, text=True, timeout=30)
        return int(json.loads(out.stdout)["pid"])

    def report(self, phase: str) -> None:
        """Once the pool has refilled (its children's channels and pidfds count): the same twice."""
        time.sleep(0.3)
        sup, zyg = sample(self.daemon.process.pid), sample(self.zygote())
        for _ in range(20):
            time.sleep(0.2)
            again = sample(self.daemon.process.pid), sample(self.zygote())
            if (again[0][0], again[1][0]) == (sup[0], zyg[0]):
                break
            sup, zyg = again
        print(f"{phase:28} supervisor fds {sup[0]:3} rss {sup[1]:6} KiB   zygote fds {zyg[0]:3} rss {zyg[1]:6} KiB",
              flush=True)  # fmt: skip
        self.samples.append((phase, sup, zyg))

    def launch(self, status: int | None = None) -> None:
        """One real launch; its exit status and output must be what exec gives."""
        status = random.randrange(0, 100) if status is None else status
        done = subprocess.run([*self.client, str(self.program), "exit", str(status)], capture_output=True,
                              timeout=60, start_new_session=True)  # fmt: skip
        self.launches += 1
        if done.returncode != status or done.stdout != f"exiting with {status}\n".encode():
            self.failures.append(
                f"launch {self.launches}: status {done.returncode}, want {status}: {done.stdout!r} "
                f"{done.stderr.decode(errors='replace').strip()}"
            )

    def alive(self) -> None:
        if self.daemon.process.poll() is not None:
            self.failures.append(f"the daemon died: {self.daemon.log_text()[-2000:]}")
            raise SystemExit(report_failures(self.failures))

    def idle_connections(self, n: int) -> None:
        held = []
        for _ in range(n):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(self.daemon.socket))
            held.append(s)
        self.launch(7)
        for s in held:
            s.close()
        self.alive()

    def mutated_requests(self, n: int) -> None:
        rng = random.Random(n)
        for i in range(n):
            data = bytearray(rng.choice(SEEDS))
            for _ in range(rng.randrange(1, 8)):  # flip, cut, lie about the size
                at = rng.randrange(len(data))
                data[at] = rng.randrange(256)
            kind = rng.randrange(4)
            if kind == 1:
                data = data[: rng.randrange(len(data))]
            elif kind == 2:
                data[8:12] = rng.randrange(1 << 32).to_bytes(4, "little")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(str(self.daemon.socket))
                s.sendall(bytes(data))
            except OSError:
                pass  # the daemon may close first: that is its right
            finally:
                s.close()
            if i % 1000 == 999:
                self.launch()
                self.alive()

    def launches_in_a_row(self, n: int) -> None:
        for _ in range(n):
            self.launch()
        self.alive()

    def under_signals(self, seconds: float, interval: float, sig: signal.Signals, zygote: bool) -> int:
        stop = threading.Event()
        sent = 0

        def send() -> None:
            nonlocal sent
            while not stop.wait(interval):
                try:
                    os.kill(self.zygote() if zygote else self.daemon.process.pid, sig)
                    sent += 1
                except (OSError, ValueError, subprocess.SubprocessError):
                    pass  # between zygotes

        t = threading.Thread(target=send)
        t.start()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.launch()
        stop.set()
        t.join()
        self.alive()
        return sent


@contextlib.contextmanager
def own_daemon(args: list[str], preexec: Callable[[], None] | None = None) -> Iterator[tuple[Path, Path]]:
    """A daemon of our own with a child-side setup (a limit) private_daemon does not take: its socket
    and log."""
    with tempfile.TemporaryDirectory(prefix="headstart-soak-") as tmp:
        socket_path, log = Path(tmp) / "socket", Path(tmp) / "log"
        with open(log, "wb") as out:
            root = ["--allow-root"] if os.geteuid() == 0 else []
            proc = subprocess.Popen([*args, "--socket", str(socket_path), *root], stdout=out, stderr=out,
                                    preexec_fn=preexec)  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while "ready: listening" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            yield socket_path, log
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def fd_exhaustion(build: Path, program: Path, failures: list[str]) -> str:
    """A daemon with 48 fds at most, 60 idle connections held: launches stay right (served or exec'd),
    and the zygote does not spin on accept (one line per pause, not one per wake-up)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))

    with own_daemon([str(build / "headstartd"), "--warm", str(program), "--pool", "2"], limit) as (sock, log):
        held = []
        for _ in range(60):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(sock))
            held.append(s)
        start = time.monotonic()
        for i in range(30):
            done = subprocess.run([str(build / "headstart-run"), "--socket", str(sock), str(program), "exit", str(i)],
                                  capture_output=True, timeout=120, start_new_session=True)  # fmt: skip
            if done.returncode != i:
                failures.append(f"out of fds: launch {i} ended with {done.returncode}")
        took = time.monotonic() - start
        for s in held:
            s.close()
        lines = log.read_text().count("cannot accept a client")
        if lines > 20 * took + 20:
            failures.append(f"out of fds: {lines} log lines in {took:.0f} s (a spinning accept)")
        return f"30 launches with 60 of 48 fds held: {took:.1f} s, {lines} pause lines"


def full_cache(build: Path, program: Path, failures: list[str]) -> str:
    """The cache directory on a full filesystem (a 256 KiB tmpfs filled up): launches stay right."""
    with tempfile.TemporaryDirectory(prefix="headstart-full-") as tmp:
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", tmp]).returncode != 0:
            return "full cache filesystem: skipped (mounting a tmpfs needs root)"
        try:
            fd = os.open(Path(tmp) / "filler", os.O_WRONLY | os.O_CREAT)
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * 4096)
            os.close(fd)
            args = [str(build / "headstartd"), "--warm", str(program), "--cache-dir", str(Path(tmp) / "cache")]
            with own_daemon(args) as (sock, log):
                for i in range(30):
                    argv = [str(build / "headstart-run"), "--socket", str(sock), str(program), "exit", str(i)]
                    done = subprocess.run(argv, capture_output=True, timeout=60, start_new_session=True)
                    if done.returncode != i:
                        failures.append(f"full cache: launch {i} ended with {done.returncode}")
                served = log.read_text().count(" started ")
            return f"30 launches with the cache filesystem full: {served} served, the rest exec'd"
        finally:
            subprocess.run(["umount", tmp], check=False)


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
NPROC = 12  # the daemon's limit: supervisor, zygote, pool of 2, and a few programs


def nobody_processes() -> int:
    out = subprocess.run(["pgrep", "-c", "-u", "65534"], capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


class Faults:
    """What phase 8 does to the daemon, one after the other, each for about a second."""

    def __init__(self, daemon: subprocess.Popen[bytes]) -> None:
        self.daemon = daemon
        self.counts = {"pressure": 0, "zygote SIGKILL": 0, "zygote SIGSTOP": 0, "both SIGSTOP": 0}

    def zygotes(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.daemon.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def pressure(self) -> None:
        """Other processes of the user up to its limit: the daemon can fork nothing, not even a
        zygote to replace the one killed meanwhile."""
        room = max(0, NPROC - nobody_processes())
        sleepers = [subprocess.Popen([*NOBODY, "sleep", "30"]) for _ in range(room)]
        for z in self.zygotes()[:1]:
            os.kill(z, signal.SIGKILL)
        time.sleep(1.0)
        for s in sleepers:
            s.kill()
            s.wait()

    def stop(self, pids: list[int]) -> None:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        time.sleep(1.0)  # longer than the clients' --timeout
        for pid in reversed(pids):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)

    def run(self, done: threading.Event) -> None:
        steps: list[tuple[str, Callable[[], None]]] = [
            ("pressure", self.pressure),
            ("zygote SIGKILL", lambda: [os.kill(z, signal.SIGKILL) for z in self.zygotes()[:1]]),
            ("zygote SIGSTOP", lambda: self.stop(self.zygotes()[:1])),
            ("both SIGSTOP", lambda: self.stop([self.daemon.pid, *self.zygotes()[:1]])),
        ]
        i = 0
        while not done.wait(0.5):
            name, step = steps[i % len(steps)]
            with contextlib.suppress(OSError):
                step()
                self.counts[name] += 1
            i += 1


def unprivileged_under_pressure(build: Path, seconds: float, failures: list[str]) -> str:
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return "unprivileged daemon under pressure: skipped (needs root to become another user)"
    with tempfile.TemporaryDirectory(prefix="headstart-nobody-") as tmp:
        os.chmod(tmp, 0o755)
        runtime, runs = Path(tmp) / "runtime", Path(tmp) / "runs"
        runtime.mkdir(mode=0o700)
        os.chown(runtime, 65534, 65534)
        runs.touch(mode=0o666)
        os.chmod(runs, 0o666)
        sock, log = runtime / "socket", Path(tmp) / "log"
        limit = [*NOBODY, "prlimit", f"--nproc={NPROC}:{NPROC}"]
        with open(log, "wb") as out:
            daemon = subprocess.Popen([*limit, str(build / "headstartd"), "--socket", str(sock), "--app", "/bin/sh",
                                       "--pool", "2", "--verbose"], stdout=out, stderr=out)  # fmt: skip
        deadline = time.monotonic() + 30
        while "ready: listening" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        faults, done = Faults(daemon), threading.Event()
        thread = threading.Thread(target=faults.run, args=(done,))
        thread.start()
        client = [*limit, str(build / "headstart-run"), "--socket", str(sock), "--timeout", "500"]
        launches, end = 0, time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                status = launches % 100
                script = f'echo "$0" >> {runs}; echo ran; exit {status}'
                got = subprocess.run([*client, "/bin/sh", "-c", script, f"run-{launches}"], capture_output=True,
                                     timeout=120, start_new_session=True)  # fmt: skip
                if got.returncode != status or got.stdout != b"ran\n":
                    failures.append(f"pressure: launch {launches}: status {got.returncode}, want {status}: "
                                    f"{got.stdout!r} {got.stderr.decode(errors='replace').strip()}")  # fmt: skip
                launches += 1
        finally:
            done.set()
            thread.join()
        time.sleep(1)  # a child the stopped daemon started late would have run by now
        seen = runs.read_text().split()
        twice = sorted({r for r in seen if seen.count(r) > 1})
        missing = [i for i in range(launches) if f"run-{i}" not in seen]
        if twice or missing:
            failures.append(f"pressure: run twice {twice[:5]}, never run {missing[:5]}")
        if daemon.poll() is not None:
            failures.append(f"pressure: the daemon died: {log.read_text()[-2000:]}")
        daemon.terminate()
        daemon.wait(timeout=30)
        text = log.read_text()
        served, retries = text.count(" started "), text.count("cannot start a zygote")
        continued = text.count("continuing it")
        faults_done = ", ".join(f"{n} {k}" for k, n in faults.counts.items())
        return (f"as nobody at RLIMIT_NPROC {NPROC}, {seconds:.0f} s: {launches} launches ({served} served, the rest "
                f"exec'd), each run once with its status; faults: {faults_done}; zygote start retried {retries} "
                f"times, stopped zygote continued {continued} times")  # fmt: skip


GTK_PROGRAM = Path("/usr/bin/gtk-query-settings")


def prepared_takes(build: Path, binary: Path | None, n: int, failures: list[str]) -> str:
    """Phase 9: n launches of a GTK program each taken by a child prepared ahead (--prepare-display,
    under a private weston), each printing what exec prints; the zygote's fds and RSS between the
    first few and the last."""
    if not GTK_PROGRAM.exists():
        return f"prepared takes: skipped ({GTK_PROGRAM} is not installed)"
    from headstart.benchmark import display  # the private weston, only for this phase

    def printed(out: bytes) -> bytes:  # it prints one pointer, which differs run to run
        return re.sub(rb"0x[0-9a-f]+", b"0x", out)

    program = str(GTK_PROGRAM)
    args = ["--warm", program, "--prepare-display", program, "--pool", "1", "--no-learn"]
    with display.private_display("wayland") as found:
        env = {"PATH": "/usr/bin:/bin", "LANG": "C", "HOME": os.environ.get("HOME", "/"), **found}
        expected = printed(subprocess.run([program], env=env, capture_output=True, timeout=60).stdout)
        with private_daemon([], extra_args=args, env=dict(os.environ, **found), binary=binary) as d:
            client = [str(build / "headstart-run"), "--socket", str(d.socket), program]
            zygote = Soak(d, build, GTK_PROGRAM).zygote
            samples = []
            subprocess.run(client, env=env, capture_output=True, timeout=60)  # the launch a child is prepared like
            for i in range(n + 5):
                deadline = time.monotonic() + 60
                while not (d.prepared_line(program) or "").startswith("ready"):
                    if time.monotonic() > deadline or d.process.poll() is not None:
                        failures.append(f"prepared take {i}: no child prepared: {d.prepared_line(program)}")
                        return "prepared takes: stopped"
                    time.sleep(0.02)
                if i in (5, n + 4):
                    samples.append(sample(zygote()))
                got = subprocess.run(client, env=env, capture_output=True, timeout=60, start_new_session=True)
                if got.returncode != 0 or printed(got.stdout) != expected:
                    failures.append(f"prepared take {i}: status {got.returncode}, output differs from exec's")
            taken = d.log_text().count("prepared ahead)")
            stop(d)
            if "Sanitizer" in d.log_text():
                failures.append("the sanitizer reported (prepared takes):\n" + d.log_text()[-4000:])
    if taken != n + 5:
        failures.append(f"prepared takes: {taken} of {n + 5} launches were taken by a prepared child")
    (fds0, rss0), (fds1, rss1) = samples
    if fds1 != fds0:
        failures.append(f"prepared takes: the zygote's fds grew {fds0}->{fds1}")
    return f"prepared takes: {taken} of {n + 5} taken prepared; zygote fds {fds0}->{fds1}, rss {rss0}->{rss1} KiB"


def report_failures(failures: list[str]) -> int:
    for f in failures[:20]:
        print("FAILED:", f)
    return 1 if failures else 0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("build", type=Path)
    p.add_argument("--requests", type=int, default=1_000_000)
    p.add_argument("--launches", type=int, default=100_000)
    p.add_argument("--idle", type=int, default=4000)
    p.add_argument("--fault-seconds", type=float, default=30)
    p.add_argument("--pressure-seconds", type=float, default=60)
    p.add_argument("--prepared-takes", type=int, default=300)
    p.add_argument("--daemon", type=Path, help="another headstartd (build-sanitize's: leaks reported at its exit)")
    args = p.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.idle + 1024), hard))
    program = args.build / "tests/helpers/observe"
    started = time.monotonic()
    with private_daemon([], extra_args=["--warm", str(program), "--pool", "2"], binary=args.daemon) as daemon:
        soak = Soak(daemon, args.build, program)
        for _ in range(50):
            soak.launch()  # warm: the pool, the learned objects, the allocator
        soak.report("start")
        soak.idle_connections(args.idle)
        soak.report(f"after {args.idle} idle connections")
        half = args.requests // 2
        soak.mutated_requests(half)
        soak.report(f"after {half} mutated requests")
        soak.mutated_requests(args.requests - half)
        soak.report(f"after {args.requests} mutated requests")
        soak.launches_in_a_row(args.launches)
        soak.report(f"after {args.launches} launches")
        kills = soak.under_signals(args.fault_seconds, 2.0, signal.SIGKILL, zygote=True)
        soak.report(f"after {kills} zygote SIGKILLs")
        hups = soak.under_signals(args.fault_seconds, 0.1, signal.SIGHUP, zygote=False)
        soak.report(f"after {hups} SIGHUPs")
        soak.alive()
        stop(daemon)
        soak.log = daemon.log_text()  # with what it said as it stopped (a sanitizer's leak report)
    print(fd_exhaustion(args.build, program, soak.failures), flush=True)
    print(full_cache(args.build, program, soak.failures), flush=True)
    print(unprivileged_under_pressure(args.build, args.pressure_seconds, soak.failures), flush=True)
    print(prepared_takes(args.build, args.daemon, args.prepared_takes, soak.failures), flush=True)
    print(f"{soak.launches} launches, {args.requests} mutated requests, {len(soak.failures)} failures, "
          f"{time.monotonic() - started:.0f} s")  # fmt: skip
    # fds flat: the same after every phase as at the start (the zygote after a kill or SIGHUP is a new
    # one with the same set).
    first = soak.samples[0]
    for phase, sup, zyg in soak.samples[1:]:
        if sup[0] != first[1][0] or zyg[0] != first[2][0]:
            grew = f"supervisor {first[1][0]}->{sup[0]}, zygote {first[2][0]}->{zyg[0]}"
            soak.failures.append(f"fds grew by {phase}: {grew}")
    if "Sanitizer" in soak.log:  # --daemon of a sanitizer build: leaks are reported at its exit
        soak.failures.append("the sanitizer reported:\n" + soak.log[-4000:])
    return report_failures(soak.failures)


if __name__ == "__main__":
    sys.exit(main())
