"""One boot timeline from the lines of every log: the moments the logs show (kernel setup, the
kernel's first message, initramfs unpacked, init started, the ready marker), the phases between
them, and the initcalls ranked.

Times are seconds on one axis. With a recorded serial log it is the host's, from power-on (or the
--start line); a kernel line's printk time maps onto it by the offset at which the kernel's clock
started, the smallest host-minus-printk difference over the lines stamped after it started (early
lines wait in a buffer until the console is registered and arrive late; none arrives early). Lines
stamped 0 came before the clock started (the kernel's setup, before time_init registers the clock
printk reads): the first of them is the kernel's start. Without one, the axis is the kernel's own
clock and what came before the kernel is unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from headstart.boot.boots import SETUP
from headstart.boot.logs import BootLog, CpuAccount, Line

# A module's initcall names its module after the address: "initcall aes_init+0x0/0x1000 [aes_ce_blk] returned".
_INITCALL_DONE = re.compile(r"initcall (\S+?)(?:\+0x\w+/0x\w+)?(?: \[(\w+)\])? returned (-?\d+) after (\d+) usecs")
_INITCALL_START = re.compile(r"calling\s+(\S+?)(?:\+0x\w+/0x\w+)?(?: \[(\w+)\])? @ \d+")
_UNPACK = re.compile(r"Trying to unpack rootfs image as initramfs|Unpacking initramfs")
_UNPACKED = re.compile(r"Freeing initrd memory")
_ROOT = re.compile(
    r"VFS: Mounted root|EXT4-fs \(\S+\): mounted filesystem|Mounted root \(|erofs: \(device \S+\): mounted|"
    r"F2FS-fs \(\S+\): Mounted|XFS \(\S+\): Ending clean mount"
)
# systemd's first line, with its version ("252" or Debian's "252.17-1~deb12u1"); an initramfs's own
# systemd prints one too, before the root's.
SYSTEMD_STARTS = re.compile(r"systemd\[1\]: systemd (\d+)\S* running in system mode")
_INIT = re.compile(rf"Run (\S+) as init process|{SYSTEMD_STARTS.pattern}")
# The system manager starting: its first line to the kernel's log, or its greeting on the console
# (which a low loglevel= leaves alone); an initramfs's systemd says both before the root's does.
_MANAGER_STARTS = re.compile(rf"{SYSTEMD_STARTS.pattern}|^Welcome to .*!$")
# systemd's early boot, its console's status lines or its journal (older versions name the target by
# its description alone).
_TARGETS = {
    "sysinit": ("sysinit.target", re.compile(r"Reached target (?:sysinit\.target|System Initialization)\b")),
    "basic": ("basic.target", re.compile(r"Reached target (?:basic\.target|Basic System)\b")),
}
_PANIC = re.compile(r"Kernel panic - not syncing")
_CONSOLE = re.compile(r"printk: console \[(\w+)\] enabled")


@dataclass
class Moment:
    name: str
    at_s: float
    evidence: Line


@dataclass
class Phase:
    name: str
    start_s: float
    end_s: float
    evidence: list[str]  # the lines that bound it

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass
class Initcall:
    name: str
    duration_s: float
    start_s: float | None
    evidence: Line
    module: str | None = None  # None: built into the kernel


@dataclass
class Timeline:
    axis: str  # "host" (from power-on) or "kernel" (from the kernel's first message)
    kernel_offset_s: float | None  # the kernel's time 0 on the axis
    moments: dict[str, Moment]
    phases: list[Phase]
    initcalls: list[Initcall]  # built into the kernel, slowest first
    services: list[tuple[str, float, str]]  # systemd units, slowest first
    console_lines: int  # kernel lines printed on the console before init
    console_bytes: int
    end_s: float | None  # the last line's time
    warnings: list[str] = field(default_factory=list)
    cpu: CpuAccount = field(default_factory=CpuAccount)  # units by CPU time, most first; no slices
    # Modules' initcalls, run as each module loads (most by udev, after init), slowest first.
    module_initcalls: list[Initcall] = field(default_factory=list)
    chain: dict[str, str] = field(default_factory=lambda: dict(CHAIN))  # its moments in boot order, named

    def at(self, name: str) -> float | None:
        m = self.moments.get(name)
        return m.at_s if m else None

    def phase(self, start: str, end: str) -> Phase | None:
        """The phase between two moments of the chain (by their keys), when the logs show both."""
        name = f"{self.chain[start]} to {self.chain[end]}"
        return next((p for p in self.phases if p.name == name), None)

    def time_of(self, line: Line) -> float | None:
        """A line's time on this timeline's axis."""
        return _time(line, self.axis, self.kernel_offset_s)


def _kernel_offset(log: BootLog) -> tuple[float, Line] | None:
    """The host's time at the kernel's time 0, and the line that gives it. A line stamped after the
    clock started bounds it from above (it can reach the console late, never early): the least late
    gives it. A line stamped 0 was printed before the clock started and bounds it from below only:
    under TCG the arm64 device's kernel ran 0.41 s before its clock did, and taken as its time 0 that
    put every moment on the kernel's clock, and systemd's, that much early. With no line stamped
    after (a quiet console), the last of those is the estimate, early by up to as much."""
    both = [
        (line.host_s - line.kernel_s, line)
        for line in log.lines
        if line.host_s is not None and line.kernel_s is not None
    ]
    after = [b for b in both if b[1].kernel_s]
    if after:
        return min(after, key=lambda b: b[0])
    return max(both, key=lambda b: b[0]) if both else None


def _first_before_clock(log: BootLog) -> Line | None:
    """The kernel's first line printed before its clock started (stamped 0), as the host saw it."""
    return next((line for line in log.lines if line.kernel_s == 0 and line.host_s is not None), None)


