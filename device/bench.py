"""make device-bench: the device's boots, three arms in rotating order, and its second app's launches.

  1. stock: the image without headstart;
  2. headstart: headstartd serving the home screen with what it learned at provisioning;
  3. headstart + advice: arm 2 booted with what `headstart boot analyze` advises for an analysis
     boot of arm 2 (the only boot with initcall_debug, not timed), applied on the kernel command
     line, with the device's initramfs that the advice names (the root's drivers alone, or
     tiny-initramfs: no udev), and from a copy of arm 2's image with the advice's unit drop-ins written into it
     (docs/device.md says which advice and why); then booted once so, not timed either, for a second
     round of advice that shows only once the first has made the rest faster (SECOND_ROUND_TOPICS).

Each boot: power-on to the home screen's first frame (the phases by `headstart boot analyze`), then
the second app opened cold (first after boot: served and exec'd in turn across the boots of arms 2
and 3) and warm (repeated, alternating). Writes bench.json and report.html into --out.

    python device/bench.py --arch arm64 --boots 5 [--warm-runs 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import statistics
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import report
import scenario
from headstart.boot import analysis
from headstart.boot.advice import INITRAMFS_KINDS
from image import INITRDS, with_files
from provision import provision
from qemu import VERBOSE_ARGS, BootFiles, DeviceError, accelerator, board_args, describe, require

REPO = Path(__file__).resolve().parent.parent
ARMS = ["stock", "headstart", "headstart+advice"]
ADVICE_IMAGE = "headstart+advice.img"  # arm 2's image with the advice's drop-ins, made by each run


def analyze(result: scenario.BootResult) -> analysis.Analysis:
    marks = [(name, re.compile(p)) for name, p in scenario.MARKS]
    return analysis.analyze([result.log, result.systemd_log], re.compile(scenario.READY_REGEX), None, marks, kiosk=True)


def files_for(out: Path, arm: str, initramfs: str = "") -> BootFiles:
    image = out / ("stock.img" if arm == "stock" else "headstart.img")
    return BootFiles(out / "boot/vmlinuz", out / "boot" / INITRDS[initramfs], image)


@dataclass
class Applied:
    """What arm 3 applies of the advice: kernel arguments, one of the device's initramfs, unit drop-ins."""

    kernel_args: list[str]
    initramfs: str  # a key of INITRDS
    drop_ins: dict[str, str] = dataclasses.field(default_factory=dict)  # path on the device -> text

    @staticmethod
    def of(recommendations: list[dict[str, Any]]) -> Applied:
        args = list(dict.fromkeys(a for r in recommendations for a in r["kernel_args"]))  # a unit masked twice
        drop_ins = {path: text for r in recommendations for path, text in r.get("drop_ins", {}).items()}
        named = {r["initramfs"] for r in recommendations}
        return Applied(args, next(kind for kind in INITRDS if kind in named or not kind), drop_ins)

    def describe(self) -> str:
        initrd = f"; the device's {INITRAMFS_KINDS[self.initramfs]}" if self.initramfs else ""
        drop_ins = f"; drop-ins {', '.join(self.drop_ins)}" if self.drop_ins else ""
        return (" ".join(self.kernel_args) or "nothing on the command line") + initrd + drop_ins

    def files(self, out: Path, arm: str) -> BootFiles:
        files = files_for(out, arm, self.initramfs)
        return dataclasses.replace(files, image=out / ADVICE_IMAGE) if self.drop_ins else files


NOTHING = Applied([], "")


def one_boot(arch: str, out: Path, accel: str, arm: str, n: int, warm_runs: int, applied: Applied) -> dict[str, Any]:
    served = arm != "stock"
    plan = scenario.Plan(
        cold_mode="served" if served and n % 2 == 0 else "exec",
        warm_modes=["served", "exec"] if served else ["exec"],
        warm_runs=warm_runs,
        kernel_args=applied.kernel_args,
    )
    return _booted(arch, out, accel, arm, f"{arm}-{n}", n, plan, applied)


def analysis_boot(arch: str, out: Path, accel: str) -> dict[str, Any]:
    """Arm 2 booted once with each initcall timed and every kernel line on the console, which the
    advice reads (the slowest initcalls, the crypto self-tests), and the daemon's log (when it was
    ready, and how it served the home screen). Not timed with the arms: those lines cost a boot
    under emulation about 1.5 s on the console, which `quiet` would then take back in arm 3 alone
    (docs/device.md)."""
    plan = scenario.Plan(cold_mode="exec", warm_modes=["exec"], warm_runs=0, kernel_args=VERBOSE_ARGS, daemon_log=True)
    return _booted(arch, out, accel, "headstart", "analysis", -1, plan, NOTHING)


