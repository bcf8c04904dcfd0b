/* SPDX-License-Identifier: MIT */
/* What exec gives a program from the process that starts it, and a child of the zygote would not
 * have: the rights and confinement of the process (its user and group IDs and supplementary groups,
 * capabilities, no_new_privs, seccomp filters), the namespaces it sees, its execution domain
 * (personality: setarch), its I/O priority (ionice) and whether it may have transparent huge pages
 * (prctl PR_SET_THP_DISABLE). A child forked from the zygote has the zygote's. A client that differs
 * in any of them is declined, and so is one that is traced (strace -f, gdb), whose tracer would not
 * follow a served program. Such a client execs the program itself, as it would have: otherwise a
 * sandbox of the daemon's own user (a namespace, a seccomp filter, capabilities dropped, a group
 * left) would run programs outside itself through us. Its OOM score
 * adjustment (choom, a service manager's OOMScoreAdjust=) is given to the program instead, where the
 * kernel lets us: a user's daemon under systemd's user manager has 100, and the clients of an SSH or
 * console login 0, which declining would leave with no launch served.
 *
 * Read from the kernel for the process that connected (SO_PEERCRED), as the zygote handles its launch,
 * never from what the client says. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#define OOM_SCORE_MAX 16

/* NULL when the client, process pid of pidfd (peer-process.h; pidfd -1: not found), runs as the
 * zygote does in all of the above, else why not (a static string). One whose state cannot be read,
 * or that is gone, is refused. Into ret_oom_score: its OOM score adjustment where it differs from
 * the zygote's, else "". */
const char *client_context_refusal(pid_t pid, int pidfd, char ret_oom_score[OOM_SCORE_MAX]);

/* Gives the child that will run the launch (before its main) the client's OOM score adjustment
 * (oom_score, from client_context_refusal; "" leaves it). The kernel refuses to lower it below what
 * the zygote was given by a privileged process (a service manager's OOMScoreAdjust=): then the
 * program keeps the zygote's, as docs/limitations.md says. */
void client_context_give_oom_score(pid_t child, const char *oom_score);

/* Whether child, a waiting child forked earlier, still has what it inherited from the zygote as the
 * zygote has it now: scheduling (schedule.h), I/O priority and OOM score adjustment. Another process
 * can change the zygote's (chrt -p, taskset -p, renice, ionice -p, choom -p, CPUs going offline), and
 * launches are judged by what the zygote has now; a child that kept the old must not run them. */
bool client_context_inherited_unchanged(pid_t child);
