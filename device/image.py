"""Builds the virtual device's disk images from Debian 12 packages (mmdebstrap) and this checkout's
Debian packages (make deb): a stock image, and the same image with headstart installed and set up
as a product would. Cached in build-device/ARCH/ and rebuilt when what they are made from changes.

    python device/image.py [--arch arm64|amd64] [--debs DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SUITE = "bookworm"
# What a kiosk product needs and nothing more: systemd, the compositor, the home screen (GNOME's font
# viewer, GTK 4 + libadwaita: a grid of tiles, as a home screen is) and the second app (galculator,
# GTK 3), fonts and the keyboard map weston needs, Debian's kernel and its initramfs tooling.
PACKAGES = [
    "systemd-sysv", "udev", "dbus", "libpam-systemd", "kmod", "initramfs-tools", "procps",
    "weston", "xkb-data", "gnome-font-viewer", "galculator", "fonts-dejavu-core",
]  # fmt: skip
UNITS = ["device-marks", "device-compositor", "device-home-screen", "device-app-agent.path"]
KERNEL = {"arm64": "linux-image-arm64", "amd64": "linux-image-amd64"}
# What initramfs-tools' MODULES=dep would keep on the device (the boot advice's initramfs): the
# drivers of its root disk and root file system. dep cannot be used here: it reads the machine it
# runs on, which is the builder, not the device.
ROOT_MODULES = ["virtio_pci", "virtio_blk", "ext4"]
IMAGE_SIZE = "3G"
# The device's initramfs in build-device/ARCH/boot/ by the kind the boot advice names (its
# "initramfs": device/bench.py boots them), the one that does most first: tiny-initramfs keeps the
# root's drivers alone too, and starts no udev. "": Debian's generic one, made with the kernel.
INITRDS = {"tiny": "initrd-tiny.img", "modules-dep": "initrd-small.img", "": "initrd.img"}


def run(argv: list[str]) -> None:
    print("+", " ".join(argv), file=sys.stderr, flush=True)
    subprocess.run(argv, check=True)


def digest(*parts: Path | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            for f in sorted(p for p in ([part] if part.is_file() else part.rglob("*")) if p.is_file()):
                h.update(f.name.encode() + f.read_bytes())
        else:
            h.update(part.encode())
    return h.hexdigest()[:16]


def window_shown(debs: Path, out: Path) -> Path:
    """The first-frame observer from the headstart package: both images run it (the stock one
    without the rest of headstart), so that both are measured the same way."""
    deb = next(debs.glob("headstart_*.deb"))
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(_tmpdir(out.parent)))
        run(["dpkg-deb", "-x", str(deb), str(tmp)])
        shutil.copy(tmp / "usr/libexec/headstart/window-shown", out)
    return out


@contextlib.contextmanager
def _tmpdir(parent: Path) -> Iterator[str]:
    path = parent / "tmp"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    try:
        yield str(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def base_root(arch: str, root: Path, boot: Path) -> None:
    """Debian's packages, the kiosk user, and the kernel and initramfs copied out for QEMU: the slow
    part (an arm64 root configures its packages under qemu-user), kept apart so that a change to the
    device's own files does not redo it."""
    shutil.rmtree(root, ignore_errors=True)
    boot.mkdir(parents=True, exist_ok=True)
    hooks = [
        'chroot "$1" useradd --create-home --uid 1000 --groups video,render,input kiosk',
        'echo device >"$1/etc/hostname"',
        'echo "/dev/vda / ext4 defaults,noatime 0 1" >"$1/etc/fstab"',
        f'cp -L "$1"/vmlinuz "$1"/initrd.img {boot}/',
    ]
    argv = ["mmdebstrap", f"--arch={arch}", "--variant=apt", "--include=" + ",".join([*PACKAGES, KERNEL[arch]])]
    argv += [f"--customize-hook={h}" for h in hooks]
    run([*argv, SUITE, str(root)])


def small_initramfs(root: Path, out: Path) -> None:
    """Debian's initramfs made with MODULES=list and the root's drivers alone (ROOT_MODULES), for the
    advice's arm of the benchmark; the generic one (MODULES=most) stays the images' own."""
    conf = root / "tmp/initramfs-small"
    shutil.rmtree(conf, ignore_errors=True)
    shutil.copytree(root / "etc/initramfs-tools", conf)
    settings = (conf / "initramfs.conf").read_text()
    (conf / "initramfs.conf").write_text(settings.replace("MODULES=most", "MODULES=list"))
    with (conf / "modules").open("a") as modules:
        modules.write("".join(m + "\n" for m in ROOT_MODULES))
    version = _kernel_version(root)
    try:
        run(["chroot", str(root), "mkinitramfs", "-d", "/tmp/initramfs-small", "-o", "/tmp/initrd-small.img", version])
        shutil.move(root / "tmp/initrd-small.img", out)
    finally:
        shutil.rmtree(conf, ignore_errors=True)


