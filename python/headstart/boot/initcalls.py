"""Which slow initcalls may be taken off the boot path, and why the others may not.

`initcall_blacklist=` skips an initcall outright. For a driver whose device is not needed that is
safe; for core set-up (ACPI, the OOM killer, the crypto API, networking) it leaves a system that
misbehaves or does not boot. initcall_debug prints no initcall level, so a driver is recognised by
its name: module_platform_driver(), module_pci_driver() and the other module_*_driver() macros
(include/linux/device/driver.h) name their initcall `<driver struct>_driver_init`. Anything else
is treated as core: no blacklist advice, and the reason said.
"""

from __future__ import annotations

import re

_DRIVER = re.compile(r"^(\w+)_driver_init$")

# Why some initcalls that are often slow must stay (Linux 6.1 names).
CORE = {
    "acpi_init": "it brings up ACPI itself: devices, interrupt routing, power button and thermal zones",
    "oom_init": "it starts the out-of-memory killer's reaper",
    "crypto_algapi_init": "it sets up the crypto API that module signatures, dm-crypt and file systems use, "
    "and tests the algorithms built in (the crypto self-tests advice)",
    "inet_init": "it registers IPv4, which local sockets and most daemons need",
    "inet6_init": "it registers IPv6; leave it out with CONFIG_IPV6=n instead, if the product has no IPv6",
    "populate_rootfs": "it unpacks the initramfs",
    "chr_dev_init": "it creates /dev/null, /dev/zero, /dev/random and the other memory devices",
    "sock_init": "it sets up sockets",
    "load_system_certificate_list": "it loads the keys that check module signatures",
}


def driver(name: str) -> str | None:
    """The driver an initcall registers, when its name shows it is one."""
    m = _DRIVER.match(name)
    return m.group(1) if m else None


def why_not(name: str) -> str:
    """Why blacklisting this initcall is not advised."""
    if name in CORE:
        return CORE[name]
    return (
        "the log does not show it to be a driver (only module_*_driver() initcalls, named *_driver_init, "
        "are recognised as drivers), and a core initcall left out can leave the system unbootable"
    )