def _time(line: Line, axis: str, offset: float | None) -> float | None:
    if axis == "host":
        if line.kernel_s is not None and offset is not None:
            return offset + line.kernel_s
        return line.host_s
    return line.kernel_s


# The moments the kernel's lines give (init's too: a manager re-executed hours later greets again).
KERNEL_MOMENTS = ("kernel_setup", "console", "initramfs_unpack", "initramfs_done", "root_mounted", "init")


def build(log: BootLog, ready: re.Pattern[str] | None, marks: list[tuple[str, re.Pattern[str]]] = ()) -> Timeline:
    """MARKS: moments of the user's own between init and ready (the compositor up, say), each
    named and found by the first line its pattern matches, in boot order."""
    offset_of = _kernel_offset(log)
    offset = offset_of[0] if offset_of else None
    chain = with_marks(marks)
    axis = "host" if log.recorded else "kernel"
    moments: dict[str, Moment] = {}

    def first(name: str, pattern: re.Pattern[str]) -> None:
        for line in log.lines:
            t = _time(line, axis, offset)
            if t is not None and name not in moments and pattern.search(line.text):
                moments[name] = Moment(name, t, line)

    first("kernel_setup", SETUP)
    timed = [line for line in log.lines if line.kernel_s is not None]
    kernel_line = min(timed, key=lambda line: line.kernel_s or 0.0) if timed else None  # of any log given
    # The kernel's start is in the log only if its first messages are: dmesg's ring buffer may have
    # wrapped long after boot. A capture whose kernel printed late (quiet) still places it, by the
    # kernel's clock.
    if kernel_line is not None and kernel_line.kernel_s is not None and kernel_line.kernel_s < 1.0:
        at = offset if axis == "host" and offset is not None else 0.0
        # Printed before its clock started, the kernel's first line with a time of its own is nearer
        # its start than the clock's zero (its very first may share the firmware's line and time).
        before_clock = _first_before_clock(log) if axis == "host" else None
        if before_clock is not None and before_clock.host_s is not None:
            at = min(at, before_clock.host_s)
        moments["kernel_start"] = Moment("kernel_start", at, kernel_line)
    elif axis == "host" and offset_of is not None:
        moments["kernel_start"] = Moment("kernel_start", offset_of[0], offset_of[1])
    first("console", _CONSOLE)
    first("initramfs_unpack", _UNPACK)
    first("initramfs_done", _UNPACKED)
    first("root_mounted", _ROOT)
    first("init", _INIT)
    _root_mounted_by_init(log, moments, axis, offset)
    _systemd_targets(log, moments, axis, offset)
    for name, pattern in marks:
        first(name, pattern)
    if ready is not None:
        first("ready", ready)
    wrapped_at = _wrapped_at(log)
    if wrapped_at is not None:
        # The kernel's lines are not the boot's: a wrapped dmesg's first ext4 mount is a loop device's,
        # hours later, and a phase from it to a ready line would time what is not a boot. (systemd's
        # moments stay: a journal that keeps no kernel messages has them.)
        for name in KERNEL_MOMENTS:
            moments.pop(name, None)
    dropped = _in_boot_order(moments, chain)

    calls = _initcalls(log, axis, offset)
    timeline = Timeline(
        axis,
        offset if axis == "host" else 0.0,
        moments,
        [],
        [c for c in calls if c.module is None],
        sorted(log.systemd_blame, key=lambda s: -s[1]),
        *_console_output(log),
        _end(log, axis, offset),
        cpu=_cpu(log.cpu),
        chain=chain,
        module_initcalls=[c for c in calls if c.module is not None],
    )
    timeline.phases = _phases(timeline, log)
    # What is wrong with the log as a whole (a wrapped ring buffer, a panic) before the moments it
    # left out: it is often why (a wrapped dmesg's first ext4 mount is a loop device's, hours later).
    # Placed by a line stamped 0 alone: no line printed after the kernel's clock started.
    clock_unplaced = offset_of is not None and not offset_of[1].kernel_s
    timeline.warnings = _warnings(timeline, log, ready, wrapped_at, clock_unplaced) + dropped
    return timeline


