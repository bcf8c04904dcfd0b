/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "prepared.h"
#include "server.h"

struct text {
        char *buf;
        size_t len, cap;
        bool failed;
};

static void add(struct text *t, const char *format, ...) {
        va_list ap;
        for (;;) {
                va_start(ap, format);
                int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->cap - t->len, format, ap);
                va_end(ap);
                if (n < 0) {
                        t->failed = true;
                        return;
                }
                if (t->len + (size_t) n < t->cap) {
                        t->len += (size_t) n;
                        return;
                }
                size_t cap = (t->len + (size_t) n + 1) * 2;
                char *b = realloc(t->buf, cap);
                if (!b) {
                        t->failed = true;
                        return;
                }
                t->buf = b;
                t->cap = cap;
        }
}

static const char *mode_name(enum program_mode m) {
        switch (m) {
        case MODE_WARM:
                return "warm";
        case MODE_PRELOAD:
                return "preload";
        case MODE_EXEC:
                break;
        }
        return "exec";
}

static const char *const decline_names[HS_DECLINE_COUNT] = {
        [HS_DECLINE_UNSUPPORTED] = "unsupported", [HS_DECLINE_ENVIRONMENT] = "environment",
        [HS_DECLINE_LIMITS] = "limits",           [HS_DECLINE_START_FAILED] = "start-failed",
        [HS_DECLINE_BUSY] = "busy",               [HS_DECLINE_TERMINAL] = "terminal",
};

/* Each object learned for a registered program: preloaded by this zygote, skipped (why), or
 * learned by this zygote and so preloaded from the next. */
static void compose_learned(const struct server *s, struct text *t) {
        const struct learned *l = s->learned;
        add(t, "learning: %s\n", l ? "on" : "off");
        if (!l)
                return;
        add(t, "learned-file: %s\n", l->file);
        for (size_t i = 0; i < l->nprograms; i++)
                for (size_t j = 0; j < l->programs[i].n; j++) {
                        const struct learned_object *ob = &l->programs[i].objects[j];
                        const char *state = ob->preloaded ? "preloaded" : ob->skipped ? "skipped" : "next-zygote";
                        add(t, "learned: %s %s %s%s%s\n", state, l->programs[i].path, ob->path,
                            ob->skipped ? " -- " : "", ob->skipped ? ob->skipped : "");
                }
}

/* --prepare-display: each program it names, and its prepared child. */
static void compose_prepared(const struct server *s, struct text *t) {
        for (const struct prepared_program *p = s->prepared; p; p = p->next) {
                const char *why, *state = prepared_state(p, &why);
                add(t, "prepared: %s %s %s %llu%s%s\n", state, toolkit_started_ahead(p->toolkit, &p->terms),
                    p->program,
                    (unsigned long long) p->taken, why ? " -- " : "", why ? why : "");
        }
}

static void compose(const struct server *s, struct text *t) {
        const struct daemon_options *o = s->options;
        add(t, "version: %s\n", HEADSTART_VERSION);
        add(t, "pid: %d\n", (int) getpid());
        add(t, "generation: %u\n", s->zygote.generation);
        add(t, "refreshes: %u\n", s->zygote.generation ? s->zygote.generation - 1 : 0);
        if (s->zygote.reason[0])
                add(t, "started-because: %s\n", s->zygote.reason);
        add(t, "uptime-seconds: %llu\n", (unsigned long long) ((now_ms() - s->started_ms) / 1000u));
        add(t, "refresh-after-launches: %u\n", o->refresh_launches);
        add(t, "refresh-after-seconds: %u\n", o->refresh_seconds);
        add(t, "file-watch: %s\n", s->files_status[0] ? s->files_status : "off");
        for (size_t i = 0; i < s->nregistered; i++) {
                const struct registered_file *r = &s->registered[i];
                add(t, "program: %s %s%s%s\n", mode_name(r->mode), r->path, r->reason ? " -- " : "",
                    r->reason ? r->reason : "");
        }
        for (size_t i = 0; i < s->nschedules; i++) {
                char what[256];
                schedule_describe(&s->schedules[i], what, sizeof what);
                add(t, "schedule: %s -- %s\n", s->schedules[i].program, what);
        }
        for (size_t i = 0; s->refused_preloads && i < s->refused_preloads->n; i++)
                add(t, "preload: refused %s\n", s->refused_preloads->items[i]);
        compose_learned(s, t);
        for (size_t i = 0; i < o->warm_up.n; i++)
                add(t, "warm-up: %s %s%s%s\n", s->warm_up[i].refused ? "refused" : "done", s->warm_up[i].step,
                    s->warm_up[i].refused ? " -- " : "", s->warm_up[i].refused ? s->warm_up[i].refused : "");
        compose_prepared(s, t);
        for (size_t i = 0; i < s->read_at_load.n; i++)
                add(t, "read-at-load: %s -- %s\n", s->read_at_load.items[i].name, s->read_at_load.items[i].reader);
        if (s->read_at_load.overflowed)
                add(t, "read-at-load: more than %d -- every launch is exec'd\n", READ_AT_LOAD_MAX);
        add(t, "pool-size: %u\n", o->pool_size);
        add(t, "pool-waiting: %u\n", s->npool);
        add(t, "running: %u\n", s->nchildren);
        const struct launch_counts *n = s->counts;
        add(t, "launches: %llu\n", (unsigned long long) n->launches);
        add(t, "launches-from-pool: %llu\n", (unsigned long long) n->launches_pooled);
        add(t, "launches-prepared: %llu\n", (unsigned long long) n->launches_prepared);
        add(t, "declines: %llu\n", (unsigned long long) n->declines);
        for (int code = 1; code < HS_DECLINE_COUNT; code++)
                if (n->declined[code])
                        add(t, "declined: %s %llu -- last: %s\n", decline_names[code],
                            (unsigned long long) n->declined[code], n->last_decline[code]);
}

int status_compose(const struct server *s, char **ret_text, size_t *ret_len) {
        struct text t = { 0 };
        compose(s, &t);
        if (t.failed) {
                free(t.buf);
                return -ENOMEM;
        }
        *ret_text = t.buf;
        *ret_len = t.len;
        return 0;
}
