/* SPDX-License-Identifier: MIT */
#include "launch-settle.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

/* Its user and system time (fields 14 and 15 of /proc/PID/stat, after the name in parentheses,
 * which may hold spaces and parentheses itself); false when it is gone, a zombie, or unreadable. */
static bool read_ticks(pid_t pid, uint64_t *ret) {
        char path[64], line[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f || !fgets(line, sizeof line, f))
                return false;
        const char *after_name = strrchr(line, ')');
        char state;
        unsigned long long utime, stime;
        if (!after_name || sscanf(after_name + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &state,
                                  &utime, &stime) != 3 || state == 'Z')
                return false;
        *ret = utime + stime;
        return true;
}

void launch_settle_start(struct launch_settle *l, pid_t pid, uint64_t now_ms) {
        *l = (struct launch_settle){ .pid = pid, .looked_ms = now_ms };
        if (!read_ticks(pid, &l->ticks))
                l->pid = 0;
}

bool launch_settle_look(struct launch_settle *l, uint64_t now_ms, uint64_t interval_ms) {
        if (!l->pid)
                return true;
        if (now_ms < l->looked_ms + interval_ms)
                return l->settled;
        uint64_t ticks;
        if (!read_ticks(l->pid, &ticks)) {
                l->pid = 0;
                return true;
        }
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t used_ms = (ticks - l->ticks) * 1000u / (uint64_t) (hz > 0 ? hz : 100);
        l->settled = used_ms * 4 < now_ms - l->looked_ms;
        l->ticks = ticks;
        l->looked_ms = now_ms;
        return l->settled;
}
