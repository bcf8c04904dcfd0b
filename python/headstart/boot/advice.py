"""Recommendations from a boot timeline. Each quotes the numbers it rests on and the log lines they
come from; a recommendation the log cannot support is not made."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from headstart.boot import initcalls
from headstart.boot.line import Line
from headstart.boot.logs import BootLog, ChainLink
from headstart.boot.timeline import SYSTEMD_STARTS, Initcall, Timeline

T = TypeVar("T")

SLOW_INITCALL_S = 0.010  # worth a look: 10 ms
TOP_INITCALLS = 5
# Calibrated at boot (init/calibrate.c), not "(skipped)": the line is printed before the loop runs.
_CALIBRATING = re.compile(r"Calibrating delay (?:loop\.\.\.|using timer specific routine).*\(lpj=(\d+)\)")
_QUIET = re.compile(r"(^|\s)(quiet|loglevel=[0-4])(\s|$)")
# x86-64 prints "Command line:", arm64 "Kernel command line:" only.
_COMMAND_LINE = re.compile(r"[Cc]ommand line: (.*)$")


# The initramfs an advice can name: initramfs-tools with the root's drivers alone (MODULES=dep), and
# Debian's tiny-initramfs, which loads them and mounts the root without udev.
INITRAMFS_KINDS = {
    "modules-dep": "initramfs with the root's drivers alone (initramfs-tools, MODULES=dep)",
    "tiny": "tiny-initramfs with the root's drivers alone (no udev)",
}


@dataclass
class Advice:
    topic: str
    message: str
    evidence: list[str]
    seconds: float | None  # what it costs now, when the log gives it
    # The kernel command-line arguments that carry it out, when it needs no rebuild of the kernel,
    # the initramfs or the image (device/bench.py applies them).
    kernel_args: list[str] = field(default_factory=list)
    # The initramfs that carries it out, one of INITRAMFS_KINDS (device/bench.py boots the device's
    # own initramfs made so).
    initramfs: str = ""
    # Unit drop-ins that carry it out: path on the device -> content (device/bench.py writes them
    # into a copy of the image).
    drop_ins: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "message": self.message,
            "evidence": self.evidence,
            "seconds": self.seconds,
            "kernel_args": self.kernel_args,
            "initramfs": self.initramfs,
            "drop_ins": self.drop_ins,
        }


# Advice for a device that shows one program and runs nothing else a user sees: what it takes away
# (units, systemd's generators, events of udev's coldplug) a desktop or a server may need.
KIOSK_TOPICS = ("unit", "coldplug", "generators", "journal")
NOT_A_KIOSK = (
    " This is a kiosk's advice: with `--kiosk` (a device that shows one program and runs nothing these "
    "would take away) it comes with the arguments and files that apply it."
)


def advise(t: Timeline, log: BootLog, kiosk: bool = False) -> list[Advice]:
    """Every piece of advice the logs support. Without kiosk, that of KIOSK_TOPICS is said, with its
    time, but carries nothing to apply: only the user knows the device is a kiosk."""
    served = _served_at_boot(log)  # then the daemon serves nothing the boot waits for: no weight for it
    out = [
        *_console(t, log),
        *_calibration(log),
        *_page_table_isolation(log),
        *_initcalls(t, log),
        *_crypto_self_tests(t, log),
        *_decompression(t, log),
        *_initramfs(t, log),
        *_initramfs_udev(t, log),
        *_display_driver(t, log),
        *_input_driver(t, log),
        *_units(t, log),
        *_coldplug(t, log),
        *_generators(log),
        *_journal(log),
        *_startup_weight(t, log, daemon_serves=not served),
        *served,
        *_close_behind(log),
        *_cpu(t),
        *_first_program(t),
    ]
    if kiosk:
        return out
    return [
        replace(a, message=a.message + NOT_A_KIOSK, kernel_args=[], drop_ins={}) if a.topic in KIOSK_TOPICS else a
        for a in out
    ]


def _command_line(log: BootLog) -> str | None:
    return next((m.group(1) for line in log.lines if (m := _COMMAND_LINE.search(line.text))), None)


def _console(t: Timeline, log: BootLog) -> list[Advice]:
    """Only from a serial capture: dmesg and the journal hold every line the kernel logged, not those
    its console printed. The kernel prints its command line at notice level: a capture of the boot's
    start without it had a console that printed less (`quiet`, or a low `loglevel=`) already, unless
    the kernel says it dropped messages before its console opened (a verbose boot overflowing it)."""
    command_line = _command_line(log)
    if (
        not log.recorded
        or "kernel_start" not in t.moments
        or t.console_lines < 50
        or (command_line is None and not any(_DROPPED.search(line.text) for line in log.lines))
        or (command_line and _QUIET.search(command_line))
    ):
        return []
    seconds = t.console_bytes * 10 / log.baud if log.baud else None  # 10 bits a byte on a UART
    at_baud = f" At {log.baud} baud those bytes alone take {seconds:.2f} s on a real UART." if seconds else ""
    kernel = t.moments.get("kernel_start")
    evidence = (
        [f"{kernel.evidence.source}: the first of {t.console_lines:,} kernel lines before init"] if kernel else []
    )
    return [
        Advice(
            "quiet",
            f"The kernel printed {t.console_lines:,} lines ({t.console_bytes / 1024:,.0f} KiB) on the console before "
            f"init, each written synchronously.{at_baud} Boot with `quiet` (or `loglevel=3`) so that only errors "
            "are printed, and read the rest with dmesg afterwards.",
            evidence,
            seconds,
            ["quiet"],
        )
    ]


def _calibration(log: BootLog) -> list[Advice]:
    """The delay loop calibrated at boot (not skipped). init/calibrate.c prints "Calibrating delay
    loop..." before the loop runs (its result is appended to that line), so the loop is the time
    until the next kernel line; it prints "Calibrating delay using timer specific routine.." once
    calibrate_delay_direct() has run, so that one is the time since the line before."""
    kernel_lines = [line for line in log.lines if line.kernel_s is not None]
    for i, line in enumerate(kernel_lines):
        m = _CALIBRATING.search(line.text)
        if not m:
            continue
        before_it = "timer specific routine" in line.text
        if (before_it and i == 0) or (not before_it and i + 1 == len(kernel_lines)):
            return []
        first, last = (kernel_lines[i - 1], line) if before_it else (line, kernel_lines[i + 1])
        seconds = (last.kernel_s or 0.0) - (first.kernel_s or 0.0)
        return [
            Advice(
                "lpj",
                f"The kernel calibrated its delay loop for {seconds * 1000:,.1f} ms. Pass `lpj={m.group(1)}` "
                "(the value it found) on the command line to skip the calibration.",
                [f"{first.source}: {first.text.strip()}", f"{last.source}: {last.text.strip()}"],
                seconds,
                [f"lpj={m.group(1)}"],
            )
        ]
    return []


# arm64's line when KASLR turned isolation on, before asking whether the CPU needs it against Meltdown.
_KPTI_FOR_KASLR = re.compile(r"kernel page table isolation forced ON by KASLR")


def _page_table_isolation(log: BootLog) -> list[Advice]:
    """Said, not applied: turning it off gives up a protection, which the log cannot weigh."""
    line = next((x for x in log.lines if _KPTI_FOR_KASLR.search(x.text)), None)
    if line is None:
        return []
    return [
        Advice(
            "page table isolation",
            "The kernel turned page table isolation on because KASLR is on, to keep its randomised address "
            "hidden from user space. Every entry to the kernel and return then switches address space: a few "
            "cycles on a CPU whose TLB is tagged by address space, but under QEMU's TCG each switch flushes the "
            "whole emulated TLB, which took a third of the virtual device's boot (docs/device.md). When "
            "measuring under TCG, boot with `kpti=0` so that the figures are the board's. On the product, "
            "`kpti=0` is only for a CPU that Meltdown does not affect (a Cortex-A72 or A53, not an A75), and "
            "even there gives up that protection of the kernel's address for little time: measure it on the "
            "board before choosing.",
            [f"{line.source}: {line.text.strip()}"],
            None,
        )
    ]


def _initcalls(t: Timeline, log: BootLog) -> list[Advice]:
    out = []
    unpacked = t.moments.get("initramfs_done")
    root = _root_device(t, log)
    for call in t.initcalls[:TOP_INITCALLS]:
        if call.duration_s < SLOW_INITCALL_S:
            break
        evidence = [f"{call.evidence.source}: {call.evidence.text.strip()}"]
        waited = ""
        after = _after_initramfs(call, unpacked.at_s) if unpacked is not None else None
        if unpacked is not None and after is not None:
            waited = _WAITED_FOR_INITRAMFS.format(after=after)
            evidence.append(f"{unpacked.evidence.source}: {unpacked.evidence.text.strip()}")
        found = _found_root(t, log, call, root) if root else None
        if found is not None:
            evidence.append(f"{found.source}: {found.text.strip()}")
        message = _initcall_message(call.name, call.duration_s, waited, root if found else None)
        out.append(Advice("initcall", message, evidence, call.duration_s))
    return out


_PARTITION = re.compile(r"^(\w*?\d+)p\d+$|^([a-z]+)\d+$")  # mmcblk1p2, nvme0n1p1 -> the disk; sda1, vda2 too
_MOUNTED_ON = re.compile(r"\(([\w-]+)\)")  # "EXT4-fs (mmcblk1p2): mounted filesystem"


def _root_device(t: Timeline, log: BootLog) -> str | None:
    """The kernel's name of the root's disk, from root= or the root's mount line."""
    named = _root_argument(_command_line(log) or "") or ""
    mount = t.moments.get("root_mounted") or t.moments.get("init_root_mounted")
    name = named.removeprefix("/dev/") if named.startswith("/dev/") else None
    if name is None and mount is not None and (m := _MOUNTED_ON.search(mount.evidence.text)):
        name = m.group(1)
    if not name:
        return None
    disk = _PARTITION.match(name)
    return next((g for g in disk.groups() if g), name) if disk else name


