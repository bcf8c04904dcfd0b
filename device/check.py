"""make test-device: the cached images booted and checked, slow and opt-in.

- a good boot of the headstart image: every phase from power-on to the home screen's first frame
  in `headstart boot analyze`, the home screen on the emulated display (QEMU's screendump), the
  second app's frames, each on the display over the home screen, headstartd having served the home screen
  (its --status, read over the console), a served and an exec'd second app ending alike;
- broken devices end in one line naming what failed, within a timeout: a kernel that is missing,
  and a compositor that cannot start (masked), whose home screen therefore never shows.

  python device/check.py [--arch arm64]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import scenario
from headstart.daemon import prepared_pending
from provision import provision
from qemu import BootFiles, DeviceError, accelerator, describe, require

from bench import analyze, files_for

REPO = Path(__file__).resolve().parent.parent
PHASES = [
    "kernel start",
    "initramfs unpacking",
    "root file system mounted",
    "init started",
    scenario.COMPOSITOR,
    "first program ready",
]


def check_good_boot(arch: str, out: Path, accel: str) -> list[str]:
    files = files_for(out, "headstart")
    provision(arch, files, accel, out / "check" / "provision.log")
    plan = scenario.Plan(cold_mode="served", warm_modes=["exec", "served"], warm_runs=1, kernel_args=[])
    result = scenario.run(arch, files, accel, plan, out / "check" / "good.log")
    a = analyze(result)
    failures = []
    names = " ".join(p.name for p in a.timeline.phases)
    for moment in PHASES:
        if moment not in names:
            failures.append(f"no phase ends or starts at {moment!r}: phases are {names}")
    print("phases:", "; ".join(f"{p.name} {p.duration_s:.2f} s" for p in a.timeline.phases))
    print(f"home screen frame at {result.home_frame_s:.2f} s; slowest units:", a.timeline.services[:3])
    print(f"the screen shows {result.screen.colours} colours")
    if not result.home_screen_shown:
        failures.append(
            f"the home screen is not on the screen ({result.screen.colours} colours, as a text console's):"
            " the compositor drew nothing, though its clients' frames were committed"
        )
    if result.failed_units is None:
        failures.append("the device's agent did not say which units failed: its image is older than device/")
    elif result.failed_units:
        failures.append(f"units failed in the boot: {' '.join(result.failed_units)}")
    cpu = a.timeline.cpu
    top = [(u, round(s, 2)) for u, s, _ in cpu.units[:3]]
    print(f"CPU time by the home screen's frame: {top}, machine busy {cpu.busy_s} s, idle {cpu.idle_s} s")
    if not any(u == "init.scope" for u, _, _ in cpu.units) or cpu.busy_s is None:
        failures.append("no CPU account by unit and for the machine read at the home screen's frame")
    for launch in result.launches:
        waited = f" (after {launch['waited_for_child_s']:.0f} s waiting for the prepared child to start)"
        print(f"app {'cold' if launch['cold'] else 'warm'} {launch['mode']}: {launch['ms']:.0f} ms, "
              f"status {launch['status']}, output {launch['output'][:12]}, on the screen {launch['on_screen']}"
              f"{waited if launch['waited_for_child_s'] >= 1 else ''}")  # fmt: skip
    hidden = [f"{launch['mode']} ({'cold' if launch['cold'] else 'warm'})" for launch in result.launches
              if not launch["on_screen"]]  # fmt: skip
    if hidden:
        failures.append(f"the second app's frame was committed but the screen still showed the home screen: {hidden}")
    ends = {(launch["status"], launch["output"]) for launch in result.launches}
    if len(ends) != 1:
        failures.append(f"served and exec'd launches of the second app ended differently: {sorted(ends)}")
    served = sum(1 for launch in result.launches if launch["mode"] == "served")
    counts = {k: v for line in result.status if (m := re.match(r"([\w-]+): (\d+)$", line)) for k, v in [m.groups()]}
    print("headstartd:", {k: counts.get(k) for k in ("launches", "declines")})
    if int(counts.get("launches", -1)) != served + 1:
        failures.append(f"headstartd served {counts.get('launches')} launches, not the home screen and {served} apps")
    # Both served launches take a child whose toolkit was started ahead: the cold one, with the
    # launch kept at provisioning (the image's first boot); the warm one, after the cold one like it.
    prepared = [line for line in result.status if line.startswith("prepared: ")]
    print("headstartd:", prepared)
    # TAKEN (2) says both launches took one. The child after them may still be to come when the status
    # is read: due (waiting up to 5 s for a spare CPU after a launch) or starting (seconds, emulated).
    values = [line.removeprefix("prepared: ") for line in prepared]
    if not any((v.startswith("ready ") or prepared_pending(v)) and v.split()[1:4:2] == ["gtk3", "2"] for v in values):
        failures.append(f"the second app's served launches were not both taken by a prepared child: {prepared}")
    return failures


def check_broken(arch: str, out: Path, accel: str) -> list[str]:
    failures = []
    files = files_for(out, "headstart")
    missing = BootFiles(out / "boot" / "no-such-kernel", files.initrd, files.image)
    expect = [
        ("a missing kernel", missing, [], r"no-such-kernel is missing"),
        (
            "a compositor that cannot start",
            files,
            # Only the kernel's emergencies on the console: a line it printed while the relay wrote
            # the device's (amd64: "powernow_k8: Power state transitions not supported", as udev
            # loaded it) came out in the middle of that line and cut the words checked here.
            ["systemd.mask=device-compositor.service", "loglevel=1"],
            r"Dependency failed for|session \(the compositor's unit\) did not start|no 'home screen frame'",
        ),
    ]
    for what, f, args, pattern in expect:
        started = time.monotonic()
        plan = scenario.Plan("exec", ["exec"], 0, args, timeout_s=600)
        try:
            scenario.run(arch, f, accel, plan, out / "check" / "broken.log")
            failures.append(f"{what}: the run did not fail")
        except DeviceError as e:
            line = str(e)
            print(f"{what}: {line} ({time.monotonic() - started:.0f} s)")
            if "\n" in line or not re.search(pattern, line):
                failures.append(f"{what}: expected one line matching {pattern!r}, got {line!r}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="arm64", choices=["arm64", "amd64"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or REPO / "build-device" / args.arch
    (out / "check").mkdir(parents=True, exist_ok=True)
    try:
        require(args.arch)
        accel = accelerator(args.arch, out / "accel")
        print(describe(args.arch, accel))
        failures = check_good_boot(args.arch, out, accel) + check_broken(args.arch, out, accel)
    except DeviceError as e:
        failures = [str(e)]
    for f in failures:
        print(f"FAILED: {f}", file=sys.stderr)
    print("test-device passed" if not failures else f"test-device: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
