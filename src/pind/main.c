/* SPDX-License-Identifier: MIT */
/* headstart-pind: keeps the pages that launches need resident, within a memory budget.
 *
 * It reads a pin plan (plan.h), maps its files and locks their most valuable ranges until the budget
 * is used (pin.c), then watches: every --interval seconds it checks whether a pinned file was
 * replaced (an upgrade renames a new file over the old name) or changed in place, and pins again;
 * SIGHUP re-reads the plan; SIGUSR1 logs what is pinned; SIGTERM and SIGINT stop it. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "log.h"
#include "pin.h"
#include "plan.h"

static const char *arg_plan = NULL;
static uint64_t arg_budget = 64u << 20;
static unsigned arg_interval = 10;

static void help(void) {
        printf("Usage: headstart-pind --plan FILE [--budget SIZE] [--interval SECONDS]\n"
               "Keeps the pages that program launches need resident (locked in memory), within a budget.\n\n"
               "  --plan FILE         the pin plan, from `headstart pin plan` (docs/pinning.md)\n"
               "  --budget SIZE       bytes to lock at most, with K, M or G (default 64M)\n"
               "  --interval SECONDS  how often to check for replaced or changed files (default 10)\n"
               "  --help, --version\n"
               "SIGHUP re-reads the plan, SIGUSR1 logs what is pinned. Locking needs RLIMIT_MEMLOCK\n"
               "of the budget (LimitMEMLOCK= in a systemd unit) or CAP_IPC_LOCK.\n");
}

static int parse_size(const char *s, uint64_t *ret) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
        if (shift)
                end++;
        if (errno || end == s || *end || v == 0 || v > (UINT64_MAX >> shift))
                return log_error("--budget: expected a size such as 64M, got '%s'", s), -EINVAL;
        *ret = (uint64_t) v << shift;
        return 0;
}

/* Returns 1 to go on, 0 when done (--help, --version), <0 on a usage error (logged). */
static int parse_argv(int argc, char *argv[]) {
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
                if (strcmp(a, "--help") == 0)
                        return help(), 0;
                if (strcmp(a, "--version") == 0)
                        return printf("headstart-pind " HEADSTART_VERSION "\n"), 0;
                if (!v || (strcmp(a, "--plan") != 0 && strcmp(a, "--budget") != 0 && strcmp(a, "--interval") != 0))
                        return log_error("unknown option or missing value: '%s' (see --help)", a), -EINVAL;
                i++;
                if (strcmp(a, "--plan") == 0)
                        arg_plan = v;
                else if (strcmp(a, "--budget") == 0 && parse_size(v, &arg_budget) < 0)
                        return -EINVAL;
                else if (strcmp(a, "--interval") == 0 && (arg_interval = (unsigned) strtoul(v, NULL, 10)) == 0)
                        return log_error("--interval: expected whole seconds above 0, got '%s'", v), -EINVAL;
        }
        if (!arg_plan)
                return log_error("--plan FILE is needed (see --help)"), -EINVAL;
        return 1;
}

/* Reads the plan and pins it. A plan that cannot be read leaves what is pinned as it is. */
static int pin_all(struct pin_plan *plan, struct pinner *pins) {
        struct pin_plan fresh;
        int r = pin_plan_read(arg_plan, &fresh);
        if (r < 0)
                return r;
        pinner_release(pins, true);
        pin_plan_done(plan);
        *plan = fresh;
        r = pinner_apply(pins, plan, arg_budget);
        if (r >= 0)
                pinner_log_status(pins);
        return r;
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

        struct pin_plan plan = { 0 };
        struct pinner pins = { 0 };
        int r = pin_all(&plan, &pins);
        if (r < 0) {
                close(sfd);
                return r;
        }
        log_info("ready: pinning %s", arg_plan);
        for (bool stop = false; !stop;) {
                struct pollfd p = { .fd = sfd, .events = POLLIN };
                int n = poll(&p, 1, (int) arg_interval * 1000);
                if (n < 0 && errno != EINTR)
                        break;
                if (n == 0) {
                        if (pinner_stale(&pins)) {
                                log_info("a pinned file changed on disk: pinning again");
                                (void) pin_all(&plan, &pins);
                        }
                        continue;
                }
                struct signalfd_siginfo si;
                if (read(sfd, &si, sizeof si) != (ssize_t) sizeof si)
                        continue;
                if (si.ssi_signo == SIGHUP)
                        (void) pin_all(&plan, &pins);
                else if (si.ssi_signo == SIGUSR1)
                        pinner_log_status(&pins);
                else
                        stop = true;
        }
        pinner_release(&pins, false);
        pin_plan_done(&plan);
        close(sfd);
        log_info("stopped");
        return 0;
}

int main(int argc, char *argv[]) {
        log_setup("headstart-pind", LOG_LEVEL_INFO);
        int r = parse_argv(argc, argv);
        if (r <= 0)
                return r == 0 ? EXIT_SUCCESS : 2;
        return run() < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
