/* SPDX-License-Identifier: MIT */
/* headstart-pind: keeps the pages that launches need resident, within a memory budget.
 *
 * It reads a pin plan (plan.h), maps its files and locks the ranges worth most until the budget is
 * used (pin.c). A range is worth the launches of the programs that need it (score.c): counted from
 * the plan, from the launches headstartd reports (launch-report-receive.c) and from execs it sees
 * (exec-watch.c), halved every --half-life. Every --interval seconds it re-scores and re-pins, and
 * checks whether a pinned file was replaced (an upgrade renames a new file over the old name) or
 * changed in place. SIGHUP re-reads the plan; SIGUSR1 logs the status; SIGTERM and SIGINT stop it.
 * --prefetch reads the ranges into the cache at idle I/O priority once, and exits (prefetch.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exec-watch.h"
#include "log.h"
#include "macro.h"
#include "pin.h"
#include "clock.h"
#include "launch-report.h"
#include "plan.h"
#include "prefetch.h"
#include "score.h"
#include "launch-report-receive.h"
#include "launch-users.h"
#include "trusted-path.h"

static const char *arg_plan = NULL;
static uint64_t arg_budget = 64u << 20;
static unsigned arg_interval = 10;
static double arg_half_life = 3 * 24 * 3600;
static const char *arg_launch_socket = HS_LAUNCH_REPORT_SOCKET;
static const char *arg_daemon = NULL; /* NULL: headstartd beside this program */
static bool arg_prefetch = false;

static void help(void) {
        printf("Usage: headstart-pind --plan FILE [--budget SIZE] [OPTION...]\n"
               "Keeps the pages that program launches need resident (locked in memory), within a budget.\n\n"
               "  --plan FILE            the pin plan, from `headstart pin plan` (docs/pinning.md)\n"
               "  --budget SIZE          bytes to lock at most, with K, M or G (default 64M)\n"
               "  --interval SECONDS     how often to re-score and to check for replaced files (default 10)\n"
               "  --half-life SECONDS    launches count half as much after this long (default 259200, 3 days)\n"
               "  --launch-socket PATH   where headstartd reports the launches it serves, or 'none'\n"
               "                         (default " HS_LAUNCH_REPORT_SOCKET ")\n"
               "  --daemon PATH          the headstartd whose processes alone may report there\n"
               "                         (default: the one in headstart-pind's own folder)\n"
               "  --launch-users USER,...  count only these users' launches, served or exec'd\n"
               "                         (default every user's: any of them can raise a count)\n"
               "  --prefetch             read the ranges into the cache at idle I/O priority, lock nothing, exit\n"
               "  --help, --version\n"
               "SIGHUP re-reads the plan, SIGUSR1 logs the status. Locking needs RLIMIT_MEMLOCK of the\n"
               "budget (LimitMEMLOCK= in a systemd unit) or CAP_IPC_LOCK; counting launches by exec needs\n"
               "CAP_SYS_ADMIN (fanotify).\n");
}

static int parse_size(const char *s, uint64_t *ret) {
        char *end = (char *) s;
        errno = 0;
        /* strtoull would take "-1" as its largest value, after spaces too: digits only. */
        unsigned long long v = *s >= '0' && *s <= '9' ? strtoull(s, &end, 10) : 0;
        unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
        if (shift)
                end++;
        if (errno || end == s || *end || v == 0 || v > (UINT64_MAX >> shift))
                return log_error("--budget: expected a size such as 64M, got '%s'", s), -EINVAL;
        *ret = (uint64_t) v << shift;
        return 0;
}

static int parse_seconds(const char *option, const char *s, double *ret) {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !(v > 0) || v > 1e9)
                return log_error("%s: expected seconds above 0, got '%s'", option, s), -EINVAL;
        *ret = v;
        return 0;
}

static int parse_option(const char *a, const char *v) {
        double seconds;
        if (strcmp(a, "--plan") == 0)
                arg_plan = v;
        else if (strcmp(a, "--budget") == 0)
                return parse_size(v, &arg_budget);
        else if (strcmp(a, "--interval") == 0) {
                char *end;
                errno = 0;
                seconds = strtod(v, &end);
                if (errno || end == v || *end || !(seconds >= 1) || seconds > 86400 || seconds != (unsigned) seconds)
                        return log_error("--interval: expected whole seconds from 1 to 86400, got '%s'", v), -EINVAL;
                arg_interval = (unsigned) seconds;
        } else if (strcmp(a, "--half-life") == 0)
                return parse_seconds(a, v, &arg_half_life);
        else if (strcmp(a, "--launch-socket") == 0)
                arg_launch_socket = strcmp(v, "none") == 0 ? NULL : v;
        else if (strcmp(a, "--daemon") == 0)
                arg_daemon = v;
        else if (strcmp(a, "--launch-users") == 0)
                return launch_users_parse(v);
        else
                return log_error("unknown option: '%s' (see --help)", a), -EINVAL;
        return 0;
}

