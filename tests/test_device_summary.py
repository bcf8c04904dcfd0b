"""The device bench's summary and tables of where the CPUs went (device/bench.py, device/report.py),
from analyses of the device's own systemd account: no boot here (make test-device boots it)."""

from __future__ import annotations

import html
import sys
from pathlib import Path

import pytest
from conftest import SANITIZED
from headstart.boot import analysis, timeline

pytestmark = pytest.mark.skipif(SANITIZED, reason="run in the normal pass")

DEVICE = Path(__file__).resolve().parent.parent / "device"
FIXTURES = Path(__file__).parent / "boot" / "fixtures"


def test_cpu_by_unit_per_arm(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(DEVICE))
    import report

    import bench

    other = tmp_path / "cpu.txt"  # a second arm whose daemon used the CPUs and whose home screen barely did
    other.write_text(
        "CPUUsageNSec=20000000000\nId=init.scope\n\nCPUUsageNSec=6000000000\nId=headstart@kiosk.service\n\n"
        "CPUUsageNSec=500000000\nId=device-home-screen.service\n\ncpu  9000 0 1000 0 0 0 0 0\n"
    )
    second = tmp_path / "second.txt"  # another boot of it, whose daemon's unit had no count left
    second.write_text("CPUUsageNSec=22000000000\nId=init.scope\n\ncpu  5000 0 0 5000 0 0 0 0\n")
    boots = []
    for arm, cpu in (("stock", FIXTURES / "device-arm64.cpu.txt"), ("headstart", other), ("headstart", second)):
        a = analysis.analyze([FIXTURES / "device-arm64.systemd.txt", cpu], None)
        boots.append({"arm": arm, "analysis": analysis.as_dict(a), "home_frame_s": 40.0, "launches": []})
    summary = bench.summary(boots)
    assert summary["stock"]["cpu_s"]["init.scope"]["median"] == pytest.approx(29.963)
    assert summary["stock"]["cpu_s"].get("headstart@kiosk.service") is None
    assert summary["headstart"]["cpu_s"]["headstart@kiosk.service"]["median"] == 6.0  # not 0 from the second
    assert summary["headstart"]["cpu_s"]["init.scope"]["p90"] == 22.0
    assert summary["headstart"]["cpu_busy_share"]["p90"] == 1.0
    headers, rows = report.cpu_rows({"summary": summary})
    assert headers[1:] == ["stock", "headstart"]
    names = [r[0] for r in rows[:4]]
    assert names == ["init.scope", timeline.OUTSIDE_UNITS, "systemd-udevd.service", "headstart@kiosk.service"]
    assert rows[2][1:] == ["12.9 (12.9-12.9)", "-"] and rows[3][1:] == ["-", "6.0 (6.0-6.0)"]
    assert rows[-1][0] == "the CPUs busy, share of the time" and rows[-1][2] == "75 % (50-100)"
    assert len(rows) == report.CPU_UNITS + 1
    sys.modules.pop("bench"), sys.modules.pop("report")


def test_the_app_table_says_which_launches_waited_for_a_child_starting(tmp_path, monkeypatch):
    """A launch measured while the daemon's prepared child starts its toolkit shares the CPUs with it;
    the scenario waits first, and the table says how many did and how long."""
    monkeypatch.syspath_prepend(str(DEVICE))
    import report

    import bench

    a = analysis.as_dict(analysis.analyze([FIXTURES / "device-arm64.systemd.txt"], None))

    def launch(mode: str, cold: bool, ms: float, waited: float) -> dict:
        return {"mode": mode, "cold": cold, "ms": ms, "waited_for_child_s": waited}

    launches = [launch("served", True, 2000, 0.0), launch("exec", False, 5000, 3.4), launch("served", False, 2400, 0.2)]
    boots = [{"arm": "headstart", "analysis": a, "home_frame_s": 40.0, "launches": launches}]
    rows = report.app_rows({"summary": bench.summary(boots)})
    waits = [r[:2] + r[-1:] for r in rows]
    assert waits == [["headstart", "cold", "0 of 1"], ["headstart", "warm", "1 of 2, up to 3 s"]]
    assert rows[1][4] == "0.48"
    sys.modules.pop("bench"), sys.modules.pop("report")