def _found_root(t: Timeline, log: BootLog, call: Initcall, disk: str) -> Line | None:
    """A line printed during the initcall that names the root's disk: the driver found it."""
    if call.start_s is None:
        return None
    end = call.start_s + call.duration_s
    named = re.compile(rf"\b{re.escape(disk)}\b")
    return next(
        (
            line
            for line in log.lines
            if line is not call.evidence
            and (at := t.time_of(line)) is not None
            and call.start_s <= at <= end
            and named.search(line.text)
        ),
        None,
    )


# Both the helper that runs modprobe for a module request (kernel/umh.c) and the firmware loader wait
# until the initramfs is unpacked, which the kernel does in the background while the initcalls run.
_WAITED_FOR_INITRAMFS = (
    " It was running while the initramfs was unpacked and returned {after:.3f} s after: an initcall that "
    "requests a module or firmware waits until the initramfs is unpacked, so most of this time is likely that "
    "wait. A smaller initramfs shortens it (the initramfs advice)."
)


def _after_initramfs(call: Initcall, unpacked_s: float) -> float | None:
    """For a call that started before the initramfs was unpacked and spent most of its time until then,
    how long it ran after; None for any other."""
    if call.start_s is None:
        return None
    end = call.start_s + call.duration_s
    waited = call.start_s < unpacked_s < end and unpacked_s - call.start_s >= call.duration_s / 2
    return end - unpacked_s if waited else None


# Modules that register crypto algorithms, by the names Linux gives them on arm64 and x86-64 (aes_ce_blk,
# aesni_intel, sha256_arm64, sha2_ce, ghash_clmulni_intel, crc32c_generic, polyval_ce...).
_CRYPTO_MODULE = re.compile(
    r"^(?:aes|aesni|sha\d*|ghash|polyval|crc32c?|crct10dif|chacha\d*|poly1305|blake2[bs]|nhpoly1305|curve25519|"
    r"sm[34]|des3?|twofish|serpent|camellia|cast[56])(?:_|$)"
)
# The kernel tests each crypto algorithm as it registers it (crypto/testmgr.c); crypto_algapi_init runs
# the tests of those registered before the test manager was ready.
_CRYPTO_TESTS_AT_INIT = "crypto_algapi_init"
_NO_CRYPTO_TESTS = re.compile(r"(^|\s)(cryptomgr\.notests(=1|=y|=Y)?|fips=1)(\s|$)")
_TESTS_DISABLED = re.compile(r"alg: self-tests disabled")


def _crypto_self_tests(t: Timeline, log: BootLog) -> list[Advice]:
    """Said and applied: the tests check that an implementation gives known answers and change nothing
    when it does; a kernel in FIPS mode runs them anyway (testmgr ignores notests under fips=1)."""
    # A console opened late may have lost the command line (initcall_debug overflows the kernel's
    # buffer first): then the tests' own time, and the kernel's line when it skips them, say enough.
    command_line = _command_line(log) or ""
    tests = next((c for c in t.initcalls if c.name == _CRYPTO_TESTS_AT_INIT), None)
    if tests is None or tests.duration_s < SLOW_INITCALL_S or _NO_CRYPTO_TESTS.search(command_line):
        return []
    if any(_TESTS_DISABLED.search(line.text) for line in log.lines):
        return []
    modules = [c for c in t.module_initcalls if c.module and _CRYPTO_MODULE.match(c.module)]
    loaded = ""
    if modules:
        slowest = ", ".join(f"{c.module} {c.duration_s * 1000:,.0f} ms" for c in modules[:TOP_INITCALLS])
        total = sum(c.duration_s for c in modules) * 1000
        loaded = (
            f" The {len(modules)} crypto modules loaded later took {total:,.0f} ms in their initcalls, each testing "
            f"the algorithms it registers ({slowest})."
        )
    return [
        Advice(
            "crypto self-tests",
            "The kernel tests each crypto algorithm against known answers as it registers it. "
            f"{tests.name}, which tests those built in, took {tests.duration_s * 1000:,.0f} ms (on the virtual "
            f"device, 245 ms with the tests and 5 ms without).{loaded} The tests change nothing when the "
            "implementations are right. Boot with `cryptomgr.notests` to skip them; a kernel in FIPS mode "
            "(`fips=1`) runs them anyway, as FIPS requires. Linux 6.1's KDF test (crypto_kdf108_init) runs "
            "either way.",
            [f"{c.evidence.source}: {c.evidence.text.strip()}" for c in [tests, *modules[:TOP_INITCALLS]]],
            tests.duration_s,
            ["cryptomgr.notests"],
        )
    ]


def _initcall_message(name: str, seconds: float, waited: str = "", root_disk: str | None = None) -> str:
    took = f"{name} took {seconds * 1000:,.1f} ms.{waited}"
    drv = initcalls.driver(name)
    if drv is not None and root_disk is not None:
        return (
            f"{took} It registers a driver ({drv}) that found the root file system's disk ({root_disk}) as it "
            "ran: it must stay built in and must not be blacklisted, or the kernel cannot mount the root. Only its "
            "probing can leave the boot path, asynchronously (`driver_async_probe=DRIVER` with the driver's "
            "name as in /sys/bus/*/drivers/), with `rootwait` on the command line so that the kernel waits for "
            "the disk; look at why it is slow (a card's or a controller's own timeouts)."
        )
    if drv is not None:
        return (
            f"{took} It registers a driver ({drv}), so it can leave the boot path: build it as a module (=m) "
            "loaded after the first program, or let it probe asynchronously (`driver_async_probe=DRIVER` with "
            "the driver's name as in /sys/bus/*/drivers/, or `MODULE.async_probe=1`); only if its device is "
            f"not needed at all, `initcall_blacklist={name}`."
        )
    if name in initcalls.CORE:
        return f"{took} Not to be blacklisted: {initcalls.CORE[name]}. Look at why it is slow, not at removing it."
    return (
        f"{took} Not to be blacklisted: {initcalls.why_not(name)}. If it is in fact a built-in driver, make "
        "it a module or let it probe asynchronously; else find the configuration option that builds it in."
    )


# An arm64 kernel: its Image does not decompress itself (the boot loader or the EFI stub did before).
_ARM64 = re.compile(r"Linux version \S*(arm64|aarch64)|CPU features: detected|Machine model: .*\bAArch64\b")
_DROPPED = re.compile(r"printk messages dropped")
# x86's bzImage and arm's zImage decompress themselves; x86's lines say which it is even when quiet.
_SELF_DECOMPRESSING = re.compile(
    r"Decompressing Linux|Uncompressing Linux|BIOS-e820|\bx86/|Linux version \S*(amd64|x86_64|i[3-6]86|armv7|armmp)"
)


def _decompression(t: Timeline, log: BootLog) -> list[Advice]:
    phase = t.phase("kernel_setup", "kernel_start")
    if phase is None or phase.duration_s < 0.010:
        return []
    if any(_ARM64.search(line.text) for line in log.lines) or not any(
        _SELF_DECOMPRESSING.search(line.text) for line in log.lines
    ):
        # From U-Boot's "Starting kernel ..." to the first message is an arm64 kernel's own earliest
        # start (page tables, the MMU, KASLR): its Image does not decompress itself (U-Boot did,
        # before that line, if it was compressed). A quiet kernel hides the lines that would say
        # which it is: only a kernel seen to be one that decompresses itself is advised on.
        return []
    return [
        Advice(
            "decompression",
            f"{phase.duration_s:.3f} s passed between the kernel's setup code and its first message: "
            "decompressing and relocating the kernel image. LZ4 (CONFIG_KERNEL_LZ4) decompresses several "
            "times faster than gzip or XZ for a somewhat larger image; an uncompressed kernel skips it, if "
            "the storage reads fast enough.",
            phase.evidence,
            phase.duration_s,
        )
    ]


def _initramfs(t: Timeline, log: BootLog) -> list[Advice]:
    phase = t.phase("initramfs_unpack", "initramfs_done")
    if phase is None or phase.duration_s < 0.005:
        return []
    # Since Linux 5.13 the kernel unpacks it in the background (initramfs_async=1) while its
    # initcalls run: the boot waits for it only from the last other line to its end.
    unpack, done = t.moments["initramfs_unpack"].evidence, t.moments["initramfs_done"].evidence
    meanwhile = [line for line in _printed_between(log, unpack, done)[1:-1] if line.kernel_s is not None]
    seconds, took = phase.duration_s, f"Unpacking the initramfs took {phase.duration_s * 1000:,.1f} ms."
    evidence = list(phase.evidence)
    if meanwhile and (last := t.time_of(meanwhile[-1])) is not None:
        seconds = max(0.0, phase.end_s - last)
        took = (
            f"The kernel unpacked the initramfs in the background for {phase.duration_s * 1000:,.1f} ms while "
            f"it went on with its start ({len(meanwhile)} lines meanwhile); the boot waited for it "
            f"{seconds * 1000:,.1f} ms, from its last other line to the end."
        )
        evidence.insert(1, f"{meanwhile[-1].source}: {meanwhile[-1].text.strip()}")
        if seconds < 0.005:
            return []
    dracut = next((line for line in log.lines if _DRACUT.search(line.text)), None)
    if dracut is not None:
        evidence.append(f"{dracut.source}: {dracut.text.strip()}")
        how = (
            "a generic one (dracut's `hostonly=no`, as a distribution's) carries every storage and file system "
            'driver; `hostonly="yes"` in a file of /etc/dracut.conf.d/ and `dracut -f` on the device keep what '
            "this machine needs (`--add-drivers` names more when building it elsewhere)"
        )
    else:
        how = (
            "a generic one (initramfs-tools' MODULES=most, Debian's default) carries every storage and file "
            "system driver and loads each whose device is present; `MODULES=dep` in "
            "/etc/initramfs-tools/initramfs.conf and `update-initramfs -u` on the device keep the root's drivers "
            "alone (`MODULES=list` with them named in /etc/initramfs-tools/modules when building it elsewhere)"
        )
    return [
        Advice(
            "initramfs",
            f"{took} Keep in it only what is needed before the root file system: {how}. Store it uncompressed "
            "if the boot medium is fast.",
            evidence,
            seconds,
            initramfs="" if dracut is not None else "modules-dep",  # the device bench makes initramfs-tools' ones
        )
    ]