def tiny_initramfs(arch: str, root: Path, out: Path) -> None:
    """Debian's tiny-initramfs with the root's drivers alone (ROOT_MODULES), for the advice's arm of
    the benchmark when its advice is an initramfs without udev. mktirfs runs in the build root (its
    kernel's modules) from the package unpacked into the root's /tmp, so that the images do not
    carry it."""
    unpacked = root / "tmp/tiny-initramfs"
    shutil.rmtree(unpacked, ignore_errors=True)
    unpacked.mkdir(parents=True)
    try:
        # apt-get as root downloads into a folder its sandbox user cannot write, and says so
        subprocess.run(["apt-get", "download", "-q", f"tiny-initramfs-core:{arch}"], cwd=unpacked, check=True)
        run(["dpkg-deb", "-x", str(next(unpacked.glob("tiny-initramfs-core_*.deb"))), str(unpacked)])
        script = unpacked / "usr/sbin/mktirfs"
        # its own files from where they were unpacked, not where the package would install them
        share, lib = "/usr/share/tiny-initramfs/", 'PKGLIBEXECDIR="/usr/lib/'
        text = script.read_text().replace(share, "/tmp/tiny-initramfs" + share)
        script.write_text(text.replace(lib, 'PKGLIBEXECDIR="/tmp/tiny-initramfs/usr/lib/'))
        version = _kernel_version(root)
        modules = "--include-modules=" + ",".join(ROOT_MODULES)
        # no microcode: the device's CPU is QEMU's (mktirfs would read the builder's /proc/cpuinfo)
        mktirfs = ["sh", "/tmp/tiny-initramfs/usr/sbin/mktirfs", "-o", "/tmp/initrd-tiny.img", "-m", "no", "-M", "no"]
        run(["chroot", str(root), *mktirfs, modules, version])
        shutil.move(root / "tmp/initrd-tiny.img", out)
        out.chmod(0o644)  # mktirfs's temporary file's mode, as the other initramfs
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)


def device_files(root: Path, observer: Path) -> None:
    """The device's own units and scripts (overlay/), the first-frame observer, the units enabled."""
    shutil.copytree(HERE / "overlay", root, dirs_exist_ok=True)
    target = root / "usr/libexec/headstart-device/window-shown"
    shutil.copy(observer, target)
    run(["chroot", str(root), "chgrp", "kiosk", "/usr/libexec/headstart-device/window-shown"])
    run(["systemctl", f"--root={root}", "set-default", "graphical.target"])
    run(["systemctl", f"--root={root}", "enable", *UNITS])
    # No login on the serial console: it carries the device's marks, and while agetty sets the tty
    # up (seconds, under emulation) a mark written to the console waits, which moved the figures.
    run(["systemctl", f"--root={root}", "mask", "serial-getty@.service"])


@contextlib.contextmanager
def chroot_mounts(root: Path) -> Iterator[None]:
    mounted = []
    try:
        for what in ("proc", "sys", "dev"):
            run(["mount", "--rbind", f"/{what}", str(root / what)])
            mounted.append(root / what)
        yield
    finally:
        for path in reversed(mounted):
            subprocess.run(["umount", "-R", str(path)], check=False)


def install_headstart(root: Path, debs: Path) -> None:
    """headstart's packages with apt (their dependencies from Debian, and strace, which profiling
    uses), the kiosk's daemon enabled in the system manager with the home screen and the second app
    registered and learning kept on the disk, pind's units enabled (they wait for the plan
    provisioning makes)."""
    inside = root / "tmp/headstart-debs"
    inside.mkdir(parents=True)
    for deb in debs.glob("*.deb"):
        if "dbgsym" not in deb.name and "-dev_" not in deb.name:
            shutil.copy(deb, inside)
    shutil.copy("/etc/resolv.conf", root / "etc/resolv.conf")
    with chroot_mounts(root):
        run(
            [
                "chroot",
                str(root),
                "sh",
                "-c",
                "apt-get update -q && apt-get install -y --no-install-recommends strace /tmp/headstart-debs/*.deb",
            ]
        )
        run(["chroot", str(root), "apt-get", "clean"])
    shutil.rmtree(inside)
    (root / "etc/resolv.conf").unlink()
    shutil.copytree(HERE / "headstart", root, dirs_exist_ok=True)
    # The kiosk's daemon run by the system manager, as headstart@.socket is meant for a single-user
    # image: it starts once the basic system is up, so that its zygote has loaded the libraries by the
    # time the compositor is ready. The user manager's own headstart.service starts only after the
    # compositor's login session has begun, and the home screen then waited for its zygote.
    run(["systemctl", f"--root={root}", "enable", "headstart@kiosk.socket", "headstart@kiosk.service"])
    # The app agent (the kiosk) reads the daemon's log for the benchmark (app-agent's daemon-log).
    run(["chroot", str(root), "usermod", "--append", "--groups", "systemd-journal", "kiosk"])
    # Prefetch at boot and pinning, once provisioning has made the plan on the device.
    run(["systemctl", f"--root={root}", "enable", "headstart-pind.service", "headstart-pind-prefetch.service"])