def test_a_child_due_or_starting_is_waited_for_by_the_bench_and_the_device():
    """Both read a `prepared` status line (docs/protocol.md) through one predicate: the host's bench
    before it counts a daemon's memory, the device's scenario before each launch."""
    from headstart.daemon import prepared_pending

    assert prepared_pending("due gtk3 /usr/bin/galculator 0 -- the CPUs are busy, as in the zygote's first 20 s")
    assert prepared_pending("starting gtk4+adwaita /usr/bin/baobab 3")
    for state in ("ready", "retrying", "idle", "unlaunched", "failed", "refused"):
        assert not prepared_pending(f"{state} gtk3 /usr/bin/galculator 2"), state


def test_the_advice_is_the_analysis_boots_not_a_timed_boots(monkeypatch):
    """Only the analysis boot has initcall_debug (whose console lines `quiet` would take back in arm 3
    alone): the report's advice comes from it, and the timed boots' own analyses are not read for it."""
    monkeypatch.syspath_prepend(str(DEVICE))
    import report

    import bench

    def boot(arm: str, log: Path) -> dict:
        a = analysis.as_dict(analysis.analyze([log], None))
        return {"arm": arm, "analysis": a, "home_frame_s": 40.0, "launches": []}

    verbose = FIXTURES / "device-arm64-initcall-debug.log"
    advised = boot("headstart", verbose)
    timed = [
        boot("stock", FIXTURES / "device-arm64.systemd.txt"),
        boot("headstart", FIXTURES / "device-arm64.systemd.txt"),
    ]
    assert any("crypto" in r["message"] for r in advised["analysis"]["recommendations"])
    assert not any("crypto" in r["message"] for b in timed for r in b["analysis"]["recommendations"])
    applied = bench.Applied.of(advised["analysis"]["recommendations"])
    assert "cryptomgr.notests" in applied.kernel_args
    data = {
        "arch": "arm64",
        "accelerator": "tcg",
        "analysis_boot": advised,
        "advice_initramfs": applied.initramfs,
        "summary": bench.summary(timed),
        "boots": timed,
    }
    page = html.unescape(report.page(data))
    assert "from the analysis boot" in page and "cryptomgr.notests" in page
    # both initramfs advised: arm 3 boots tiny-initramfs, and the page says the other was not applied
    assert applied.initramfs == "tiny"
    assert "not applied: arm 3 booted the device's tiny-initramfs" in page
    assert page.count("the device's tiny-initramfs with the root's drivers alone") == 2
    sys.modules.pop("bench"), sys.modules.pop("report")


def test_arm_3_boots_a_copy_of_the_image_when_the_advice_has_drop_ins(tmp_path, monkeypatch):
    """The coldplug's drop-in (advised from the device's own account): arm 3 boots its own copy of
    arm 2's image, with the initramfs the advice names (tiny-initramfs before the small one when
    both are advised); the other arms boot theirs."""
    monkeypatch.syspath_prepend(str(DEVICE))
    import bench

    a = analysis.as_dict(
        analysis.analyze([FIXTURES / "device-arm64.log", FIXTURES / "device-arm64.systemd.txt"], None, kiosk=True)
    )
    small = {"kernel_args": [], "initramfs": "modules-dep"}
    applied = bench.Applied.of(a["recommendations"] + [small])
    assert list(applied.drop_ins) == ["/etc/systemd/system/systemd-udev-trigger.service.d/devices-only.conf"]
    assert "--type=devices" in applied.drop_ins[next(iter(applied.drop_ins))]
    files = applied.files(tmp_path, "headstart+advice")
    assert files.image == tmp_path / bench.ADVICE_IMAGE and files.initrd == tmp_path / "boot/initrd-tiny.img"
    assert "drop-ins /etc/systemd/system/systemd-udev-trigger.service.d/devices-only.conf" in applied.describe()
    assert bench.NOTHING.files(tmp_path, "headstart").image == tmp_path / "headstart.img"
    assert bench.NOTHING.files(tmp_path, "stock").image == tmp_path / "stock.img"
    tiny = bench.Applied.of([small, {"kernel_args": [], "initramfs": "tiny"}, small])
    assert tiny.files(tmp_path, "headstart+advice").initrd == tmp_path / "boot/initrd-tiny.img"
    assert "tiny-initramfs" in tiny.describe()
    twice = [{"kernel_args": ["quiet", "systemd.mask=a.automount"], "initramfs": ""}] * 2
    assert bench.Applied.of(twice).kernel_args == ["quiet", "systemd.mask=a.automount"]
    assert bench.Applied.of(twice).files(tmp_path, "headstart+advice").initrd == tmp_path / "boot/initrd.img"
    no_drop_ins = bench.Applied(["quiet"], "modules-dep")
    assert no_drop_ins.files(tmp_path, "headstart+advice").image == tmp_path / "headstart.img"
    sys.modules.pop("bench")