# What systemd-udevd prints as it starts; in an initramfs, initramfs-tools' (or dracut's) udev.
# systemd 252 (Debian 12); before 247 it said "systemd-udevd[PID]: starting version 245.4-4ubuntu3"
# (Ubuntu 20.04's initramfs, systemd issue #15656).
# dracut's initramfs says its name: its greeting ("dracut-059-4 (Initramfs)"), its units and log lines.
_DRACUT = re.compile(r"\bdracut[-:]")
_UDEVD_STARTS = re.compile(r"Starting systemd-udevd version \S+|udevd?\[\d+\]: [Ss]tarting version \S+")
SLOW_INITRAMFS_S = 0.5  # from /init to the root mounted: below it, little to take


def _initramfs_udev(t: Timeline, log: BootLog) -> list[Advice]:
    """An initramfs that starts udev and replays every device's events before it loads the root's
    drivers and mounts the root: most of its time under a slow CPU, which an initramfs that only
    loads the named drivers and mounts the root does not spend."""
    phase = t.phase("init", "init_root_mounted")
    if phase is None or phase.duration_s < SLOW_INITRAMFS_S:
        return []
    between = _printed_between(log, t.moments["init"].evidence, t.moments["init_root_mounted"].evidence)
    at = next((i for i, line in enumerate(between) if _UDEVD_STARTS.search(line.text)), None)
    if at is None:
        return []
    udevd = between[at]
    # The host reads a line when the console has printed it, which a console busy with the kernel's
    # lines delays by seconds: the next line with the kernel's own time bounds when udevd started.
    bound = next((t.time_of(line) for line in between[at:] if line.kernel_s is not None), None)
    started = min(x for x in (t.time_of(udevd), bound, phase.end_s) if x is not None) - phase.start_s
    command_line = _command_line(log)
    root = _root_argument(command_line or "")
    if root is not None and not _TINY_INITRAMFS_ROOT.fullmatch(root):
        return []  # a root it cannot find: a label, a partition's UUID, LVM, dm-crypt
    if any(_ASSEMBLED_ROOT.search(line.text) for line in between):
        return []  # a root on an array, an encrypted or a logical volume, which it cannot set up
    unknown = "The kernel's command line is not in this log" if command_line is None else "It names no root="
    condition = (
        f"The root here is `root={root}`, which it finds."
        if root is not None
        else f"{unknown}: the root must be named by its kernel name (`root=/dev/vda`) or `root=UUID=` "
        "(not PARTUUID=, LABEL=, LVM or dm-crypt) for it to find it."
    )
    return [
        Advice(
            "initramfs udev",
            f"From the initramfs's /init to the root file system mounted took {phase.duration_s * 1000:,.0f} ms, "
            f"and the initramfs started udev {started * 1000:,.0f} ms after /init: initramfs-tools (as dracut) "
            "starts udevd and replays every device's events before it loads the root's drivers and mounts it. "
            "A root on a plain device needs none of that: Debian's tiny-initramfs loads the root's drivers and "
            f"mounts it, without udev or a shell. {condition} Try it beside the initramfs you have (package "
            "tiny-initramfs-core: `mktirfs -o /boot/initrd.img.tiny-VERSION VERSION`, and `-m no "
            "--include-modules=DRIVERS` when made off the device), then install package tiny-initramfs, "
            "which takes initramfs-tools' place and makes it at each kernel install. It does not check the "
            "root file system: with `ro` on the command line systemd-fsck-root does, before remounting it "
            "as /etc/fstab says.",
            [*phase.evidence, f"{udevd.source}: {udevd.text.strip()}"],
            phase.duration_s,
            initramfs="tiny" if root is not None else "",
        )
    ]


# What tiny-initramfs finds without udev: a kernel device name (not a udev link; not NFS either: it
# mounts NFSv4 alone, and the log does not say which version serves the root), a file system's
# UUID, a device number.
_TINY_INITRAMFS_ROOT = re.compile(
    r"/dev/(?!disk/|mapper/|nfs$|md|dm-|bcache|nbd|drbd|zd)[^/\s]+|UUID=[0-9a-fA-F-]+|0x[0-9a-fA-F]+"
)
# What an initramfs prints as it assembles the root from other devices (a RAID array, dm-crypt, LVM;
# not device-mapper's own lines: Debian's initramfs loads dm_mod whatever the root),
# or the root's mount naming a mapped device or an array: tiny-initramfs assembles none of them, and
# a root=UUID= can name a file system on one.
_ASSEMBLED_ROOT = re.compile(
    r"cryptsetup: |systemd-cryptsetup@|mdadm|md/raid|md\d+: |logical volume|\bvgchange\b|\blvm\b|\((?:dm-\d+|md\d+)\)",
    re.IGNORECASE,
)


def _root_argument(command_line: str) -> str | None:
    return next((arg.removeprefix("root=") for arg in command_line.split() if arg.startswith("root=")), None)


def _printed_between(log: BootLog, first: Line, last: Line) -> list[Line]:
    """The lines of the log from FIRST to LAST, in the order the console printed them: a line without
    the kernel's time (an initramfs's own) is placed by where it was printed."""
    start = next((i for i, line in enumerate(log.lines) if line is first), None)
    end = next((i for i, line in enumerate(log.lines) if line is last), None)
    return log.lines[start : end + 1] if start is not None and end is not None else []


# drm_dev_register's line for each card (drivers/gpu/drm/drm_drv.c), with the DRM driver's name and
# its device's bus address.
_DRM_CARD = re.compile(r"\[drm\] Initialized (\S+) .*? (?:for (\S+) )?on minor \d+")
# The PCI display the firmware showed its console on (drivers/pci/vgaarb.c): what a compositor that
# chooses among cards takes (weston, wlroots: "boot_vga" in sysfs).
_BOOT_VGA = re.compile(r"pci (\S+): vgaarb: setting as boot VGA device")
_COLDPLUG = re.compile(r"Starting .*(?:systemd-udev-trigger|Coldplug All udev Devices)")
# Less than this after coldplug began, and there is little to move.
LATE_MODULE_S = 0.25


def _coldplug_on_idle_cpus(t: Timeline, log: BootLog) -> tuple[Line, float] | None:
    """udev's coldplug line and when it began, for the advice to load modules before it; None without
    one, or on a boot bound by its CPUs: there the units after a device that came sooner only wait for
    a CPU instead (the CPU advice says so)."""
    coldplug = next((line for line in log.lines if _COLDPLUG.search(line.text)), None)
    started = t.time_of(coldplug) if coldplug else None
    if started is None or (t.cpu.busy_share is not None and t.cpu.busy_share >= BUSY_SHARE):
        return None
    return coldplug, started


@dataclass(frozen=True)
class _Card:
    """A DRM card coldplug made: its module's initcall, its line, when it came, its bus address."""

    call: Initcall
    line: Line
    shown: float
    bus: str


def _display_driver(t: Timeline, log: BootLog) -> list[Advice]:
    """Display drivers that udev's coldplug loaded: a card, which a compositor waits for, appears
    only when udev reaches its device among all the others. Loading the module as systemd starts
    (systemd-modules-load, before coldplug) makes the card sooner. Every card coldplug made counts,
    once one came late: the log does not say which one drives the display (a render-only GPU
    registers one too), and a card's number follows the order its driver registered it, so loading
    one early alone can give another's number (card0) to it. Said only with the module's own
    initcall in the log (initcall_debug): a DRM driver's name need not be its module's."""
    if (began := _coldplug_on_idle_cpus(t, log)) is None:
        return []
    coldplug, started = began
    loaded = _modules_loaded_as_systemd_starts(_command_line(log) or "")
    cards: dict[str, _Card] = {}  # by module
    for line in log.lines:
        shown = t.time_of(line)
        m = _DRM_CARD.search(line.text)
        if m and shown is not None and shown >= started:
            call = _module_running(t, shown, m.group(1), since=started, drivers_only=True)
            if call and call.module not in loaded and call.module not in cards:
                cards[call.module] = _Card(call, line, shown, m.group(2) or "")
    if not any(card.shown - started >= LATE_MODULE_S for card in cards.values()):
        return []
    first = min(card.shown for card in cards.values())
    modules, vga_line = _load_order(cards, log)
    evidence = [coldplug] + [x for module in modules for x in (cards[module].call.evidence, cards[module].line)]
    order = ""
    if len(modules) > 1:
        evidence += [vga_line] if vga_line else []
        order = (
            f" This boot's coldplug registered {len(modules)} cards, and a card's number (/dev/dri/cardN) "
            "follows the order the drivers register them: a compositor started on the first card to "
            "appear, or told card0, takes the first. Loading one alone earlier moves the others after "
            "it, so every one is named, in the order to load them: "
            + (
                f"{modules[0]}'s first, the boot VGA device ({cards[modules[0]].bus}), on which the firmware "
                "showed its console."
                if vga_line
                else "as this boot registered their cards."
            )
        )
    return [
        Advice(
            "display driver",
            f"The first DRM card appeared {first - started:.3f} s after udev's coldplug began "
            f"({', '.join(modules)}): udev loaded the driver's module when it reached the card's device "
            "among all the others, and a compositor waits for its card before the first program can show "
            "anything. Load the module as systemd starts, before coldplug: "
            f"`modules_load={','.join(modules)}` on the kernel command line, or the names in "
            "/etc/modules-load.d/ (or build them in). On a boot whose CPUs are busy, the units after it "
            "then wait for a CPU instead: on the virtual device (CPUs busy about 75% of its boot), the "
            "compositor's wait for the card fell from 1.7 to 0.55 s, and the home screen's first frame came "
            f"0.21 s sooner in the median of six pairs of boots (-0.16 to 0.83 s; docs/results.md).{order}",
            [f"{x.source}: {x.text.strip()}" for x in evidence],
            first - started,
            [f"modules_load={','.join(modules)}"],
        )
    ]