OUTSIDE_UNITS = "outside every unit (the kernel, the initramfs, kernel threads)"


def _cpu(account: CpuAccount) -> CpuAccount:
    # A slice sums the units under it: counted again, it would push them off the top of the list.
    units = [u for u in account.units if not u[0].endswith(".slice")]
    units += _ended(account, {u[0] for u in account.units})
    # The root slice counts every task since boot; its children (system.slice, user.slice,
    # init.scope, ...) only what ran once systemd had made them: the rest ran outside every unit.
    root = next((u for u in account.units if u[0] == "-.slice"), None)
    top = [u for u in account.units if u[0] == "init.scope" or (u[0].endswith(".slice") and "-" not in u[0])]
    if root is not None and top:
        units.append((OUTSIDE_UNITS, max(0.0, root[1] - sum(u[1] for u in top)), root[2]))
    units.sort(key=lambda u: -u[1])
    return CpuAccount(units, busy_s=account.busy_s, idle_s=account.idle_s, cpus=account.cpus)


def _ended(account: CpuAccount, counted: set[str]) -> list[tuple[str, float, str]]:
    """Units that had ended, each stop's count summed, unless their cgroup still counted them."""
    total: dict[str, tuple[float, str]] = {}
    for unit, seconds, source in account.ended:
        if unit not in counted:
            total[unit] = (total.get(unit, (0.0, source))[0] + seconds, source)
    return [(unit, seconds, source) for unit, (seconds, source) in total.items()]


def _root_mounted_by_init(log: BootLog, moments: dict[str, Moment], axis: str, offset: float | None) -> None:
    """With init from the initramfs (rdinit=, or an initramfs's /init), the kernel mounts no root:
    init does, later. That mount is a moment of its own, after init, not the kernel's."""
    root, init = moments.get("root_mounted"), moments.get("init")
    if root is None or init is None or root.at_s < init.at_s:
        return
    del moments["root_mounted"]
    # A mount after the root's systemd started is another file system's (a /data partition beside a
    # squashfs root, whose mount prints no line): the root's is not in the log.
    started = [
        t for line in log.lines if SYSTEMD_STARTS.search(line.text) and (t := _time(line, axis, offset)) is not None
    ]
    if not started or root.at_s < started[-1]:
        moments["init_root_mounted"] = Moment("init_root_mounted", root.at_s, root.evidence)


