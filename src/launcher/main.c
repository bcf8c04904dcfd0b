/* SPDX-License-Identifier: MIT */
/* headstartd: parses options, then runs the supervisor, or (with --zygote) a zygote (zygote.c). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "listen.h"
#include "log.h"
#include "macro.h"
#include "options.h"
#include "protocol.h"
#include "schedule.h"
#include "supervisor.h"
#include "systemd.h"
#include "throwaway.h"
#include "verdicts.h"
#include "zygote.h"

static int socket_path(const struct daemon_options *o, char *buf, size_t size) {
        if (o->socket_path) {
                snprintf(buf, size, "%s", o->socket_path);
                return 0;
        }
        int r = hs_default_socket_path(buf, size);
        if (r < 0)
                return log_error("XDG_RUNTIME_DIR is not set: pass --socket PATH"), r;
        return 0;
}

/* Whether this process holds a capability in its permitted set (capget: the C library has no
 * wrapper, and libcap is not ours to depend on). */
static bool holds_capabilities(void) {
        struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct data[2];
        return syscall(SYS_capget, &header, data) == 0 && (data[0].permitted || data[1].permitted);
}

static int check_user(const struct daemon_options *o) {
        if (geteuid() == 0 && !o->allow_root)
                return log_error("refusing to run as root: programs would start with root's rights; "
                                 "run it as the user it serves, or pass --allow-root"),
                       -EPERM;
        /* A unit's AmbientCapabilities= for --schedule: said, since its user then has them too. */
        if (geteuid() != 0 && holds_capabilities())
                log_warning("running with capabilities: it serves only clients that have the same, and what its "
                            "user can make it load (learned objects, its state files, a prepared child's modules) "
                            "runs with them: give it only what its user may have (docs/scheduling.md)");
        return 0;
}

/* --learn-file names a file the zygotes replace (a new file renamed over it) each time they save:
 * a symbolic link would be replaced, not followed, and a folder that is missing or not ours to
 * write to would lose every save. Said at start, in one line. */
static int check_learn_file(const struct daemon_options *o) {
        if (o->no_learn || !o->learn_file)
                return 0;
        const char *file = o->learn_file;
        struct stat st;
        if (!*file)
                return log_error("--learn-file: empty: name a file (or learn = no)"), -EINVAL;
        if (lstat(file, &st) == 0 && S_ISLNK(st.st_mode))
                return log_error("--learn-file %s: a symbolic link, which each save would replace with a file: name "
                                 "the file itself",
                                 file),
                       -EINVAL;
        if (lstat(file, &st) == 0 && !S_ISREG(st.st_mode))
                return log_error("--learn-file %s: not a regular file", file), -EINVAL;
        _cleanup_free_ char *copy = strdup(file);
        if (!copy)
                return log_error("out of memory"), -ENOMEM;
        const char *folder = dirname(copy);
        if (access(folder, W_OK | X_OK) < 0)
                return log_error_errno(errno, "--learn-file %s: cannot write to its folder %s", file, folder);
        return 0;
}

/* The supervisor: listen, then keep a zygote serving. */
static int run_supervisor(const struct daemon_options *o, int activated_fd, char *argv[]) {
        if (activated_fd == -ENOTSOCK)
                return log_error("socket activation: fd 3 is not a listening socket"), -ENOTSOCK;
        char path[PATH_MAX];
        int r = socket_path(o, path, sizeof path);
        if (r < 0 || (r = check_learn_file(o)) < 0)
                return r;
        /* What the schedules need (privileges, cgroups) is tried now, before anyone is served. */
        struct schedule *schedules;
        size_t nschedules;
        if ((r = schedules_load(&o->schedules, true, &schedules, &nschedules)) < 0)
                return r;
        int fd = activated_fd >= 0 ? activated_fd : listen_open(path);
        r = fd < 0 ? fd : supervisor_run(o, fd, path, argv);
        schedules_remove_cgroups(schedules, nschedules);
        schedules_free(schedules, nschedules);
        return r;
}

int main(int argc, char *argv[]) {
        struct daemon_options o = { 0 };
        log_setup("headstartd", LOG_LEVEL_INFO);
        int activated_fd = systemd_listen_fd();
        int r = options_parse_argv(&o, argc, argv);
        throwaway_set_deadline(o.trial_timeout_s);
        if (r > 0 && o.check.n > 0)
                r = check_run(&o);
        else if (r > 0 && (r = check_user(&o)) >= 0) {
                if (o.zygote.active) {
                        static char ident[64];
                        snprintf(ident, sizeof ident, "headstartd[zygote %u]", o.zygote.generation);
                        log_setup(ident, LOG_LEVEL_INFO);
                        /* Started from /proc/self/exe, which names it "exe": pgrep headstartd, and
                         * systemd's log of what it stops, should find it by its name. */
                        (void) prctl(PR_SET_NAME, "headstartd", 0, 0, 0);
                        char path[PATH_MAX];
                        r = socket_path(&o, path, sizeof path);
                        if (r >= 0)
                                r = zygote_run(&o, argv, path);
                } else
                        r = run_supervisor(&o, activated_fd, argv);
        }
        options_done(&o);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