def _load_order(cards: dict[str, _Card], log: BootLog) -> tuple[list[str], Line | None]:
    """The cards' modules in the order to load them: the boot VGA device's first, then as this boot
    registered their cards; and vgaarb's line naming that device, when one of the cards is it."""
    vga = next(((line, m[1]) for line in log.lines if (m := _BOOT_VGA.search(line.text))), None)
    vga_card = next((module for module, card in cards.items() if vga and card.bus == vga[1]), None)
    return sorted(cards, key=lambda module: module != vga_card), vga[0] if vga and vga_card else None


# The kernel's line for each input device it registers (drivers/input/input.c), with the device's name.
_INPUT_DEVICE = re.compile(r"\binput: (.+?) as (/devices/\S+)")
# initcall_debug's line for each device probed: a device registered during it is that probe's.
_PROBE = re.compile(r"\bprobe of (\S+) returned -?\d+ after (\d+) usecs")
# The input devices' event interface: libinput (every Wayland compositor's seat, X's libinput driver)
# opens /dev/input/event* alone, which exist only once this module is loaded.
EVDEV_MODULE = "evdev"


def _input_driver(t: Timeline, log: BootLog) -> list[Advice]:
    """The modules an input device's event node waits for, when udev loaded them: evdev, and the
    device's own driver (udev loads it in the initramfs or at coldplug: without udev in the initramfs,
    as with the tiny initramfs, at coldplug). A compositor makes its seat from those nodes, and a
    program shown before it has one may never be (weston's kiosk shell). Said when evdev came late
    after coldplug began; a module already loaded as systemd starts is not named again."""
    if (began := _coldplug_on_idle_cpus(t, log)) is None:
        return []
    coldplug, started = began
    loaded = _modules_loaded_as_systemd_starts(_command_line(log) or "")
    evdev = next((c for c in t.module_initcalls if c.module == EVDEV_MODULE and c.start_s is not None), None)
    if evdev is None or evdev.module in loaded or evdev.start_s - started < LATE_MODULE_S:
        return []
    drivers: dict[str, tuple[Initcall, Line, str]] = {}  # module -> its initcall, its device's line and name
    for line in log.lines:
        m = _INPUT_DEVICE.search(line.text)
        shown = t.time_of(line)
        if (
            m
            and shown is not None
            and (call := _module_running(t, shown, m[1]))
            and call.module not in loaded
            and not _probed_before(t, log, line, m[2], call)
        ):
            drivers.setdefault(call.module, (call, line, m[1]))
    modules = [EVDEV_MODULE, *(m for m in drivers if m != EVDEV_MODULE)]
    named = "".join(f", {name} ({module})" for module, (_, _, name) in drivers.items())
    late = evdev.start_s - started
    return [
        Advice(
            "input driver",
            f"The input devices' event nodes (/dev/input/event*, module {EVDEV_MODULE}) appeared {late:.3f} s after "
            f"udev's coldplug began: udev loaded the module when it reached an input device among all the others"
            + (
                f"; it loads the devices' own drivers too{named}, in the initramfs or, with one without udev "
                "(the tiny initramfs), at coldplug"
                if drivers
                else ""
            )
            + ". A compositor makes its seat from those nodes, and weston's kiosk shell never shows a window "
            "whose first frame came before it had one: on the virtual device the home screen therefore waits "
            "for its input device. Load the modules as systemd starts, before coldplug: "
            f"`modules_load={','.join(modules)}` on the kernel command line, or the names in "
            "/etc/modules-load.d/ (or build them in). On the virtual device, in boots of "
            "arm 3, udev had set up its input device 6.3 s into the boot without them and 4.7-5.2 s with them, "
            "the compositor ready at 4.7-5.3 s (the kernel's clock; docs/results.md).",
            [f"{coldplug.source}: {coldplug.text.strip()}", f"{evdev.evidence.source}: {evdev.evidence.text.strip()}"]
            + [f"{x.source}: {x.text.strip()}" for call, line, _ in drivers.values() for x in (call.evidence, line)],
            late,
            [f"modules_load={','.join(modules)}"],
        )
    ]


def _probed_before(t: Timeline, log: BootLog, device: Line, path: str, call: Initcall) -> bool:
    """Whether the input device came from a probe of one of the devices above it that began before the
    module's initcall: then that probe registered it, not the module, which only happened to be
    loading (the amd64 device's PS/2 mouse, probed for 0.86 s by the built-in psmouse while udev
    loaded sr_mod, the CD-ROM's driver: its 0.2 s initcall is no input driver's)."""
    parents = set(path.split("/"))
    after = itertools.dropwhile(lambda line: line is not device, log.lines)
    for line in itertools.islice(after, 1, 50):
        probe = _PROBE.search(line.text)
        ended = t.time_of(line)
        if probe and probe[1] in parents and ended is not None and call.start_s is not None:
            return ended - int(probe[2]) / 1e6 < call.start_s
    return False


def _modules_loaded_as_systemd_starts(command_line: str) -> set[str]:
    """The modules the kernel command line has systemd-modules-load load (modules_load=, modules-load=;
    rd.modules_load= too, which the initramfs loads)."""
    out: set[str] = set()
    for arg in command_line.split():
        key, _, value = arg.partition("=")
        if key.removeprefix("rd.").replace("-", "_") == "modules_load":
            out.update(m.replace("-", "_") for m in value.split(",") if m)
    return out


def _module_running(
    t: Timeline, shown: float, name: str, since: float | None = None, drivers_only: bool = False
) -> Initcall | None:
    """The module whose initcall was running when the kernel printed a device's line at SHOWN (a
    driver registers its devices as it probes them there): the one named NAME (gpio-keys, module
    gpio_keys; a DRM driver's name), else the only one running then; None when that is not sure (udev
    loads modules side by side). SINCE: only initcalls started from then; DRIVERS_ONLY: only
    module_*_driver() initcalls. An input device registered from elsewhere (a USB hub's thread) as
    one other module loads would name that module: loading it early too costs little."""
    running = [
        c
        for c in t.module_initcalls
        if c.start_s is not None
        and c.module
        and (since is None or since <= c.start_s)
        and (not drivers_only or initcalls.driver(c.name))
        and (end := t.time_of(c.evidence)) is not None
        and c.start_s <= shown <= end
    ]
    named = [c for c in running if _bare_driver(c.module) == _bare_driver(name)]
    return named[0] if named else running[0] if len(running) == 1 else None


def _bare_driver(name: str) -> str:
    """A driver's name as its module's: a DRM driver's often adds or drops "drm" (bochs-drm in module
    bochs, rockchip in rockchipdrm, sun4i-drm in sun4i_drm)."""
    return re.sub(r"_?drm$", "", name.replace("-", "_")) or name


def _units(t: Timeline, log: BootLog) -> list[Advice]:
    """Units that a device showing one program full screen does without, among the slow ones in
    systemd's blame: only those named in KIOSK_OPTIONAL, each with why it is safe to mask there, and
    none that the logs show this device using (UNITS_IN_USE)."""
    out: list[Advice] = []
    masked: set[str] = set()
    blame = {unit: (seconds, source) for unit, seconds, source in t.services}
    for unit, seconds, _ in t.services:
        why = kiosk_optional(unit)
        if why is None or seconds < SLOW_UNIT_S or _in_use(unit, log) or unit in masked:
            continue
        with_it, because = MASKED_WITH.get(unit, ([], ""))
        units = [unit, *(u for u in with_it if u not in masked)]
        masked.update(units)
        also = f" with {', '.join(units[1:])}, {because}" if len(units) > 1 else ""
        timed = [(u, *blame[u]) for u in units if u in blame]
        out.append(
            Advice(
                "unit",
                f"{unit} took {seconds * 1000:,.0f} ms to start (systemd-analyze blame: its own activation, which "
                f"other units may have run beside). {why} On such a device, mask it{also} "
                f"(`systemctl mask {' '.join(units)}`, or {', '.join(f'`systemd.mask={u}`' for u in units)} "
                "on the kernel command line).",
                [f"{where}: {u} {took:.3f}s" for u, took, where in timed],
                sum(took for _, took, _ in timed),
                [f"systemd.mask={u}" for u in units],
            )
        )
    return out


# Units masked with the one advised: an automount whose mount is masked fails to set up ("unit ...
# to trigger not loaded"), which leaves the system degraded (seen on the virtual device, 2026-11-30).
# Static device nodes: kmod's list without the unit that creates them, or that unit without the
# list, does nothing for the device's programs. Each with why it goes too.
MASKED_WITH = {
    "proc-sys-fs-binfmt_misc.mount": (["proc-sys-fs-binfmt_misc.automount"], "which fails to set up without it"),
    "kmod-static-nodes.service": (
        ["systemd-tmpfiles-setup-dev.service"],
        "which creates the nodes it lists, and on Debian nothing else",
    ),
    "systemd-tmpfiles-setup-dev.service": (["kmod-static-nodes.service"], "which only lists the nodes for it"),
}


