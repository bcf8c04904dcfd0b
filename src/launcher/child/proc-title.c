/* SPDX-License-Identifier: MIT */
#include "proc-title.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "proc-stat.h"

int proc_title_set(const struct hs_launch_request *req) {
        struct proc_stat st;
        int r = proc_stat_read(0, &st);
        if (r < 0)
                return r;
        const unsigned long long *v = st.v;

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