def _systemd_targets(log: BootLog, moments: dict[str, Moment], axis: str, offset: float | None) -> None:
    """sysinit.target and basic.target reached by the root's systemd (an initramfs's own systemd
    reaches them too, before it mounts the root: the first after init, that mount and the last
    manager's start counts). When it happened, by systemd's own clock, from the journal's line or
    else the critical chain, whose times count from user space's start (the kernel's and the
    initrd's share of "Startup finished"); else when the console printed its status line, which a
    busy serial console prints late."""
    starts = [
        t for line in log.lines if _MANAGER_STARTS.search(line.text) and (t := _time(line, axis, offset)) is not None
    ]
    since = max(
        [m.at_s for name in ("init", "init_root_mounted") if (m := moments.get(name))] + starts[-1:], default=None
    )
    user_space = log.user_space_kernel_s
    for name, (unit, pattern) in _TARGETS.items():
        lines = [
            (t, line)
            for line in log.lines
            if (t := _time(line, axis, offset)) is not None
            and (since is None or t >= since)
            and pattern.search(line.text)
        ]
        chain = log.chain_targets.get(unit)
        timed = next(((t, line) for t, line in lines if line.kernel_s is not None), None)
        if timed is None and chain is not None and user_space is not None and (axis == "kernel" or offset is not None):
            text = (
                f"{unit} @{chain[0]:.3f}s in the critical chain, user space from {user_space:.3f} s (Startup finished)"
            )
            line = Line(chain[1], text, kernel_s=user_space + chain[0])
            timed = (_time(line, axis, offset), line)
        if found := timed or (lines[0] if lines else None):
            moments[name] = Moment(name, *found)


def with_marks(marks: list[tuple[str, re.Pattern[str]]]) -> dict[str, str]:
    chain = {k: v for k, v in CHAIN.items() if k != "ready"}
    for name, _ in marks:
        if name in CHAIN:
            raise ValueError(f"a mark cannot be named {name!r}: a moment of the boot is")
        chain[name] = name
    return chain | {"ready": CHAIN["ready"]}


# Moments this module infers after init, which a user's own mark before them outranks.
_INFERRED_AFTER_INIT = ("init_root_mounted", "sysinit", "basic")


def _in_boot_order(moments: dict[str, Moment], chain: dict[str, str]) -> list[str]:
    """Drops a moment the logs show before the one that must precede it: a phase is never negative."""
    warnings: list[str] = []
    kept: list[Moment] = []
    init = moments.get("init")
    for name in chain:
        m = moments.get(name)
        if m is None:
            continue
        # The user's own mark wins over what this module inferred after init (the root's remount,
        # systemd's targets): both follow init.
        while (
            kept
            and m.at_s < kept[-1].at_s
            and name not in CHAIN
            and kept[-1].name in _INFERRED_AFTER_INIT
            and (init is None or m.at_s >= init.at_s)
        ):
            last = kept.pop()
            del moments[last.name]
            warnings.append(
                f"{chain[last.name]} at {last.at_s:.3f} s comes after the mark {name} at {m.at_s:.3f} s: left out"
            )
        if kept and m.at_s < kept[-1].at_s:
            del moments[name]
            warnings.append(
                f"{chain[name]} at {m.at_s:.3f} s comes before {chain[kept[-1].name]} at {kept[-1].at_s:.3f} s: "
                f"left out ({_evidence(m.evidence)})"
            )
            continue
        kept.append(m)
    return warnings


def _initcalls(log: BootLog, axis: str, offset: float | None) -> list[Initcall]:
    started: dict[tuple[str, str | None], tuple[float | None, Line]] = {}
    calls = []
    for line in log.lines:
        t = _time(line, axis, offset)
        if m := _INITCALL_START.search(line.text):
            started[m.group(1), m.group(2)] = (t, line)
        elif m := _INITCALL_DONE.search(line.text):
            name, module = m.group(1), m.group(2)
            at, calling = started.get((name, module), (None, None))
            calls.append(Initcall(name, _duration(m, line, calling), at, line, module))
    return sorted(calls, key=lambda c: -c.duration_s)


