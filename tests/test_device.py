"""The virtual device's fast parts (docs/device.md); booting it is `make test-device`, opt-in.
Here: its scripts parse, its units are ones systemd accepts, and a device that was never built
ends the check in one line instead of a hang or a traceback."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SANITIZED

# Scripts, units and Python: no program of the sanitizer build runs here.
pytestmark = pytest.mark.skipif(SANITIZED, reason="run in the normal pass")

DEVICE = Path(__file__).resolve().parent.parent / "device"
SCRIPTS = sorted(p for p in DEVICE.rglob("usr/libexec/headstart-device/*") if p.is_file())
UNITS = sorted(DEVICE.rglob("etc/systemd/system/*.service"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_device_scripts_parse(script):
    if script.suffix != ".sh":  # a .sh file is sourced, the others run
        assert script.stat().st_mode & 0o111, f"{script} is not executable"
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_device_units_are_valid(unit, tmp_path):
    """systemd-analyze verify reads the unit as systemd would, beside the device's other units;
    only programs that exist in the image and not here may be reported missing."""
    for u in UNITS:
        shutil.copy(u, tmp_path)
    done = subprocess.run(["systemd-analyze", "verify", str(tmp_path / unit.name)], capture_output=True, text=True)
    problems = [
        line
        for line in done.stderr.splitlines()
        if line.strip()
        and "is not executable: No such file" not in line
        and "Command /usr/libexec/headstart-device" not in line
        and "Unit configuration has fatal error" not in line
        and "/usr/bin/weston" not in line
    ]
    assert not problems, done.stderr


def test_a_device_never_built_fails_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "check.py", "--arch", "arm64", "--out", str(tmp_path)],
        cwd=DEVICE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    (failed,) = done.stderr.strip().splitlines()
    # Whichever is missing first on this machine: QEMU itself (a machine that never ran make device)
    # or the device's files.
    assert failed.startswith("FAILED: ") and re.search(r" is (missing|not installed): run make device$", failed)


@pytest.mark.parametrize(
    ("arch", "accel", "expected"),
    [("arm64", "tcg", ["kpti=0", "norandmaps"]), ("arm64", "kvm", []), ("amd64", "tcg", ["norandmaps"])],
)
def test_an_emulated_board_boots_without_what_tcg_makes_dear(arch, accel, expected, monkeypatch, tmp_path):
    """Under TCG every address space switch flushes QEMU's whole TLB, which page table isolation does
    at each kernel entry and exit, and code is translated again at every new address, which ASLR gives
    every exec (docs/device.md): the arm64 board boots without both there, the x86 one (whose emulated
    CPU is not isolated) without ASLR; on KVM either boots as it is. The measured arguments come after
    them."""
    monkeypatch.syspath_prepend(str(DEVICE))
    import qemu

    files = qemu.BootFiles(tmp_path / "vmlinuz", None, tmp_path / "root.img")
    argv = qemu.qemu_argv(arch, files, accel, ["quiet"], tmp_path, snapshot=True)
    args = argv[argv.index("-append") + 1].split()
    assert [a for a in args if a in ("kpti=0", "norandmaps")] == expected
    assert args[-1] == "quiet"
    assert all(a in qemu.describe(arch, accel) for a in expected)
    assert ("norandmaps" in qemu.describe(arch, accel)) == bool(expected)


def test_a_screendumps_pixels_start_after_its_header(monkeypatch):
    """A pixel whose bytes are whitespace (10, 32, 9) right after the header stays a pixel."""
    monkeypatch.syspath_prepend(str(DEVICE))
    import qemu

    pixels = bytes([10, 32, 9]) + bytes([0, 0, 0]) * 4 + bytes([255, 255, 255])
    assert qemu._ppm_pixels(b"P6\n3 2\n255\n" + pixels) == pixels
    with pytest.raises(qemu.DeviceError, match="not an 8-bit PPM"):
        qemu._ppm_pixels(b"P5\n3 2\n255\n" + pixels)
    with pytest.raises(qemu.DeviceError, match="cut short"):
        qemu._ppm_pixels(b"P6\n3 2\n255\n" + pixels[:-1])
    sys.modules.pop("qemu")


@pytest.mark.skipif(shutil.which("qemu-system-aarch64") is None, reason="needs QEMU (make device installs it)")
def test_a_display_no_compositor_drew_on_reads_as_not_shown(monkeypatch, tmp_path):
    """The board's display read through QEMU's QMP, as each device boot reads it once the home screen's
    frame is committed: before anything drew (QEMU's CPUs never started), its text is a few colours,
    which the scenario counts as the home screen not shown, and an unchanged display has the same
    digest, which it counts as an app not shown over the home screen."""
    monkeypatch.syspath_prepend(str(DEVICE))
    import qemu
    import scenario

    argv = ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a72", "-S", "-nographic", "-monitor", "none"]
    argv += ["-serial", "none", "-device", "virtio-gpu-pci", "-qmp", f"unix:{tmp_path / 'qmp.sock'},server=on,wait=off"]
    vm = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    try:
        boot = qemu.Boot(tmp_path / "console.log", tmp_path, vm, vm)
        screen = boot.screen()
        assert 1 <= screen.colours <= scenario.TEXT_CONSOLE_COLOURS
        assert not scenario.BootResult(tmp_path, tmp_path, 0.0, screen=screen).home_screen_shown
        started = time.monotonic()
        again = scenario._screen_once(boot, lambda s: s.digest != screen.digest, timeout_s=1.5)
        assert again == screen and time.monotonic() - started >= 1.5  # read again until the bound
        with pytest.raises(qemu.DeviceError, match=r"QEMU refused screendump: .*No such file"):
            qemu._qmp(tmp_path / "qmp.sock", "screendump", {"filename": str(tmp_path / "no" / "screen.ppm")})
    finally:
        vm.kill()
        vm.wait()
    sys.modules.pop("qemu"), sys.modules.pop("scenario")


@pytest.mark.skipif(shutil.which("debugfs") is None or shutil.which("mkfs.ext4") is None, reason="needs e2fsprogs")
def test_the_advices_drop_ins_are_written_into_a_copy_of_the_image(monkeypatch, tmp_path):
    """device-bench's arm 3 image: a copy of arm 2's with each drop-in written (new folders made, a
    file there before replaced), read back as written; the original is left as it was."""
    monkeypatch.syspath_prepend(str(DEVICE))
    import image

    root = tmp_path / "root"
    (root / "etc/systemd/system/x.service.d").mkdir(parents=True)
    (root / "etc/systemd/system/x.service.d/a.conf").write_text("old\n")
    original = tmp_path / "original.img"
    subprocess.run(["mkfs.ext4", "-q", "-F", "-d", str(root), str(original), "16M"], check=True)
    before = original.read_bytes()
    files = {
        "/etc/systemd/system/x.service.d/a.conf": "[Service]\nExecStart=\nExecStart=-/bin/true\n",
        "/etc/systemd/system/new.service.d/deep/b.conf": "[Unit]\n",
    }
    copy = tmp_path / "copy.img"
    image.with_files(original, copy, files)
    for path, text in files.items():
        read = subprocess.run(["debugfs", "-R", f"cat {path}", str(copy)], capture_output=True, text=True)
        assert read.stdout == text
    assert original.read_bytes() == before
    assert subprocess.run(["e2fsck", "-fn", str(copy)], capture_output=True).returncode == 0
    sys.modules.pop("image")
