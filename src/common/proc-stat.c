/* SPDX-License-Identifier: MIT */
#include "proc-stat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int proc_stat_read(pid_t pid, struct proc_stat *ret) {
        char path[64], buf[2048];
        if (pid)
                snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        else
                snprintf(path, sizeof path, "/proc/self/stat");
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return -EIO;
        buf[n] = '\0';
        char *p = strrchr(buf, ')');
        if (!p || p[1] != ' ' || !p[2])
                return -EIO;
        *ret = (struct proc_stat){ .state = p[2] };
        p += 3;
        for (int field = 4; field < PROC_STAT_FIELDS && *p; field++) {
                char *end;
                ret->v[field] = strtoull(p, &end, 10);
                p = *end ? end + 1 : end;
        }
        return 0;
}