def _duration(done: re.Match[str], line: Line, calling: Line | None) -> float:
    """An initcall's time. The kernel's "after N usecs" counts from the last "calling" line of any
    initcall (initcall_debug keeps one start time for all, init/main.c): right for the kernel's own,
    which run one at a time, but modules load side by side (udev loads many at once), and a module's
    count then starts at another's start. Its lines' own times say how long it ran."""
    reported = int(done.group(4)) / 1e6
    if done.group(2) is None or calling is None or calling.kernel_s is None or line.kernel_s is None:
        return reported
    return max(reported, line.kernel_s - calling.kernel_s)


def _console_output(log: BootLog) -> tuple[int, int]:
    """Kernel lines (with a printk time) before init started, as the console showed them."""
    lines = nbytes = 0
    for line in log.lines:
        if line.kernel_s is None:
            continue
        lines += 1
        nbytes += len(line.text) + 16  # the "[    1.234567] " prefix and the newline
        if _INIT.search(line.text):
            break
    return lines, nbytes


def _end(log: BootLog, axis: str, offset: float | None) -> float | None:
    times = [t for line in log.lines if (t := _time(line, axis, offset)) is not None]
    return max(times) if times else None


# The moments in boot order, with how a phase that starts or ends at each is named.
CHAIN = {
    "kernel_setup": "kernel setup",
    "kernel_start": "kernel start",
    "initramfs_unpack": "initramfs unpacking",
    "initramfs_done": "initramfs unpacked",
    "root_mounted": "root file system mounted",  # none when the initramfs is the root
    "init": "init started",
    "init_root_mounted": "root file system mounted by init",  # init from the initramfs mounts it
    "sysinit": "sysinit.target",
    "basic": "basic.target",
    "ready": "first program ready",
}


def _phases(t: Timeline, log: BootLog) -> list[Phase]:
    """Between each two consecutive moments the logs show: a moment missing from a log (a quiet
    kernel prints no init line) merges the phases on either side of it."""
    present = [name for name in t.chain if name in t.moments]
    phases = []
    previous: str | None = None if t.axis == "host" else present[0] if present else None
    for name in present:
        if name == previous:
            continue
        m = t.moments[name]
        if previous is None:
            phases.append(Phase(f"power-on to {t.chain[name]}", 0.0, m.at_s, [_evidence(m.evidence)]))
        else:
            p = t.moments[previous]
            evidence = [_evidence(p.evidence), _evidence(m.evidence)]
            phases.append(Phase(f"{t.chain[previous]} to {t.chain[name]}", p.at_s, m.at_s, evidence))
        previous = name
    # systemd's own account has durations only, one after the other: firmware and loader from
    # power-on, then the kernel (from its start), the initrd and user space.
    at = 0.0 if {"firmware", "loader"} & set(log.systemd_phases) else (t.at("kernel_start") or 0.0)
    for name, seconds in log.systemd_phases.items():
        phases.append(Phase(f"systemd: {name}", at, at + seconds, ["systemd-analyze: Startup finished"]))
        at += seconds
    return phases


def _wrapped_at(log: BootLog) -> float | None:
    """When the kernel's lines of a dmesg or journal start, if not at boot: its ring buffer wrapped
    (or the journal kept no kernel messages). A serial capture has the boot whole: a quiet kernel's
    first printed line may come late."""
    first_kernel = min((line.kernel_s for line in log.lines if line.kernel_s is not None), default=None)
    return first_kernel if first_kernel is not None and first_kernel >= 1.0 and not log.recorded else None


