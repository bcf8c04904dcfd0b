/* SPDX-License-Identifier: MIT */
#include "bindings.h"

#include <stdint.h>

#include "trace.h"

/* Open addressing over a fixed table: a GTK program has a few hundred pairs. Pairs beyond the
 * table are added to one overflow pair, so that totals stay right. */
#define SLOTS 4096
#define OVERFLOW_INDEX UINT32_MAX

struct pair {
        uint32_t from, to;
        uint32_t before_main, after_main;
        bool used;
};

static struct pair pairs[SLOTS];
static struct pair overflow = { .from = OVERFLOW_INDEX, .to = OVERFLOW_INDEX };

static struct pair *find(unsigned from, unsigned to) {
        uint32_t h = (uint32_t) (from * 2654435761u) ^ (uint32_t) (to * 40503u);
        for (unsigned probe = 0; probe < 64; probe++) {
                struct pair *p = &pairs[(h + probe) % SLOTS];
                if (!p->used) {
                        *p = (struct pair){ .from = from, .to = to, .used = true };
                        return p;
                }
                if (p->from == from && p->to == to)
                        return p;
        }
        overflow.used = true;
        return &overflow;
}

void bindings_count(unsigned from, unsigned to, bool after_main) {
        struct pair *p = find(from, to);
        if (after_main)
                p->after_main++;
        else
                p->before_main++;
}

static void emit(const struct pair *p, uint64_t t) {
        trace_begin("binding", t);
        if (p->from == OVERFLOW_INDEX) {
                trace_null("from");
                trace_null("to");
        } else {
                trace_u64("from", p->from);
                trace_u64("to", p->to);
        }
        trace_u64("before_main", p->before_main);
        trace_u64("after_main", p->after_main);
        trace_end();
}

void bindings_emit(void) {
        uint64_t t = trace_now();
        for (unsigned i = 0; i < SLOTS; i++)
                if (pairs[i].used)
                        emit(&pairs[i], t);
        if (overflow.used)
                emit(&overflow, t);
}
