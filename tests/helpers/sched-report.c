/* SPDX-License-Identifier: MIT */
/* Prints how it is scheduled, as the kernel says: policy and its parameters, nice, utilization
 * clamps, CPU affinity, and its cgroups for cpu and cpuset; so that a test can compare a served
 * launch with an exec'd one. With "fork" it also says whether it may fork (a deadline task may not). */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct kernel_sched_attr {
        uint32_t size, sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime, sched_deadline, sched_period;
        uint32_t sched_util_min, sched_util_max;
};

int main(int argc, char **argv) {
        struct kernel_sched_attr a = { 0 };
        if (syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) < 0) {
                perror("sched_getattr");
                return 1;
        }
        errno = 0;
        int nice = getpriority(PRIO_PROCESS, 0);
        printf("policy %u priority %u runtime %llu deadline %llu period %llu\n", a.sched_policy, a.sched_priority,
               (unsigned long long) a.sched_runtime, (unsigned long long) a.sched_deadline,
               (unsigned long long) a.sched_period);
        printf("nice %d uclamp %u-%u\n", nice, a.sched_util_min, a.sched_util_max);
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) == 0) {
                printf("cpus");
                for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
                        if (CPU_ISSET(cpu, &set))
                                printf(" %d", cpu);
                printf("\n");
        }
        FILE *f = fopen("/proc/self/cgroup", "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f))
                if (strstr(line, ":cpu,") || strstr(line, ":cpuset:") || strstr(line, ":cpu:") || strncmp(line, "0::", 3) == 0)
                        printf("cgroup %s", line);
        if (f)
                fclose(f);
        if (argc > 1 && strcmp(argv[1], "fork") == 0) {
                pid_t pid = fork();
                if (pid == 0)
                        _exit(0);
                printf("fork %s\n", pid < 0 ? strerror(errno) : "ok");
                if (pid > 0)
                        waitpid(pid, NULL, 0);
        }
        return 0;
}
