#!/bin/bash
# Makes what the aarch64 tests need to run aarch64 programs on this machine with qemu-user:
#  - the kernel runs aarch64 ELF files through qemu-aarch64-static (a binfmt_misc registration);
#  - Debian's arm64 C library on the host (multiarch), because an aarch64 program that execs
#    /lib/ld-linux-aarch64.so.1 (the daemon asking the loader for a closure) reaches the host's path;
#  - a sysroot DIR with Debian's arm64 packages of the programs the tests run, and everything they
#    depend on, unpacked (not installed): qemu-user reads files there first (QEMU_LD_PREFIX=DIR).
#   setup.sh DIR
set -euo pipefail

dest=$1
programs=(gzip sed grep coreutils diffutils bzip2 xz-utils libjpeg-turbo-progs lame sqlite3 jq)
"$(dirname "$0")/../../cross/binfmt-aarch64.sh"

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	echo "adding the arm64 architecture to apt, to download its packages"
	dpkg --add-architecture arm64
	apt-get update -qq
elif ! apt-cache show "${programs[0]}:arm64" >/dev/null 2>&1; then
	apt-get update -qq
fi
if ! dpkg-query -W -f='${Status}' libc6:arm64 2>/dev/null | grep -q 'install ok installed'; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libc6:arm64
fi

[ -f "$dest/.complete" ] && exit 0

# Every package they need, at any depth (virtual packages and the host's own are left out).
mapfile -t packages < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
	--no-breaks --no-replaces --no-enhances "${programs[@]/%/:arm64}" |
	grep -E '^[a-z0-9].*:arm64$' | sort -u)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download -qq "${packages[@]}")
rm -rf "$dest"
mkdir -p "$dest"
for deb in "$work"/*.deb; do
	dpkg-deb -x "$deb" "$dest"
done
touch "$dest/.complete"
echo "aarch64 sysroot ready in $dest (${#packages[@]} packages)"
