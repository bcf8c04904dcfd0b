/* SPDX-License-Identifier: MIT */
#include "closure-cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "private-dir.h"

#define HEADER "headstart-closures 1"
#define MAX_FILE_SIZE (8 << 20)
#define ID_MAX 128

extern char **environ;

static void file_id(const struct stat *st, char id[static ID_MAX]) {
        snprintf(id, ID_MAX, "%llu:%llu:%lld:%lld.%09ld:%lld.%09ld", (unsigned long long) st->st_dev,
                 (unsigned long long) st->st_ino, (long long) st->st_size, (long long) st->st_mtim.tv_sec,
                 st->st_mtim.tv_nsec, (long long) st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

/* The file the path names now (symlinks followed, as the loader opens it), or "none". */
static void path_id(const char *path, char id[static ID_MAX]) {
        struct stat st;
        if (stat(path, &st) < 0)
                snprintf(id, ID_MAX, "none");
        else
                file_id(&st, id);
}

static int append(char **text, const char *part) {
        char *grown;
        if (asprintf(&grown, "%s%s", *text ? *text : "", part) < 0)
                return -ENOMEM;
        free(*text);
        *text = grown;
        return 0;
}

/* What the loader's answers depend on besides the program's and its libraries' own files; NULL when
 * it cannot be said on one line (a variable with a newline), and nothing is cached then. */
static char *loader_key(const char *interp) {
        char loader[ID_MAX], cache[ID_MAX], preload[ID_MAX], *key = NULL;
        path_id(interp, loader);
        path_id("/etc/ld.so.cache", cache);
        path_id("/etc/ld.so.preload", preload);
        const char *platform = (const char *) getauxval(AT_PLATFORM);
        if (asprintf(&key, "loader=%s %s cache=%s preload=%s hwcap=%lx hwcap2=%lx platform=%s env=", interp, loader,
                     cache, preload, getauxval(AT_HWCAP), getauxval(AT_HWCAP2), platform ? platform : "") < 0)
                return NULL;
        for (char **e = environ; *e; e++) {
                if (strncmp(*e, "LD_", 3) != 0 && strncmp(*e, "GLIBC_TUNABLES=", 15) != 0)
                        continue;
                if (strchr(*e, '\n') || append(&key, *e) < 0 || append(&key, " ") < 0) {
                        free(key);
                        return NULL;
                }
        }
        return key;
}

static void entry_free(struct closure_entry *e) {
        free(e->program);
        free(e->id);
        string_list_done(&e->libs);
        string_list_done(&e->lib_ids);
        string_list_done(&e->missing);
}

static struct closure_entry *add_entry(struct closure_cache *c) {
        struct closure_entry *grown = realloc(c->entries, (c->n + 1) * sizeof *grown);
        if (!grown)
                return NULL;
        c->entries = grown;
        grown[c->n] = (struct closure_entry){ 0 };
        return &grown[c->n++];
}

/* One line of the file into c; -EBADMSG if it is none of ours. */
static int parse_line(struct closure_cache *c, char *line) {
        struct closure_entry *e = c->n ? &c->entries[c->n - 1] : NULL;
        char *space = strchr(line, ' ');
        char *rest = space ? space + 1 : NULL, *path = rest ? strchr(rest, ' ') : NULL;
        if (space)
                *space = '\0';
        if (path)
                *path++ = '\0';
        if (strcmp(line, "program") == 0 && path) {
                if (!(e = add_entry(c)) || !(e->id = strdup(rest)) || !(e->program = strdup(path)))
                        return -ENOMEM;
                return 0;
        }
        if (strcmp(line, "lib") == 0 && path && e)
                return string_list_add(&e->lib_ids, rest) < 0 || string_list_add(&e->libs, path) < 0 ? -ENOMEM : 0;
        if (strcmp(line, "missing") == 0 && rest && e) {
                if (path)
                        path[-1] = ' '; /* a path with a space: the whole rest is it */
                return string_list_add(&e->missing, rest);
        }
        return -EBADMSG;
}

static int parse(struct closure_cache *c, FILE *f) {
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        bool header = false, key = false, end = false;
        int r = 0;
        for (ssize_t len; r >= 0 && !end && (len = getline(&line, &cap, f)) > 0;) {
                if (line[len - 1] != '\n')
                        return -EBADMSG;
                line[len - 1] = '\0';
                if (!header)
                        r = strcmp(line, HEADER) == 0 ? (header = true, 0) : -EBADMSG;
                else if (!key) /* made under another key: all of it stale, which is no error */
                        r = strncmp(line, "key ", 4) == 0 ? (key = true, strcmp(line + 4, c->key) == 0 ? 0 : -ESTALE)
                                                          : -EBADMSG;
                else if (strcmp(line, "end") == 0)
                        end = true;
                else
                        r = parse_line(c, line);
        }
        return r < 0 ? r : end ? 0 : -EBADMSG;
}

void closure_cache_load(struct closure_cache *c, const char *path, const char *interp) {
        *c = (struct closure_cache){ .key = loader_key(interp) };
        const char *why = NULL;
        int fd = c->key ? private_file_open(path, &why) : -ENOENT;
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_size > MAX_FILE_SIZE))
                why = "too large";
        _cleanup_fclose_ FILE *f = fd >= 0 && !why ? fdopen(fd, "re") : NULL;
        if (fd >= 0 && !f)
                close(fd);
        int r = f ? parse(c, f) : 0;
        if (why || (r < 0 && r != -ESTALE))
                log_warning("%s: %s; the dynamic loader is asked for every program's libraries", path,
                            why ? why : r == -ENOMEM ? "out of memory" : "malformed");
        if (r < 0) {
                for (size_t i = 0; i < c->n; i++)
                        entry_free(&c->entries[i]);
                c->n = 0;
        }
}