# Advice that shows only once the first round's has made the rest of the boot faster: the home
# screen waiting for the daemon's start (in arm 2 and the analysis boot the daemon is ready first).
SECOND_ROUND_TOPICS = ("served at boot",)


def second_round(arch: str, out: Path, accel: str, applied: Applied) -> list[dict[str, Any]]:
    """Arm 3 booted once with the first round's advice, not timed, and analysed again, as a user
    applies advice and looks at the next boot: what SECOND_ROUND_TOPICS advise from it."""
    plan = scenario.Plan(
        cold_mode="exec", warm_modes=["exec"], warm_runs=0, kernel_args=applied.kernel_args, daemon_log=True
    )
    b = _booted(arch, out, accel, "headstart+advice", "analysis-round-2", -1, plan, applied)
    return [r for r in b["analysis"]["recommendations"] if r["topic"] in SECOND_ROUND_TOPICS]


def _booted(
    arch: str, out: Path, accel: str, arm: str, name: str, n: int, plan: scenario.Plan, applied: Applied
) -> dict[str, Any]:
    log = out / "bench" / f"{name}.log"
    result = scenario.run(arch, applied.files(out, arm), accel, plan, log)
    a = analyze(result)
    return {
        "arm": arm,
        "boot": n,
        "kernel_args": plan.kernel_args,
        "initramfs": applied.initramfs,
        **result.as_dict(),
        "analysis": analysis.as_dict(a),
    }


@contextlib.contextmanager
def host_cache_locked(files: list[Path]) -> Iterator[None]:
    """The images and kernels read into the host's page cache and locked there for the whole run
    (vmtouch). This host reclaims its cache on its own (DAMON): boots would read the images from its
    disk or from its memory by chance (63 MB of the 985 MB stock image was cached after a rebuild)."""
    try:
        # -t reads them in and returns; -l then locks what is already there and stays until killed,
        # so that the first boot starts only once everything is cached.
        subprocess.run(["vmtouch", "-tq", *map(str, files)], check=True, capture_output=True)
        locker = subprocess.Popen(["vmtouch", "-lq", *map(str, files)], stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"device-bench: the images are not locked in the host's cache ({e}); boots may read them from its disk")
        yield
        return
    try:
        yield
    finally:
        locker.terminate()
        locker.wait()


