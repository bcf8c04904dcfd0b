/* SPDX-License-Identifier: MIT */
#include "exec-watch.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch-users.h"
#include "log.h"

int exec_watch_open(bool served_counted) {
        int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_CLOEXEC | O_LARGEFILE);
        if (fd < 0)
                return log_info_errno(errno, "launches by exec are not counted (fanotify needs CAP_SYS_ADMIN); %s",
                                      served_counted ? "those headstartd serves are"
                                                     : "nor are those headstartd serves (--launch-socket none)"),
                       -errno;
        return fd;
}

void exec_watch_mark(int fd, const struct pin_plan *plan) {
        (void) fanotify_mark(fd, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL);
        for (size_t i = 0; i < plan->nprograms; i++)
                if (fanotify_mark(fd, FAN_MARK_ADD, FAN_OPEN_EXEC, AT_FDCWD, plan->programs[i].path) < 0)
                        log_warning_errno(errno, "%s: its launches by exec are not counted", plan->programs[i].path);
}

int exec_watch_read(int fd, dev_t *ret_dev, ino_t *ret_ino) {
        struct fanotify_event_metadata ev;
        ssize_t n = read(fd, &ev, sizeof ev);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        if (n < (ssize_t) sizeof ev || ev.vers != FANOTIFY_METADATA_VERSION || ev.fd < 0)
                return 0; /* an overflow event: launches were missed, which only costs accuracy */
        struct stat st;
        int r = fstat(ev.fd, &st);
        close(ev.fd);
        /* The process that execs, by the uid it has as it does: one gone by now is not counted. */
        if (r < 0 || !launch_user_counts(launch_user_of(ev.pid)))
                return 0;
        *ret_dev = st.st_dev;
        *ret_ino = st.st_ino;
        return 1;
}
