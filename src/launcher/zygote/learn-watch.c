/* SPDX-License-Identifier: MIT */
#include "learn-watch.h"

#include <stdio.h>
#include <time.h>

#include "after-main.h"
#include "children.h"
#include "log.h"
#include "server.h"

static const unsigned scan_ages_ms[] = { AFTER_MAIN_SCAN_FIRST_MS, AFTER_MAIN_SCAN_LAST_MS };
#define NSCANS (sizeof scan_ages_ms / sizeof scan_ages_ms[0])

struct note {
        struct server *s;
        const char *program;
        time_t launched; /* the wall clock's second the launch began, at the latest */
        unsigned added;
};

static time_t launched_at(const struct child *ch) {
        return time(NULL) - (time_t) ((now_ms() - ch->started_ms) / 1000) - 1;
}

static void note_one(struct note *n, const char *path, const struct file_id *id) {
        int r = learned_note(n->s->learned, n->program, path, id, n->launched, n->s->cache.dir);
        if (r > 0) {
                n->added++;
                if (n->s->options->verbose)
                        log_info("learned: %s loads %s after main", n->program, path);
        } else if (r < 0)
                log_warning_errno(r, "cannot record what %s loads after main", n->program);
}

static void note_path(const char *path, void *data) {
        note_one(data, path, NULL);
}

static void note_mapped(const char *path, dev_t dev, ino_t ino, void *data) {
        note_one(data, path, &(struct file_id){ dev, ino });
}

/* Saves what is new; returns true when enough is new for a fresh zygote to preload it. */
static bool learned_some(struct server *s, const struct note *n, char *reason, size_t size) {
        if (!n->added)
                return false;
        int r = learned_save(s->learned);
        if (r < 0)
                log_warning_errno(r, "cannot save the learned objects to %s", s->learned->file);
        if (s->learned->learned_now < s->options->learn_refresh)
                return false;
        snprintf(reason, size, "learned %u objects loaded after main", s->learned->learned_now);
        return true;
}

bool learn_child_ended(struct server *s, const struct child *ch, char *reason, size_t size) {
        if (!s->learned || !ch->program)
                return false;
        struct note n = { .s = s, .program = ch->program, .launched = launched_at(ch) };
        after_main_page_read(ch->after_main, note_path, &n);
        return learned_some(s, &n, reason, size);
}

static uint64_t next_scan_at(const struct child *ch) {
        return ch->scans < NSCANS ? ch->started_ms + scan_ages_ms[ch->scans] : UINT64_MAX;
}

int learn_scan_in_ms(const struct server *s) {
        if (!s->learned)
                return -1;
        uint64_t next = UINT64_MAX, now = now_ms();
        for (const struct child *ch = s->children; ch; ch = ch->next)
                if (ch->program && next_scan_at(ch) < next)
                        next = next_scan_at(ch);
        if (next == UINT64_MAX)
                return -1;
        return next <= now ? 0 : (int) (next - now);
}

bool learn_scan(struct server *s, char *reason, size_t size) {
        bool wanted = false;
        uint64_t now = now_ms();
        for (struct child *ch = s->children; ch; ch = ch->next) {
                if (!ch->program || next_scan_at(ch) > now)
                        continue;
                while (ch->scans < NSCANS && next_scan_at(ch) <= now)
                        ch->scans++;
                struct note n = { .s = s, .program = ch->program, .launched = launched_at(ch) };
                (void) after_main_scan_maps(ch->pid, note_mapped, &n); /* it may have just ended */
                wanted |= learned_some(s, &n, reason, size);
        }
        return wanted;
}