COLDPLUG_UNIT = "systemd-udev-trigger.service"
COLDPLUG_DROP_IN = f"/etc/systemd/system/{COLDPLUG_UNIT}.d/devices-only.conf"
# The unit's own command (systemd 251 and later) less --type=all and the module subsystem: udevadm
# before 251 refuses --prioritized-subsystem, and the unit's "-" would hide that no device was set up.
COLDPLUG_SINCE = 251
COLDPLUG_DEVICES_ONLY = (
    "[Service]\nExecStart=\n"
    "ExecStart=-udevadm trigger --type=devices --action=add --prioritized-subsystem=block,tpmrm,net,tty,input\n"
)


def systemd_version(log: BootLog) -> tuple[int, str] | None:
    """The root's systemd's version and the line that says it: the last such line of the boot."""
    found = [(int(m.group(1)), line) for line in log.lines if (m := SYSTEMD_STARTS.search(line.text))]
    return (found[-1][0], f"{found[-1][1].source}: {found[-1][1].text.strip()}") if found else None


def _coldplug(t: Timeline, log: BootLog) -> list[Advice]:
    """udev's coldplug replays the kernel's add events of every device, and also of every module,
    bus and driver, whose events a kiosk's rules hardly use: each event costs udevd a worker's pass
    through every rule, which under a slow CPU adds up."""
    trigger = _unit(t.services, COLDPLUG_UNIT)
    version = systemd_version(log)
    if trigger is None or trigger[0] < SLOW_UNIT_S or (version is not None and version[0] < COLDPLUG_SINCE):
        return []
    seconds, source = trigger
    evidence = [f"{source}: {COLDPLUG_UNIT} {seconds:.3f}s"]
    udevd = _unit(t.cpu.units, "systemd-udevd.service")
    used = ""
    if udevd:
        used = f", and udevd had used {udevd[0]:.1f} s of CPU by the capture"
        evidence.append(f"{udevd[1]}: systemd-udevd.service {udevd[0]:.3f}s of CPU")
    if version is not None:
        evidence.append(version[1])
        drop_in = (
            f"{COLDPLUG_DROP_IN}, with `ExecStart=` and then the unit's command with `--type=devices` (this boot's "
            f"systemd {version[0]})."
        )
    else:
        drop_in = (
            f"{COLDPLUG_DROP_IN}, with `ExecStart=` and then the unit's command with `--type=devices`, on systemd "
            f"{COLDPLUG_SINCE} or later (`systemctl --version`): its udevadm takes the unit's "
            "`--prioritized-subsystem`, which an older one refuses, and the unit's `-` would hide that no "
            "device was set up. Not written here: these logs do not show systemd's version (its line "
            "`systemd NNN running in system mode`)."
        )
    return [
        Advice(
            "coldplug",
            f"udev's coldplug ({COLDPLUG_UNIT}) took {seconds * 1000:,.0f} ms{used}. The coldplug replays the "
            "kernel's add event of every device and, with `--type=all`, of every module, bus and driver too, "
            "and udevd runs each event through every rule. On Debian 12 those other events serve only the "
            "FUSE and configfs control mounts (which a kiosk masks), the kernel's polling for media in drives "
            "that need it (CD drives, some USB card readers: 60-block.rules) and ppdev on a parallel port; on "
            "the virtual device they cost udevd 1.25 s of CPU against 1.6-1.9 s for the devices "
            f"(docs/device.md). A kiosk with no such drive replays the devices alone: a drop-in, {drop_in}",
            evidence,
            seconds,
            drop_ins={COLDPLUG_DROP_IN: COLDPLUG_DEVICES_ONLY} if version is not None else {},
        )
    ]


JOURNAL_DROP_INS = "/etc/systemd/journald.conf.d"
JOURNAL_FLUSH = "systemd-journal-flush.service"
JOURNALD = "systemd-journald.service"
# What each journal unit on the chain does at boot that a kiosk can do without: (drop-in, the setting
# it holds, what it costs and what the setting changes).
JOURNAL_SETTINGS = {
    JOURNAL_FLUSH: (
        f"{JOURNAL_DROP_INS}/50-volatile.conf",
        "Storage=volatile",
        "It moves the journal from /run to /var/log/journal on the disk, and systemd-tmpfiles-setup.service, "
        "which sysinit.target waits for, waits for it. A kiosk that does not keep its logs across reboots on "
        "its own flash keeps the journal in memory (`Storage=volatile`): `journalctl -b` still shows this "
        "boot's, the next boot no longer shows the last one's, and the journal writes nothing to the flash",
    ),
    JOURNALD: (
        f"{JOURNAL_DROP_INS}/50-no-kernel-messages.conf",
        "ReadKMsg=no",
        "As it starts, journald reads every message the kernel has logged since power-on and looks up each "
        "one's device in udev's database, before sysinit.target, which every later unit waits for. With "
        "`ReadKMsg=no` the kernel's messages stay in its ring buffer (`dmesg`) and out of the journal "
        "(`journalctl -k` shows none); with `quiet` a kiosk shows them nowhere else",
    ),
}


# With the journal in memory, the flush's unit still runs in the chain, for nothing.
FLUSH_MASKED = (
    f", and `systemd.mask={JOURNAL_FLUSH}`: in memory the flush has nothing to move (journald flushes only "
    "with `Storage=auto` or `persistent`), yet its unit still runs `journalctl --flush` before "
    "systemd-tmpfiles-setup.service"
)


def _journal(log: BootLog) -> list[Advice]:
    """The journal's own start and its flush to the disk, when the critical chain waited for them:
    both come before sysinit.target, so every unit after it waits too."""
    chain, out = log.critical_chain, []
    for link in chain:
        if link.unit not in JOURNAL_SETTINGS or (link.took_s or 0.0) < SLOW_UNIT_S:
            continue
        path, setting, what = JOURNAL_SETTINGS[link.unit]
        flush = link.unit == JOURNAL_FLUSH
        out.append(
            Advice(
                "journal",
                f"{link.unit} took {link.took_s * 1000:,.0f} ms on the critical chain to {chain[0].unit}. "
                f"{what}. A drop-in, {path}, with `{setting}`{FLUSH_MASKED if flush else ''}. On the virtual "
                "device, with both drop-ins, sysinit.target came a median 0.23 s sooner in seven pairs of boots, "
                "the home screen's frame 0.13 s; with the flush's unit masked too, the frame came sooner in 8 of 8 "
                "pairs, by a median 0.31 s (docs/results.md).",
                [f"{link.source}: {link.unit} @{link.at_s:.3f}s{_took(link)}"],
                link.took_s,
                [f"systemd.mask={JOURNAL_FLUSH}"] if flush else [],
                drop_ins={path: f"[Journal]\n{setting}\n"},
            )
        )
    return out


QUEUED_S = 0.100  # worth a drop-in: 100 ms of the chain spent queued
STARTUP_WEIGHT = 1000  # ten times the default (100) while the system starts
STARTUP_WEIGHT_DROP_IN = "50-startup-weight.conf"
# systemd puts a unit's cgroup back to its running settings once the boot is over only if it has a
# startup setting other than StartupCPUWeight= (`unit_has_startup_cgroup_constraints` does not look
# at that one, up to systemd 257 at least): with the CPU weight alone, the unit keeps 1000 for good
# (a new user's trial on Debian 12's systemd 252). The default I/O weight, stated, makes it one.
STARTUP_WEIGHT_TEXT = (
    f"StartupCPUWeight={STARTUP_WEIGHT}\n"
    "# The default I/O weight, so that systemd restores the running weights once the boot is over.\n"
    "StartupIOWeight=100\n"
)
# The section each kind of unit sets its CPU weight in; other kinds (targets, scopes) have none.
_WEIGHT_SECTIONS = {"service": "Service", "socket": "Socket", "mount": "Mount", "swap": "Swap", "slice": "Slice"}
# Units that start another when something happens (a connection, a time, a path), not when it is up:
# the wait after them is that event's, not systemd's queue.
_ACTIVATORS = (".socket", ".timer", ".path", ".automount")
# A login session opened at boot (a compositor's or a display manager's): logind opens it, over D-Bus,
# has user-runtime-dir@ make the user's runtime directory and starts the user's manager (user@),
# which the session waits for, and runs it in user.slice. The unit that asked waits for all of them,
# which its place in the critical chain does not show. Counted when opened before the program was
# ready, or, without that moment, within SESSION_AFTER_S of its unit's start: a login after the boot
# (to read its logs) is not the boot's.
_SESSION = re.compile(r"\bStarted session-\d+\.scope\b|\bNew session \S+ of user\b")
SESSION_UNITS = ("systemd-logind.service", "dbus.service", "user-runtime-dir@.service", "user@.service", "user.slice")
SESSION_AFTER_S = 5.0
# headstart's daemon for one user, which serves that user's programs at boot: a program it serves
# waits for it to be ready, which no ordering of units shows either. Its socket alone is not it.
_HEADSTART_DAEMON = re.compile(r"\bheadstartd\[|\bStart(?:ed|ing) headstart@\S*\.se(?:rvice\b|…)")
HEADSTART_DAEMON_UNIT = "headstart@.service"