/* Returns 1 to go on, 0 when done (--help, --version), <0 on a usage error (logged). */
static int parse_argv(int argc, char *argv[]) {
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (strcmp(a, "--help") == 0)
                        return help(), 0;
                if (strcmp(a, "--version") == 0)
                        return printf("headstart-pind " HEADSTART_VERSION "\n"), 0;
                if (strcmp(a, "--prefetch") == 0) {
                        arg_prefetch = true;
                        continue;
                }
                if (i + 1 >= argc || strncmp(a, "--", 2) != 0)
                        return log_error("unknown option or missing value: '%s' (see --help)", a), -EINVAL;
                if (parse_option(a, argv[++i]) < 0)
                        return -EINVAL;
        }
        if (!arg_plan)
                return log_error("--plan FILE is needed (see --help)"), -EINVAL;
        return 1;
}

struct state {
        struct pin_plan plan;
        struct launch_counts counts;
        struct pinner pins;
        int exec_fd; /* fanotify, or <0 */
};

/* Re-scores with the decayed counts and locks what now ranks within the budget. */
static bool repin(struct state *st) {
        size_t n;
        launch_counts_decay(&st->counts);
        struct ranked *ranked = rank_ranges(&st->plan, &st->counts, &n);
        if (!ranked)
                return log_error("out of memory"), false;
        bool changed = pinner_repin(&st->pins, ranked, n);
        free(ranked);
        return changed;
}

/* SIGTERM and SIGINT are blocked, and read from the signalfd once serving. While the plan is read,
 * mapped and locked (seconds for a large one, or on slow storage), one pending means: stop now. */
static bool stop_requested(void) {
        sigset_t pending;
        return sigpending(&pending) == 0 && (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);
}

/* Opens the plan and reads it, if only root or the user we run as can have written it: a root
 * headstart-pind opens, maps and locks what the plan names, so a plan that another user could
 * change (or could put in place, in a folder such as /tmp) would let that user choose. The plan
 * is checked through the descriptor it is then read from. */
