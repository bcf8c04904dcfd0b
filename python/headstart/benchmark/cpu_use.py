"""How busy the CPUs were during a bench run, and how much of that was other work than the bench's.

A launch of a few milliseconds is timed against another one beside it; whatever else runs on the
machine takes the CPUs from either, and on a two-CPU machine with other work the ratio of such a
program is noise both ways (docs/measuring.md). The bench cannot stop other work, but it can say
how much there was: the CPUs' busy time (/proc/stat) less the CPU time of the bench and of every
process it started (getrusage of itself and of its reaped children).

A daemon's supervisor exits at once when stopped and leaves its zygote to end its programs (as a
service manager expects), so the zygote would be reaped by init and its time, and its programs',
would count as other work. The bench makes itself their reaper instead (PR_SET_CHILD_SUBREAPER)
and reaps them at the end of the run."""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import time
from dataclasses import dataclass

PR_SET_CHILD_SUBREAPER = 36
# How long the end of a run waits for the orphans it adopted (a zygote ending its last programs)
# while they keep exiting; one that outlives that (a session bus service) stays uncounted.
REAP_QUIET_S = 2.0
REAP_MAX_S = 15.0
# Above this share of the CPUs, other work is said to make small programs' ratios noise.
NOISY_SHARE = 0.10
# /proc/stat's fields counted as busy: user, nice, system, irq, softirq, steal (another guest's).
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


@dataclass(frozen=True)
class CpuUse:
    cpus: int
    elapsed_s: float
    busy_s: float  # every CPU's busy time, the machine's
    own_s: float  # the bench's and its processes'

    @property
    def busy_share(self) -> float:
        return self.busy_s / (self.elapsed_s * self.cpus)

    @property
    def other_share(self) -> float:
        """Of the CPUs' time, how much went to work that was not the bench's (at least 0)."""
        return max(0.0, self.busy_s - self.own_s) / (self.elapsed_s * self.cpus)

    def as_dict(self) -> dict[str, float | int]:
        return {
            "cpus": self.cpus,
            "elapsed_s": self.elapsed_s,
            "busy_share": self.busy_share,
            "own_share": min(1.0, self.own_s / (self.elapsed_s * self.cpus)),
            "other_share": self.other_share,
        }


def _busy_s() -> float:
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    return sum(int(fields[i]) for i in _BUSY_FIELDS if i < len(fields)) / os.sysconf("SC_CLK_TCK")


def _own_s() -> float:
    mine, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + reaped.ru_utime + reaped.ru_stime


def adopt_orphans() -> bool:
    """Makes this process the reaper of its descendants whose parent ends; False where it cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans() -> None:
    """Reaps the children that ended, waiting while they keep ending. Only once the run's own
    processes were all waited for: it would take another waiter's child."""
    deadline, quiet = time.monotonic() + REAP_MAX_S, time.monotonic() + REAP_QUIET_S
    while time.monotonic() < min(deadline, quiet):
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except OSError as e:
            if e.errno == errno.EINTR:
                continue
            return
        if pid:
            quiet = time.monotonic() + REAP_QUIET_S
        else:
            time.sleep(0.05)


class CpuWatch:
    """The CPUs' use from its start to finish(); None from finish() where /proc/stat is unreadable."""

    def __init__(self) -> None:
        self.adopting = adopt_orphans()
        self._start = self._read()

    @staticmethod
    def _read() -> tuple[float, float, float] | None:
        try:
            return time.monotonic(), _busy_s(), _own_s()
        except (OSError, ValueError, IndexError):
            return None

    def finish(self) -> CpuUse | None:
        if self.adopting:
            reap_orphans()
        end = self._read()
        if self._start is None or end is None or end[0] <= self._start[0]:
            return None
        return CpuUse(
            cpus=os.cpu_count() or 1,
            elapsed_s=end[0] - self._start[0],
            busy_s=end[1] - self._start[1],
            own_s=end[2] - self._start[2],
        )