def _warnings(
    t: Timeline, log: BootLog, ready: re.Pattern[str] | None, first_kernel: float | None, clock_unplaced: bool
) -> list[str]:
    out = []
    if first_kernel is not None and {"sysinit", "basic"} & set(t.moments):
        out.append(
            f"the log starts at {first_kernel:.3f} s, after the kernel's start, with systemd's lines: a journal "
            "that kept no kernel messages (journald's ReadKMsg=no), so the phases start at systemd's"
        )
    elif first_kernel is not None:
        out.append(
            f"the kernel's lines start at {first_kernel:.3f} s, not at boot: its ring buffer has wrapped "
            "(dmesg keeps only the newest lines), so the boot itself is not in this log"
        )
    if panic := next((line for line in log.lines if _PANIC.search(line.text)), None):
        at = t.time_of(panic)
        out.append(f"the kernel panicked{f' at {at:.3f} s' if at is not None else ''}: {panic.text.strip()}")
    if {"kernel_setup", "kernel_start"} & set(t.moments) and not {"init", "ready"} & set(t.moments) and t.end_s:
        out.append(f"the log ends at {t.end_s:.3f} s before init started: truncated, or the console went quiet")
    elif "ready" in t.moments and "init" not in t.moments and log.recorded:
        # A console booted with `quiet` (which this tool advises) prints nothing of the kernel's after
        # its first lines: the phases up to init are one.
        out.append(
            "the console printed no line of the kernel's start (quiet, or a low loglevel=): its phases up "
            "to init are one here. Give the kernel's messages of the same boot as another file "
            "(`journalctl -b -o short-monotonic` or `dmesg`, saved on the device) to split them"
        )
    if t.axis == "host" and clock_unplaced and {"root_mounted", "init", "sysinit", "basic"} & set(t.moments):
        out.append(
            "no console line was stamped after the kernel started its clock (quiet): the moments on the kernel's "
            "clock (systemd's targets, dmesg's and the journal's lines) are placed from its first lines, early by "
            "as long as it ran before starting its clock (0.41 s on the arm64 virtual device under TCG, 23 ms on "
            "an x86 QEMU boot printing at 115200 baud)"
        )
    out += [f"no line matches the mark {name}" for name in t.chain if name not in CHAIN and name not in t.moments]
    if ready is not None and "ready" not in t.moments and not any(ready.search(line.text) for line in log.lines):
        out.append(f"no line matches the ready marker {ready.pattern!r}")  # else the line left out is said
    if ready is None and log.lines:
        out.append("no ready marker named (--ready REGEX): the timeline stops at init")
    return out


def as_dict(t: Timeline) -> dict[str, Any]:
    return {
        "axis": t.axis,
        "kernel_offset_s": t.kernel_offset_s,
        "moments": {k: {"at_s": m.at_s, "evidence": _evidence(m.evidence)} for k, m in t.moments.items()},
        "phases": [
            {"name": p.name, "start_s": p.start_s, "end_s": p.end_s, "duration_s": p.duration_s, "evidence": p.evidence}
            for p in t.phases
        ],
        "initcalls": [
            {
                "name": c.name,
                "duration_ms": c.duration_s * 1000,
                "start_s": c.start_s,
                "evidence": _evidence(c.evidence),
            }
            for c in t.initcalls
        ],
        "module_initcalls": [
            {"name": c.name, "module": c.module, "duration_ms": c.duration_s * 1000, "evidence": _evidence(c.evidence)}
            for c in t.module_initcalls
        ],
        "services": [{"unit": u, "duration_s": s, "evidence": src} for u, s, src in t.services],
        "cpu": {
            "units": [{"unit": u, "cpu_s": s, "evidence": src} for u, s, src in t.cpu.units],
            "busy_s": t.cpu.busy_s,
            "idle_s": t.cpu.idle_s,
            "busy_share": t.cpu.busy_share,
            "cpus": t.cpu.cpus,
        },
        "console": {"kernel_lines": t.console_lines, "bytes": t.console_bytes},
        "end_s": t.end_s,
        "warnings": t.warnings,
    }


def _evidence(line: Line) -> str:
    return f"{line.source}: {line.text.strip()}"