def _startup_weight(t: Timeline, log: BootLog, daemon_serves: bool = True) -> list[Advice]:
    """systemd starts queued jobs one at a time, by unit type, then CPU weight, then name: at equal
    weights a unit of the critical chain whose name sorts late waits behind every unit started
    with it (on the virtual device, systemd-user-sessions.service started 0.86 s after
    basic.target, what it waited for). The units the ready program waits for, given a higher
    startup CPU weight, are started first and get more of the CPUs until the boot is over."""
    chain = log.critical_chain
    basic = next((i for i, c in enumerate(chain) if c.unit == "basic.target"), 0)
    above = chain[: basic + 1]  # the unit the chain ends at ... basic.target
    waits = [(unit, before, gap) for unit, before in itertools.pairwise(above) if (gap := _queued_s(unit, before)) > 0]
    queued = sum(gap for _, _, gap in waits)
    # A chain to a target (the default one, as `systemd-analyze critical-chain` prints without a unit)
    # need not pass through the program's unit: weighing it could favour what the program never waits for.
    if not basic or queued < QUEUED_S or chain[0].unit.endswith(".target"):
        return []
    chained = [c.unit for c in above[:-1] if c.unit.rpartition(".")[2] in _WEIGHT_SECTIONS]
    units, besides = list(chained), ""
    for why, extra in _waited_beside_the_chain(t, log, chain[0], daemon_serves):
        besides += f", and {', '.join(extra)} ({why})"
        units += [u for u in extra if u not in units]
    said = "; ".join(f"{unit.unit} started {gap * 1000:,.0f} ms after {_up(before)}" for unit, before, gap in waits)
    return [
        Advice(
            "startup weight",
            f"The critical chain to {chain[0].unit} spent {queued * 1000:,.0f} ms queued after basic.target "
            f"({said}). systemd starts the jobs it has queued one at a time, by unit type, then CPU weight, then "
            "name: at equal weights a unit whose name sorts late waits for every unit started beside it. A "
            f"drop-in giving {', '.join(chained)}{besides} `StartupCPUWeight={STARTUP_WEIGHT}` has systemd start "
            "them first and gives them ten times the default share of the CPUs while the system starts; it "
            "changes no dependency. With it, `StartupIOWeight=100` (the default I/O weight): without a startup "
            "setting other than the CPU weight, systemd leaves a unit at its startup weight after the boot. On "
            "the virtual device the home screen's frame came 0.25-0.43 s sooner with these weights (and the "
            "GPU's unit's), in three pairs of boots (docs/results.md).",
            [f"{c.source}: {c.unit} @{c.at_s:.3f}s{_took(c)}" for c in above],
            queued,
            drop_ins={
                f"/etc/systemd/system/{unit}.d/{STARTUP_WEIGHT_DROP_IN}": (
                    f"[{_WEIGHT_SECTIONS[unit.rpartition('.')[2]]}]\n{STARTUP_WEIGHT_TEXT}"
                )
                for unit in units
            },
        )
    ]


# headstartd's lines in a journal (`journalctl -o short-monotonic`: the kernel's clock), or relayed
# by the virtual device's agent ("at 5.514 s: ..." on the same clock, after the boot).
_DAEMON_READY = re.compile(r"headstartd\[\d+\]: headstartd: ready: listening on ")
_DAEMON_STARTED = re.compile(r"headstartd\[\d+\]: headstartd\[zygote \d+\]: started (\S+) as \d+ \(([^)]*)\)")
_RELAYED_AT = re.compile(r"\bat (\d+\.\d+) s: ")
# Named to come after the startup weight's drop-in (STARTUP_WEIGHT_DROP_IN), whose weight it undoes
# when an earlier round applied it: the daemon no longer serves the program the boot waits for, and
# at 1000 it took the CPUs from it. In the same analysis the weight advice leaves the daemon out.
EXEC_WHILE_STARTING_DROP_IN = f"/etc/systemd/system/{HEADSTART_DAEMON_UNIT}.d/60-exec-while-starting.conf"
EXEC_WHILE_STARTING = (
    "[Service]\nEnvironment=HEADSTART_OPTIONS=--exec-while-starting\n"
    "# It serves nothing the boot waits for now: the default weights while the system starts.\n"
    "StartupCPUWeight=100\nStartupIOWeight=100\n"
)
# A launch this soon after the daemon's ready line had been waiting for it in the socket's queue.
QUEUED_LAUNCH_S = 0.5


def _kernel_clock_s(line: Line) -> float | None:
    at = _RELAYED_AT.search(line.text)
    return float(at[1]) if at else line.kernel_s


def _served_at_boot(log: BootLog) -> list[Advice]:
    """The program the boot waits for, served by headstartd as soon as the daemon was ready, its
    unit started before: it waited for the daemon's preload, and served in preload mode (no display
    to prepare its toolkit ahead before the compositor) it starts no sooner than exec'd."""
    chain, user_space = log.critical_chain, log.user_space_kernel_s
    ready = next((line for line in log.lines if _DAEMON_READY.search(line.text)), None)
    if not chain or user_space is None or ready is None or (ready_s := _kernel_clock_s(ready)) is None:
        return []
    launch = next((line for line in log.lines if _DAEMON_STARTED.search(line.text)), None)
    found = _DAEMON_STARTED.search(launch.text) if launch else None
    launch_s = _kernel_clock_s(launch) if launch else None
    unit_s = user_space + chain[0].at_s
    if not found or launch_s is None or "prepared" in found[2] or not unit_s < ready_s <= launch_s:
        return []
    if launch_s - ready_s > QUEUED_LAUNCH_S:
        return []
    program, mode = found[1], found[2]
    waited = ready_s - unit_s
    return [
        Advice(
            "served at boot",
            f"{chain[0].unit} started at {unit_s:.3f} s, {waited * 1000:,.0f} ms before headstartd was ready "
            f"({ready_s:.3f} s), and the daemon served {program} {(launch_s - ready_s) * 1000:,.0f} ms after that "
            f"({mode}): its request had waited for the daemon's start. Before the compositor is up no display "
            "exists to prepare a program's toolkit ahead, and served in preload mode the virtual device's home "
            "screen reached its first frame no sooner than exec'd; with it exec'd the boot's frame came about "
            "0.2 s sooner (docs/results.md). With `--exec-while-starting` headstartd declines every launch until "
            "it is ready: the program is exec'd at boot and served when it is started again. A drop-in, "
            f"{EXEC_WHILE_STARTING_DROP_IN}, sets it through `HEADSTART_OPTIONS`, which headstart@.service passes "
            "to headstartd, and returns the daemon to the default startup weights, should the startup weight "
            "advice have raised them: it then serves nothing the boot waits for (on the virtual device "
            "the home screen's frame came sooner so in 7 of 8 pairs of boots, by a median 0.37 s; docs/results.md). "
            "A program that early can draw before its compositor has a seat, and weston's kiosk "
            "shell never shows a window drawn before: have the program's unit wait for its input device, as "
            "the virtual device's home screen does (device-input.service).",
            [
                f"{chain[0].source}: {chain[0].unit} @{chain[0].at_s:.3f}s",
                f"{ready.source}: {ready.text.strip()}",
                f"{launch.source}: {launch.text.strip()}",
            ],
            waited,
            drop_ins={EXEC_WHILE_STARTING_DROP_IN: EXEC_WHILE_STARTING},
        )
    ]


def _up_s(link: ChainLink) -> float:
    """When a unit of the chain was up (a target: reached), after user space started."""
    return link.at_s + (link.took_s or 0.0)


def _close_behind(log: BootLog) -> list[Advice]:
    """With `systemd-analyze critical-chain --fuzz`: the units the chain's unit waited for that were
    up just before the one on the chain. Cutting the chain's own units moves the unit no further
    than the next of them: on the virtual device the home screen waited for the compositor and the
    input device, up within a few hundred ms of each other, and a trial that took 1.2 s from the
    input device's unit moved the frame by nothing (docs/results.md)."""
    chain, beside = log.critical_chain, log.critical_chain_beside
    if len(chain) < 2 or not beside:
        return []
    last, next_up = chain[1], max(beside, key=_up_s)
    margin = max(0.0, _up_s(last) - _up_s(next_up))
    return [
        Advice(
            "close behind",
            f"The critical chain to {chain[0].unit} waited last for {last.unit}, up at {_up_s(last):.3f} s after "
            f"user space started; {next_up.unit}, which {chain[0].unit} waited for too, was up "
            f"{margin * 1000:,.0f} ms before it. Cutting the chain through {last.unit} moves {chain[0].unit} by "
            f"at most {margin * 1000:,.0f} ms unless {next_up.unit} comes sooner too: weigh each piece of advice "
            "on the chain against that, and cut both where the margin is small.",
            [f"{link.source}: {link.unit} @{link.at_s:.3f}s{_took(link)}" for link in (chain[0], last, next_up)],
            margin,
        )
    ]


def _queued_s(unit: ChainLink, before: ChainLink) -> float:
    """How long UNIT's start waited in systemd's queue after BEFORE, the unit it waited for, was up (a
    target: reached); 0 after a unit that starts it on an event, whose wait is the event's."""
    if before.unit.endswith(_ACTIVATORS):
        return 0.0
    return unit.at_s - _up_s(before)


def _up(link: ChainLink) -> str:
    return f"{link.unit} was {'reached' if link.unit.endswith('.target') else 'up'}"


def _took(link: ChainLink) -> str:
    return f" +{link.took_s:.3f}s" if link.took_s is not None else ""


def _waited_beside_the_chain(
    t: Timeline, log: BootLog, program: ChainLink, daemon_serves: bool
) -> list[tuple[str, tuple[str, ...]]]:
    """The units the ready program waits for that the chain does not show, with why: a login
    session's, opened before the program was ready, and headstart's daemon, unless DAEMON_SERVES is
    false (the served-at-boot advice has the program exec'd at boot)."""
    out = []
    if any(_SESSION.search(line.text) and _before_ready(t, log, line, program) for line in log.lines):
        out.append(("the login session opened at boot, which logind opens over D-Bus", SESSION_UNITS))
    if daemon_serves and any(_HEADSTART_DAEMON.search(line.text) for line in log.lines):
        out.append(("headstart's daemon, which serves the program at boot", (HEADSTART_DAEMON_UNIT,)))
    return out