def summary(boots: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for arm in ARMS:
        mine = [b for b in boots if b["arm"] == arm]
        if not mine:
            continue
        phases: dict[str, list[float]] = {}
        for b in mine:
            for p in b["analysis"]["phases"]:
                if not p["name"].startswith("systemd: "):
                    phases.setdefault(p["name"], []).append(p["duration_s"])
        launches: dict[str, list[float]] = {}
        waits: dict[str, list[float]] = {}
        for b in mine:
            for launch in b["launches"]:
                key = f"{'cold' if launch['cold'] else 'warm'} {launch['mode']}"
                launches.setdefault(key, []).append(launch["ms"])
                waits.setdefault(key, []).append(launch.get("waited_for_child_s", 0.0))
        # Whether each boot's display showed the compositor's output (not read in older runs).
        shown = [b["home_screen_shown"] for b in mine if "home_screen_shown" in b]
        failed = [bool(b["failed_units"]) for b in mine if b.get("failed_units") is not None]  # None: not read
        out[arm] = {
            "boots": len(mine),
            "home_screen_shown": sum(shown) if shown else None,
            "boots_with_failed_units": sum(failed) if failed else None,
            "home_frame_s": stats([b["home_frame_s"] for b in mine]),
            "phases_s": {k: stats(v) for k, v in phases.items()},
            "app_ms": {k: stats(v) for k, v in launches.items()},
            # Seconds each launch first waited for the daemon's prepared child to finish starting.
            "app_waits_s": waits,
            **cpu_summary([b["analysis"]["cpu"] for b in mine]),
        }
    return out


def cpu_summary(accounts: list[dict[str, Any]]) -> dict[str, Any]:
    """CPU time by unit until the home screen's frame, over the boots whose account has the unit
    (one without it had no cgroup left: unknown, not 0), and the share of the time the CPUs were busy."""
    used = [{u["unit"]: u["cpu_s"] for u in a["units"]} for a in accounts]
    names = sorted({n for u in used for n in u})
    busy = [a["busy_share"] for a in accounts if a["busy_share"] is not None]
    return {
        "cpu_s": {n: stats([u[n] for u in used if n in u]) for n in names},
        "cpu_busy_share": stats(busy) if busy else None,
    }


def stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]  # noqa: E731
    return {"median": statistics.median(ordered), "p10": pick(0.1), "p90": pick(0.9), "n": len(ordered)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="arm64", choices=["arm64", "amd64"])
    parser.add_argument("--boots", type=int, default=5, help="boots per arm (default 5)")
    parser.add_argument("--warm-runs", type=int, default=5, help="repeated launches of each mode per boot")
    parser.add_argument("--out", type=Path, help="default build-device/ARCH")
    args = parser.parse_args()
    out = args.out or REPO / "build-device" / args.arch
    try:
        require(args.arch)
        accel = accelerator(args.arch, out / "accel")
        print(describe(args.arch, accel))
        (out / "bench").mkdir(parents=True, exist_ok=True)
        provision(args.arch, files_for(out, "headstart"), accel, out / "bench" / "provision.log")
        boots: list[dict[str, Any]] = []
        with contextlib.ExitStack() as locked:
            locked.enter_context(
                host_cache_locked([*(out / "boot").glob("*"), out / "stock.img", out / "headstart.img"])
            )
            advised = analysis_boot(args.arch, out, accel)
            recommendations = advised["analysis"]["recommendations"]
            applied = Applied.of(recommendations)
            print(f"analysis boot: home screen frame at {advised['home_frame_s']:.2f} s (not timed with the arms)")
            if applied.drop_ins:
                with_files(out / "headstart.img", out / ADVICE_IMAGE, applied.drop_ins)
            later = second_round(args.arch, out, accel, applied)
            print(f"second round: {', '.join(r['topic'] for r in later) or 'nothing more'} advised")
            if later:
                recommendations += [dict(r, round=2) for r in later]
                applied = Applied.of(recommendations)
                with_files(out / "headstart.img", out / ADVICE_IMAGE, applied.drop_ins)
            print(f"advice applied: {applied.describe()}")
            if applied.drop_ins:
                locked.enter_context(host_cache_locked([out / ADVICE_IMAGE]))
            for n in range(args.boots):
                # Each arm takes each place in turn (1 2 3, 2 3 1, 3 1 2): a boot slowed by the one
                # before it, or by the host at that point of a round, is not always the same arm's.
                order = ARMS[n % len(ARMS) :] + ARMS[: n % len(ARMS)]
                for arm in order:
                    mine = applied if arm == "headstart+advice" else NOTHING
                    b = one_boot(args.arch, out, accel, arm, n, args.warm_runs, mine)
                    boots.append(b)
                    shown = "" if b["home_screen_shown"] else f" (NOT on the screen: {b['screen_colours']} colours)"
                    failed = f" (failed units: {' '.join(b['failed_units'])})" if b["failed_units"] else ""
                    print(f"{arm} boot {n}: home screen frame at {b['home_frame_s']:.2f} s{shown}{failed}", flush=True)
                    _save(out, args, accel, advised, boots, applied)
    except DeviceError as e:
        print(f"device-bench: {e}", file=sys.stderr)
        return 1
    data = _save(out, args, accel, advised, boots, applied)
    report.print_tables(data)
    print(f"report: {out / 'bench' / 'report.html'}")
    return 0


def _save(
    out: Path,
    args: argparse.Namespace,
    accel: str,
    advised: dict[str, Any],
    boots: list[dict[str, Any]],
    applied: Applied,
) -> dict:
    data = {
        "arch": args.arch,
        "accelerator": accel,
        "board_args": board_args(args.arch, accel),
        "advice_args": applied.kernel_args,
        "advice_initramfs": applied.initramfs,
        "advice_drop_ins": applied.drop_ins,
        "analysis_boot": advised,
        "summary": summary(boots),
        "boots": boots,
    }
    (out / "bench" / "bench.json").write_text(json.dumps(data, indent=1))
    (out / "bench" / "report.html").write_text(report.page(data))
    return data


if __name__ == "__main__":
    sys.exit(main())
