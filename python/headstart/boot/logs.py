"""Boot logs read into lines with their times: a serial console captured with host times (by
`headstart boot record`, grabserial or moreutils' ts: see formats.py), `dmesg` or
`journalctl -o short-monotonic` output (printk time), `systemd-analyze` / `systemd-analyze
blame` output (durations), `systemd-analyze critical-chain` output (when sysinit.target and
basic.target were reached; with `--fuzz`, what else the chain's unit waited for), and the CPU time
spent since boot: `systemctl show -p Id -p CPUUsageNSec '*'` per unit, the journal's "UNIT:
Consumed ... CPU time" lines for units that ended, the `cpu` lines of /proc/stat for the whole
machine, and how long systemd ran its generators (`systemctl show -p
GeneratorsStartTimestampMonotonic -p GeneratorsFinishTimestampMonotonic`). Each log must hold one
boot, and all of them the same boot (boots.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from headstart.boot import boots, console, formats
from headstart.boot.line import Line
from headstart.errors import HeadstartError
from headstart.inputfile import read_bytes

__all__ = ["BootLog", "ChainLink", "CpuAccount", "Line", "duration_s", "read"]

_BAUD = re.compile(r"\bbaud=(\d+)")
_FINISHED = re.compile(r"Startup finished in (.*?)(?:= .*)?$")
_DURATION_PART = re.compile(r"([\d.]+(?:min|ms|us|s|h)\s*)+\((\w+)\)")
_BLAME = re.compile(r"^\s*((?:[\d.]+(?:h|min|s|ms|us)\s*)+)\s+(\S+)$")
_UNIT = re.compile(r"([\d.]+)(h|min|ms|us|s)")
_SECONDS = {"h": 3600.0, "min": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}
_SHOW = re.compile(r"^(Id|CPUUsageNSec)=(.*)$")
# The system manager's own moments, in microseconds since boot (0: not reached).
_GENERATORS = re.compile(r"^Generators(Start|Finish)TimestampMonotonic=(\d+)$")
# The system manager's account of a unit that has ended (the user managers' units share names with it).
_CONSUMED = re.compile(r"\bsystemd\[1\]: (\S+): Consumed (.+?) CPU time\b")
_PROC_STAT_CPU = re.compile(r"^cpu\s+((?:\d+\s+){3,}\d+)\s*$")
_PROC_STAT_ONE_CPU = re.compile(r"^cpu\d+\s+\d")
# systemd-analyze critical-chain: a unit, when it became active or started after user space started,
# and how long it took to start ("└─basic.target @4.541s", "  └─dbus.service @3.2s +120ms"; "`-"
# where the terminal has no box drawing). The first line, not indented, is the unit the chain ends at.
_DURATION = r"(?:[\d.]+(?:h|min|ms|us|s)\s?)+?"
_CHAIN_LINK = re.compile(
    rf"^(?P<tree>[\s│├└─`|-]*)(?P<unit>\S+\.(?:service|target|socket|mount|slice|scope|device|path|timer|swap|automount))"
    rf" @(?P<at>{_DURATION})(?:\s*\+(?P<took>{_DURATION}))?\s*$"
)
_USER_HZ = 100  # /proc/stat's unit on every architecture Debian builds for (Alpha's is 1024)


@dataclass
class CpuAccount:
    """What the CPUs did from boot to the moment it was captured: per unit, its cgroup's count, and
    for the whole machine, busy and idle summed over its CPUs."""

    units: list[tuple[str, float, str]] = field(default_factory=list)  # unit, CPU seconds, source
    # Units that ended before the capture (no cgroup left), from systemd's "UNIT: Consumed ... CPU
    # time" lines in the journal, each stop's run; timeline.py folds them into units.
    ended: list[tuple[str, float, str]] = field(default_factory=list)
    busy_s: float | None = None
    idle_s: float | None = None
    cpus: int = 0  # the machine's CPUs (the cpuN lines of /proc/stat), 0 when not given

    @property
    def busy_share(self) -> float | None:
        if self.busy_s is None or self.idle_s is None or self.busy_s + self.idle_s <= 0:
            return None
        return self.busy_s / (self.busy_s + self.idle_s)


@dataclass
class ChainLink:
    """A unit of systemd's critical chain: when it became active or started, and how long it took to
    start (None for a unit that has no start of its own: a target), in seconds after user space started."""

    unit: str
    at_s: float
    took_s: float | None
    source: str


@dataclass
class BootLog:
    lines: list[Line] = field(default_factory=list)
    baud: int | None = None
    systemd_phases: dict[str, float] = field(default_factory=dict)  # firmware, loader, kernel, initrd, userspace
    systemd_blame: list[tuple[str, float, str]] = field(default_factory=list)  # unit, seconds, source
    cpu: CpuAccount = field(default_factory=CpuAccount)
    recorded: bool = False  # a host-timestamped serial log is among the sources
    formats: list[str] = field(default_factory=list)  # the capture format of each source
    generators: dict[str, tuple[int, str]] = field(default_factory=dict)  # "Start"/"Finish" -> (us, source)
    # systemd-analyze critical-chain, each chain given: the unit it ends at first, then each unit the
    # one before waited for
    critical_chains: list[list[ChainLink]] = field(default_factory=list)
    # With `--fuzz`, for each chain: the other units its first unit waited for, up within the fuzz
    chains_beside: list[list[ChainLink]] = field(default_factory=list)

    @property
    def critical_chain(self) -> list[ChainLink]:
        """The chain to a program's unit when one was given (the command without a unit prints the
        default target's, which need not pass through it), else the first."""
        return self.critical_chains[self._chosen_chain] if self.critical_chains else []

    @property
    def critical_chain_beside(self) -> list[ChainLink]:
        """What the critical chain's first unit waited for besides its chain (given with `--fuzz`)."""
        return self.chains_beside[self._chosen_chain] if self.chains_beside else []

    @property
    def _chosen_chain(self) -> int:
        units = [i for i, c in enumerate(self.critical_chains) if not c[0].unit.endswith(".target")]
        return units[0] if units else 0

    @property
    def chain_targets(self) -> dict[str, tuple[float, str]]:
        """The chains' targets: target -> (seconds after user space started, source)."""
        found: dict[str, tuple[float, str]] = {}
        for chain in self.critical_chains:
            for c in chain:
                if c.unit.endswith(".target"):
                    found.setdefault(c.unit, (c.at_s, c.source))
        return found

    @property
    def user_space_kernel_s(self) -> float | None:
        """When user space started, on the kernel's clock: the kernel's and the initrd's share of
        systemd's "Startup finished", from which the critical chain's times count."""
        phases = self.systemd_phases
        return phases["kernel"] + phases.get("initrd", 0.0) if "kernel" in phases else None

    def generators_run(self) -> tuple[float, list[str]] | None:
        """How long systemd ran its generators, before it loaded any unit, and the lines it rests on."""
        start, finish = self.generators.get("Start"), self.generators.get("Finish")
        if start is None or finish is None or not 0 < start[0] <= finish[0]:
            return None
        lines = [f"{source}: Generators{key}TimestampMonotonic={us}" for key, (us, source) in self.generators.items()]
        return (finish[0] - start[0]) / 1e6, lines