def _before_ready(t: Timeline, log: BootLog, line: Line, program: ChainLink) -> bool:
    """Whether LINE came before the program was ready, or, without that moment, within SESSION_AFTER_S
    of its unit's start (the chain's time after user space started, which systemd's account places
    on the kernel's clock). A line whose time the logs do not give counts."""
    at, ready, user_space = t.time_of(line), t.at("ready"), log.user_space_kernel_s
    if at is None:
        return True
    if ready is not None:
        return at <= ready
    if user_space is None:
        return True
    started = t.time_of(Line(program.source, program.unit, kernel_s=user_space + program.at_s))
    return started is None or at <= started + SESSION_AFTER_S


def _unit(units: list[tuple[str, float, str]], name: str) -> tuple[float, str] | None:
    """A unit's seconds and their source, from blame or the CPU account."""
    return next(((s, src) for u, s, src in units if u == name), None)


GENERATORS_DIR = "/etc/systemd/system-generators"
# systemd's generators that a kiosk built from packages does without: what each reads, and the kernel
# arguments that would give it something to do (one of them on the command line keeps it). Never
# advised away: systemd-fstab-generator (the mounts of /etc/fstab) and systemd-debug-generator
# (systemd.mask= and systemd.wants= on the command line, which the unit advice uses).
OPTIONAL_GENERATORS: dict[str, tuple[str, tuple[str, ...]]] = {
    "systemd-sysv-generator": ("SysV init scripts in /etc/init.d that have no unit of their own", ()),
    "systemd-gpt-auto-generator": (
        "partitions found by their GPT type on the root's disk: the root when root= is not given, and "
        "/home, /srv, /var, swap or the EFI system partition when /etc/fstab does not name them",
        ("systemd.gpt_auto", "rd.systemd.gpt_auto"),
    ),
    "systemd-cryptsetup-generator": ("encrypted volumes: /etc/crypttab", ("luks", "rd.luks")),
    "systemd-veritysetup-generator": (
        "verity-protected volumes: /etc/veritytab",
        ("roothash", "usrhash", "systemd.verity"),
    ),
    "systemd-integritysetup-generator": ("dm-integrity volumes: /etc/integritytab", ()),
    "systemd-hibernate-resume-generator": ("resuming from hibernation", ("resume", "resumeflags")),
    "systemd-system-update-generator": ("offline updates: a /system-update link, as PackageKit makes", ()),
    "systemd-rc-local-generator": ("an executable /etc/rc.local", ()),
    "systemd-run-generator": ("a command to run at boot given on the kernel command line", ("systemd.run",)),
    "systemd-getty-generator": (
        "login prompts on the kernel's console and the virtual machine's consoles: a serial login, a "
        "development aid a product's users never see",
        (),
    ),
}

# What each generator's work looks like in the logs of the boot it ran in: a unit it generated,
# started or listed in blame, or its own line. Seen, the generator is kept whatever the command line.
GENERATOR_PRODUCTS = {
    "systemd-sysv-generator": re.compile(r"lacks a native systemd unit file|\bLSB: |systemd-sysv-generator\["),
    "systemd-gpt-auto-generator": re.compile(r"gpt-auto"),
    "systemd-cryptsetup-generator": re.compile(r"systemd-cryptsetup@"),
    "systemd-veritysetup-generator": re.compile(r"systemd-veritysetup@"),
    "systemd-integritysetup-generator": re.compile(r"systemd-integritysetup@"),
    "systemd-hibernate-resume-generator": re.compile(r"systemd-hibernate-resume@"),
    "systemd-system-update-generator": re.compile(r"system-update\.target"),
    "systemd-rc-local-generator": re.compile(r"rc-local\.service"),
    "systemd-run-generator": re.compile(r"kernel-command-line\.service"),
    "systemd-getty-generator": re.compile(r"serial-getty@|console-getty\.service|container-getty@"),
}


def _generator_products(log: BootLog) -> dict[str, str]:
    """Each optional generator whose work the logs show, with the first line that shows it."""
    lines = [(line.text, f"{line.source}: {line.text.strip()}") for line in log.lines]
    lines += [(unit, f"{source}: {unit} {seconds:.3f}s") for unit, seconds, source in log.systemd_blame]
    found = {}
    for generator, product in GENERATOR_PRODUCTS.items():
        if seen := next((evidence for text, evidence in lines if product.search(text)), None):
            found[generator] = seen
    return found


def _generators(log: BootLog) -> list[Advice]:
    """systemd runs every generator, each a program of its own, before it loads any unit; on a slow
    CPU their start-up alone adds up, whether or not what they read exists."""
    run = log.generators_run()
    if run is None or run[0] < SLOW_UNIT_S:
        return []
    seconds, evidence = run
    command_line = _command_line(log)
    named = set() if command_line is None else {a.split("=")[0] for a in command_line.split()}
    # Without the command line, one that reads kernel arguments may have work there: kept.
    kept = [
        g
        for g, (_, args) in OPTIONAL_GENERATORS.items()
        if args and (command_line is None or any(_names(n, a) for n in named for a in args))
    ]
    if command_line is not None and _root_argument(command_line) is None and "systemd-gpt-auto-generator" not in kept:
        kept.append("systemd-gpt-auto-generator")  # it finds the root itself
    working = {g: seen for g, seen in _generator_products(log).items() if g not in kept}
    masked = [g for g in OPTIONAL_GENERATORS if g not in kept and g not in working]
    if not masked:
        return []
    evidence += working.values()
    listed = "; ".join(f"{g} ({OPTIONAL_GENERATORS[g][0]})" for g in masked)
    why_kept = ""
    if kept:
        by = "may give" if command_line is None else "gives"
        why_kept = f" Kept, as the kernel command line {by} them work: {', '.join(kept)}."
    if working:
        why_kept += f" Kept, as this boot ran what they made: {', '.join(working)}."
    unseen = (
        ""
        if command_line is not None
        else " (The kernel's command line is not in these logs: those that read it are kept; mask one "
        "only if the command line gives it nothing, such as systemd-hibernate-resume-generator without resume=.)"
    )
    return [
        Advice(
            "generators",
            f"systemd ran its generators for {seconds * 1000:,.0f} ms before loading any unit: nothing "
            "starts until the last one ends. Each turns configuration of another kind into units, at every "
            "boot, and each is a program of its own that starts even when what it reads does not exist. "
            "A kiosk built from packages has none of what these read; mask each whose input the device does "
            f"not have, with an empty file of its name in {GENERATORS_DIR}/ (systemd.generator(7)): "
            f"{listed}.{why_kept}{unseen} Keep systemd-fstab-generator (the mounts) and "
            "systemd-debug-generator (systemd.mask= on the kernel command line, which other advice here uses).",
            evidence,
            seconds,
            drop_ins={f"{GENERATORS_DIR}/{g}": "" for g in masked},
        )
    ]


def _names(argument: str, prefix: str) -> bool:
    """Whether a kernel argument's name is PREFIX or one of its family (luks.uuid, systemd.verity_root_data)."""
    return argument == prefix or argument.startswith((f"{prefix}.", f"{prefix}_"))


BUSY_SHARE = 0.8  # at or above it, the CPUs were the boot's bottleneck
TOP_CPU_UNITS = 3
# A capture this much later than the boot's end says little about the boot.
LATE_FACTOR = 1.5
LATE_S = 30.0


def _cpu(t: Timeline) -> list[Advice]:
    """Whether the boot was bound by its CPUs, from the machine's busy and idle time, and which
    units used them: the kind of cut that can shorten it follows from that."""
    cpu = t.cpu
    busy = cpu.busy_share
    if busy is None or cpu.busy_s is None or cpu.idle_s is None:
        return []
    top = ", ".join(f"{_unit_name(u)} {s:.1f} s" for u, s, _ in cpu.units[:TOP_CPU_UNITS])
    used = f" The units that used the most: {top}." if top else ""
    over = f", summed over its {cpu.cpus} CPUs" if cpu.cpus else ", summed over its CPUs"
    # Busy and idle summed over the CPUs, divided by them: the time from boot to the capture.
    span = (cpu.busy_s + cpu.idle_s) / cpu.cpus if cpu.cpus else None
    boot_end = t.at("ready") or t.end_s
    if span is not None:
        over += f", over the {span:,.0f} s from boot to the capture"
    if span is not None and boot_end is not None and span > LATE_FACTOR * boot_end + LATE_S:
        verdict = (
            f"The capture came {span - boot_end:,.0f} s after the boot's last moment in these logs "
            f"({boot_end:.1f} s): most of this account is not the boot's. Capture it as the program becomes ready."
        )
    elif busy >= BUSY_SHARE:
        verdict = (
            "Ordering units otherwise changes only which of them waits for a CPU: that helps the units the ready "
            "program waits for (the startup weight, when advised), while what shortens the boot as a whole is "
            "less work (units masked, smaller units, a program that does less at start)."
        )
    else:
        one = f" (one CPU kept busy alone is {1 / cpu.cpus:.0%})" if cpu.cpus > 1 else ""
        verdict = (
            f"The CPUs were idle {1 - busy:.0%} of the time{one}: part of the boot waited on something other "
            "than computation (the disk, a device, a timer) or ran one thing at a time; systemd's critical "
            "chain shows what it waited for."
        )
    return [
        Advice(
            "cpu",
            f"From boot to the capture, the machine's CPUs were busy {busy:.0%} of the time ({cpu.busy_s:.1f} s "
            f"busy, {cpu.idle_s:.1f} s idle{over}). {verdict}{used}",
            [f"{src}: {u} {s:.3f}s" for u, s, src in cpu.units[:TOP_CPU_UNITS]],
            None,
        )
    ]


