/* SPDX-License-Identifier: MIT */
#include "proc-title.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Reads fields 26.. of /proc/self/stat (1-based numbering of proc(5)) into v[field]. */
static int read_stat_fields(unsigned long long v[53]) {
        char buf[2048];
        int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return -EIO;
        buf[n] = '\0';

        /* The command name (field 2) is in parentheses and may hold spaces: start after the last ')'. */
        char *p = strrchr(buf, ')');
        if (!p)
                return -EIO;
        p += 2;
        for (int field = 3; field <= 52 && *p; field++) {
                char *end;
                v[field] = strtoull(p, &end, 10);
                p = *end ? end + 1 : end;
        }
        return 0;
}

int proc_title_set(const struct hs_launch_request *req) {
        unsigned long long v[53] = { 0 };
        int r = read_stat_fields(v);
        if (r < 0)
                return r;

        char *last_arg = req->argv[req->fixed.argc - 1];
        unsigned long arg_end = (unsigned long) (last_arg + strlen(last_arg) + 1);
        unsigned long env_start = arg_end, env_end = arg_end;
        if (req->fixed.envc > 0) {
                char *last_env = req->envp[req->fixed.envc - 1];
                env_start = (unsigned long) req->envp[0];
                env_end = (unsigned long) (last_env + strlen(last_env) + 1);
        }

        struct prctl_mm_map map = {
                .start_code = v[26],
                .end_code = v[27],
                .start_stack = v[28],
                .start_data = v[45],
                .end_data = v[46],
                .start_brk = v[47],
                .brk = (unsigned long) sbrk(0),
                .arg_start = (unsigned long) req->argv[0],
                .arg_end = arg_end,
                .env_start = env_start,
                .env_end = env_end,
                .exe_fd = (unsigned) -1,
        };
        if (prctl(PR_SET_MM, PR_SET_MM_MAP, (unsigned long) &map, sizeof map, 0) < 0)
                return -errno;
        return 0;
}
