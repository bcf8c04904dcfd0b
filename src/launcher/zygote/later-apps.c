/* SPDX-License-Identifier: MIT */
#include "later-apps.h"

#include <stdio.h>

#include "clock.h"
#include "log.h"
#include "macro.h"
#include "server.h"

/* The same pace as a child prepared ahead (prepared.c), for the same reason: what is loaded for
 * later must not take a CPU from the programs the system starts with. Before any launch: the CPUs
 * looked at every LATER_SPARE_POLL_MS, and not before LATER_WINDOW_MS unless a launch comes (at
 * boot the CPUs are idle for moments while the compositor waits on a device, before the home
 * screen is launched), and at LATER_MOST_MS in any case. After the first launch: once it has settled
 * and a CPU is spare, or LATER_LAUNCH_MAX_MS after it. */
#define LATER_SPARE_POLL_MS 500u
#define LATER_LAUNCH_POLL_MS 200u
#define LATER_WINDOW_S 20
#define LATER_WINDOW_MS (LATER_WINDOW_S * 1000u)
#define LATER_MOST_S 60
#define LATER_MOST_MS (LATER_MOST_S * 1000u)
#define LATER_LAUNCH_MAX_S 5
#define LATER_LAUNCH_MAX_MS (LATER_LAUNCH_MAX_S * 1000u)

void later_apps_start(struct server *s, unsigned deferred) {
        struct later_apps *l = &s->later;
        *l = (struct later_apps){ .deferred = deferred };
        if (!deferred)
                return;
        uint64_t now = now_ms();
        l->check_at = now + LATER_WINDOW_MS;
        (void) cpu_spare_look(&l->cpu, 0, now, LATER_SPARE_POLL_MS);
        log_info("--app-later: %u program%s exec'd until the start is over (this zygote's first launch has "
                 "settled and a CPU is spare); a fresh zygote then loads their libraries",
                 deferred, deferred == 1 ? "" : "s");
}

void later_apps_note_launch(struct server *s, pid_t pid) {
        struct later_apps *l = &s->later;
        if (!l->check_at || l->launched_ms)
                return;
        l->launched_ms = now_ms();
        launch_settle_start(&l->settle, pid, l->launched_ms);
        l->check_at = l->launched_ms + LATER_LAUNCH_POLL_MS;
}

int later_apps_in_ms(const struct server *s) {
        const struct later_apps *l = &s->later;
        if (!l->check_at || s->shutting_down || s->retiring || s->refresh_requested)
                return -1;
        uint64_t now = now_ms();
        return l->check_at <= now ? 0 : (int) (l->check_at - now);
}

/* Whether the start is over, and why into *ret_why. */
static bool start_over(struct server *s, uint64_t now, const char **ret_why) {
        struct later_apps *l = &s->later;
        if (l->launched_ms) {
                *ret_why = "the first launch has settled and a CPU is spare";
                if (now >= l->launched_ms + LATER_LAUNCH_MAX_MS)
                        return *ret_why = STRINGIFY(LATER_LAUNCH_MAX_S) " s have passed since the first launch", true;
                bool settled = launch_settle_look(&l->settle, now, LATER_LAUNCH_POLL_MS);
                return cpu_spare_look(&l->cpu, l->launched_ms, now, LATER_LAUNCH_POLL_MS) && settled;
        }
        *ret_why = "no launch came in the first " STRINGIFY(LATER_WINDOW_S) " s and a CPU is spare";
        if (now >= s->started_ms + LATER_MOST_MS)
                return *ret_why = "no launch came in the first " STRINGIFY(LATER_MOST_S) " s", true;
        return cpu_spare_look(&l->cpu, 0, now, LATER_SPARE_POLL_MS);
}

void later_apps_check(struct server *s) {
        struct later_apps *l = &s->later;
        const char *why;
        uint64_t now = now_ms();
        if (!start_over(s, now, &why)) {
                if (!l->waits_logged && s->options->verbose)
                        log_info("--app-later: %s; loading their libraries once it is over",
                                 l->launched_ms ? "the first launch is still starting or the CPUs are busy"
                                                : "the CPUs are busy");
                l->waits_logged = true;
                l->check_at = now + (l->launched_ms ? LATER_LAUNCH_POLL_MS : LATER_SPARE_POLL_MS);
                return;
        }
        l->check_at = 0;
        char reason[128];
        snprintf(reason, sizeof reason, "--app-later: %s", why);
        server_request_refresh(s, reason);
}
