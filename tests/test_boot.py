"""headstart boot: record from a pseudo-terminal, analyze captured boots of Debian's kernel under QEMU
(tests/boot/qemu_boot.py made them), this machine's dmesg and systemd-analyze output, and compare
two boots against a budget. The live QEMU boot is opt-in: HEADSTART_SLOW_TESTS=1 (make test-boot)."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import chrome_trace
import pytest
from conftest import SANITIZED, charts_in_chromium
from headstart.boot import advice as advice_module
from headstart.boot import console, timeline
from headstart.boot.record import LineStamper, RecordOptions

# Python reading recorded consoles and logs: no program of the sanitizer build runs here.
pytestmark = pytest.mark.skipif(SANITIZED, reason="run in the normal pass")

FIXTURES = Path(__file__).parent / "boot" / "fixtures"
VERBOSE = FIXTURES / "qemu-initcall-debug.log"
QUIET = FIXTURES / "qemu-quiet.log"
READY = "headstart-ready"


def headstart(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "headstart", *args], capture_output=True, text=True, timeout=timeout)


def analyze_json(*args: str) -> dict:
    done = headstart("boot", "analyze", "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def one_line_error(done: subprocess.CompletedProcess[str], text: str) -> None:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert text in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# --- record ---


def test_a_line_is_stamped_with_its_first_byte_and_start_resets_the_base():
    out = io.StringIO()
    options = RecordOptions("tty", 115200, re.compile("GO"), re.compile("STOP"), None, Path("unused"))
    stamper = LineStamper(out, options, base=10.0)
    stamper.feed(b"before\r\n", 10.5)
    stamper.feed(b"GO\r\n", 11.0)
    stamper.feed(b"slow ", 11.25)
    stamper.feed(b"line\r\n", 12.0)  # its time is when "slow" began, not when the line ended
    stamper.feed(b"STOP\nafter\n", 13.0)
    stamper.finish()
    assert out.getvalue().splitlines() == ["-0.500000\tbefore", "0.000000\tGO", "0.250000\tslow line", "2.000000\tSTOP"]
    assert stamper.stopped and stamper.started


def plain_stamper() -> tuple[io.StringIO, LineStamper]:
    """A stamper with no start or stop pattern, its times from 0."""
    out = io.StringIO()
    return out, LineStamper(out, RecordOptions("tty", 115200, None, None, None, Path("unused")), base=0.0)


def test_a_line_redrawn_after_a_carriage_return_is_stamped_when_it_was_redrawn():
    """systemd redraws a start job's status in place, then prints the unit's "Started" over it."""
    out, stamper = plain_stamper()
    stamper.feed(b"[  *** ] A start job is running for kiosk (1s / no limit)", 1.0)
    stamper.feed(b"\r[ ***  ] A start job is running for kiosk (4s / no limit)", 4.0)
    stamper.feed(b"\r[  OK  ] Started kiosk\r\n", 5.0)
    stamper.finish()
    assert out.getvalue().splitlines() == [
        "1.000000\t[  *** ] A start job is running for kiosk (1s / no limit)",
        "4.000000\t[ ***  ] A start job is running for kiosk (4s / no limit)",
        "5.000000\t[  OK  ] Started kiosk",
    ]


def test_a_line_is_stamped_at_its_first_text_not_at_the_escape_codes_before_it():
    """SeaBIOS clears the screen and leaves the line open: the text after it (the kernel's first line,
    a quiet boot's ready line 45 s later) is stamped when it came (a dracut boot's capture)."""
    out, stamper = plain_stamper()
    stamper.feed(b"\x1bc\x1b[?7l\x1b[2J", 0.99)
    stamper.feed(b"HEADSTART-READY\r\n", 45.7)
    stamper.feed(b"\x1b[0;32m  OK  \x1b[0m] Started\r\n", 46.0)
    stamper.finish()
    assert [line.split("\t")[0] for line in out.getvalue().splitlines()] == ["45.700000", "46.000000"]


class Pty:
    def __init__(self) -> None:
        self.master, slave = pty.openpty()
        self.device = os.ttyname(slave)
        os.close(slave)

    def send(self, *chunks: bytes, pause: float = 0.05) -> None:
        for chunk in chunks:
            os.write(self.master, chunk)
            time.sleep(pause)


def record(device: str, log: Path, *args: str) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [sys.executable, "-m", "headstart", "boot", "record", "--device", device, "-o", str(log), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (log.exists() and log.stat().st_size > 0):  # the header: the port is open
        assert time.monotonic() < deadline and p.poll() is None, p.stderr.read() if p.stderr else ""
        time.sleep(0.01)
    return p


def log_lines(log: Path) -> list[tuple[float, str]]:
    rows = log.read_text().splitlines()
    assert rows[0].startswith("# headstart boot record")
    return [(float(t), text) for t, text in (r.split("\t", 1) for r in rows[1:])]


def test_record_from_a_pty_with_start_and_stop(tmp_path):
    port, log = Pty(), tmp_path / "boot.log"
    p = record(port.device, log, "--start", "^GO", "--stop", "ready$", "--timeout", "60")
    port.send(b"firmware\r\n", b"GO kernel\r\n", b"half a ", b"line\r\n", b"program ready\r\n", b"never seen\r\n")
    assert p.wait(timeout=60) == 0, p.stderr.read() if p.stderr else ""
    lines = log_lines(log)
    assert [text for _, text in lines] == ["firmware", "GO kernel", "half a line", "program ready"]
    times = [t for t, _ in lines]
    assert times[0] < 0 and times[1] == 0.0 and times == sorted(times)
    os.close(port.master)


def test_record_keeps_the_log_when_the_device_goes_away(tmp_path):
    port, log = Pty(), tmp_path / "boot.log"
    p = record(port.device, log, "--stop", "never")
    port.send(b"one\r\n", b"two\r\n", b"thr")
    os.close(port.master)  # the other end of the line is gone
    assert p.wait(timeout=60) == 1
    stderr = p.stderr.read() if p.stderr else ""
    assert "went away" in stderr and str(log) in stderr and "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert [text for _, text in log_lines(log)] == ["one", "two", "thr"]


def test_record_errors(tmp_path):
    one_line_error(
        headstart("boot", "record", "--device", "/dev/no-such-tty", "-o", str(tmp_path / "x")), "cannot open"
    )
    # An earlier recording at -o is left as it was, and not called this one's ("0 lines kept in it").
    (tmp_path / "earlier.log").write_text("an earlier recording\n")
    done = headstart("boot", "record", "--device", "/dev/no-such-tty", "-o", str(tmp_path / "earlier.log"))
    one_line_error(done, "cannot open")
    assert "kept" not in done.stderr and (tmp_path / "earlier.log").read_text() == "an earlier recording\n"
    port = Pty()
    done = headstart(
        "boot", "record", "--device", port.device, "--stop", "x", "--timeout", "0.3", "-o", str(tmp_path / "y")
    )
    one_line_error(done, "no line matched --stop within 0.3 s")
    os.close(port.master)


# --- analyze ---


def test_analyze_the_captured_qemu_boot(tmp_path):
    data = analyze_json(str(VERBOSE), "--ready", READY)
    assert data["axis"] == "host"
    names = [p["name"] for p in data["phases"]]
    assert names == [
        "power-on to kernel setup",
        "kernel setup to kernel start",
        "kernel start to initramfs unpacking",
        "initramfs unpacking to initramfs unpacked",
        "initramfs unpacked to init started",
        "init started to first program ready",
    ]
    for before, after in zip(data["phases"], data["phases"][1:], strict=False):
        assert before["end_s"] == after["start_s"] and before["duration_s"] >= 0
    assert data["total_s"] == data["phases"][-1]["end_s"] == data["moments"]["ready"]["at_s"]

    # initcalls ranked: the slowest is the largest "after N usecs" of the log, and they come in order
    text = VERBOSE.read_text()
    usecs = [int(u) for u in re.findall(r"initcall \S+ returned -?\d+ after (\d+) usecs", text)]
    ranked = [c["duration_ms"] for c in data["initcalls"]]
    assert len(ranked) == len(usecs) and ranked == sorted(ranked, reverse=True)
    assert ranked[0] == pytest.approx(max(usecs) / 1000)

    # every recommendation carries evidence, and evidence names real lines of the log
    lines = text.splitlines()
    topics = {r["topic"] for r in data["recommendations"]}
    # its kernel unpacked the initramfs in the background and waited 1.5 ms for it: no initramfs advice
    assert {"quiet", "initcall", "decompression", "first program"} <= topics and "initramfs" not in topics
    for r in data["recommendations"]:
        assert r["evidence"], r
        for e in r["evidence"]:
            m = re.match(r"qemu-initcall-debug\.log:(\d+)", e)
            assert m, e
            quoted = e.split(": ", 1)[1]
            assert quoted in lines[int(m.group(1)) - 1] or "kernel lines" in quoted, e
    slowest = next(r for r in data["recommendations"] if r["topic"] == "initcall")
    assert data["initcalls"][0]["name"] in slowest["message"]
    assert "lpj" not in topics  # this kernel skipped calibration (timer frequency): nothing to advise


def test_lpj_advice_when_the_kernel_calibrates(tmp_path):
    """Every kernel booted here knows its timer frequency and skips calibration; the same log with the
    line a calibrating kernel prints instead gets the advice, timed to the next kernel line."""
    text = VERBOSE.read_text()
    skipped = re.search(r"Calibrating delay loop \(skipped\).*\(lpj=(\d+)\)", text)
    assert skipped
    calibrated = tmp_path / "calibrated.log"
    calibrated.write_text(
        text.replace(skipped.group(0), f"Calibrating delay loop... 5192.31 BogoMIPS (lpj={skipped.group(1)})")
    )
    (lpj,) = [r for r in analyze_json(str(calibrated))["recommendations"] if r["topic"] == "lpj"]
    times = [
        float(t) for t in re.findall(r"^\S+\t\[\s*(\d+\.\d+)\] Calibrating.*\n\S+\t\[\s*(\d+\.\d+)\]", text, re.M)[0]
    ]
    assert f"lpj={skipped.group(1)}" in lpj["message"]
    assert lpj["seconds"] == pytest.approx(times[1] - times[0])
    assert len(lpj["evidence"]) == 2
    # The timer's own routine has run when its line is printed (init/calibrate.c): timed from the line before.
    direct = tmp_path / "direct.log"
    direct.write_text(
        text.replace(
            skipped.group(0),
            f"Calibrating delay using timer specific routine.. 5192.31 BogoMIPS (lpj={skipped.group(1)})",
        )
    )
    (lpj,) = [r for r in analyze_json(str(direct))["recommendations"] if r["topic"] == "lpj"]
    before = re.findall(r"^\S+\t\[\s*(\d+\.\d+)\] [^\n]*\n\S+\t\[\s*(\d+\.\d+)\] Calibrating", text, re.M)[0]
    assert lpj["seconds"] == pytest.approx(float(before[1]) - float(before[0]))
    assert lpj["evidence"][1].rsplit(": ", 1)[1].startswith("Calibrating delay using timer specific routine")


def test_analyze_report_renders_in_chromium(tmp_path):
    report = tmp_path / "boot.html"
    done = headstart("boot", "analyze", str(VERBOSE), "--ready", READY, "-o", str(report))
    assert done.returncode == 0, done.stderr
    assert "initramfs unpacking" in done.stdout and "evidence:" in done.stdout
    charts = charts_in_chromium(report)
    assert len(charts) == 2 and all(c[1] and c[2] > 100 for c in charts), charts  # kernel, user space


def test_analyze_plain_dmesg_and_systemd(tmp_path):
    dmesg = tmp_path / "dmesg.txt"  # the same boot as `dmesg` shows it: printk times only
    dmesg.write_text("".join(line.split("\t", 1)[1] + "\n" for line in VERBOSE.read_text().splitlines()[1:]))
    data = analyze_json(str(dmesg))
    assert data["axis"] == "kernel"
    assert [p["name"] for p in data["phases"]][:2] == [
        "kernel start to initramfs unpacking",
        "initramfs unpacking to initramfs unpacked",
    ]
    assert data["moments"]["init"]["evidence"].endswith("Run /init as init process")

    data = analyze_json(str(FIXTURES / "systemd-analyze.txt"))
    phases = {p["name"]: p["duration_s"] for p in data["phases"]}
    assert phases == pytest.approx(
        {
            "systemd: firmware": 3.021,
            "systemd: loader": 1.503,
            "systemd: kernel": 2.118,
            "systemd: initrd": 4.276,
            "systemd: userspace": 62.417,
        }
    )
    assert data["services"][0]["unit"] == "NetworkManager-wait-online.service"
    assert [s["duration_s"] for s in data["services"]] == pytest.approx([41.214, 3.873, 1.502, 0.812, 0.095])
    # The slowest unit gets advice too (only the 3.9 s apt one did), and the total is not 73.33500000000001.
    first = data["recommendations"][0]
    assert first["topic"] == "unit" and first["message"].startswith("NetworkManager-wait-online.service took 41,214 ms")
    assert data["total_s"] == 73.335


def test_analyze_this_machines_dmesg(tmp_path):
    dmesg = subprocess.run(["dmesg"], capture_output=True, text=True)
    if dmesg.returncode != 0 or not dmesg.stdout.strip():
        pytest.skip(f"dmesg is not readable here: {dmesg.stderr.strip()}")
    log = tmp_path / "dmesg.txt"
    log.write_text(dmesg.stdout)
    first = float(re.match(r"\[\s*(\d+\.\d+)\]", dmesg.stdout).group(1))
    if first < 1.0:  # the boot is still in the ring buffer: its phases are found
        data = analyze_json(str(log))
        assert data["phases"] and "kernel_start" in data["moments"]
    else:  # it has wrapped: said so, and no verdict invented (a ready line gave "ready 35460 s after ... ()")
        last = dmesg.stdout.strip().splitlines()[-1].split("]", 1)[1].strip()
        for ready in ([], ["--ready", re.escape(last[:40])]):
            done = headstart("boot", "analyze", str(log), *ready)
            one_line_error(done, "no boot phase found in dmesg.txt: the kernel")


def test_a_wrapped_dmesg_says_so_whatever_else_it_holds(tmp_path):
    """Hours after boot, a machine's dmesg holds an image's loop mount (an ext4 mount line, the root
    mount's pattern) after a line the ready pattern matches: the reason given must still be the
    wrapped buffer, not that the ready line came before "the root mount" (this machine's dmesg, one day)."""
    log = tmp_path / "dmesg.txt"
    log.write_text(
        "[ 1146.793824] python (30779): drop_caches: 3\n"
        "[ 1395.236995] app[26413]: segfault at 8 ip 00007f3d854a7975 sp 00007fff7dc70e40 error 4\n"
        "[11486.727001] EXT4-fs (loop0): mounted filesystem with ordered data mode. Quota mode: none.\n"
    )
    one_line_error(headstart("boot", "analyze", str(log), "--ready", "segfault"), "its ring buffer has wrapped")
    # A loop mount before the ready line, too: no phase from that "root mount" to it (it was timed as
    # a boot of 11,640 s, another day's dmesg of this machine).
    log.write_text(
        "[14502.024196] traps: observe[4751] general protection fault ip:7ff2089397ab sp:7fff61dc7800 error:0\n"
        "[31996.954000] EXT4-fs (loop0): mounted filesystem with ordered data mode. Quota mode: none.\n"
        "[43637.913097] EXT4-fs (loop0): write access unavailable, cannot proceed (try mounting with noload)\n"
    )
    one_line_error(headstart("boot", "analyze", str(log), "--ready", "write access"), "its ring buffer has wrapped")


def test_a_journal_without_kernel_messages_is_timed_from_systemds_lines(tmp_path):
    """journald's ReadKMsg=no (the journal advice's drop-in) leaves a journal that starts after 1 s
    with systemd's own lines: not a wrapped dmesg. Its phases start at systemd's moments, and the
    warning says what the log is."""
    journal = tmp_path / "journal.txt"
    journal.write_text(
        "[    1.604000] device systemd-journald[180]: Journal started\n"
        "[    2.311000] device systemd[1]: Reached target sysinit.target - System Initialization.\n"
        "[    2.402000] device systemd[1]: Reached target basic.target - Basic System.\n"
        "[    4.877000] device home-screen[301]: home screen frame\n"
    )
    data = analyze_json(str(journal), "--ready", "home screen frame")
    assert [p["name"] for p in data["phases"]] == [
        "sysinit.target to basic.target",
        "basic.target to first program ready",
    ]
    assert data["phases"][-1]["duration_s"] == pytest.approx(4.877 - 2.402)
    assert any("ReadKMsg=no" in w for w in data["warnings"])
    assert not any("ring buffer" in w for w in data["warnings"])


def test_analyze_malformed_and_truncated_logs(tmp_path):
    junk = tmp_path / "junk.log"
    junk.write_text("hello\nthis is not a boot log\n")
    one_line_error(headstart("boot", "analyze", str(junk)), "no boot lines found")
    one_line_error(headstart("boot", "analyze", str(tmp_path / "none.log")), "cannot read")
    truncated = tmp_path / "truncated.log"
    truncated.write_text("".join(VERBOSE.read_text().splitlines(keepends=True)[:900]))
    data = analyze_json(str(truncated), "--ready", READY)
    assert any("before init started" in w for w in data["warnings"])
    assert [p["name"] for p in data["phases"]] == ["power-on to kernel setup", "kernel setup to kernel start"]


def test_a_quiet_console_says_how_to_split_the_kernels_phases(tmp_path):
    """A console booted with `quiet` (advised here) prints nothing of the kernel's start: the phases up
    to init are one, and the tool says which file of the same boot splits them again."""
    data = analyze_json(str(QUIET), "--ready", READY)
    assert "init" not in data["moments"]
    assert any("printed no line of the kernel's start" in w for w in data["warnings"])
    # The kernel's own messages of that boot, as `dmesg` saved on the device prints them.
    dmesg = tmp_path / "dmesg.txt"
    dmesg.write_text(
        "[    0.000000] Linux version 6.1.0-56-amd64\n[    1.650495] Freeing unused kernel image\n"
        "[    1.700000] Run /init as init process\n"
    )
    data = analyze_json(str(QUIET), str(dmesg), "--ready", READY)
    assert data["moments"]["init"]["at_s"] < data["moments"]["ready"]["at_s"]
    assert not any("printed no line of the kernel's start" in w for w in data["warnings"])
    # Placed from the console's lines printed before the kernel's clock started: said to be early.
    assert any(w.startswith("no console line was stamped after the kernel started its clock") for w in data["warnings"])
    # A line of user space's in the kernel's format, its clock read as it printed it (the virtual
    # device's relay of its marks does so on a quiet console), places the clock instead.
    rows = QUIET.read_text().splitlines()
    rows.insert(-1, "4.600000\t[    1.500000] the kernel clock, read by headstart-device's relay")
    clocked = tmp_path / "clocked.log"
    clocked.write_text("\n".join(rows) + "\n")
    data = analyze_json(str(clocked), str(dmesg), "--ready", READY)
    assert data["kernel_offset_s"] == pytest.approx(4.6 - 1.5)
    assert data["moments"]["init"]["at_s"] == pytest.approx(4.6 - 1.5 + 1.7)
    assert not any("started its clock" in w for w in data["warnings"])


def test_systemds_targets_from_its_critical_chain_or_its_console_lines(tmp_path):
    """sysinit.target and basic.target split systemd's user space: when systemd reached them by its own
    clock, from the critical chain's times after user space's start (the kernel's share of "Startup
    finished"); without it, when the console printed its status lines, which this serial console,
    busy with the kernel's lines, printed about 0.6 s later (as it printed "Run /init")."""
    log, systemd = FIXTURES / "device-amd64.log", FIXTURES / "device-amd64.systemd.txt"
    ready = "headstart-device: home screen frame$"
    printed = analyze_json(str(log), "--ready", ready)["moments"]
    assert "Reached target" in printed["sysinit"]["evidence"]
    data = analyze_json(str(log), str(systemd), "--ready", ready)
    reached = data["moments"]
    for target in ("sysinit", "basic"):
        assert "critical chain" in reached[target]["evidence"]
        assert 0 < printed[target]["at_s"] - reached[target]["at_s"] < 1.0
    assert reached["sysinit"]["at_s"] < reached["basic"]["at_s"] < reached["ready"]["at_s"]


STARTUP_CHAIN = """Startup finished in 1.000s (kernel) + 6.000s (userspace) = 7.000s
device-home-screen.service @5.694s
└─device-compositor.service @4.384s +1.202s
  └─systemd-user-sessions.service @4.048s +278ms
    └─basic.target @3.188s
      └─sockets.target @3.182s
        └─sysinit.target @3.060s
"""


DAEMON_READY = "headstartd[130]: headstartd: ready: listening on /run/headstart-kiosk.socket (pid 130)"
DAEMON_SERVED = "headstartd[136]: headstartd[zygote 1]: started /usr/bin/gnome-font-viewer as 152 ({mode})"


def served_at_boot(
    tmp_path: Path,
    name: str,
    ready_s: float,
    served_s: float,
    mode: str,
    relayed: bool = False,
    topics: tuple[str, ...] = ("served at boot",),
):
    """The advice on a boot whose chain ends at the home screen's unit (started at 6.694 s on the
    kernel's clock) and whose daemon was ready, then served it, at these times."""
    lines = [(ready_s, DAEMON_READY), (served_s, DAEMON_SERVED.format(mode=mode))]
    if relayed:  # as the virtual device's agent prints the journal on the console, after the boot
        text = "# headstart boot record device=/dev/pts/0 baud=115200 start=\n"
        text += "0.030\t[    0.000000] Booting Linux on physical CPU 0x0000000000\n" + "".join(
            f"{20 + i}.000\theadstart-device: daemon-log: at {at:.6f} s: device {line}\n"
            for i, (at, line) in enumerate(lines)
        )
    else:  # journalctl -o short-monotonic
        text = "".join(f"[{at:12.6f}] device {line}\n" for at, line in lines)
    log, chain = tmp_path / f"{name}.log", tmp_path / f"{name}.chain.txt"
    log.write_text(text)
    chain.write_text(STARTUP_CHAIN)
    return [r for r in analyze_json(str(log), str(chain))["recommendations"] if r["topic"] in topics]


def test_a_program_that_waited_for_the_daemon_at_boot_is_advised_exec_while_starting(tmp_path):
    """The home screen's unit started before headstartd was ready and was served as soon as it was,
    in preload mode: the advice is --exec-while-starting, by a drop-in the daemon's unit reads. Not
    for a program the daemon prepared ahead, nor one that started after the daemon was ready, nor a
    launch long after it (that one did not wait)."""
    (advice,) = served_at_boot(tmp_path, "waited", 7.0, 7.05, "preload, from the pool")
    assert advice["seconds"] == pytest.approx(7.0 - 6.694)
    assert advice["drop_ins"] == {
        "/etc/systemd/system/headstart@.service.d/60-exec-while-starting.conf": (
            "[Service]\nEnvironment=HEADSTART_OPTIONS=--exec-while-starting\n"
            "# It serves nothing the boot waits for now: the default weights while the system starts.\n"
            "StartupCPUWeight=100\nStartupIOWeight=100\n"
        )
    }
    # systemd reads a unit's drop-ins in the order of their names, the last setting winning: this one
    # must come after the startup weight advice's, which gives the daemon 1000.
    (path,) = advice["drop_ins"]
    assert sorted([path, "/etc/systemd/system/headstart@.service.d/50-startup-weight.conf"])[-1] == path
    assert "306 ms before headstartd was ready" in advice["message"]
    assert "/usr/bin/gnome-font-viewer 50 ms after that (preload, from the pool)" in advice["message"]
    (relayed,) = served_at_boot(tmp_path, "relayed", 7.0, 7.05, "preload, from the pool", relayed=True)
    assert relayed["seconds"] == advice["seconds"]
    assert not served_at_boot(tmp_path, "prepared", 7.0, 7.05, "warm, prepared ahead")
    assert not served_at_boot(tmp_path, "ready-first", 6.5, 6.8, "preload, from the pool")
    assert not served_at_boot(tmp_path, "later", 7.0, 9.0, "preload, from the pool")
    # The startup weight advice of the same boot (its chain waited in systemd's queue) gives the
    # daemon a weight only while it serves the program at boot.
    for served, weighed in ((7.05, False), (9.0, True)):
        topics = ("served at boot", "startup weight")
        said = served_at_boot(tmp_path, "weighed", 7.0, served, "preload, from the pool", topics=topics)
        (weight,) = [r for r in said if r["topic"] == "startup weight"]
        daemon = "/etc/systemd/system/headstart@.service.d/50-startup-weight.conf"
        assert (daemon in weight["drop_ins"]) == weighed, served
    # headstart@.service passes HEADSTART_OPTIONS to headstartd, and sets it empty itself.
    unit = (Path(__file__).parent.parent / "packaging" / "headstart@.service.in").read_text()
    assert "Environment=HEADSTART_OPTIONS=\n" in unit and "$HEADSTART_OPTIONS\n" in unit


def test_startup_weight_for_a_critical_chain_that_waited_in_systemds_queue(tmp_path):
    """systemd starts queued jobs by unit type, CPU weight, then name: the amd64 device's
    systemd-user-sessions.service started 0.94 s after basic.target, what it waited for. The units of
    the chain above basic.target get a startup weight by drop-ins, with logind and what a login
    session needs when the logs show one opened, and headstart's daemon when it ran."""
    log, systemd = FIXTURES / "device-amd64.log", FIXTURES / "device-amd64.systemd.txt"
    (advice,) = [r for r in analyze_json(str(log), str(systemd))["recommendations"] if r["topic"] == "startup weight"]
    assert advice["seconds"] == pytest.approx(0.941 + 0.770 + 0.375)
    weighted = {path.split("/")[-2].removesuffix(".d"): text for path, text in advice["drop_ins"].items()}
    chain = {"device-home-screen.service", "device-compositor.service", "systemd-user-sessions.service"}
    session = {"systemd-logind.service", "dbus.service", "user-runtime-dir@.service", "user@.service", "user.slice"}
    assert set(weighted) == chain | session | {"headstart@.service"}
    # The default I/O weight too: with StartupCPUWeight= alone, systemd 252 left the weight at 1000
    # after the boot (a new user's trial read it in cpu.weight).
    assert weighted["user.slice"] == f"[Slice]\n{advice_module.STARTUP_WEIGHT_TEXT}"
    assert weighted["dbus.service"] == f"[Service]\n{advice_module.STARTUP_WEIGHT_TEXT}"
    assert "StartupCPUWeight=1000\n" in advice_module.STARTUP_WEIGHT_TEXT
    assert "StartupIOWeight=100\n" in advice_module.STARTUP_WEIGHT_TEXT
    assert "systemd-user-sessions.service started 941 ms after basic.target was reached" in advice["message"]
    # The same chain recorded on the console (systemd-analyze run there) is read as well.
    recorded = tmp_path / "recorded.log"
    chain_lines = systemd.read_text().split("critical chain:\n", 1)[1].split("\n\n", 1)[1].split("\nCPUUsage")[0]
    stamped = "".join(f"118.{i:03d}\t{line}\n" for i, line in enumerate(chain_lines.split("\n")))
    recorded.write_text(log.read_text() + stamped)
    (advice,) = [r for r in analyze_json(str(recorded))["recommendations"] if r["topic"] == "startup weight"]
    assert advice["seconds"] == pytest.approx(0.941 + 0.770 + 0.375)

    # The chain alone: neither a session nor headstart's daemon in it, only its own units.
    chain_only = tmp_path / "chain.txt"
    chain_only.write_text(STARTUP_CHAIN + "device-other.service @9.0s\n└─basic.target @1.0s\n")
    (advice,) = [r for r in analyze_json(str(chain_only))["recommendations"] if r["topic"] == "startup weight"]
    assert {path.split("/")[-2] for path in advice["drop_ins"]} == {f"{u}.d" for u in chain}
    assert advice["seconds"] == pytest.approx(0.860 + 0.058 + 0.108)  # the second chain's lines are not the first's

    # The chain to the default target (`systemd-analyze critical-chain` without a unit) need not pass
    # through the program's unit: nothing is weighed from it, and given first, it does not hide the
    # program's chain given after it.
    default = tmp_path / "default.txt"
    default.write_text(STARTUP_CHAIN.replace("device-home-screen.service @5.694s", "graphical.target @5.694s"))
    assert not [r for r in analyze_json(str(default))["recommendations"] if r["topic"] == "startup weight"]
    (advice,) = [
        r for r in analyze_json(str(default), str(chain_only))["recommendations"] if r["topic"] == "startup weight"
    ]
    assert advice["evidence"][0].endswith("device-home-screen.service @5.694s")

    # A login after the boot (to read its logs) is not the program's session; one as it starts is.
    # headstart's socket alone is not its daemon.
    for at, user, counted in (("95.000000", "root", False), ("6.900000", "kiosk", True)):
        journal = tmp_path / f"journal-{user}.txt"
        journal.write_text(
            "[    0.000000] device kernel: Linux version 6.1.0-13-amd64\n"
            "[    3.000000] device systemd[1]: Listening on headstart@kiosk.socket - headstart launcher socket.\n"
            f"[{at:>12}] device systemd-logind[141]: New session 3 of user {user}.\n"
        )
        (advice,) = [
            r for r in analyze_json(str(journal), str(chain_only))["recommendations"] if r["topic"] == "startup weight"
        ]
        names = {path.split("/")[-2].removesuffix(".d") for path in advice["drop_ins"]}
        assert (names == chain | session) if counted else (names == chain), (user, names)

    # A unit started by a timer waits for its time, not in systemd's queue; a mount's escapes are
    # quoted for a shell in the terminal's output.
    timer = tmp_path / "timer.txt"
    timer.write_text(
        "Startup finished in 1.000s (kernel) + 30.000s (userspace) = 31.000s\n"
        "kiosk.service @25.100s\n└─kiosk.timer @5.000s\n  └─srv-data\\x2d1.mount @4.600s +100ms\n"
        "    └─basic.target @4.000s\n"
    )
    (advice,) = [r for r in analyze_json(str(timer))["recommendations"] if r["topic"] == "startup weight"]
    assert advice["seconds"] == pytest.approx(0.6 + 0.3)  # the mount's 0.6 s, the timer's 0.3 s; not 20 s
    printed = headstart("boot", "analyze", str(timer)).stdout
    assert "'/etc/systemd/system/srv-data\\x2d1.mount.d/50-startup-weight.conf':" in printed

    # A chain whose units started as soon as what they waited for was up: nothing to weigh.
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(
        STARTUP_CHAIN.replace("@4.048s", "@3.190s").replace("@4.384s", "@3.470s").replace("@5.694s", "@4.700s")
    )
    assert not [r for r in analyze_json(str(prompt))["recommendations"] if r["topic"] == "startup weight"]


# The virtual device's arm 3, 2026-12-01: the home screen's chain waited for the journal's start
# and its flush to the disk, both before sysinit.target.
JOURNAL_CHAIN = """Startup finished in 983ms (kernel) + 5.329s (userspace) = 6.312s
device-home-screen.service @4.372s
└─device-compositor.service @3.318s +966ms
  └─device-gpu.service @2.999s +289ms
    └─basic.target @2.875s
      └─sockets.target @2.874s
        └─headstart@kiosk.socket @2.838s +35ms
          └─sysinit.target @2.811s
            └─systemd-tmpfiles-setup.service @2.554s +250ms
              └─systemd-journal-flush.service @2.152s +369ms
                └─systemd-journald.service @1.078s +1.021s
                  └─systemd-journald.socket @982ms
"""


def test_journal_advice_for_its_start_and_flush_on_the_critical_chain(tmp_path):
    """journald's start (it reads the kernel's messages) and its flush to the disk came before
    sysinit.target on the home screen's chain: a kiosk's drop-ins keep the journal in memory and the
    kernel's messages out of it, each given only with --kiosk and only for a unit the chain waited for."""
    chain = tmp_path / "chain.txt"
    chain.write_text(JOURNAL_CHAIN)
    advised = [r for r in analyze_json(str(chain), "--kiosk")["recommendations"] if r["topic"] == "journal"]
    by_path = {path: text for r in advised for path, text in r["drop_ins"].items()}
    assert by_path == {
        "/etc/systemd/journald.conf.d/50-volatile.conf": "[Journal]\nStorage=volatile\n",
        "/etc/systemd/journald.conf.d/50-no-kernel-messages.conf": "[Journal]\nReadKMsg=no\n",
    }
    assert sorted(r["seconds"] for r in advised) == [pytest.approx(0.369), pytest.approx(1.021)]
    assert any("systemd-journal-flush.service took 369 ms" in r["message"] for r in advised)
    # In memory the flush has nothing to move, and its unit is masked with the setting; the
    # journal's own start is not.
    masks = {next(iter(r["drop_ins"])): r["kernel_args"] for r in advised}
    assert masks == {
        "/etc/systemd/journald.conf.d/50-volatile.conf": ["systemd.mask=systemd-journal-flush.service"],
        "/etc/systemd/journald.conf.d/50-no-kernel-messages.conf": [],
    }
    # Without --kiosk: said, with nothing to apply.
    plain = [r for r in analyze_json(str(chain))["recommendations"] if r["topic"] == "journal"]
    assert len(plain) == 2 and all(
        not r["drop_ins"] and not r["kernel_args"] and "--kiosk" in r["message"] for r in plain
    )
    # A flush that took no time: nothing to say about it.
    quick = tmp_path / "quick.txt"
    quick.write_text(JOURNAL_CHAIN.replace("@2.152s +369ms", "@2.152s +12ms"))
    advised = [r for r in analyze_json(str(quick), "--kiosk")["recommendations"] if r["topic"] == "journal"]
    assert [list(r["drop_ins"]) for r in advised] == [["/etc/systemd/journald.conf.d/50-no-kernel-messages.conf"]]


def test_a_kernel_line_begun_by_the_firmwares_text_is_timed_by_the_kernels_clock():
    """The amd64 device's capture stamps the line that holds the kernel's first message at 0.16 s: the
    line began with SeaBIOS's clearing of the screen, and the kernel's text came 5.5 s later, as the
    next line's stamp shows. Power-on to the kernel's start is those 5.67 s, not 0.16."""
    log = FIXTURES / "device-amd64.log"
    second = float(log.read_text().splitlines()[6].split()[0])  # "Command line:", also at printk 0.000000
    data = analyze_json(str(log), "--ready", "headstart-device: home screen frame$")
    assert data["moments"]["kernel_start"]["at_s"] == pytest.approx(second)
    assert data["phases"][0]["name"] == "power-on to kernel start"
    assert data["phases"][0]["duration_s"] == pytest.approx(second)


def test_the_initrds_own_targets_are_not_the_roots(tmp_path):
    """A systemd initramfs reaches sysinit.target too, before it mounts the root: the root's systemd's is the one."""
    log = tmp_path / "dmesg.txt"
    log.write_text(
        "[    0.000000] Linux version 6.1.0\n[    0.900000] Run /init as init process\n"
        "[    1.000000] systemd[1]: Reached target sysinit.target - System Initialization.\n"
        "[    1.500000] EXT4-fs (vda1): mounted filesystem with ordered data mode. Quota mode: none.\n"
        "[    2.000000] systemd[1]: systemd 252 running in system mode (+PAM)\n"
        "[    3.000000] systemd[1]: Reached target sysinit.target - System Initialization.\n"
        "[    3.200000] systemd[1]: Reached target basic.target - Basic System.\n"
        "[    5.000000] app ready\n"
    )
    data = analyze_json(str(log), "--ready", "app ready")
    assert data["moments"]["sysinit"]["at_s"] == pytest.approx(3.0)
    assert data["moments"]["basic"]["at_s"] == pytest.approx(3.2)
    assert all(p["duration_s"] >= 0 for p in data["phases"])


REDTEAM = FIXTURES / "redteam"  # boots a red team wrote to break the advice (2026-11-30)


def test_units_the_logs_show_in_use_are_not_advised_away(tmp_path):
    """A Raspberry Pi kiosk whose journal shows an autologin on tty1, a user manager running PipeWire,
    users created at this boot and a USB gadget through configfs; a signage player mounting NFS after
    the network is online: none of those units is advised masked. The same blame without the
    journal's lines that show them in use gets them advised."""

    def masked(*files: Path) -> set[str]:
        data = analyze_json(*(str(f) for f in files), "--kiosk")
        return {a for r in data["recommendations"] if r["topic"] == "unit" for a in r["kernel_args"]}

    journal, blame = REDTEAM / "kiosk-journal.txt", REDTEAM / "kiosk-blame.txt"
    assert masked(journal, blame) == {"systemd.mask=systemd-binfmt.service"}
    unused = tmp_path / "unused.txt"
    unused.write_text(
        "".join(
            x for x in journal.read_text().splitlines(True) if not re.search(r"login\[|systemd\[520|sysusers|gadget", x)
        )
    )
    assert masked(unused, blame) >= {
        "systemd.mask=getty@tty1.service",
        "systemd.mask=user@1000.service",
        "systemd.mask=systemd-sysusers.service",
        "systemd.mask=sys-kernel-config.mount",
        "systemd.mask=modprobe@configfs.service",
    }
    assert not masked(REDTEAM / "nfs-journal.txt", REDTEAM / "nfs-blame.txt")
    assert masked(REDTEAM / "nfs-blame.txt") == {"systemd.mask=NetworkManager-wait-online.service"}


def test_static_device_nodes_are_masked_together_once():
    """kmod-static-nodes.service lists the nodes systemd-tmpfiles-setup-dev.service creates, both
    before udev starts: on a kiosk the pair is advised masked together, in one piece of advice (each
    of them slow in the device's blame), and the fuse and loop advice says what that costs them."""
    data = analyze_json(str(FIXTURES / "device-amd64.log"), str(FIXTURES / "device-amd64.systemd.txt"), "--kiosk")
    pair = [r for r in data["recommendations"] if r["topic"] == "unit" and "kmod-static-nodes" in str(r["kernel_args"])]
    (advice,) = pair
    assert advice["kernel_args"] == [
        "systemd.mask=kmod-static-nodes.service",
        "systemd.mask=systemd-tmpfiles-setup-dev.service",
    ]
    assert advice["seconds"] == pytest.approx(3.017 + 1.284)  # both units' own activations
    assert len(advice["evidence"]) == 2
    assert "with systemd-tmpfiles-setup-dev.service, which creates the nodes it lists" in advice["message"]
    assert "/etc/modules-load.d/" in advice["message"]
    masks = [a for r in data["recommendations"] for a in r["kernel_args"] if a.startswith("systemd.mask=")]
    assert len(masks) == len(set(masks))  # nothing masked twice
    # fuse's own unit, masked on the same device, says that nothing loads fuse then.
    (fuse,) = [r for r in data["recommendations"] if r["kernel_args"] == ["systemd.mask=modprobe@fuse.service"]]
    assert "nothing loads fuse" in fuse["message"] and "keep this unit" in fuse["message"]


def test_the_driver_that_finds_the_roots_disk_is_never_advised_away(tmp_path):
    """A Raspberry Pi's SD controller found the root's card during its 195 ms initcall: it must stay
    built in; only its probing may move, with rootwait. Another disk named there is no reason."""
    dmesg = REDTEAM / "rpi-initcall.dmesg"
    (advice,) = [r for r in analyze_json(str(dmesg))["recommendations"] if r["topic"] == "initcall"]
    assert "found the root file system's disk (mmcblk1)" in advice["message"]
    assert "initcall_blacklist" not in advice["message"] and "loaded after the first program" not in advice["message"]
    assert advice["evidence"][-1].endswith("mmcblk1: mmc1:aaaa SC32G 29.7 GiB")
    other = tmp_path / "other.dmesg"
    other.write_text(
        dmesg.read_text().replace("root=/dev/mmcblk1p2", "root=/dev/sda2").replace("(mmcblk1p2)", "(sda2)")
    )
    (advice,) = [r for r in analyze_json(str(other))["recommendations"] if r["topic"] == "initcall"]
    assert "loaded after the first program" in advice["message"]


def test_evidence_is_printed_as_it_is_not_as_rich_reads_it():
    """An evidence's line number ":100:" is rich's emoji code: printed as it is."""
    printed = headstart(
        "boot", "analyze", str(FIXTURES / "device-amd64.log"), str(FIXTURES / "device-amd64.systemd.txt")
    )
    assert printed.returncode == 0, printed.stderr
    assert "device-amd64.systemd.txt:100:" in printed.stdout and "\U0001f4af" not in printed.stdout


DRACUT = FIXTURES / "dracut"  # a Debian 12 amd64 boot with dracut's initramfs (systemd in it), by a new user


def test_a_dracut_boot_verbose_quiet_and_at_a_low_loglevel():
    """The initramfs's own systemd reaches sysinit.target and basic.target and greets first; a quiet
    console's ready line began with SeaBIOS's clearing of the screen 45 s before its text; systemd
    reports a journald run stopped across the switch to the root twice; the initramfs is dracut's."""
    ready = "HEADSTART-READY"
    low = analyze_json(str(DRACUT / "console-loglevel3.log"), "--ready", ready)["moments"]
    assert low["sysinit"]["at_s"] == pytest.approx(24.074444) and low["basic"]["at_s"] == pytest.approx(24.163187)

    quiet = analyze_json(str(DRACUT / "console-quiet.log"), "--ready", ready)
    assert "ready" not in quiet["moments"]  # its stamp is the firmware's escape codes', before the kernel
    assert quiet["moments"]["kernel_start"]["at_s"] == pytest.approx(65.326 - 60.251078, abs=0.01)
    assert any("first program ready at 0.994 s comes before kernel start" in w for w in quiet["warnings"])
    assert not any("no line matches the ready marker" in w for w in quiet["warnings"])
    both = analyze_json(str(DRACUT / "console-quiet.log"), str(DRACUT / "quiet-journal.txt"), "--ready", ready)
    assert both["moments"]["kernel_start"]["at_s"] == quiet["moments"]["kernel_start"]["at_s"]
    assert {"initramfs_unpack", "init", "init_root_mounted", "sysinit"} <= set(both["moments"])

    verbose = [str(DRACUT / "console-verbose.log"), str(DRACUT / "verbose-journal.txt")]
    data = analyze_json(*verbose, "--ready", ready)
    # the line of the kernel's first message began with SeaBIOS's escape codes at 0.958 s
    assert data["moments"]["kernel_start"]["at_s"] == pytest.approx(4.361, abs=0.01)
    assert data["moments"]["init_root_mounted"]["at_s"] < data["moments"]["sysinit"]["at_s"]
    journald = [u for u in data["cpu"]["units"] if u["unit"] == "systemd-journald.service"]
    assert [u["cpu_s"] for u in journald] == [pytest.approx(1.164)]
    (initramfs,) = [r for r in data["recommendations"] if r["topic"] == "initramfs"]
    assert "hostonly" in initramfs["message"] and "initramfs-tools" not in initramfs["message"]
    assert initramfs["initramfs"] == ""


# --- compare ---


def test_compare_against_a_budget():
    verbose_total = analyze_json(str(VERBOSE), "--ready", READY)["total_s"]
    quiet_total = analyze_json(str(QUIET), "--ready", READY)["total_s"]
    assert quiet_total < verbose_total  # the captured pair: `quiet` saved time
    slower_ms = (verbose_total - quiet_total) * 1000

    def compare(a: Path, b: Path, budget: float) -> subprocess.CompletedProcess[str]:
        return headstart("boot", "compare", str(a), str(b), "--ready", READY, "--budget-ms", str(budget))

    assert compare(VERBOSE, QUIET, 0).returncode == 0  # B faster
    assert compare(QUIET, VERBOSE, slower_ms + 1).returncode == 0  # slower, within the budget
    over = compare(QUIET, VERBOSE, slower_ms - 1)
    assert over.returncode == 1 and "over the budget" in over.stderr
    done = headstart("boot", "compare", str(QUIET), str(VERBOSE), "--ready", READY, "--json")
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert data["difference_ms"] == pytest.approx(slower_ms)
    assert [m["moment"] for m in data["moments"]] == ["kernel start", "first program ready"]


@pytest.mark.parametrize("budget", ["nan", "inf", "1e400"])
def test_a_budget_that_is_no_number_is_a_usage_error(budget):
    """`--budget-ms nan` passed a boot any slower (nothing is more than nan), and wrote NaN in the JSON."""
    done = headstart("boot", "compare", str(QUIET), str(VERBOSE), "--ready", READY, "--budget-ms", budget)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"argument --budget-ms: not a number: {budget!r}" in done.stderr


def test_compare_boot_a_0_is_not_taken_for_boot_a_left_out():
    two = FIXTURES / "qemu-grabserial-two-boots.log"
    done = headstart("boot", "compare", str(two), str(two), "--boot", "1", "--boot-a", "0")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "--boot 0 is not one of them: choose one with --boot 1..2" in done.stderr


# --- boots from the field: initramfs init, core initcalls, other capture tools, mixed boots ---

AMD64_VERBOSE = FIXTURES / "device-amd64-verbose.log"  # a verbose boot of the amd64 device, to its root mounted
INITRD_ROOT = FIXTURES / "qemu-initrd-root.log"  # Debian's initrd as rdinit=/init, which mounts the root
TWO_BOOTS = FIXTURES / "qemu-grabserial-two-boots.log"


def test_init_from_the_initramfs_gives_no_negative_phase():
    """The kernel mounts no root: initramfs-tools' /init does, 3.8 s after it started."""
    data = analyze_json(str(INITRD_ROOT), "--ready", READY)
    assert all(p["duration_s"] >= 0 for p in data["phases"]), data["phases"]
    assert "root_mounted" not in data["moments"]
    assert data["moments"]["init_root_mounted"]["at_s"] > data["moments"]["init"]["at_s"]
    assert [p["name"] for p in data["phases"]][-2:] == [
        "init started to root file system mounted by init",
        "root file system mounted by init to first program ready",
    ]


def test_a_mount_after_the_roots_systemd_started_is_not_the_roots(tmp_path):
    """A squashfs root (its mount prints no line) with an ext4 /data that systemd mounts: that mount
    is not the root's, and the initramfs is not given the time until it (a red team's, 2026-11-30).
    Before systemd's line, an ext4 mount is the root's."""
    log = tmp_path / "dmesg.txt"
    lines = [
        "[    0.000000] Linux version 6.1.0",
        "[    1.000000] Run /init as init process",
        "[    1.400000] Starting systemd-udevd version 252.39-1~deb12u2",
        "[    3.000000] systemd[1]: systemd 252.39-1~deb12u2 running in system mode (+PAM)",
        "[    6.000000] EXT4-fs (vda3): mounted filesystem with ordered data mode. Quota mode: none.",
        "[    8.000000] app ready",
    ]
    log.write_text("\n".join(lines) + "\n")
    data = analyze_json(str(log), "--ready", "app ready")
    assert "init_root_mounted" not in data["moments"] and "root_mounted" not in data["moments"]
    assert not [r for r in data["recommendations"] if r["topic"] == "initramfs udev"]
    lines.insert(3, "[    2.500000] EXT4-fs (vda2): mounted filesystem with ordered data mode. Quota mode: none.")
    log.write_text("\n".join(lines) + "\n")
    assert analyze_json(str(log), "--ready", "app ready")["moments"]["init_root_mounted"]["at_s"] == 2.5


def test_moments_out_of_boot_order_are_left_out_with_a_warning():
    data = analyze_json(str(VERBOSE), "--ready", "Linux version")  # a "ready" line before init
    assert "ready" not in data["moments"] and all(p["duration_s"] >= 0 for p in data["phases"])
    assert any("first program ready at" in w and "left out" in w for w in data["warnings"])


def test_core_initcalls_are_never_advised_for_the_blacklist(tmp_path):
    data = analyze_json(str(VERBOSE))
    messages = {r["message"].split()[0]: r["message"] for r in data["recommendations"] if r["topic"] == "initcall"}
    assert {"acpi_init", "oom_init"} <= set(messages)
    for message in messages.values():
        assert "initcall_blacklist" not in message and "Not to be blacklisted" in message, message
    assert "ACPI" in messages["acpi_init"]
    # a driver registered by module_*_driver() may go: the same real line, made slow
    text = VERBOSE.read_text()
    line = re.search(r"initcall (\w+_driver_init)\+\S+ returned 0 after (\d+) usecs", text)
    assert line
    slow = tmp_path / "slow-driver.log"
    slow.write_text(text.replace(line.group(0), line.group(0).replace(f"after {line.group(2)} ", "after 400000 ")))
    (driver,) = [r for r in analyze_json(str(slow))["recommendations"] if line.group(1) in r["message"]]
    assert f"initcall_blacklist={line.group(1)}" in driver["message"] and "module" in driver["message"]


def _crypto_advice(log: Path) -> list[dict]:
    return [r for r in analyze_json(str(log))["recommendations"] if r["topic"] == "crypto self-tests"]


def test_crypto_self_tests_are_advised_off_unless_already_off_or_required_by_fips(tmp_path):
    """crypto_algapi_init's time is the tests of the algorithms built in: skipped by cryptomgr.notests,
    which the advice carries, and which a command line that has it, or FIPS mode (which runs them
    anyway), gets no advice for."""
    (advice,) = _crypto_advice(VERBOSE)
    assert advice["kernel_args"] == ["cryptomgr.notests"]
    assert advice["seconds"] == pytest.approx(0.217793)
    line = "initcall crypto_algapi_init+0x0/0x7e returned 0 after 217793 usecs"
    assert advice["evidence"] == [f"qemu-initcall-debug.log:1659: {line}"]
    assert "crypto modules" not in advice["message"]  # this boot loaded none
    text = VERBOSE.read_text()
    for extra in ("cryptomgr.notests", "cryptomgr.notests=1", "fips=1"):
        log = tmp_path / f"{extra}.log"
        log.write_text(text.replace("initcall_debug loglevel=8", f"initcall_debug {extra} loglevel=8"))
        assert _crypto_advice(log) == [], extra
    # A console that lost the command line (the kernel's buffer overflowed before it opened, as a
    # new user's arm64 boot without earlycon did): the tests' time says enough, and so does the
    # kernel's own line when it skipped them.
    lost = tmp_path / "no-command-line.log"
    lost.write_text("".join(x for x in text.splitlines(keepends=True) if "ommand line:" not in x))
    assert [r["kernel_args"] for r in _crypto_advice(lost)] == [["cryptomgr.notests"]]
    skipped = tmp_path / "skipped.log"
    calling = next(x for x in text.splitlines() if "calling  crypto_algapi_init" in x)
    said = calling.split("]")[0] + "] alg: self-tests disabled"  # at the same times as the call
    skipped.write_text(lost.read_text().replace(calling, f"{calling}\n{said}"))
    assert _crypto_advice(skipped) == []


def test_module_initcalls_are_read_apart_and_the_crypto_ones_named(tmp_path):
    """A module's initcall line names its module ("[aes_ce_blk]"): kept apart from the kernel's own
    initcalls (a module is already off the kernel's boot path), and the crypto modules among them
    counted in the crypto advice. The device's arm64 boot, with initcall_debug."""
    log = FIXTURES / "device-arm64-initcall-debug.log"
    data = analyze_json(str(log))
    text = log.read_text()
    in_modules = re.findall(r"initcall \S+ \[(\w+)\] returned -?\d+ after (\d+) usecs", text)
    assert len(data["module_initcalls"]) == len(in_modules) > 20
    # The kernel counts a module's initcall from the last "calling" line of any (one start time for
    # all): virtio_gpu's says 220,679 usecs, its own lines 19.839057 and 21.076249 s.
    assert data["module_initcalls"][0] == {
        "name": "virtio_gpu_driver_init",
        "module": "virtio_gpu",
        "duration_ms": pytest.approx(1237.192),
        "evidence": "device-arm64-initcall-debug.log:2412: initcall virtio_gpu_driver_init+0x0/0x1000 "
        "[virtio_gpu] returned 0 after 220679 usecs",
    }
    assert data["module_initcalls"][1] == {
        "name": "cpu_feature_match_AES_init",
        "module": "aes_ce_blk",
        "duration_ms": pytest.approx(244.993),
        "evidence": "device-arm64-initcall-debug.log:2413: initcall cpu_feature_match_AES_init+0x0/0x1000 "
        "[aes_ce_blk] returned 0 after 244862 usecs",
    }
    assert not {c["name"] for c in data["initcalls"]} & {c["name"] for c in data["module_initcalls"]}
    (advice,) = [r for r in data["recommendations"] if r["topic"] == "crypto self-tests"]
    assert "The 10 crypto modules loaded later took 598 ms" in advice["message"]
    assert "aes_ce_blk 245 ms" in advice["message"] and "virtio_gpu" not in advice["message"]
    # arm64 says "Kernel command line:" only: read there too
    log2 = tmp_path / "notests.log"
    log2.write_text(text.replace("initcall_debug loglevel=8", "initcall_debug cryptomgr.notests loglevel=8", 1))
    assert _crypto_advice(log2) == []


def test_an_initcall_that_waited_for_the_initramfs_says_so():
    """crypto_kdf108_init asked for a module while the initramfs was still being unpacked, which a
    module request waits for: the advice says so and quotes the unpacking's end. One that started
    after it (the x86 boot's) does not."""
    data = analyze_json(str(FIXTURES / "device-arm64-initcall-debug.log"))
    kdf = next(r for r in data["recommendations"] if r["message"].startswith("crypto_kdf108_init took"))
    assert "returned 0.224 s after" in kdf["message"] and "smaller initramfs" in kdf["message"]
    assert kdf["evidence"][1] == "device-arm64-initcall-debug.log:1147: Freeing initrd memory: 34760K"
    others = [r for r in data["recommendations"] if r["topic"] == "initcall" and r is not kdf]
    assert others and not any("initramfs was unpacked" in r["message"] for r in others)
    x86 = analyze_json(str(VERBOSE))["recommendations"]
    assert not any("initramfs was unpacked" in r["message"] for r in x86 if r["topic"] == "initcall")


CAPTURED = {  # the same QEMU boot read by the tools people use (tests/boot/capture.py)
    "qemu-ts-default.log": "ts",
    "qemu-ts-since-start.log": "ts-clock",
    "qemu-ts-incremental.log": "ts-clock",
    "qemu-grabserial.log": "grabserial",
    "qemu-default.log": "headstart",
}


@pytest.mark.parametrize("name", CAPTURED)
def test_serial_logs_of_other_tools(name):
    data = analyze_json(str(FIXTURES / name), "--ready", READY)
    assert data["axis"] == "host"
    assert {"kernel_setup", "kernel_start", "initramfs_unpack", "init", "ready"} <= set(data["moments"])
    assert all(p["duration_s"] >= 0 for p in data["phases"])
    assert 3.5 < data["total_s"] < 7.0  # the QEMU boots took 4.6 to 6.1 s (ts: whole seconds)
    assert "\x1b" not in json.dumps(data)
    assert data["moments"]["init"]["evidence"].endswith("Run /init as init process")


def test_capture_formats_and_escapes_are_read():
    from headstart.boot import logs

    for name, fmt in CAPTURED.items():
        log = logs.read([FIXTURES / name])
        assert log.formats == [fmt], name
        # ts -i: added up into one clock; a kernel line after another's text on its line has none
        times = [x.host_s for x in log.lines if x.host_s is not None]
        assert times == sorted(times), name
    # the ready line coloured as systemd colours it, then text without a newline before a kernel line
    log = logs.read([FIXTURES / "qemu-grabserial.log"])
    texts = [x.text for x in log.lines]
    assert "[  OK  ] Started headstart-ready: init running" in texts
    i = texts.index("powering off...")
    assert log.lines[i].kernel_s is None and log.lines[i + 1].source == log.lines[i].source
    assert log.lines[i + 1].kernel_s is not None and "Preparing to enter system sleep" in texts[i + 1]
    incremental = (FIXTURES / "qemu-ts-incremental.log").read_text().splitlines()
    seconds = sum(float(line[6:15]) + 60 * int(line[3:5]) for line in incremental if line[:2].isdigit())
    assert logs.read([FIXTURES / "qemu-ts-incremental.log"]).lines[-1].host_s == pytest.approx(seconds)


def test_firmware_text_before_the_first_kernel_line(tmp_path):
    """A board's boot loader (no x86 setup line here), its text and the kernel's first line on one line,
    a carriage return between them."""
    rows = [r for r in VERBOSE.read_text().splitlines() if "Probing EDD" not in r]
    at = next(i for i, r in enumerate(rows) if "Linux version" in r)
    t, text = rows[at].split("\t", 1)
    rows[at] = f"{t}\tU-Boot 2024.01 \x1b[1mStarting kernel ...\x1b[0m\r{text}"
    log = tmp_path / "uboot.log"
    log.write_text("\n".join(rows) + "\n")
    data = analyze_json(str(log), "--ready", READY)
    assert data["moments"]["kernel_setup"]["evidence"].endswith("U-Boot 2024.01 Starting kernel ...")
    assert data["moments"]["kernel_start"]["evidence"].split(": ", 1)[1].startswith("Linux version")


def test_two_boots_in_one_capture_are_not_merged():
    done = headstart("boot", "analyze", str(TWO_BOOTS), "--ready", READY)
    one_line_error(done, "holds 2 boots (boot 1 from line 1, boot 2 from line 16)")
    assert "--boot 1..2" in done.stderr
    first = analyze_json(str(TWO_BOOTS), "--ready", READY, "--boot", "1")
    second = analyze_json(str(TWO_BOOTS), "--ready", READY, "--boot", "2")
    assert first["moments"]["ready"]["evidence"].startswith("qemu-grabserial-two-boots.log:14:")
    assert second["moments"]["ready"]["evidence"].startswith("qemu-grabserial-two-boots.log:29:")
    # the second boot counts from the first one's restart line, not from the start of the capture
    # (grabserial's time 0 is its first byte: here the first boot's first kernel line)
    assert second["moments"]["kernel_start"]["at_s"] == pytest.approx(4.446891 - 1.779238, abs=0.01)
    k1, k2 = (d["total_s"] - d["moments"]["kernel_start"]["at_s"] for d in (first, second))
    assert k2 == pytest.approx(k1, rel=0.3)
    one_line_error(headstart("boot", "analyze", str(TWO_BOOTS), "--boot", "3"), "--boot 3 is not one of them")


def test_logs_of_different_boots_given_together(tmp_path):
    def dmesg_of(serial: Path, out: Path, edit: tuple[str, str] = ("", "")) -> Path:
        rows = [r.split("\t", 1)[1] for r in serial.read_text().splitlines()[1:] if r.split("\t", 1)[1].startswith("[")]
        out.write_text("\n".join(rows).replace(*edit) + "\n")
        return out

    same = dmesg_of(VERBOSE, tmp_path / "same.txt")
    assert analyze_json(str(VERBOSE), str(same), "--ready", READY)["moments"]["ready"]
    other = dmesg_of(FIXTURES / "qemu-default.log", tmp_path / "other.txt")  # another boot, same kernel
    one_line_error(headstart("boot", "analyze", str(VERBOSE), str(other)), "are from different boots")
    kernel = dmesg_of(VERBOSE, tmp_path / "kernel.txt", ("6.1.0-56-amd64", "6.1.0-99-amd64"))
    done = headstart("boot", "analyze", str(VERBOSE), str(kernel))
    one_line_error(done, "kernel 6.1.0-56-amd64 and 6.1.0-99-amd64")


def test_compare_without_ready_uses_the_last_moment_both_reached():
    default = FIXTURES / "qemu-default.log"
    done = headstart("boot", "compare", str(default), str(VERBOSE), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    a, b = analyze_json(str(default)), analyze_json(str(VERBOSE))
    assert data["compared_to"] == "init"
    assert data["difference_ms"] == pytest.approx((b["moments"]["init"]["at_s"] - a["moments"]["init"]["at_s"]) * 1000)
    text = headstart("boot", "compare", str(default), str(VERBOSE)).stdout
    assert "to init started, the last moment both boots reached" in " ".join(text.split())
    # the quiet boot prints no init line: kernel start is the last moment both show
    data = json.loads(headstart("boot", "compare", str(QUIET), str(VERBOSE), "--json").stdout)
    assert data["compared_to"] == "kernel_start"


def test_html_keeps_kernel_phases_apart_from_a_long_systemd_phase(tmp_path):
    from headstart.boot import analysis
    from headstart.reporters import boot_page

    a = analysis.analyze([VERBOSE, FIXTURES / "systemd-analyze.txt"], re.compile(READY))
    (kernel, _), (user, _) = boot_page.charts(a)
    init = a.timeline.at("init")
    assert init is not None and kernel.axes[0].get_xlim()[1] < init * 1.2  # not squashed by 62 s of user space
    assert user.axes[0].get_xlim()[1] > 60
    page = boot_page.page(a).render()
    assert "Slowest services" in page and "NetworkManager-wait-online.service" in page


# --- the live boot (slow, opt-in) ---


@pytest.mark.skipif(os.environ.get("HEADSTART_SLOW_TESTS") != "1", reason="a live QEMU boot: HEADSTART_SLOW_TESTS=1")
def test_live_qemu_boot_recorded_and_analyzed(tmp_path):
    for tool in ("qemu-system-x86_64", "gcc"):
        assert shutil.which(tool), f"{tool} is needed (make test-boot installs it)"
    sys.path.insert(0, str(Path(__file__).parent / "boot"))
    import qemu_boot

    log = tmp_path / "live.log"
    done = qemu_boot.boot(log, qemu_boot.BASE_ARGS + qemu_boot.VERBOSE_ARGS)
    assert done.returncode == 0, done.stderr
    data = analyze_json(str(log), "--ready", READY)
    assert {"kernel_setup", "kernel_start", "init", "ready"} <= set(data["moments"])
    assert len(data["initcalls"]) > 100 and data["total_s"] > 0


def test_analyze_writes_a_trace_of_phases_initcalls_and_units(tmp_path):
    """--trace: the boot's phases, its initcalls and its systemd units on one timeline (Chrome's JSON
    trace format, read back as Perfetto reads it), each as long as the analysis says."""
    for log, expected in ((VERBOSE, "initcalls"), (FIXTURES / "systemd-analyze.txt", "units")):
        trace_file = tmp_path / f"{log.name}.trace.json"
        done = headstart("boot", "analyze", str(log), "--ready", READY, "--trace", str(trace_file))
        assert done.returncode == 0, done.stderr
        data = analyze_json(str(log), "--ready", READY)
        trace = chrome_trace.read(trace_file)
        ((name, pid),) = chrome_trace.processes(trace).items()
        assert name == (
            "boot (time from power-on)" if data["axis"] == "host" else "boot (time from the kernel's first message)"
        )
        tracks = chrome_trace.threads(trace, pid)
        on = {t: chrome_trace.events(trace, "X", pid, tid) for t, tid in tracks.items()}
        phases = on["phases"] + on["systemd's account"]
        assert [e["name"] for e in phases] == [p["name"] for p in data["phases"]]
        for e, p in zip(phases, data["phases"], strict=True):
            assert e["ts"] == pytest.approx(p["start_s"] * 1e6, abs=1e-3)
            assert e["dur"] == pytest.approx(p["duration_s"] * 1e6, abs=1e-3)
        instants = {e["name"]: e["ts"] for e in chrome_trace.events(trace, "i", pid)}
        if "ready" in data["moments"]:
            assert instants["first program ready"] == pytest.approx(data["moments"]["ready"]["at_s"] * 1e6, abs=1e-3)
        initcalls = [e for t, slices in on.items() if t.startswith("initcalls") for e in slices]
        assert sorted((e["name"], round(e["dur"])) for e in initcalls) == sorted(
            (c["name"], round(c["duration_ms"] * 1000)) for c in data["initcalls"]
        )
        if expected == "initcalls":
            assert len(initcalls) > 100 and trace["otherData"]["initcalls_without_a_time"] == 0
        units = {s["unit"]: on[s["unit"]] for s in data["services"]}
        user_space = next((p["start_s"] for p in data["phases"] if p["name"] == "systemd: userspace"), None)
        for s in data["services"]:
            (e,) = units[s["unit"]]
            assert e["dur"] == pytest.approx(s["duration_s"] * 1e6, abs=1e-3)
            assert e["ts"] == pytest.approx(user_space * 1e6, abs=1e-3)
        if expected == "units":
            assert len(units) == 5


def test_marks_split_the_phase_before_ready(tmp_path):
    """A moment of the user's own (a compositor up) between init and ready: the phase from init to
    ready becomes two that add up to it; a mark the log lacks merges them back; a bad one is one line."""
    log = tmp_path / "marked.log"
    lines = VERBOSE.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if READY in line)
    init_s, ready_s = float(lines[at - 1].split("\t")[0]), float(lines[at].split("\t")[0])
    middle = (init_s + ready_s) / 2
    lines.insert(at, f"{middle:.6f}\tdevice: compositor ready")
    log.write_text("\n".join(lines) + "\n")
    plain = analyze_json(str(log), "--ready", READY)
    marked = analyze_json(str(log), "--ready", READY, "--mark", "compositor=device: compositor ready")
    names = [p["name"] for p in marked["phases"]]
    assert names[-2:] == ["init started to compositor", "compositor to first program ready"]
    before, after = marked["phases"][-2:]
    assert before["end_s"] == pytest.approx(middle) and after["start_s"] == pytest.approx(middle)
    assert before["duration_s"] + after["duration_s"] == pytest.approx(plain["phases"][-1]["duration_s"])
    assert marked["total_s"] == plain["total_s"]
    absent = analyze_json(str(VERBOSE), "--ready", READY, "--mark", "compositor=device: compositor ready")
    assert [p["name"] for p in absent["phases"]] == [
        p["name"] for p in analyze_json(str(VERBOSE), "--ready", READY)["phases"]
    ]
    for mark, why in (("no-equals-sign", "expected NAME=REGEX"), ("ready=x", "names a moment of the boot")):
        done = headstart("boot", "analyze", str(log), "--mark", mark)
        assert done.returncode == 2 and why in done.stderr.strip().splitlines()[-1], done.stderr


def _phase(data: dict, starting: str) -> float:
    return next(p["duration_s"] for p in data["phases"] if p["name"].startswith(starting))


def test_advice_says_how_to_apply_it_on_the_command_line(tmp_path):
    """quiet and a unit a kiosk does without come with the kernel arguments that carry them out
    (the virtual device applies them); a unit not known to be optional is never advised away."""
    blame = tmp_path / "blame.txt"
    blame.write_text(
        "  1.200s e2scrub_reap.service\n  2.500s systemd-udev-settle.service\n  10ms getty@tty1.service\n"
        "  1.116s systemd-binfmt.service\n  2.990s systemd-logind.service\n  724ms modprobe@efi_pstore.service\n"
        "  689ms user@1000.service\n  454ms systemd-sysusers.service\n  114ms user-runtime-dir@1000.service\n"
        "  184ms proc-sys-fs-binfmt_misc.mount\n"
    )
    data = analyze_json(str(VERBOSE), str(blame), "--ready", READY, "--kiosk")
    by_topic = {r["topic"]: r for r in data["recommendations"]}
    assert by_topic["quiet"]["kernel_args"] == ["quiet"]
    units = [r for r in data["recommendations"] if r["topic"] == "unit"]
    # getty: too fast to matter; udev-settle, logind and the runtime folder's unit: not known to be optional
    assert sorted(a for r in units for a in r["kernel_args"]) == [
        "systemd.mask=e2scrub_reap.service",
        "systemd.mask=modprobe@efi_pstore.service",
        "systemd.mask=proc-sys-fs-binfmt_misc.automount",  # with its mount: it fails to set up without it
        "systemd.mask=proc-sys-fs-binfmt_misc.mount",
        "systemd.mask=systemd-binfmt.service",
        "systemd.mask=systemd-sysusers.service",
        "systemd.mask=user@1000.service",
    ]
    assert {r["kernel_args"][0]: r["seconds"] for r in units}["systemd.mask=e2scrub_reap.service"] == pytest.approx(1.2)
    # The automount slow too: masked once, with its mount, not again on its own.
    more = tmp_path / "more.txt"
    more.write_text(blame.read_text() + "  120ms proc-sys-fs-binfmt_misc.automount\n")
    again = analyze_json(str(VERBOSE), str(more), "--ready", READY, "--kiosk")
    masks = [a for r in again["recommendations"] if r["topic"] == "unit" for a in r["kernel_args"]]
    assert masks.count("systemd.mask=proc-sys-fs-binfmt_misc.automount") == 1
    assert all(r["initramfs"] == "" for r in units)
    # Not said to be a kiosk: the same units named, with their time, and nothing to apply.
    plain = [
        r for r in analyze_json(str(VERBOSE), str(blame), "--ready", READY)["recommendations"] if r["topic"] == "unit"
    ]
    assert len(plain) == len(units) and all(r["kernel_args"] == [] and "`--kiosk`" in r["message"] for r in plain)
    # A new initramfs: nothing on the command line; the initramfs-tools setting that makes it. The
    # device's kernel unpacked Debian's in the background and waited 1.77 s for it at the end.
    device = FIXTURES / "device-arm64-initcall-debug.log"
    (initramfs,) = [r for r in analyze_json(str(device))["recommendations"] if r["topic"] == "initramfs"]
    assert initramfs["kernel_args"] == [] and initramfs["initramfs"] == "modules-dep"
    assert "MODULES=dep" in initramfs["message"] and "in the background" in initramfs["message"]
    text = device.read_text()
    stamps = re.findall(r"\[\s*(\d+\.\d+)\] [^\n]*\n[^\n]*\[\s*(\d+\.\d+)\] Freeing initrd memory", text)[0]
    assert initramfs["seconds"] == pytest.approx(float(stamps[1]) - float(stamps[0]))
    assert initramfs["seconds"] < _phase(analyze_json(str(device)), "initramfs unpacking")


@pytest.mark.parametrize("arch", ["arm64", "amd64"])
def test_a_boot_of_the_virtual_device(arch):
    """A boot of the device (make test-device's console and its systemd-analyze account): one boot,
    although arm64 prints "Booting Linux" before the banner and x86-64 prints its second CPU's first
    lines at 0.000000 between lines at 0.38 and 0.51 s (each read as a second boot before), and
    every phase from power-on to the home screen's first frame, the compositor's mark between."""
    log, systemd = FIXTURES / f"device-{arch}.log", FIXTURES / f"device-{arch}.systemd.txt"
    mark = "compositor ready=headstart-device: compositor ready$"
    data = analyze_json(str(log), str(systemd), "--mark", mark, "--ready", "headstart-device: home screen frame$")
    names = [p["name"] for p in data["phases"] if not p["name"].startswith("systemd: ")]
    assert names == [
        "power-on to kernel start",
        "kernel start to initramfs unpacking",
        "initramfs unpacking to initramfs unpacked",
        "initramfs unpacked to init started",
        "init started to root file system mounted by init",
        "root file system mounted by init to sysinit.target",
        "sysinit.target to basic.target",
        "basic.target to compositor ready",
        "compositor ready to first program ready",
    ]
    frame = next(float(x.split("\t")[0]) for x in log.read_text().splitlines() if x.endswith("home screen frame"))
    assert data["total_s"] == pytest.approx(frame)
    assert data["services"][0]["unit"] == "dev-vda.device"
    assert not data["warnings"]
    # arm64's kernel isolated its page tables for KASLR alone (x86's emulated AMD CPU is not isolated):
    # said, with how it weighs under TCG, and never applied on the command line.
    isolation = [r for r in data["recommendations"] if r["topic"] == "page table isolation"]
    assert len(isolation) == (arch == "arm64")
    assert all("kpti=0" in r["message"] and r["kernel_args"] == [] for r in isolation)


def test_an_initramfs_that_starts_udev_before_the_root_is_advised_one_without(tmp_path):
    """The phase from the initramfs's /init to the root mounted, with the initramfs's own udevd
    starting inside it: advised, with both as evidence, on the device and on an x86 QEMU boot of
    Debian's own initrd, as tiny-initramfs when the root is one it finds without udev (its kernel
    name here). A root named by its label is not advised it; a log without the command line is
    advised it with the condition, and not as something to apply. Without udevd's line in that
    phase, or with no such phase (init the initramfs's own, no root mounted after it), nothing is said."""
    verbose = FIXTURES / "device-arm64-initcall-debug.log"
    data = analyze_json(str(verbose))
    (advice,) = [r for r in data["recommendations"] if r["topic"] == "initramfs udev"]
    assert advice["seconds"] == pytest.approx(3.210173)
    assert "started udev 367 ms after /init" in advice["message"] and "tiny-initramfs" in advice["message"]
    assert "`root=/dev/vda`, which it finds" in advice["message"]
    assert advice["evidence"][-1].endswith("Starting systemd-udevd version 252.39-1~deb12u2")
    assert advice["initramfs"] == "tiny" and advice["kernel_args"] == [] and advice["drop_ins"] == {}

    def udev_advice(name: str, edit) -> list[dict]:
        changed = tmp_path / name
        changed.write_text("".join(edit(line) for line in verbose.open()))
        return [r for r in analyze_json(str(changed))["recommendations"] if r["topic"] == "initramfs udev"]

    assert not udev_advice("label.log", lambda line: line.replace("root=/dev/vda", "root=LABEL=root"))
    assert not udev_advice("mapper.log", lambda line: line.replace("root=/dev/vda", "root=/dev/mapper/vg-root"))
    # Roots assembled from other devices, which tiny-initramfs does not set up: an array named as the
    # root, and a root=UUID= whose file system is on an encrypted volume, an array or LVM, as the
    # initramfs's lines or the root's mount say (a red team's, 2026-11-30).
    assert not udev_advice("md.log", lambda line: line.replace("root=/dev/vda", "root=/dev/md0"))
    uuid_root = lambda line: line.replace("root=/dev/vda", "root=UUID=0f3a-77c1")  # noqa: E731
    udevd = "Starting systemd-udevd version 252.39-1~deb12u2\n"
    for name, printed in [
        ("crypt.log", "cryptsetup: vda3_crypt: set up successfully\n"),
        ("lvm.log", '  2 logical volume(s) in volume group "vg0" now active\n'),
        ("raid.log", "mdadm: /dev/md0 has been started with 2 drives.\n"),
    ]:
        assert not udev_advice(name, lambda line, p=printed: uuid_root(line).replace(udevd, udevd + line[:9] + p)), name
    assert not udev_advice("dm.log", lambda line: uuid_root(line).replace("EXT4-fs (vda)", "EXT4-fs (dm-0)"))
    assert not udev_advice("nfs.log", lambda line: line.replace("root=/dev/vda", "root=/dev/nfs"))
    (mmc,) = udev_advice("mmc.log", lambda line: line.replace("root=/dev/vda", "root=/dev/mmcblk0p2"))
    assert mmc["initramfs"] == "tiny" and "`root=/dev/mmcblk0p2`, which it finds" in mmc["message"]
    (by_uuid,) = udev_advice("uuid.log", lambda line: line.replace("root=/dev/vda", "root=UUID=0f3a-77c1"))
    assert by_uuid["initramfs"] == "tiny"
    (unknown,) = udev_advice("no-command-line.log", lambda line: "" if "ommand line:" in line else line)
    assert unknown["initramfs"] == "" and "not in this log" in unknown["message"]
    assert not udev_advice("no-udev.log", lambda line: "" if "Starting systemd-udevd" in line else line)
    # systemd before 247 (Ubuntu 20.04's initramfs) said it another way
    old = "systemd-udevd[139]: starting version 245.4-4ubuntu3"
    new = "Starting systemd-udevd version 252.39-1~deb12u2"
    (older,) = udev_advice("old-udevd.log", lambda line: line.replace(new, old))
    assert older["evidence"][-1].endswith(old)

    # The amd64 device's console (its analysis boot, the initcalls' lines taken out): the line of the
    # kernel's first message began with SeaBIOS's clearing of the screen 3 s before it, which once
    # put the kernel's clock 3 s early and udevd's line 3.3 s after /init, past the root's mount.
    # Timed by the kernel's clock from its first line stamped after the clock started, udevd started
    # 287 ms after /init.
    (amd64,) = [r for r in analyze_json(str(AMD64_VERBOSE))["recommendations"] if r["topic"] == "initramfs udev"]
    assert amd64["initramfs"] == "tiny" and "started udev 287 ms after /init" in amd64["message"]
    x86 = analyze_json(str(INITRD_ROOT))
    (advice,) = [r for r in x86["recommendations"] if r["topic"] == "initramfs udev"]
    assert advice["seconds"] == pytest.approx(7.667182 - 3.846223)  # kernel times of /init and the mount
    no_root = analyze_json(str(VERBOSE))  # its initramfs never mounts a root
    assert "init started to root file system mounted by init" not in [p["name"] for p in no_root["phases"]]
    assert not [r for r in no_root["recommendations"] if r["topic"] == "initramfs udev"]


def test_coldplug_advice_replays_the_devices_alone_through_a_drop_in(tmp_path):
    """A slow coldplug is advised to replay the devices' events alone, through a drop-in whose
    command is printed whole and names no other type; udevd's CPU, when the account has it, is part
    of the evidence. A fast or absent coldplug gets no such advice."""
    console, systemd, cpu = (str(FIXTURES / f"device-arm64.{kind}") for kind in ("log", "systemd.txt", "cpu.txt"))
    data = analyze_json(console, systemd, cpu, "--kiosk")
    advice = next(r for r in data["recommendations"] if r["topic"] == "coldplug")
    assert advice["seconds"] == pytest.approx(8.344) and advice["kernel_args"] == []
    assert "udevd had used 12.9 s of CPU" in advice["message"]
    assert [e.rsplit(": ", 1)[1] for e in advice["evidence"]][:2] == [
        "systemd-udev-trigger.service 8.344s",
        "systemd-udevd.service 12.894s of CPU",
    ]
    assert "systemd 252" in advice["evidence"][2]
    ((path, text),) = advice["drop_ins"].items()
    assert path == "/etc/systemd/system/systemd-udev-trigger.service.d/devices-only.conf"
    lines = text.splitlines()
    assert lines[:2] == ["[Service]", "ExecStart="] and len(lines) == 3
    assert "--type=devices" in lines[2] and "--type=all" not in lines[2] and "module" not in lines[2]
    printed = headstart("boot", "analyze", console, systemd, "--kiosk")
    assert printed.returncode == 0 and f"{path}:" in printed.stdout and "--type=devices" in printed.stdout

    # Before 251 udevadm refuses the unit's --prioritized-subsystem, and the "-" hides it: no device
    # set up (Ubuntu 22.04's 249). Without the version in the logs the drop-in is described, not written.
    older = tmp_path / "older.log"
    older.write_text(Path(console).read_text().replace("systemd 252.39-1~deb12u2 running", "systemd 249.11 running"))
    assert not [r for r in analyze_json(str(older), systemd, "--kiosk")["recommendations"] if r["topic"] == "coldplug"]
    (unknown,) = [r for r in analyze_json(systemd, "--kiosk")["recommendations"] if r["topic"] == "coldplug"]
    assert unknown["drop_ins"] == {} and "251 or later" in unknown["message"]

    for blame in ("  40ms systemd-udev-trigger.service\n", "  1.200s e2scrub_reap.service\n"):
        (tmp_path / "blame.txt").write_text(blame)
        data = analyze_json(str(tmp_path / "blame.txt"))
        assert not [r for r in data["recommendations"] if r["topic"] == "coldplug"], blame


# systemctl show's account of the manager's generators, from a boot of the arm64 device (2026-11-30).
GENERATORS = "GeneratorsStartTimestampMonotonic=1611736\nGeneratorsFinishTimestampMonotonic=2103536\n"


def test_generators_advice_masks_those_the_command_line_gives_no_work(tmp_path):
    """systemd's generators, timed by the manager's own timestamps, are advised away by empty files
    of their names, the fstab and debug generators never; one whose kernel arguments are on the
    command line is kept, and gpt-auto when no root= is given. A quick run or one not finished gets
    no advice."""
    generators = tmp_path / "generators.txt"
    generators.write_text(GENERATORS)
    device_log = FIXTURES / "device-arm64-initcall-debug.log"  # root=/dev/vda, nothing a generator reads
    data = analyze_json(str(device_log), str(generators), "--kiosk")
    (advice,) = [r for r in data["recommendations"] if r["topic"] == "generators"]
    assert advice["seconds"] == pytest.approx(0.4918)
    assert [e.rsplit(": ", 1)[1] for e in advice["evidence"]] == GENERATORS.split()
    masked = {path.rsplit("/", 1)[1] for path in advice["drop_ins"]}
    assert set(advice["drop_ins"].values()) == {""}
    assert {"systemd-sysv-generator", "systemd-gpt-auto-generator", "systemd-getty-generator"} <= masked
    assert not masked & {"systemd-fstab-generator", "systemd-debug-generator"}
    assert "Kept" not in advice["message"] and "not in these logs" not in advice["message"]
    printed = headstart("boot", "analyze", str(device_log), str(generators), "--kiosk")
    assert "/etc/systemd/system-generators/systemd-sysv-generator: an empty file" in printed.stdout

    # The same boot given resume= and no root= (and gpt-auto asked for by name): those have work.
    edited = tmp_path / "resume.log"
    edited.write_text(device_log.read_text().replace("root=/dev/vda rw", "resume=/dev/vda2 systemd.gpt_auto=1 rw"))
    (advice,) = [
        r
        for r in analyze_json(str(edited), str(generators), "--kiosk")["recommendations"]
        if r["topic"] == "generators"
    ]
    kept = {"systemd-hibernate-resume-generator", "systemd-gpt-auto-generator"}
    assert not kept & {path.rsplit("/", 1)[1] for path in advice["drop_ins"]}
    assert len(advice["drop_ins"]) == len(masked) - 2
    assert "Kept, as the kernel command line gives them work" in advice["message"]
    assert advice["message"].count("systemd-gpt-auto-generator") == 1
    # Without the command line (systemd's account alone), those that read it are kept, with the
    # condition said; the others are advised.
    systemd = str(FIXTURES / "device-arm64.systemd.txt")
    (advice,) = [
        r for r in analyze_json(systemd, str(generators), "--kiosk")["recommendations"] if r["topic"] == "generators"
    ]
    unseen = {path.rsplit("/", 1)[1] for path in advice["drop_ins"]}
    assert unseen == masked - {
        "systemd-gpt-auto-generator",
        "systemd-cryptsetup-generator",
        "systemd-veritysetup-generator",
        "systemd-hibernate-resume-generator",
        "systemd-run-generator",
    }
    assert "not in these logs" in advice["message"] and "may give them work" in advice["message"]

    # A gateway's boot whose logs show what four of them made (a red team's, 2026-11-30): an
    # encrypted volume from /etc/crypttab, rc.local, a SysV script and the serial console's login.
    journal = tmp_path / "journal.txt"
    journal.write_text(
        "[    0.000000] gw kernel: Kernel command line: console=ttyS2,1500000 root=/dev/vda ro\n"
        "[    4.500000] gw systemd[1]: systemd 252.22-1~deb12u1 running in system mode (+PAM +AUDIT)\n"
        "[    4.700000] gw systemd-sysv-generator[212]: SysV service '/etc/init.d/gw-watchdog' lacks a native "
        "systemd unit file. Automatically generating a unit file for compatibility.\n"
        "[    5.900000] gw systemd[1]: Starting systemd-cryptsetup@data_crypt.service - Cryptography Setup for "
        "data_crypt...\n"
        "[    8.000000] gw systemd[1]: Starting rc-local.service - /etc/rc.local Compatibility...\n"
        "[    8.200000] gw systemd[1]: Started serial-getty@ttyS2.service - Serial Getty on ttyS2.\n"
    )
    (advice,) = [
        r
        for r in analyze_json(str(journal), str(generators), "--kiosk")["recommendations"]
        if r["topic"] == "generators"
    ]
    working = {
        "systemd-sysv-generator",
        "systemd-cryptsetup-generator",
        "systemd-rc-local-generator",
        "systemd-getty-generator",
    }
    assert not working & {path.rsplit("/", 1)[1] for path in advice["drop_ins"]}
    assert len(advice["drop_ins"]) == len(masked) - 4
    assert "Kept, as this boot ran what they made" in advice["message"]
    assert any("serial-getty@ttyS2" in e for e in advice["evidence"])
    # systemctl show's two lines alone are a boot's account too
    assert [r["topic"] for r in analyze_json(str(generators))["recommendations"]] == ["generators"]

    for text in (GENERATORS.replace("2103536", "1631736"), GENERATORS.replace("2103536", "0")):
        generators.write_text(text)
        data = analyze_json(str(device_log), str(generators))
        assert not [r for r in data["recommendations"] if r["topic"] == "generators"], text


def test_cpu_time_by_unit_and_whether_the_boot_was_bound_by_its_cpus(tmp_path):
    """systemctl show's CPUUsageNSec per unit and /proc/stat's cpu line: units by CPU time (no slice,
    which sums others; no unit without a cgroup), the machine's busy share, and the advice that
    follows from it, naming the units that used the most."""
    cpu = FIXTURES / "device-arm64.cpu.txt"
    data = analyze_json(str(FIXTURES / "device-arm64.systemd.txt"), str(cpu))
    units = [(u["unit"], u["cpu_s"]) for u in data["cpu"]["units"]]
    # The root slice less its children (system.slice, user.slice, init.scope): what ran outside every unit.
    outside = pytest.approx(95.610 - 44.342 - 4.243 - 29.963)
    assert units[:4] == [("init.scope", pytest.approx(29.963)), (timeline.OUTSIDE_UNITS, outside),
                         ("systemd-udevd.service", pytest.approx(12.894)),
                         ("device-home-screen.service", pytest.approx(4.829))]  # fmt: skip
    assert not [u for u, _ in units if u.endswith(".slice") or u == "systemd-remount-fs.service"]
    assert data["cpu"]["busy_s"] == pytest.approx(97.52) and data["cpu"]["idle_s"] == pytest.approx(42.97)
    advice = next(r for r in data["recommendations"] if r["topic"] == "cpu")
    assert "busy 69%" in advice["message"] and "init.scope (systemd itself) 30.0 s" in advice["message"]
    assert data["cpu"]["cpus"] == 2 and "one CPU kept busy alone is 50%" in advice["message"]
    assert "over the 70 s from boot to the capture" in advice["message"]  # (97.52 + 42.97) / 2
    assert advice["evidence"][0].endswith("init.scope 29.963s")

    # Captured long after the boot it is given with (a QEMU boot ready at about 5 s): said so, and
    # no verdict on the boot from it.
    late = tmp_path / "late.txt"
    late.write_text(
        "cpu  30000 0 10000 160000 0 0 0 0\ncpu0 15000 0 5000 80000 0 0 0 0\ncpu1 15000 0 5000 80000 0 0 0 0\n"
    )
    data = analyze_json(str(VERBOSE), str(late), "--ready", READY)
    message = next(r for r in data["recommendations"] if r["topic"] == "cpu")["message"]
    assert (
        "over the 1,000 s from boot to the capture" in message and "most of this account is not the boot's" in message
    )
    assert "waited on something" not in message

    # The same account with each unit's properties in the other order, on a machine busy throughout.
    swapped = tmp_path / "cpu.txt"
    swapped.write_text(
        "Id=a.service\nCPUUsageNSec=2000000000\n\nId=x.target\n\nCPUUsageNSec=[not set]\nId=y.service\n\n"
        "Id=b.service\nCPUUsageNSec=5000000000\n\ncpu  700 0 100 10 0 0 0 0\n"
    )
    data = analyze_json(str(swapped))
    assert [(u["unit"], u["cpu_s"]) for u in data["cpu"]["units"]] == [("b.service", 5.0), ("a.service", 2.0)]
    advice = next(r for r in data["recommendations"] if r["topic"] == "cpu")
    assert "busy 99%" in advice["message"] and "less work" in advice["message"]
    table = headstart("boot", "analyze", str(swapped))
    assert table.returncode == 0 and "CPU time by unit" in table.stdout and "b.service" in table.stdout


def test_units_that_ended_are_counted_from_the_journal(tmp_path):
    """A unit that ended before the capture has no cgroup left: systemd's "Consumed ... CPU time"
    line in the journal gives its count (each run's, summed), the system manager's only (a user
    manager's units share names with its), and never twice for a unit its cgroup still counts."""
    journal = tmp_path / "journal.txt"  # journalctl -b -o short-monotonic
    journal.write_text(
        "[    0.000000] device kernel: Booting Linux on physical CPU 0x0000000000 [0x410fd083]\n"
        "[    5.123456] device systemd[1]: modprobe@drm.service: Consumed 812ms CPU time.\n"
        "[    5.200000] device systemd[1]: modprobe@drm.service: Deactivated successfully.\n"
        "[    9.500000] device systemd[1]: systemd-tmpfiles-setup.service: Consumed 1.234s CPU time, read 4.0K "
        "from disk.\n"
        "[   10.000000] device systemd[252]: dbus.service: Consumed 300ms CPU time.\n"
        "[   11.000000] device systemd[1]: modprobe@drm.service: Consumed 100ms CPU time.\n"
        "[   12.000000] device systemd[1]: init.scope: Consumed 1min 2.5s CPU time.\n"
    )
    data = analyze_json(str(journal), str(FIXTURES / "device-arm64.cpu.txt"))
    used = {u["unit"]: u["cpu_s"] for u in data["cpu"]["units"]}
    assert used["modprobe@drm.service"] == pytest.approx(0.912)
    assert used["systemd-tmpfiles-setup.service"] == pytest.approx(0.833)  # its cgroup's count, not the journal's
    assert used["init.scope"] == pytest.approx(29.963)
    assert "dbus.service" in used and used["dbus.service"] != pytest.approx(0.3)  # the system bus, from its cgroup
    alone = analyze_json(str(journal))
    assert {u["unit"]: u["cpu_s"] for u in alone["cpu"]["units"]} == pytest.approx(
        {"modprobe@drm.service": 0.912, "systemd-tmpfiles-setup.service": 1.234, "init.scope": 62.5}
    )


def test_an_arm64_kernel_gets_no_decompression_advice(tmp_path):
    """U-Boot's "Starting kernel ..." before an arm64 kernel's first message was read as the kernel
    decompressing itself (advised LZ4): an arm64 Image is decompressed, if at all, before that line."""
    lines = (FIXTURES / "device-arm64.log").read_text().splitlines(keepends=True)
    booted = tmp_path / "u-boot.log"
    booted.write_text(lines[0] + "0.010000\tStarting kernel ...\n" + "".join(lines[1:]))
    data = analyze_json(str(booted))
    assert "kernel setup" in {p["name"].split(" to ")[0] for p in data["phases"]}
    assert "decompression" not in {r["topic"] for r in data["recommendations"]}
    x86 = tmp_path / "x86.log"  # the same line before an x86-64 kernel is still advised on
    x86.write_text(lines[0] + "0.010000\tStarting kernel ...\n" + "".join(VERBOSE.read_text().splitlines(True)[1:]))
    assert "decompression" in {r["topic"] for r in analyze_json(str(x86), "--ready", READY)["recommendations"]}


def test_a_unit_name_systemd_shortened_leaves_no_half_escape():
    """systemd shortens a unit's name to the console's width and cuts its colour's end with it
    ("device-app-agent.s…0m"): the line read is the name, its ellipsis and what follows."""
    line = "[\x1b[0;32m  OK  \x1b[0m] Started \x1b[0;1;39mdevice-app-agent.s…0m - app opener for the benchmark."
    assert console.clean(line) == "[  OK  ] Started device-app-agent.s… - app opener for the benchmark."
    assert console.clean("Dependency failed for \x1b[0;1;39mdevi…[0m - app opener…") == (
        "Dependency failed for devi… - app opener…"
    )
    assert console.clean("[  123.456789] 90m of 100m…") == "[  123.456789] 90m of 100m…"  # no escape: kept


# --- what a new user's own logs gave (2026-11-29) ---


def _dmesg_of(log: Path) -> str:
    """The kernel lines of a recorded capture as dmesg prints them: the printk time, no host time."""
    return "".join(line.split("\t", 1)[1] for line in log.read_text().splitlines(True)[1:] if "\t[" in line)


def test_journal_output_with_wall_clock_times_is_refused_with_what_to_give(tmp_path):
    """journalctl's default output looks like ts over a console, but keeps no kernel time."""
    for stamp in ("Sep 29 10:01:02", "Sep 29 10:01:02.250000", "2026-09-29T10:01:02+0000"):
        log = tmp_path / "journal.txt"
        log.write_text(
            "-- Boot 1a2b --\n"
            + "".join(f"{stamp} rockpi kernel: line {i}\n" for i in range(5))
            + f"{stamp} rockpi systemd[1]: Started kiosk.\n"
        )
        one_line_error(headstart("boot", "analyze", str(log)), "journalctl -b -o short-monotonic")
    human = tmp_path / "dmesg-T.txt"
    human.write_text("".join(f"[Sun Nov 29 08:50:5{i} 2026] line {i}\n" for i in range(5)))
    one_line_error(headstart("boot", "analyze", str(human)), "give plain `dmesg`")
    monotonic = tmp_path / "monotonic.txt"
    monotonic.write_text("".join(f"[    0.00000{i}] rockpi kernel: line {i}\n" for i in range(5)))
    assert "journalctl -b -o short-monotonic" not in headstart("boot", "analyze", str(monotonic)).stderr


def test_a_serial_capture_and_dmesg_of_one_boot_count_each_initcall_once(tmp_path):
    dmesg = tmp_path / "dmesg.txt"
    dmesg.write_text(_dmesg_of(VERBOSE))
    alone = analyze_json(str(VERBOSE), "--ready", READY)
    both = analyze_json(str(VERBOSE), str(dmesg), "--ready", READY)
    assert len(both["initcalls"]) == len(alone["initcalls"]) > 100
    assert [r["message"] for r in both["recommendations"]] == [r["message"] for r in alone["recommendations"]]
    assert both["phases"] == alone["phases"]  # the serial copy, with its host time, is the one kept


def test_the_kernels_clock_starts_after_its_first_lines(tmp_path):
    """Lines stamped 0 were printed before the kernel started its clock: its start is the first of
    them, its clock's zero the least late of the lines stamped after (the arm64 device's kernel ran
    0.41 s under TCG before its clock started; taken as the clock's zero, its first line put every
    moment on the kernel's clock that much early)."""
    data = analyze_json(str(FIXTURES / "device-arm64-initcall-debug.log"))
    assert data["moments"]["kernel_start"]["at_s"] == pytest.approx(0.038004)
    assert data["kernel_offset_s"] == pytest.approx(0.452222)
    # ... which is never before a line stamped 0 was printed
    zero = [r for r in (FIXTURES / "device-arm64-initcall-debug.log").read_text().splitlines() if "[    0.000000]" in r]
    assert data["kernel_offset_s"] >= max(float(r.split("\t")[0]) for r in zero)
    assert not [w for w in data["warnings"] if "started its clock" in w]


def test_a_boot_that_panics_says_so_and_fails_a_compare_budget(tmp_path):
    lines = VERBOSE.read_text().splitlines(True)
    panicked = tmp_path / "panicked.log"
    panicked.write_text(
        "".join(lines[:1741]) + "5.200000\t[    2.100000] Kernel panic - not syncing: Attempted to kill init!\n"
    )
    warnings = analyze_json(str(panicked), "--ready", READY)["warnings"]
    # at its printk time on the host's clock (2.1 s after the kernel's clock started, at about 3.05 s)
    assert "the kernel panicked at 5.152 s: Kernel panic - not syncing: Attempted to kill init!" in warnings
    # Compared to the last moment both reached (init), B would be as fast as A and pass any budget.
    done = headstart("boot", "compare", str(VERBOSE), str(panicked), "--ready", READY, "--budget-ms", "100000")
    assert done.returncode == 1
    assert "B: the kernel panicked" in done.stderr and "never reached ready" in done.stderr
    typo = headstart("boot", "compare", str(VERBOSE), str(VERBOSE), "--ready", "headstart-raedy", "--budget-ms", "0")
    assert typo.returncode == 1 and "never reached ready" in typo.stderr
    assert (
        headstart("boot", "compare", str(VERBOSE), str(VERBOSE), "--ready", READY, "--budget-ms", "0").returncode == 0
    )
    # systemd-analyze's durations have no line to be ready at: compared to their end, as without --ready.
    analyze_only = FIXTURES / "systemd-analyze.txt"
    done = headstart("boot", "compare", str(analyze_only), str(analyze_only), "--ready", READY, "--budget-ms", "0")
    assert done.returncode == 0, done.stderr


def test_init_is_found_by_systemds_line_with_debians_version(tmp_path):
    """Kernels before 5.7 print no "Run /sbin/init" line; systemd's first line says init started."""
    log = tmp_path / "dmesg.txt"
    log.write_text(
        "[    0.000000] Booting Linux on physical CPU 0x0\n[    0.500000] Freeing unused kernel memory\n"
        "[    3.400000] systemd[1]: systemd 252.17-1~deb12u1 running in system mode (+PAM +AUDIT)\n"
    )
    data = analyze_json(str(log))
    assert data["moments"]["init"]["at_s"] == pytest.approx(3.4)
    assert not any("before init started" in w for w in data["warnings"])


def test_quiet_is_advised_only_on_a_console_seen_to_print_its_lines(tmp_path):
    """dmesg holds what the kernel logged, not what its console printed; a capture without the kernel's
    command line (printed at notice level) had a console that printed less already."""
    assert "quiet" in {r["topic"] for r in analyze_json(str(VERBOSE), "--ready", READY)["recommendations"]}
    dmesg = tmp_path / "dmesg.txt"
    dmesg.write_text(_dmesg_of(VERBOSE))
    assert "quiet" not in {r["topic"] for r in analyze_json(str(dmesg))["recommendations"]}
    hidden = tmp_path / "no-command-line.log"
    hidden.write_text("".join(x for x in VERBOSE.read_text().splitlines(True) if "ommand line:" not in x))
    data = analyze_json(str(hidden), "--ready", READY)
    assert "quiet" not in {r["topic"] for r in data["recommendations"]}


def test_a_quiet_arm_boot_after_u_boot_gets_no_decompression_advice_nor_a_wrapped_buffer_warning(tmp_path):
    """U-Boot hands over with "Starting kernel ..."; a quiet arm64 kernel's first printed line (an
    error) may come seconds later, and nothing on the console says it is arm64."""
    log = tmp_path / "quiet-arm.log"
    log.write_text(
        "# headstart boot record device=/dev/ttyS2 baud=1500000 start=\n"
        "0.500000\tU-Boot 2023.01 (Jan 01 2023)\n"
        "1.000000\tStarting kernel ...\n"
        "2.300000\t[    1.300000] rockchip-pcie f8000000.pcie: PCIe link training gen1 timeout!\n"
        "9.000000\tkiosk: first frame shown\n"
    )
    data = analyze_json(str(log), "--ready", "first frame shown")
    assert "decompression" not in {r["topic"] for r in data["recommendations"]}
    assert not any("wrapped" in w for w in data["warnings"])
    assert data["moments"]["ready"]["at_s"] == pytest.approx(9.0)


def test_a_reboot_gives_the_firmware_after_it_to_the_next_boot(tmp_path):
    log = tmp_path / "reboot.log"
    log.write_text(
        "# headstart boot record device=/dev/ttyS2 baud=1500000 start=\n"
        "1.000000\tStarting kernel ...\n"
        "1.010000\t[    0.000000] Booting Linux on physical CPU 0x0\n"
        "4.000000\t[    3.000000] Kernel panic - not syncing: VFS: Unable to mount root fs\n"
        "9.000000\t[    8.000000] Rebooting in 5 seconds..\n"
        "9.500000\tDDR Version 1.24 20191016\n"
        "10.000000\tU-Boot SPL 2023.01\n"
        "12.000000\tStarting kernel ...\n"
        "12.010000\t[    0.000000] Booting Linux on physical CPU 0x0\n"
        "20.000000\tkiosk: first frame shown\n"
    )
    one_line_error(headstart("boot", "analyze", str(log)), "boot 2 from line 6")
    data = analyze_json(str(log), "--boot", "2", "--ready", "first frame shown")
    phases = {p["name"]: p["end_s"] - p["start_s"] for p in data["phases"]}
    assert phases["power-on to kernel setup"] == pytest.approx(3.0)  # from boot 1's last line
    assert data["moments"]["ready"]["at_s"] == pytest.approx(11.0)
    first = analyze_json(str(log), "--boot", "1")
    assert "the kernel panicked" in " ".join(first["warnings"])


def test_dmesg_with_delta_times_is_read_like_dmesg(tmp_path):
    plain, delta = tmp_path / "dmesg.txt", tmp_path / "dmesg-d.txt"
    plain.write_text(_dmesg_of(VERBOSE))
    previous = 0.0
    lines = []
    for line in plain.read_text().splitlines():
        t = float(line[1:13])
        lines.append(f"[{t:12.6f} <{t - previous:12.6f}>]{line[14:]}\n")
        previous = t
    delta.write_text("".join(lines))

    def times(log: Path) -> list[tuple]:
        return [(p["name"], p["start_s"], p["end_s"]) for p in analyze_json(str(log))["phases"]]

    assert times(delta) == times(plain) and len(times(plain)) >= 3


def test_a_mark_after_init_is_kept_over_the_remount_and_a_mark_never_seen_is_said(tmp_path):
    log = tmp_path / "marks.log"
    log.write_text(
        "# headstart boot record device=/dev/ttyS0 baud=115200 start=\n"
        "1.000000\t[    0.000000] Booting Linux on physical CPU 0x0\n"
        "3.000000\t[    2.000000] Run /init as init process\n"
        "3.100000\tStarting systemd-udevd\n"
        "5.000000\t[    4.000000] EXT4-fs (vda): mounted filesystem with ordered data mode\n"
        "9.000000\tkiosk: first frame shown\n"
    )
    data = analyze_json(
        str(log), "--ready", "first frame shown", "--mark", "udev=Starting systemd-udevd", "--mark", "wm=x"
    )
    assert data["moments"]["udev"]["at_s"] == pytest.approx(3.1)
    assert "init_root_mounted" not in data["moments"]
    assert "no line matches the mark wm" in data["warnings"]


def test_a_log_cut_after_the_hand_over_to_the_kernel_says_it_ends_before_init(tmp_path):
    log = tmp_path / "cut.log"
    log.write_text(
        "# headstart boot record device=/dev/ttyS0 baud=115200 start=\n0.5\tU-Boot 2023.01\n1.0\tStarting kernel ...\n"
    )
    assert any("before init started" in w for w in analyze_json(str(log))["warnings"])


def test_compare_refuses_systemd_accounts_that_count_from_different_moments(tmp_path):
    without = tmp_path / "no-firmware.txt"
    without.write_text("Startup finished in 2.118s (kernel) + 4.276s (initrd) + 20.417s (userspace) = 26.811s\n")
    done = headstart("boot", "compare", str(FIXTURES / "systemd-analyze.txt"), str(without))
    one_line_error(done, "count from different moments")


def test_compare_reads_a_chosen_boot_of_each_log():
    two = FIXTURES / "qemu-grabserial-two-boots.log"
    done = headstart("boot", "compare", str(FIXTURES / "qemu-grabserial.log"), str(two), "--boot", "2")
    one_line_error(done, "holds 1 boot")
    done = headstart("boot", "compare", str(FIXTURES / "qemu-grabserial.log"), str(two), "--boot-b", "2")
    assert done.returncode == 0, done.stderr


def _display_advice(log: Path) -> list[dict]:
    return [r for r in analyze_json(str(log))["recommendations"] if r["topic"] == "display driver"]


def test_a_display_driver_that_coldplug_loaded_late_is_advised_to_load_as_systemd_starts(tmp_path):
    """The device's arm64 boot: udev loaded virtio_gpu 6.1 s after its coldplug began, and the
    compositor waits for the card. The module is named by its own initcall line, not by the DRM
    driver's name; a command line that already loads it, a boot without coldplug's line or one
    whose card came with the coldplug's start gets no such advice."""
    log = FIXTURES / "device-arm64-initcall-debug.log"
    (advice,) = _display_advice(log)
    assert advice["kernel_args"] == ["modules_load=virtio_gpu"]
    assert advice["seconds"] == pytest.approx(20.016387 - 13.893273)
    assert "appeared 6.123 s after udev's coldplug began" in advice["message"]
    assert [e.split(": ", 1)[0] for e in advice["evidence"]] == [
        "device-arm64-initcall-debug.log:2282",
        "device-arm64-initcall-debug.log:2412",
        "device-arm64-initcall-debug.log:2386",
    ]
    text = log.read_text()
    loaded = tmp_path / "loaded.log"
    loaded.write_text(text.replace("initcall_debug loglevel=8", "initcall_debug modules_load=virtio_gpu loglevel=8", 1))
    assert _display_advice(loaded) == []
    # Another module loaded as systemd starts (the input advice's) leaves the card's to be said.
    loaded.write_text(
        text.replace("initcall_debug loglevel=8", "initcall_debug modules_load=evdev,gpio_keys loglevel=8", 1)
    )
    assert [a["kernel_args"] for a in _display_advice(loaded)] == [["modules_load=virtio_gpu"]]
    # Its own count short, as when another module's "calling" line came after its own (the kernel
    # keeps one start time for all): its lines say it was still running when the card came.
    short = tmp_path / "short.log"
    short.write_text(
        text.replace("[virtio_gpu] returned 0 after 220679 usecs", "[virtio_gpu] returned 0 after 80 usecs")
    )
    assert [a["kernel_args"] for a in _display_advice(short)] == [["modules_load=virtio_gpu"]]
    # Its DRM name differs from its module's: the module's initcall line still names it.
    renamed = tmp_path / "renamed.log"
    renamed.write_text(text.replace("[drm] Initialized virtio_gpu", "[drm] Initialized virtio-gpu-drm"))
    assert [a["kernel_args"] for a in _display_advice(renamed)] == [["modules_load=virtio_gpu"]]
    # Another driver loading beside it: the card's module is the one named as its DRM driver; with
    # neither so named, which it was is not sure, and nothing is advised.
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "calling  virtio_gpu_driver_init" in line)
    lines.insert(at + 1, "20.300000\t[   19.900000] calling  foo_driver_init+0x0/0x10 [foo] @ 300")
    at = next(i for i, line in enumerate(lines) if "[drm] Initialized virtio_gpu" in line)
    lines.insert(at + 1, "20.500000\t[   20.050000] initcall foo_driver_init+0x0/0x10 [foo] returned 0 after 9 usecs")
    beside = tmp_path / "beside.log"
    beside.write_text("\n".join(lines) + "\n")
    assert [a["kernel_args"] for a in _display_advice(beside)] == [["modules_load=virtio_gpu"]]
    beside.write_text(beside.read_text().replace("[drm] Initialized virtio_gpu", "[drm] Initialized gpu"))
    assert _display_advice(beside) == []
    # A second card, a render-only GPU's, registered by the other driver: both modules.
    lines.insert(at + 1, "20.490000\t[   20.040000] foo 1:0: [drm] Initialized foo 1.0.0 20200101 for 1:0 on minor 1")
    two = tmp_path / "two.log"
    two.write_text("\n".join(lines) + "\n")
    (advice,) = _display_advice(two)
    assert advice["kernel_args"] == ["modules_load=virtio_gpu,foo"] and len(advice["evidence"]) == 5
    assert "registered 2 cards" in advice["message"] and "as this boot registered their cards" in advice["message"]
    # The other the boot VGA device, its DRM name its module's and "-drm" (bochs-drm, module bochs),
    # as on a PC: its module first, so that it keeps the first card's number when both load early.
    vga = "1.100000\t[    0.650000] pci 0000:00:01.0: vgaarb: setting as boot VGA device"
    two.write_text(
        "\n".join([*lines[:828], vga, *lines[828:]]).replace(
            "Initialized foo 1.0.0 20200101 for 1:0", "Initialized foo-drm 1.0.0 20200101 for 0000:00:01.0"
        )
        + "\n"
    )
    (advice,) = _display_advice(two)
    assert advice["kernel_args"] == ["modules_load=foo,virtio_gpu"]
    assert "foo's first, the boot VGA device (0000:00:01.0)" in advice["message"]
    assert advice["evidence"][-1].endswith("pci 0000:00:01.0: vgaarb: setting as boot VGA device")
    # A boot bound by its CPUs (busy 80% or more): moving the driver earlier only moves the wait.
    busy, idle = tmp_path / "busy.txt", tmp_path / "idle.txt"
    busy.write_text("Id=a.service\nCPUUsageNSec=2000000000\n\ncpu  800 0 100 100 0 0 0 0\n")
    idle.write_text("Id=a.service\nCPUUsageNSec=2000000000\n\ncpu  600 0 100 300 0 0 0 0\n")
    assert [r for r in analyze_json(str(log), str(busy))["recommendations"] if r["topic"] == "display driver"] == []
    assert [r["topic"] for r in analyze_json(str(log), str(idle))["recommendations"]].count("display driver") == 1
    no_initcall = tmp_path / "no-initcall.log"
    no_initcall.write_text("\n".join(line for line in text.splitlines() if "virtio_gpu_driver_init" not in line) + "\n")
    assert _display_advice(no_initcall) == []
    no_coldplug = tmp_path / "no-coldplug.log"
    no_coldplug.write_text("\n".join(line for line in text.splitlines() if "Coldplug" not in line) + "\n")
    assert _display_advice(no_coldplug) == []
    assert _display_advice(VERBOSE) == []  # a boot with no card


def _input_advice(log: Path, cpu: Path | None = None) -> list[dict]:
    args = [str(log)] + ([str(cpu)] if cpu else [])
    return [r for r in analyze_json(*args)["recommendations"] if r["topic"] == "input driver"]


def test_input_modules_that_udev_loaded_late_are_advised_to_load_as_systemd_starts(tmp_path):
    """The device's arm64 boot: udev loaded evdev, which makes the input devices' event nodes, 4.5 s
    after its coldplug began, and gpio_keys, the board's buttons' driver, in the initramfs. A
    compositor's seat waits for those nodes. A module already on the command line is not named
    again; evdev loaded before coldplug, a boot without its initcall or with busy CPUs gets nothing."""
    log = FIXTURES / "device-arm64-initcall-debug.log"
    (advice,) = _input_advice(log)
    assert advice["kernel_args"] == ["modules_load=evdev,gpio_keys"]
    assert advice["seconds"] == pytest.approx(18.434844 - 13.893273, abs=0.01)
    assert "appeared 4.5" in advice["message"] and "gpio-keys (gpio_keys)" in advice["message"]
    assert [e.split(": ", 1)[0] for e in advice["evidence"]] == [
        "device-arm64-initcall-debug.log:2282",
        "device-arm64-initcall-debug.log:2362",
        "device-arm64-initcall-debug.log:2152",
        "device-arm64-initcall-debug.log:2150",
    ]
    text = log.read_text()

    def variant(name: str, new: str) -> Path:
        out = tmp_path / name
        out.write_text(new)
        return out

    with_keys = variant(
        "keys.log", text.replace("initcall_debug loglevel=8", "initcall_debug modules-load=gpio-keys loglevel=8", 1)
    )
    assert [a["kernel_args"] for a in _input_advice(with_keys)] == [["modules_load=evdev"]]
    with_evdev = variant(
        "evdev.log", text.replace("initcall_debug loglevel=8", "initcall_debug modules_load=evdev loglevel=8", 1)
    )
    assert _input_advice(with_evdev) == []
    # A PS/2 mouse registered while virtio_console loads (as on the amd64 device, while sr_mod did):
    # its probe of serio1, begun 0.86 s before, registered it, not that module.
    rows = text.splitlines()
    at = next(i for i, x in enumerate(rows) if "calling  virtio_console_init" in x) + 1
    mouse = "19.930000\t[   19.480000] input: ImExPS/2 Mouse as /devices/platform/i8042/serio1/input/input2"
    probe = "19.931000\t[   19.481000] probe of serio1 returned 0 after 861096 usecs"
    probed = variant("probed.log", "\n".join([*rows[:at], mouse, probe, *rows[at:]]) + "\n")
    assert [a["kernel_args"] for a in _input_advice(probed)] == [["modules_load=evdev,gpio_keys"]]
    unprobed = variant("unprobed.log", "\n".join([*rows[:at], mouse, *rows[at:]]) + "\n")
    assert [a["kernel_args"] for a in _input_advice(unprobed)] == [["modules_load=evdev,gpio_keys,virtio_console"]]
    no_evdev = variant("no-evdev.log", "\n".join(x for x in text.splitlines() if "evdev_init" not in x) + "\n")
    assert _input_advice(no_evdev) == []
    # evdev loaded before coldplug (as systemd-modules-load would): nothing came late.
    lines = text.splitlines()
    evdev = [x for x in lines if "evdev_init" in x]
    rest = [x for x in lines if "evdev_init" not in x]
    at = next(i for i, x in enumerate(rest) if "Coldplug All udev Devices" in x)
    early = [
        x.replace("18.887356\t[   18.434844]", "14.300000\t[   13.800000]").replace(
            "18.899278\t[   18.446747]", "14.310000\t[   13.810000]"
        )
        for x in evdev
    ]
    assert _input_advice(variant("early.log", "\n".join(rest[:at] + early + rest[at:]) + "\n")) == []
    busy = tmp_path / "busy.txt"
    busy.write_text("Id=a.service\nCPUUsageNSec=2000000000\n\ncpu  800 0 100 100 0 0 0 0\n")
    assert _input_advice(log, busy) == []


FUZZ_CHAIN_WITHOUT_FUZZ = """Startup finished in 1.279s (kernel) + 6.758s (userspace) = 8.038s
device-home-screen.service @5.739s
└─device-compositor.service @4.191s +1.417s
  └─device-gpu.service @3.639s +501ms
    └─basic.target @3.513s
      └─sockets.target @3.512s
        └─headstart@kiosk.socket @3.455s +54ms
          └─sysinit.target @3.414s
            └─systemd-tmpfiles-setup.service @2.607s +803ms
              └─systemd-journald.service @1.460s +1.090s
                └─systemd-journald.socket @1.330s
                  └─-.mount @1.160s
                    └─-.slice @1.159s
"""


def test_a_critical_chain_printed_with_fuzz_is_read_as_its_chain_and_what_came_close_behind(tmp_path):
    """`systemd-analyze critical-chain --fuzz=1s` (the virtual device's home screen, arm 3) prints,
    below each unit, every unit it waited for that was up within a second of the last, and their own
    trees: the chain is still the first unit at each level (the journal's advice was given twice from
    it before), and the unit the home screen also waited for, up 986 ms before the compositor, is
    the most that cutting the compositor's chain can gain."""
    fuzz = FIXTURES / "device-arm64-fuzz-chain.txt"
    said = analyze_json(str(fuzz), "--kiosk")["recommendations"]
    (behind,) = [r for r in said if r["topic"] == "close behind"]
    assert behind["seconds"] == pytest.approx(4.191 + 1.417 - (3.663 + 0.959))
    assert "waited last for device-compositor.service" in behind["message"]
    assert "device-input.service, which device-home-screen.service waited for too, was up 986 ms" in behind["message"]
    journal = [r for r in said if r["topic"] == "journal"]
    assert len(journal) == 1 and "systemd-journald.service took 1,090 ms" in journal[0]["message"]

    # The same boot's chain without the fuzz: the same advice, and nothing said about what came behind.
    chain = tmp_path / "chain.txt"
    chain.write_text(FUZZ_CHAIN_WITHOUT_FUZZ)
    plain = analyze_json(str(chain), "--kiosk")["recommendations"]
    assert not [r for r in plain if r["topic"] == "close behind"]
    assert [r["message"] for r in plain] == [r["message"] for r in said if r["topic"] != "close behind"]
