/* SPDX-License-Identifier: MIT */
#include "launch-report-send.h"

#include "options.h"
#include "launch-report.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

const char *launch_report_socket(const struct daemon_options *o) {
        if (!o->report_launches)
                return HS_LAUNCH_REPORT_SOCKET;
        return strcmp(o->report_launches, "none") == 0 ? NULL : o->report_launches;
}

int launch_report_open(const char *path) {
        if (!path || strlen(path) >= sizeof(((struct sockaddr_un *) 0)->sun_path))
                return -1;
        return socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

void launch_report_send(int fd, const char *path, const char *program) {
        if (fd < 0 || !program)
                return;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, path); /* its length was checked when fd was opened */
        /* ENOENT or ECONNREFUSED when headstart-pind is not running, EAGAIN when it is behind:
         * the count is only a hint, so the launch goes on either way. */
        (void) sendto(fd, program, strlen(program), MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *) &sa, sizeof sa);
}