static bool still_valid(const struct closure_entry *e, const struct stat *st) {
        char id[ID_MAX];
        file_id(st, id);
        if (strcmp(id, e->id) != 0)
                return false;
        for (size_t i = 0; i < e->libs.n; i++) {
                path_id(e->libs.items[i], id);
                if (strcmp(id, e->lib_ids.items[i]) != 0)
                        return false;
        }
        for (size_t i = 0; i < e->missing.n; i++)
                if (access(e->missing.items[i], F_OK) == 0 || errno != ENOENT)
                        return false;
        return true;
}

static struct closure_entry *find(struct closure_cache *c, const char *program) {
        for (size_t i = 0; i < c->n; i++)
                if (strcmp(c->entries[i].program, program) == 0)
                        return &c->entries[i];
        return NULL;
}

bool closure_cache_take(struct closure_cache *c, const char *program, const struct stat *st,
                        struct string_list *libs, struct string_list *missing) {
        const struct closure_entry *e = find(c, program);
        if (!e || !still_valid(e, st))
                return false;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < e->libs.n; i++)
                r = string_list_add(libs, e->libs.items[i]);
        for (size_t i = 0; r >= 0 && i < e->missing.n; i++)
                r = string_list_add_new(missing, e->missing.items[i]);
        if (r < 0) { /* the loader is asked then, from an empty list */
                string_list_done(libs);
                return false;
        }
        c->taken++;
        return true;
}

void closure_cache_remember(struct closure_cache *c, const char *program, const struct stat *st,
                            const struct string_list *libs, const struct string_list *missing) {
        struct closure_entry fresh = { 0 };
        char id[ID_MAX];
        file_id(st, id);
        bool ok = c->key && !strchr(program, '\n') && (fresh.program = strdup(program)) && (fresh.id = strdup(id));
        for (size_t i = 0; ok && i < libs->n; i++) {
                path_id(libs->items[i], id);
                ok = !strchr(libs->items[i], '\n') && strcmp(id, "none") != 0 &&
                     string_list_add(&fresh.libs, libs->items[i]) >= 0 && string_list_add(&fresh.lib_ids, id) >= 0;
        }
        for (size_t i = 0; ok && i < missing->n; i++)
                ok = !strchr(missing->items[i], '\n') && string_list_add(&fresh.missing, missing->items[i]) >= 0;
        struct closure_entry *e = ok ? find(c, program) : NULL;
        if (ok && !e)
                ok = (e = add_entry(c)) != NULL;
        if (!ok) { /* not kept: asked again next time */
                entry_free(&fresh);
                return;
        }
        entry_free(e);
        *e = fresh;
        c->resolved++;
}

struct to_write {
        const struct closure_cache *cache;
        const struct string_list *programs;
};

static int write_entries(int fd, const void *data) {
        const struct to_write *w = data;
        if (dprintf(fd, HEADER "\nkey %s\n", w->cache->key) < 0)
                return -errno;
        for (size_t i = 0; i < w->cache->n; i++) {
                const struct closure_entry *e = &w->cache->entries[i];
                if (!string_list_contains(w->programs, e->program))
                        continue;
                if (dprintf(fd, "program %s %s\n", e->id, e->program) < 0)
                        return -errno;
                for (size_t k = 0; k < e->libs.n; k++)
                        if (dprintf(fd, "lib %s %s\n", e->lib_ids.items[k], e->libs.items[k]) < 0)
                                return -errno;
                for (size_t k = 0; k < e->missing.n; k++)
                        if (dprintf(fd, "missing %s\n", e->missing.items[k]) < 0)
                                return -errno;
        }
        return dprintf(fd, "end\n") < 0 ? -errno : 0;
}

void closure_cache_save(const struct closure_cache *c, const char *path, const struct string_list *programs) {
        if (!c->key || c->resolved == 0)
                return;
        int r = private_file_replace(path, write_entries, &(struct to_write){ c, programs });
        if (r < 0)
                log_warning("cannot write %s: %s; the dynamic loader will be asked again at the next start", path,
                            strerror(-r));
}

void closure_cache_done(struct closure_cache *c) {
        for (size_t i = 0; i < c->n; i++)
                entry_free(&c->entries[i]);
        free(c->entries);
        free(c->key);
        *c = (struct closure_cache){ 0 };
}
