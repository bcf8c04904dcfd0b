#!/bin/bash
# Lets the kernel run aarch64 ELF files through qemu-aarch64-static (a binfmt_misc registration),
# mounting binfmt_misc first where it is not (a container): the aarch64 tests and the arm64
# device's image (mmdebstrap configures its packages under qemu-user) need it. Debian's
# qemu-user-static registers it itself only where binfmt_misc was mounted as it was installed.
set -euo pipefail
binfmt=/proc/sys/fs/binfmt_misc
qemu=/usr/bin/qemu-aarch64-static
[ -e "$binfmt/qemu-aarch64" ] && exit 0
[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt"
# The ELF header of an aarch64 executable; F: qemu is opened now, P: argv[0] is kept.
magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
printf '%s' ":qemu-aarch64:M::$magic:$mask:$qemu:FP" >"$binfmt/register"