def duration_s(text: str) -> float:
    """'1min 2.345s' -> 62.345."""
    return sum(float(n) * _SECONDS[unit] for n, unit in _UNIT.findall(text))


def read(paths: list[Path], boot: int | None = None) -> BootLog:
    """Every log into one; --boot N picks the Nth boot of a log that holds several."""
    log = BootLog()
    per_file = []
    for path in paths:
        one = _read_one(path.name, _text(path))
        if not (
            one.lines
            or one.systemd_phases
            or one.systemd_blame
            or one.cpu.units
            or one.cpu.busy_s is not None
            or one.generators
            or one.critical_chains
        ):
            raise HeadstartError(
                f"{path}: no boot lines found (expected a serial log from `headstart boot record`, grabserial "
                "or ts, dmesg output with printk times, `systemd-analyze`, `systemd-analyze blame` or "
                "`systemd-analyze critical-chain` output, or `systemctl show -p Id -p "
                "CPUUsageNSec '*'` or `systemctl show -p GeneratorsStartTimestampMonotonic -p "
                "GeneratorsFinishTimestampMonotonic` output)"
            )
        one.lines = boots.choose(str(path), boots.split(one.lines), boot)
        per_file.append((str(path), one.lines))
        _merge(log, one)
    boots.check_same_boot(per_file)
    log.lines = _once(log.lines)
    log.cpu.ended = _ended(log.lines)
    return log


