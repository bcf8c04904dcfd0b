"""Provisioning: the headstart image's first boot, as a product's factory or first start would do
it, written to the image (no snapshot). headstartd serves the home screen and the second app and
learns what they load after main (kept in the kiosk's home, on the disk), so that every later boot
preloads it; device-provision.service profiles both cold and makes headstart-pind's plan on the
device, which every later boot prefetches. Done again whenever the image is rebuilt."""

from __future__ import annotations

import sys
from pathlib import Path

from qemu import BootFiles, DeviceError, booted
from scenario import HOME_FRAME


def provision(arch: str, files: BootFiles, accel: str, log: Path, timeout_s: float = 1200) -> None:
    stamp = files.image.with_suffix(".provisioned")
    if stamp.exists() and stamp.stat().st_mtime >= files.image.stat().st_mtime:
        return
    args = ["systemd.wants=device-provision.service"]
    with booted(arch, files, accel, args, timeout_s, log=log, snapshot=False) as boot:
        boot.wait_for(f"^{HOME_FRAME}$", timeout_s)
        try:
            _, made = boot.wait_for("^pin plan made", timeout_s)
            print(f"provisioning: {made}")
        except DeviceError as e:  # the device still boots and serves without a plan: say so, go on
            print(f"provisioning: no pin plan, headstart-pind will not run: {e}", file=sys.stderr)
        for _ in range(2):  # the first launch teaches the daemon; the second is served by what it learned
            boot.wait_for("^app frame served$", 600, after=boot.send("open served"))
            boot.wait_for("^app closed", 120, after=boot.send("close"))
        boot.wait_for("^synced$", 120, after=boot.send("sync"))  # QEMU is killed, not shut down
        boot.wait_for("^done$", 60, after=boot.send("done"))
    stamp.touch()
