/* SPDX-License-Identifier: MIT */
#include "shared-state.h"

#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

struct shared_object {
        uintptr_t base;
        char name[256];
        uint64_t hash;
};

/* Libraries whose data changes whatever code runs (allocator, stdio, locale caches, the loader's
 * lists, iostreams' init count, the sanitizers' runtime), and the daemon's own objects. */
static const char *const RUNTIME[] = { "ld-linux", "libc.so.", "libstdc++.so.", "libgcc_s.so.",
                                       "libasan.so.", "libubsan.so.", "libheadstart-entry.so" };

static bool shared(const char *name) {
        if (!name || !name[0])
                return false; /* the daemon's executable */
        const char *base = basename(name);
        for (size_t i = 0; i < ELEMENTSOF(RUNTIME); i++)
                if (strncmp(base, RUNTIME[i], strlen(RUNTIME[i])) == 0)
                        return false;
        return true;
}

/* FNV-1a over the writable data after RELRO (which holds only what the loader wrote). */
static uint64_t hash_data(const struct dl_phdr_info *info) {
        uintptr_t relro_end = 0;
        for (size_t i = 0; i < info->dlpi_phnum; i++)
                if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
                        relro_end = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz;
        uint64_t h = 14695981039346656037ULL;
        for (size_t i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *p = &info->dlpi_phdr[i];
                if (p->p_type != PT_LOAD || !(p->p_flags & PF_W))
                        continue;
                uintptr_t start = info->dlpi_addr + p->p_vaddr, end = start + p->p_memsz;
                if (start < relro_end)
                        start = relro_end < end ? relro_end : end;
                for (const unsigned char *b = (const unsigned char *) start; b < (const unsigned char *) end; b++)
                        h = (h ^ *b) * 1099511628211ULL;
        }
        return h;
}

struct taking {
        struct shared_state *s;
        size_t cap;
        int error;
};

static int take_one(struct dl_phdr_info *info, size_t size, void *userdata) {
        (void) size;
        struct taking *t = userdata;
        if (!shared(info->dlpi_name))
                return 0;
        if (t->s->n == t->cap) {
                size_t cap = t->cap ? 2 * t->cap : 64;
                struct shared_object *o = realloc(t->s->objects, cap * sizeof *o);
                if (!o) {
                        t->error = -ENOMEM;
                        return 1;
                }
                t->s->objects = o;
                t->cap = cap;
        }
        struct shared_object *o = &t->s->objects[t->s->n++];
        o->base = info->dlpi_addr;
        snprintf(o->name, sizeof o->name, "%s", info->dlpi_name);
        o->hash = hash_data(info);
        return 0;
}

int shared_state_take(struct shared_state *s) {
        *s = (struct shared_state){ 0 };
        struct taking t = { .s = s };
        dl_iterate_phdr(take_one, &t);
        return t.error;
}

struct comparing {
        const struct shared_state *s;
        const char *changed;
};

static int compare_one(struct dl_phdr_info *info, size_t size, void *userdata) {
        (void) size;
        struct comparing *c = userdata;
        for (size_t i = 0; i < c->s->n; i++) {
                const struct shared_object *o = &c->s->objects[i];
                if (o->base == info->dlpi_addr && strcmp(o->name, info->dlpi_name) == 0 && o->hash != hash_data(info)) {
                        c->changed = o->name;
                        return 1;
                }
        }
        return 0;
}

const char *shared_state_changed(const struct shared_state *s, char *buf, size_t size) {
        struct comparing c = { .s = s };
        dl_iterate_phdr(compare_one, &c);
        if (!c.changed)
                return NULL;
        snprintf(buf, size, "%s", c.changed);
        return buf;
}

void shared_state_done(struct shared_state *s) {
        free(s->objects);
        *s = (struct shared_state){ 0 };
}