def _unit_name(unit: str) -> str:
    return "init.scope (systemd itself)" if unit == "init.scope" else unit


SLOW_UNIT_S = 0.050
# What kmod-static-nodes.service and systemd-tmpfiles-setup-dev.service make, masked together. On
# the virtual device their 0.5-0.6 s came before udev's start, and the home screen's frame came
# sooner without them in 7 of 8 pairs of boots, by a median 0.43 s (docs/results.md, 2026-12-01).
_STATIC_NODES = (
    "the device nodes of modules not loaded yet, from kmod's list (/dev/fuse, /dev/loop-control, "
    "/dev/net/tun, /dev/uinput, /dev/uhid, /dev/snd/seq, /dev/mapper/control and others), so that the "
    "kernel loads a module when a program first opens its node. Both run before udev starts, in the "
    "chain every later unit waits for. Without them a node appears when its module is loaded, and udev "
    "gives it its permissions then: a product whose programs open such a node names its module in "
    "/etc/modules-load.d/. Debian 12 creates nothing else under /dev with systemd-tmpfiles at boot "
    "(`systemd-tmpfiles --cat-config` shows a product's own lines). With modprobe@fuse.service and "
    "modprobe@loop.service masked too (their own advice), nothing then loads fuse or loop."
)
# Units a kiosk (one user, one program full screen, no login, no LVM) can mask without losing
# anything it uses, and why. A unit not named here is never advised away: the advice cannot know
# what else a system relies on.
KIOSK_OPTIONAL = {
    "e2scrub_reap.service": "It removes snapshots left by e2scrub, which needs LVM; a device without LVM has none.",
    "getty@tty1.service": "It offers a text login on the first virtual terminal, which the compositor's screen hides.",
    "serial-getty@": "It offers a login on the serial port, a development aid a product's users never see.",
    "systemd-update-utmp.service": "It records boots and shutdowns in wtmp for `last`, which no kiosk user runs.",
    "systemd-update-utmp-runlevel.service": "It records runlevel changes in utmp for `runlevel` and `who -r`, "
    "which no kiosk user runs.",
    "apt-daily.service": "It downloads package lists; a product updates through its own channel.",
    "apt-daily-upgrade.service": "It installs updates unattended; a product updates through its own channel.",
    "dpkg-db-backup.service": "It backs up dpkg's database daily; nothing on a kiosk installs packages.",
    "man-db.service": "It rebuilds the manual pages' index, which nobody reads on a kiosk.",
    "NetworkManager-wait-online.service": "It holds network-online.target until a connection is up, so that units "
    "ordered after that target (network file systems, services that must reach a server as they start) find "
    "the network; a kiosk whose programs do not need it to start has no such unit.",
    "systemd-networkd-wait-online.service": "It holds network-online.target until a connection is up, so that units "
    "ordered after that target (network file systems, services that must reach a server as they start) find "
    "the network; a kiosk whose programs do not need it to start has no such unit.",
    "systemd-binfmt.service": "It registers interpreters for other architectures' programs (binfmt_misc); a "
    "kiosk runs its own architecture's programs only.",
    "proc-sys-fs-binfmt_misc.automount": "It mounts binfmt_misc for registering other architectures' "
    "interpreters; a kiosk runs its own architecture's programs only.",
    "proc-sys-fs-binfmt_misc.mount": "It mounts binfmt_misc for registering other architectures' interpreters; "
    "a kiosk runs its own architecture's programs only.",
    "dev-hugepages.mount": "It mounts hugetlbfs for programs that ask for huge pages by file (databases, "
    "packet processing); transparent huge pages need no mount.",
    "dev-mqueue.mount": "It mounts the POSIX message queue file system, which only lists queues: mq_open "
    "works through its system call without it.",
    "sys-kernel-debug.mount": "It mounts debugfs, a kernel developer's tool.",
    "sys-kernel-tracing.mount": "It mounts tracefs, a kernel developer's tool (ftrace, perf's trace points).",
    "sys-kernel-config.mount": "It mounts configfs, which sets up USB gadgets and storage targets, not a kiosk's.",
    "modprobe@configfs.service": "It loads configfs ahead of time for USB gadgets and storage targets, not a kiosk's.",
    "sys-fs-fuse-connections.mount": "It mounts FUSE's control file system, for aborting hung FUSE mounts; "
    "FUSE itself works without it.",
    "modprobe@fuse.service": "It loads fuse ahead of time; the kernel loads it when /dev/fuse is first opened, "
    "a node kmod-static-nodes.service lists ahead. With that one masked too (its own advice), nothing loads "
    "fuse: on a device whose programs use FUSE (an AppImage, Flatpak's portals), keep this unit or name fuse "
    "in /etc/modules-load.d/.",
    "modprobe@loop.service": "It loads the loop driver ahead of time; the kernel loads it when "
    "/dev/loop-control is first opened, a node kmod-static-nodes.service lists ahead, and only image mounts "
    "use it. With that one masked too (its own advice), nothing loads loop: on a device that mounts images, "
    "keep this unit or name loop in /etc/modules-load.d/.",
    "kmod-static-nodes.service": "It lists, for systemd-tmpfiles-setup-dev.service to create, " + _STATIC_NODES,
    "systemd-tmpfiles-setup-dev.service": "It creates, from kmod-static-nodes.service's list, " + _STATIC_NODES,
    "modprobe@dm_mod.service": "It loads the device mapper for LVM and dm-crypt ahead of time; a device "
    "whose root is a plain partition has no mapped devices.",
    "modprobe@efi_pstore.service": "It loads efi_pstore, which keeps crash logs in UEFI variables; a board "
    "booted without UEFI has none.",
    "user@": "It runs the user's own service manager (`systemd --user`: user units, and the session bus where "
    "dbus-user-session is installed). logind starts it for the user's first session, which waits for it; a "
    "masked one logind takes as chosen and goes on without. A kiosk whose programs run as system units and "
    "use no session bus from it does without.",
    "systemd-sysusers.service": "It creates the system users and groups that sysusers.d declares and that do "
    "not exist yet. Debian runs it at every boot (it ships no systemd-update-done.service, so the unit's "
    "condition that /etc needs an update always holds), while its packages create their users as they are "
    "installed: on an image built whole from packages it has nothing to do (`systemd-sysusers --dry-run` "
    "prints nothing).",
}


# What a device's logs show when it uses what a unit of KIOSK_OPTIONAL does, whatever a kiosk
# usually needs: a login on a terminal (an autologin that starts the kiosk), a user manager that
# runs services of its own, users created at this boot, a USB gadget, network file systems, UEFI,
# mapped devices, loop devices, huge pages reserved (a red team's, 2026-11-30).
_LOGIN = re.compile(r"\blogin\[\d+\]: |\bLOGIN ON ")
_NETWORK_MOUNT = re.compile(r"\bNFS: |Netfs 'nfs'|\bCIFS\b|\bsmb3\b|\biscsi|\bnbd\d")
UNITS_IN_USE: dict[str, re.Pattern[str]] = {
    "getty@tty1.service": _LOGIN,
    "serial-getty@": _LOGIN,
    "user@": re.compile(r"\bsystemd\[(?!1\])\d+\]: Start(?:ed|ing) \S+\.service"),
    "systemd-sysusers.service": re.compile(r"systemd-sysusers\[\d+\]: Creating"),
    "sys-kernel-config.mount": re.compile(r"configfs-gadget|libcomposite|\busb_f_\w+"),
    "modprobe@configfs.service": re.compile(r"configfs-gadget|libcomposite|\busb_f_\w+"),
    "NetworkManager-wait-online.service": _NETWORK_MOUNT,
    "systemd-networkd-wait-online.service": _NETWORK_MOUNT,
    "modprobe@efi_pstore.service": re.compile(r"\befi: EFI v\d"),
    "modprobe@dm_mod.service": re.compile(
        r"cryptsetup: |systemd-cryptsetup@|logical volume|\(dm-\d+\)|/dev/mapper/|\bvgchange\b"
    ),
    "modprobe@loop.service": re.compile(r"\bloop\d+: "),
    "dev-hugepages.mount": re.compile(r"\bhugepages=\d|HugeTLB: .*pre-allocated [1-9]"),
}


def _in_use(unit: str, log: BootLog) -> bool:
    used = _named(UNITS_IN_USE, unit)
    return used is not None and any(used.search(line.text) for line in log.lines)


def kiosk_optional(unit: str) -> str | None:
    return _named(KIOSK_OPTIONAL, unit)


def _named(table: dict[str, T], unit: str) -> T | None:
    """UNIT's entry in TABLE, whose names ending in "@" stand for each instance of a template."""
    named = (v for name, v in table.items() if unit == name or (name.endswith("@") and unit.startswith(name)))
    return next(named, None)


def _first_program(t: Timeline) -> list[Advice]:
    ready, init = t.moments.get("ready"), t.moments.get("init")
    if ready is None:
        return []
    parts = ", ".join(f"{p.name} {p.duration_s:.3f} s" for p in t.phases if not p.name.startswith("systemd"))
    evidence = [f"{ready.evidence.source}: {ready.evidence.text.strip()}"]
    if init:
        evidence.insert(0, f"{init.evidence.source}: {init.evidence.text.strip()}")
    origin = "power-on" if t.axis == "host" else "the kernel's first message"
    return [
        Advice(
            "first program",
            f"The first program was ready {ready.at_s:.3f} s after {origin} ({parts}). Work on the largest "
            "phase first.",
            evidence,
            ready.at_s,
        )
    ]
