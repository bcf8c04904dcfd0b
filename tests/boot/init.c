/* SPDX-License-Identifier: MIT */
/* The whole user space of the test boot: says it is ready on the console, then powers off. Built
 * static, it is /init of a one-file initramfs (tests/boot/qemu_boot.py). */
#include <fcntl.h>
#include <string.h>
#include <sys/reboot.h>
#include <unistd.h>

int main(void) {
        static const char ready[] = "headstart-ready: init running\n";
        int fd = open("/dev/console", O_WRONLY | O_NOCTTY);
        (void) !write(fd >= 0 ? fd : STDOUT_FILENO, ready, strlen(ready));
        sync();
        reboot(RB_POWER_OFF);
        return 0;
}
