/* SPDX-License-Identifier: MIT */
#include "launch-settle.h"

#include <unistd.h>

#include "proc-stat.h"

/* Its CPU time; false when it is gone, a zombie, or unreadable. */
static bool read_ticks(pid_t pid, uint64_t *ret) {
        struct proc_stat st;
        if (proc_stat_read(pid, &st) < 0 || st.state == 'Z')
                return false;
        *ret = proc_stat_cpu_ticks(&st);
        return true;
}

void launch_settle_start(struct launch_settle *l, pid_t pid, uint64_t now_ms) {
        *l = (struct launch_settle){ .pid = pid, .looked_ms = now_ms };
        if (!read_ticks(pid, &l->ticks))
                l->pid = 0;
}

bool launch_settle_look(struct launch_settle *l, uint64_t now_ms, uint64_t interval_ms) {
        uint64_t ticks;
        if (!l->pid)
                return true;
        /* Ended (a launch with --help): settled at once, not at the next look's time. */
        if (!read_ticks(l->pid, &ticks)) {
                l->pid = 0;
                return true;
        }
        if (now_ms < l->looked_ms + interval_ms)
                return l->settled;
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t used_ms = (ticks - l->ticks) * 1000u / (uint64_t) (hz > 0 ? hz : 100);
        l->settled = used_ms * 4 < now_ms - l->looked_ms;
        l->ticks = ticks;
        l->looked_ms = now_ms;
        return l->settled;
}