def ext4(root: Path, image: Path) -> None:
    tmp = image.with_suffix(".tmp")
    run(["mkfs.ext4", "-q", "-F", "-L", "root", "-d", str(root), str(tmp), IMAGE_SIZE])
    tmp.rename(image)


def build(arch: str, debs: Path, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    boot, base, work = out / "boot", out / "base-root", out / "work-root"
    base_key = digest(arch, SUITE, " ".join(PACKAGES))
    stock_key = digest(base_key, HERE / "overlay", Path(__file__), *sorted(debs.glob("headstart_*.deb")))
    headstart_key = digest(stock_key, HERE / "headstart", *sorted(debs.glob("*.deb")))
    images = {"stock": out / "stock.img", "headstart": out / "headstart.img"}
    if _stamp(out / "base.stamp") != base_key or not (base / "etc").exists():
        base_root(arch, base, boot)
        (out / "base.stamp").write_text(base_key)
    initramfs_key = digest(base_key, " ".join(ROOT_MODULES), Path(__file__))
    makers = {"modules-dep": lambda to: small_initramfs(base, to), "tiny": lambda to: tiny_initramfs(arch, base, to)}
    for kind, make in makers.items():
        initrd, stamp = boot / INITRDS[kind], out / INITRDS[kind].replace(".img", ".stamp")
        if not initrd.exists() or _stamp(stamp) != initramfs_key:
            make(initrd)
            stamp.write_text(initramfs_key)
    if not images["stock"].exists() or _stamp(out / "stock.stamp") != stock_key:
        _copy_tree(base, work)
        device_files(work, window_shown(debs, out / "window-shown"))
        ext4(work, images["stock"])
        (out / "stock.stamp").write_text(stock_key)
    if not images["headstart"].exists() or _stamp(out / "headstart.stamp") != headstart_key:
        _copy_tree(base, work)
        device_files(work, window_shown(debs, out / "window-shown"))
        install_headstart(work, debs)
        ext4(work, images["headstart"])
        (out / "headstart.stamp").write_text(headstart_key)
    shutil.rmtree(work, ignore_errors=True)
    initrds = {f"initrd {kind or 'generic'}": boot / name for kind, name in INITRDS.items()}
    return {**images, "kernel": boot / "vmlinuz", **initrds}


def with_files(image: Path, copy: Path, files: dict[str, str]) -> None:
    """COPY: IMAGE with FILES (path on the device -> text) written into it, as a product's image would
    carry them (the boot advice's drop-ins). The copy's journal is replayed first: a provisioned image
    ends with QEMU killed after a sync, and its next boot would replay the journal over what debugfs
    wrote. Each file is read back, since debugfs goes on past a command that fails."""
    run(["cp", "--sparse=always", str(image), str(copy)])
    fsck = subprocess.run(["e2fsck", "-fy", str(copy)], capture_output=True, text=True)
    if fsck.returncode > 1:  # 1: errors corrected, the journal's replay among them
        raise SystemExit(f"e2fsck {copy}: exit status {fsck.returncode}: {fsck.stdout.strip()[-300:]}")
    with _tmpdir(copy.parent) as tmp:
        commands = []
        for i, (path, text) in enumerate(files.items()):
            (Path(tmp) / str(i)).write_text(text)
            folder = Path(path).parent
            # mkdir of a folder that exists fails, and debugfs goes on; rm of a missing file too
            commands += [f"mkdir {p}" for p in reversed(folder.parents) if p != Path("/")] + [f"mkdir {folder}"]
            commands += [f"cd {folder}", f"rm {Path(path).name}", f"write {tmp}/{i} {Path(path).name}", "cd /"]
        script = Path(tmp) / "commands"
        script.write_text("\n".join(commands) + "\n")
        subprocess.run(["debugfs", "-w", "-f", str(script), str(copy)], check=True, capture_output=True)
    for path, text in files.items():
        read = subprocess.run(["debugfs", "-R", f"cat {path}", str(copy)], capture_output=True, text=True)
        if read.stdout != text:
            raise SystemExit(f"{copy}: {path} could not be written (debugfs: {read.stderr.strip()[-200:]})")


def _kernel_version(root: Path) -> str:
    return next((root / "boot").glob("vmlinuz-*")).name.removeprefix("vmlinuz-")


def _copy_tree(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    run(["cp", "-a", str(src), str(dst)])


def _stamp(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="arm64", choices=sorted(KERNEL))
    parser.add_argument(
        "--debs", type=lambda s: Path(s).resolve(), required=True, help="the folder of `make deb`'s packages"
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not any(args.debs.glob(f"headstart_*_{args.arch}.deb")):
        raise SystemExit(f"no headstart_*_{args.arch}.deb in {args.debs}: run make deb DEB_ARCH={args.arch}")
    for name, path in build(args.arch, args.debs, args.out or REPO / "build-device" / args.arch).items():
        print(f"{name}: {path}")


if __name__ == "__main__":
    main()
