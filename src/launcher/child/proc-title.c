/* SPDX-License-Identifier: MIT */
#include "proc-title.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/prctl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "proc-stat.h"

/* The kernel's memory map of the process, as /proc/self/stat shows it, with the argument and
 * environment areas and the auxiliary vector (auxv_size 0: the kernel's copy stays) given. */
static int set_mm_map(const unsigned long long *v, unsigned long arg_start, unsigned long arg_end,
                      unsigned long env_start, unsigned long env_end, void *auxv, size_t auxv_size) {
        struct prctl_mm_map map = {
                .start_code = v[26],
                .end_code = v[27],
                .start_stack = v[28],
                .start_data = v[45],
                .end_data = v[46],
                .start_brk = v[47],
                .brk = (unsigned long) sbrk(0),
                .arg_start = arg_start,
                .arg_end = arg_end,
                .env_start = env_start,
                .env_end = env_end,
                .auxv = auxv,
                .auxv_size = (unsigned) auxv_size,
                .exe_fd = (unsigned) -1,
        };
        if (prctl(PR_SET_MM, PR_SET_MM_MAP, (unsigned long) &map, sizeof map, 0) < 0)
                return -errno;
        return 0;
}

int proc_title_set(const struct hs_launch_request *req) {
        struct proc_stat st;
        int r = proc_stat_read(0, &st);
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

        return set_mm_map(st.v, (unsigned long) req->argv[0], arg_end, env_start, env_end, NULL, 0);
}

/* What hs_entry_adopt_auxv rewrote: the other entries are the daemon's and the program's alike (its
 * AT_RANDOM points at the same 16 bytes, given new values). */
static bool describes_program(unsigned long type) {
        return type == AT_ENTRY || type == AT_PHDR || type == AT_PHNUM || type == AT_EXECFN;
}

int proc_auxv_set(void) {
        ElfW(auxv_t) auxv[64];
        int fd = open("/proc/self/auxv", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, auxv, sizeof auxv);
        close(fd);
        if (n <= 0 || (size_t) n % sizeof auxv[0] != 0)
                return n < 0 ? -errno : -EIO;
        for (size_t i = 0; i < (size_t) n / sizeof auxv[0]; i++)
                if (describes_program(auxv[i].a_type))
                        auxv[i].a_un.a_val = getauxval(auxv[i].a_type);

        struct proc_stat st;
        int r = proc_stat_read(0, &st);
        if (r < 0)
                return r;
        const unsigned long long *v = st.v;
        return set_mm_map(v, v[48], v[49], v[50], v[51], auxv, (size_t) n);
}