def _ended(lines: list[Line]) -> list[tuple[str, float, str]]:
    """Each unit's runs that ended, from the lines kept once (a console and dmesg, or the journal, of
    one boot both hold each). systemd 252 reports a run stopped across the switch from the
    initramfs twice, with the same time: one report per unit and time."""
    seen: dict[tuple[str, float], str] = {}
    for line in lines:
        if line.kernel_s is not None and (m := _CONSUMED.search(line.text)):
            seen.setdefault((m.group(1), duration_s(m.group(2))), line.source)
    return [(unit, seconds, source) for (unit, seconds), source in seen.items()]


_JOURNAL_PREFIX = re.compile(r"^\S+ kernel: ")


def _once(lines: list[Line]) -> list[Line]:
    """Each kernel line once: a serial capture and dmesg (or the journal) of the same boot both hold
    it, and counted twice it would double every initcall. The copy with a host time is kept; two
    alike in one file are two lines."""
    kept: dict[tuple[float, str], int] = {}
    out: list[Line | None] = []
    for line in lines:
        key = (line.kernel_s, _JOURNAL_PREFIX.sub("", line.text).strip()) if line.kernel_s is not None else None
        at = kept.get(key) if key else None
        earlier = out[at] if at is not None else None
        if key is None or earlier is None or _file(earlier) == _file(line):
            if key is not None and at is None:
                kept[key] = len(out)
            out.append(line)
        elif line.host_s is not None and earlier.host_s is None:
            out[at], kept[key] = None, len(out)
            out.append(line)
    return [line for line in out if line is not None]


def _file(line: Line) -> str:
    return line.source.rpartition(":")[0]


def _text(path: Path) -> str:
    # A serial line garbles bytes: they are replaced, not refused. A bare carriage return stays in
    # its line (bytes.decode translates no newlines).
    return read_bytes(path).decode(errors="replace")


def _merge(log: BootLog, one: BootLog) -> None:
    log.lines += one.lines
    log.baud = one.baud or log.baud
    log.systemd_phases |= one.systemd_phases
    log.systemd_blame += one.systemd_blame
    log.cpu.units += one.cpu.units
    if one.cpu.busy_s is not None:
        log.cpu.busy_s, log.cpu.idle_s, log.cpu.cpus = one.cpu.busy_s, one.cpu.idle_s, one.cpu.cpus
    log.recorded = log.recorded or one.recorded
    log.generators |= one.generators
    log.critical_chains += one.critical_chains
    log.chains_beside += one.chains_beside
    log.formats += one.formats


@dataclass
class _Reading:
    """What reading one file keeps between its lines."""

    shown: dict[str, str] = field(default_factory=dict)  # the properties of the unit `systemctl show` is printing
    last_chain_line: ChainLink | None = None  # a critical chain goes on below it