def test_the_boot_table_says_in_how_many_boots_the_home_screen_was_on_the_display(monkeypatch):
    """A boot whose compositor could not show its clients' frames is counted apart, and boots from
    before the display was read say nothing of it."""
    monkeypatch.syspath_prepend(str(DEVICE))
    import report

    import bench

    a = analysis.as_dict(analysis.analyze([FIXTURES / "device-arm64.systemd.txt"], None))
    boots = [
        {"arm": "stock", "analysis": a, "home_frame_s": 40.0, "launches": [], "home_screen_shown": True},
        {"arm": "stock", "analysis": a, "home_frame_s": 42.0, "launches": [], "home_screen_shown": False},
        {"arm": "headstart", "analysis": a, "home_frame_s": 30.0, "launches": []},
    ]
    summary = bench.summary(boots)
    rows = report.boot_rows({"summary": summary})
    assert [r[-2] for r in rows] == ["1 of 2", "-"]
    del summary["stock"]["home_screen_shown"]  # a summary written before the count was
    assert report.boot_rows({"summary": summary})[0][-2] == "-"
    sys.modules.pop("bench"), sys.modules.pop("report")


def test_the_boot_table_says_in_how_many_boots_a_unit_failed(monkeypatch):
    """Advice that breaks a unit is a bug in the advice: the units `systemctl --failed` lists, read
    from the agent's analysis, are counted per arm; runs from before they were read say nothing."""
    monkeypatch.syspath_prepend(str(DEVICE))
    import report
    import scenario

    import bench

    analyze = [
        "system state: degraded",
        "failed unit: proc-sys-fs-binfmt_misc.automount loaded failed failed Arbitrary Executable File Formats",
        "failed unit: ",
        "Startup finished in 3.257s (kernel) + 7.071s (userspace) = 10.329s",
    ]
    assert scenario.failed_units(analyze) == ["proc-sys-fs-binfmt_misc.automount"]
    assert scenario.failed_units(["system state: running"]) == []
    assert scenario.failed_units(["Startup finished in 3.257s (kernel)"]) is None  # an older image's agent
    a = analysis.as_dict(analysis.analyze([FIXTURES / "device-arm64.systemd.txt"], None))
    boot = {"analysis": a, "home_frame_s": 40.0, "launches": []}
    boots = [
        {**boot, "arm": "stock", "failed_units": []},
        {**boot, "arm": "headstart+advice", "failed_units": ["proc-sys-fs-binfmt_misc.automount"]},
        {**boot, "arm": "headstart+advice", "failed_units": []},
        {**boot, "arm": "headstart"},
        {**boot, "arm": "headstart", "failed_units": None},
    ]
    rows = report.boot_rows({"summary": bench.summary(boots)})
    assert [(r[0], r[-1]) for r in rows] == [("stock", "none"), ("headstart", "-"), ("headstart+advice", "in 1 of 2")]
    sys.modules.pop("bench"), sys.modules.pop("report"), sys.modules.pop("scenario")