static int read_plan(bool (*interrupted)(void), struct pin_plan *ret) {
        _cleanup_close_ int fd = open(arg_plan, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return log_error_errno(errno, "cannot read the plan %s", arg_plan);
        if (!S_ISREG(st.st_mode)) /* a FIFO or a device could be read forever */
                return log_error("refusing the plan %s: not a regular file", arg_plan), -EPERM;
        char why[PATH_MAX + 128];
        int r = trusted_path_check_fd(fd, arg_plan, geteuid(), why, sizeof why);
        if (r == -EPERM)
                return log_error("refusing the plan %s: %s; only root or uid %u may be able to change it or the "
                                 "folders above it",
                                 arg_plan, why, (unsigned) geteuid()),
                       r;
        if (r < 0)
                return log_error_errno(r, "cannot check who may change the plan %s", arg_plan);
        return pin_plan_read_fd(TAKE_FD(fd), arg_plan, interrupted, ret);
}

/* Reads the plan and pins it, keeping the launch counts learned. A plan that cannot be read leaves
 * what is pinned as it is. Returns -EINTR when SIGTERM or SIGINT came meanwhile. */
static int load(struct state *st) {
        struct pin_plan fresh;
        struct launch_counts counts;
        int r = read_plan(stop_requested, &fresh);
        if (r < 0)
                return r;
        if (st->counts.n)
                launch_counts_decay(&st->counts); /* up to now, before they are carried over */
        r = launch_counts_init(&counts, &fresh, &st->plan, &st->counts, arg_half_life);
        if (r < 0) {
                pin_plan_done(&fresh);
                return log_error("out of memory"), r;
        }
        pinner_release(&st->pins, true);
        launch_counts_done(&st->counts);
        pin_plan_done(&st->plan);
        st->plan = fresh;
        st->counts = counts;
        r = pinner_map(&st->pins, &st->plan, arg_budget, stop_requested);
        if (r < 0)
                return r;
        if (st->exec_fd >= 0)
                exec_watch_mark(st->exec_fd, &st->plan);
        (void) repin(st);
        if (stop_requested())
                return -EINTR;
        pinner_log_status(&st->pins, &st->plan, &st->counts, false);
        return 0;
}

static int prefetch_only(void) {
        struct pin_plan plan;
        struct launch_counts counts;
        size_t n;
        int r = read_plan(NULL, &plan);
        if (r < 0)
                return r;
        r = launch_counts_init(&counts, &plan, NULL, NULL, arg_half_life);
        struct ranked *ranked = r < 0 ? NULL : rank_ranges(&plan, &counts, &n);
        r = ranked ? prefetch(&plan, ranked, n, arg_budget) : (log_error("out of memory"), -ENOMEM);
        free(ranked);
        launch_counts_done(&counts);
        pin_plan_done(&plan);
        return r;
}

static void count_launches(struct state *st, int fd, int (*read_one)(int, dev_t *, ino_t *)) {
        dev_t dev;
        ino_t ino;
        while (read_one(fd, &dev, &ino) > 0)
                (void) launch_counts_add(&st->counts, &st->plan, dev, ino);
}

/* Every interval: pin again what was replaced, re-score and re-pin what launches changed. Returns
 * whether to stop (SIGTERM or SIGINT while loading). */
static bool tick(struct state *st) {
        if (pinner_stale(&st->pins)) {
                log_info("a pinned file changed on disk: pinning again");
                return load(st) == -EINTR;
        }
        if (repin(st))
                log_info("re-pinned after launch counts changed: %llu KiB pinned",
                         (unsigned long long) (st->pins.locked / 1024));
        return false;
}

/* Handles one signal; returns whether to stop. */
static bool on_signal(struct state *st, int sfd) {
        struct signalfd_siginfo si;
        if (read(sfd, &si, sizeof si) != (ssize_t) sizeof si)
                return false;
        if (si.ssi_signo == SIGHUP)
                return load(st) == -EINTR;
        if (si.ssi_signo == SIGUSR1)
                pinner_log_status(&st->pins, &st->plan, &st->counts, true);
        return si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT;
}

static void serve(struct state *st, int sfd, int launch_fd) {
        struct pollfd p[3] = { { .fd = sfd, .events = POLLIN },
                               { .fd = launch_fd, .events = POLLIN },
                               { .fd = st->exec_fd, .events = POLLIN } };
        int64_t next_tick = (int64_t) now_ms() + (int64_t) arg_interval * 1000;
        for (;;) {
                int64_t wait = next_tick - (int64_t) now_ms();
                int n = poll(p, 3, wait > 0 ? (int) wait : 0);
                if (n < 0 && errno != EINTR)
                        return (void) log_error_errno(errno, "poll");
                if (p[1].revents & POLLIN)
                        count_launches(st, launch_fd, launch_reports_read);
                if (p[2].revents & POLLIN)
                        count_launches(st, st->exec_fd, exec_watch_read);
                if ((p[0].revents & POLLIN) && on_signal(st, sfd))
                        return;
                if ((int64_t) now_ms() >= next_tick) {
                        if (tick(st))
                                return;
                        next_tick = (int64_t) now_ms() + (int64_t) arg_interval * 1000;
                }
        }
}

static int run(void) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGUSR1);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (sfd < 0)
                return log_error_errno(errno, "signalfd");

        struct state st = { .exec_fd = -1 };
        int launch_fd = -1;
        int r = load(&st);
        if (r == -EINTR) { /* stopped while loading: an ordinary stop */
                log_info("stopped while loading the plan");
                r = 0;
        } else if (r >= 0) { /* what counts launches is set up once the plan is known to be good */
                launch_fd = arg_launch_socket ? launch_reports_listen(arg_launch_socket, arg_daemon) : -1;
                if ((st.exec_fd = exec_watch_open(launch_fd >= 0)) >= 0)
                        exec_watch_mark(st.exec_fd, &st.plan);
                log_info("ready: pinning %s", arg_plan);
                serve(&st, sfd, launch_fd);
                log_info("stopped");
        }
        pinner_release(&st.pins, false);
        launch_counts_done(&st.counts);
        pin_plan_done(&st.plan);
        if (launch_fd >= 0) {
                close(launch_fd);
                (void) unlink(arg_launch_socket);
        }
        if (st.exec_fd >= 0)
                close(st.exec_fd);
        close(sfd);
        return r;
}

int main(int argc, char *argv[]) {
        log_setup("headstart-pind", LOG_LEVEL_INFO);
        int r = parse_argv(argc, argv);
        if (r <= 0)
                return r == 0 ? EXIT_SUCCESS : 2;
        r = arg_prefetch ? prefetch_only() : run();
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