def _read_one(name: str, text: str) -> BootLog:
    raw = text.split("\n")  # not splitlines(): a bare carriage return does not end a console line
    if formats.dmesg_wall_clock(raw):
        raise HeadstartError(
            f"{name}: dmesg -T output, whose times are whole seconds of the wall clock: give plain `dmesg`"
        )
    if formats.journal_wall_clock(raw):
        raise HeadstartError(
            f"{name}: journalctl output with wall-clock times, which keep no kernel time: give "
            "`journalctl -b -o short-monotonic` instead"
        )
    f, stamped = formats.stamp(raw)
    log = BootLog(recorded=f is not None, formats=[f.name if f else "plain"])
    reading = _Reading()
    if f is formats.HEADSTART and (m := _BAUD.search(raw[0])):
        log.baud = int(m.group(1))
    for s in stamped:
        source = f"{name}:{s.number}"
        before, kernel_s, after = console.split_printk(console.clean(s.text))
        if f is not None and before.strip():
            log.lines.append(Line(source, before, s.host_s))  # firmware or a program, then the kernel
            if kernel_s is None and (link := _CHAIN_LINK.match(before)):
                _chain_link(link, source, log, reading)  # systemd-analyze run on the recorded console
        # Anything before the kernel's stamp on its line, text or escape codes, came first.
        prefixed = f is not None and kernel_s is not None and not s.text.lstrip(" ").startswith("[")
        if kernel_s is not None:
            # A line is stamped at its first byte: after another's text (the firmware's clearing of
            # the screen, 5.5 s before the kernel's first line on the amd64 device), the kernel's part
            # came at a moment the capture does not hold, which its printk time and the offset give.
            log.lines.append(Line(source, after, None if prefixed else s.host_s, kernel_s))
        elif f is None:
            _plain_line(source, before, log, reading)
    return log


def _plain_line(source: str, text: str, log: BootLog, reading: _Reading) -> None:
    """A line without times: systemd-analyze's, systemctl show's (units' or the manager's) or /proc/stat's."""
    if not text.strip():
        reading.shown.clear()  # the end of a unit's block in systemctl show's output
    elif show := _SHOW.match(text.strip()):
        _unit_cpu(source, show.group(1), show.group(2), log, reading.shown)
    elif generators := _GENERATORS.match(text.strip()):
        log.generators[generators.group(1)] = (int(generators.group(2)), source)
    elif _PROC_STAT_ONE_CPU.match(text):
        log.cpu.cpus += 1
    elif stat := _PROC_STAT_CPU.match(text):
        # user nice system idle iowait irq softirq steal ...; guest time is counted in user already
        ticks = [int(n) for n in stat.group(1).split()]
        idle = sum(ticks[3:5])
        log.cpu.busy_s, log.cpu.idle_s = (sum(ticks[:8]) - idle) / _USER_HZ, idle / _USER_HZ
    elif link := _CHAIN_LINK.match(text):
        _chain_link(link, source, log, reading)
    elif finished := _FINISHED.search(text):
        for part in _DURATION_PART.finditer(finished.group(1)):
            log.systemd_phases[part.group(2)] = duration_s(part.group(0))
    elif blame := _BLAME.match(text):
        log.systemd_blame.append((blame.group(2), duration_s(blame.group(1)), source))


def _chain_link(link: re.Match[str], source: str, log: BootLog, reading: _Reading) -> None:
    """One line of a critical chain: its first line, not indented, begins a chain. Each level of the
    tree is two columns wide. With `--fuzz`, systemd also prints, below each unit, the others it
    waited for that were up within the fuzz of the last, latest first, and their own trees: the
    chain is the first unit printed at each level; the others the chain's unit waited for are kept
    beside it, and the rest left out."""
    tree = link.group("tree")
    if not tree.strip() or not log.critical_chains:
        log.critical_chains.append([])
        log.chains_beside.append([])
    took = link.group("took")
    one = ChainLink(link.group("unit"), duration_s(link.group("at")), duration_s(took) if took else None, source)
    chain, depth = log.critical_chains[-1], len(tree) // 2
    if depth == len(chain) and (depth == 0 or chain[-1] is reading.last_chain_line):
        chain.append(one)
    elif depth == 1:
        log.chains_beside[-1].append(one)
    reading.last_chain_line = one


def _unit_cpu(source: str, key: str, value: str, log: BootLog, shown: dict[str, str]) -> None:
    """systemctl show prints each unit's properties together, in an order of its own, a blank line
    after each unit, and leaves out a property the unit's type does not have (a target has no CPU
    time): a unit is complete once both are seen in one block. "[not set]": a unit with no cgroup."""
    if key in shown:  # the next unit's block, the blank line between lost
        shown.clear()
    shown[key] = value
    if len(shown) < 2:
        return
    if shown["CPUUsageNSec"].isdigit():
        log.cpu.units.append((shown["Id"], int(shown["CPUUsageNSec"]) / 1e9, source))
    shown.clear()
