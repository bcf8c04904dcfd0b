/* SPDX-License-Identifier: MIT */
/* The whole user space of the test boot: says it is ready on the console, then powers off. Built
 * static, it is /init of a one-file initramfs or /sbin/init of a disk image (tests/boot/qemu_boot.py).
 * The kernel hands unknown command-line words to init as environment variables: hs_ansi=1 colours
 * the ready line as systemd does and leaves a line without its newline before powering off;
 * hs_reboot=1 reboots instead, so that one capture holds several boots. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <unistd.h>

static void say(int fd, const char *text) {
        (void) !write(fd, text, strlen(text));
}

int main(void) {
        int fd = open("/dev/console", O_WRONLY | O_NOCTTY);
        const char *ansi = getenv("hs_ansi"), *again = getenv("hs_reboot");

        if (fd < 0)
                fd = STDOUT_FILENO;
        if (ansi && strcmp(ansi, "1") == 0) {
                say(fd, "[\033[0;32m  OK  \033[0m] Started \033[0;1;39mheadstart\033[0m-ready: init running\n");
                say(fd, "powering off... ");
        } else {
                say(fd, "headstart-ready: init running\n");
        }
        sync();
        reboot(again && strcmp(again, "1") == 0 ? RB_AUTOBOOT : RB_POWER_OFF);
        return 0;
}
