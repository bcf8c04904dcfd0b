/* SPDX-License-Identifier: MIT */
#include "learn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "after-main.h"
#include "elf-info.h"
#include "log.h"
#include "macro.h"
#include "private-dir.h"
#include "trusted-path.h"

#define STATE_HEADER "# headstart: objects loaded after main, learned by headstartd (version 1)"

static struct learned_program *find_program(const struct learned *l, const char *path) {
        for (size_t i = 0; i < l->nprograms; i++)
                if (strcmp(l->programs[i].path, path) == 0)
                        return &l->programs[i];
        return NULL;
}

static struct learned_program *add_program(struct learned *l, const char *path) {
        struct learned_program *p = find_program(l, path);
        if (p)
                return p;
        p = realloc(l->programs, (l->nprograms + 1) * sizeof *p);
        if (!p)
                return NULL;
        l->programs = p;
        p = &l->programs[l->nprograms];
        *p = (struct learned_program){ .path = strdup(path) };
        if (!p->path)
                return NULL;
        l->nprograms++;
        return p;
}

static bool has_object(const struct learned_program *p, const char *path) {
        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->objects[i].path, path) == 0)
                        return true;
        return false;
}

/* Returns 1 when added, 0 when the program had it already, -ENOMEM. */
static int add_object(struct learned_program *p, const char *path) {
        if (has_object(p, path))
                return 0;
        struct learned_object *o = realloc(p->objects, (p->n + 1) * sizeof *o);
        if (!o)
                return -ENOMEM;
        p->objects = o;
        o[p->n] = (struct learned_object){ .path = strdup(path) };
        if (!o[p->n].path)
                return -ENOMEM;
        p->n++;
        return 1;
}

static void free_programs(struct learned *l) {
        for (size_t i = 0; i < l->nprograms; i++) {
                for (size_t j = 0; j < l->programs[i].n; j++) {
                        free(l->programs[i].objects[j].path);
                        free(l->programs[i].objects[j].skipped);
                }
                free(l->programs[i].objects);
                free(l->programs[i].path);
        }
        free(l->programs);
        l->programs = NULL;
        l->nprograms = 0;
}

void learned_done(struct learned *l) {
        free_programs(l);
        free(l->known);
        free(l->file);
        *l = (struct learned){ 0 };
}

/* Reads the lines of an open state file into l. Returns 0, -EBADMSG (malformed; *ret_line says
 * where), -ENODATA (truncated: no "end") or -ENOMEM. */
static int parse_state(FILE *f, struct learned *l, unsigned *ret_line) {
        char *line = NULL;
        size_t cap = 0;
        unsigned n = 0;
        int r = -ENODATA;
        struct learned_program *p = NULL;
        while (getline(&line, &cap, f) >= 0) {
                *ret_line = ++n;
                if (r == 0 || line[strlen(line) - 1] != '\n') { /* after "end", or a cut last line */
                        r = r == 0 ? -EBADMSG : -ENODATA;
                        break;
                }
                line[strlen(line) - 1] = '\0';
                if (n == 1)
                        r = strcmp(line, STATE_HEADER) == 0 ? -ENODATA : -EBADMSG;
                else if (strncmp(line, "program /", 9) == 0)
                        r = (p = add_program(l, line + 8)) ? -ENODATA : -ENOMEM;
                else if (strncmp(line, "object /", 8) == 0 && p)
                        r = add_object(p, line + 7) < 0 ? -ENOMEM : -ENODATA;
                else if (strcmp(line, "end") == 0)
                        r = 0;
                else
                        r = -EBADMSG;
                if (r == -EBADMSG || r == -ENOMEM)
                        break;
        }
        free(line);
        return r;
}

/* Opens the state file if it is ours (private_file_open): NULL when it is missing, or with *ret_why. */
static FILE *open_state(const char *file, const char **ret_why) {
        int fd = private_file_open(file, ret_why);
        FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
        if (fd >= 0 && !f)
                close(fd);
        return f;
}

/* Drops objects whose file is gone (a package removed them); says so once. */
static void prune_missing(struct learned *l) {
        size_t pruned = 0;
        const char *first = NULL;
        for (size_t i = 0; i < l->nprograms; i++) {
                struct learned_program *p = &l->programs[i];
                size_t kept = 0;
                for (size_t j = 0; j < p->n; j++) {
                        if (access(p->objects[j].path, R_OK) == 0) {
                                p->objects[kept++] = p->objects[j];
                                continue;
                        }
                        if (!pruned++)
                                log_info("learned objects: %s no longer exists; no longer preloaded",
                                         first = p->objects[j].path);
                        free(p->objects[j].path);
                }
                p->n = kept;
        }
        if (pruned > 1)
                log_info("learned objects: %zu that no longer exist pruned", pruned);
}

/* Adds every object of `from` to `into`. Returns 0 or -ENOMEM. */
static int merge(struct learned *into, const struct learned *from) {
        for (size_t i = 0; i < from->nprograms; i++) {
                struct learned_program *p = add_program(into, from->programs[i].path);
                if (!p)
                        return -ENOMEM;
                for (size_t j = 0; j < from->programs[i].n; j++)
                        if (add_object(p, from->programs[i].objects[j].path) < 0)
                                return -ENOMEM;
        }
        return 0;
}

/* The memfd again, with an offset of its own (its file description is shared by every zygote) and
 * locked: zygotes side by side read and rewrite it whole. */
static FILE *open_memory(int memory_fd, int lock, const char *mode) {
        char name[64];
        snprintf(name, sizeof name, "/proc/self/fd/%d", memory_fd);
        _cleanup_close_ int fd = memory_fd < 0 ? -1 : open(name, (mode[1] ? O_RDWR : O_RDONLY) | O_CLOEXEC);
        if (fd < 0 || flock(fd, lock) < 0)
                return NULL;
        FILE *f = fdopen(fd, mode);
        if (f)
                TAKE_FD(fd);
        return f;
}

/* What the memory copy holds, added to l. Empty is fine; a bad copy is left out. */
static int load_memory(struct learned *l, FILE *f) {
        struct learned memory = { 0 };
        unsigned line = 0;
        int r = parse_state(f, &memory, &line);
        if (r == 0)
                r = merge(l, &memory);
        free_programs(&memory);
        return r == -ENOMEM ? r : 0;
}

int learned_load(struct learned *l, const char *file, int memory_fd) {
        *l = (struct learned){ .file = strdup(file), .memory_fd = memory_fd };
        if (!l->file)
                return -ENOMEM;
        _cleanup_fclose_ FILE *memory = open_memory(memory_fd, LOCK_SH, "re");
        if (memory && load_memory(l, memory) < 0)
                return -ENOMEM;
        const char *why;
        _cleanup_fclose_ FILE *f = open_state(file, &why);
        if (!f) {
                if (why)
                        log_warning("ignoring the learned objects in %s: %s", file, why);
                prune_missing(l);
                return 0;
        }
        struct learned on_disk = { 0 };
        unsigned line = 0;
        int r = parse_state(f, &on_disk, &line);
        if (r == 0)
                r = merge(l, &on_disk);
        else if (r != -ENOMEM)
                log_warning("ignoring the learned objects in %s: %s at line %u; learning again", file,
                            r == -ENODATA ? "truncated" : "not a file headstartd wrote", line);
        free_programs(&on_disk);
        if (r == -ENOMEM)
                return r;
        prune_missing(l);
        return 0;
}

static bool is_known(const struct learned *l, dev_t dev, ino_t ino) {
        for (size_t i = 0; i < l->nknown; i++)
                if (l->known[i].dev == dev && l->known[i].ino == ino)
                        return true;
        return false;
}

static int add_known(struct learned *l, dev_t dev, ino_t ino) {
        if (is_known(l, dev, ino))
                return 0;
        struct file_id *k = realloc(l->known, (l->nknown + 1) * sizeof *k);
        if (!k)
                return -ENOMEM;
        l->known = k;
        k[l->nknown++] = (struct file_id){ dev, ino };
        return 0;
}

int learned_ignore(struct learned *l, dev_t dev, ino_t ino) {
        return add_known(l, dev, ino);
}

static void note_mapped(const char *path, dev_t dev, ino_t ino, void *data) {
        (void) path;
        (void) add_known(data, dev, ino);
}

int learned_snapshot_self(struct learned *l) {
        return after_main_scan_maps(getpid(), note_mapped, l);
}

size_t learned_to_preload(struct learned *l, const struct string_list *programs, struct learned_object ***ret) {
        struct learned_object **list = NULL;
        size_t n = 0;
        for (size_t i = 0; i < l->nprograms; i++) {
                if (!string_list_contains(programs, l->programs[i].path))
                        continue;
                for (size_t j = 0; j < l->programs[i].n; j++) {
                        struct learned_object **more = realloc(list, (n + 1) * sizeof *more);
                        if (!more)
                                break;
                        list = more;
                        list[n++] = &l->programs[i].objects[j];
                }
        }
        *ret = list;
        return n;
}

static int add_preloaded(const struct learned_program *p, struct string_list *ret) {
        for (size_t j = 0; j < p->n; j++) {
                const struct learned_object *o = &p->objects[j];
                if (o->preloaded && !string_list_contains(ret, o->path) && string_list_add(ret, o->path) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int learned_preloaded_paths(const struct learned *l, struct string_list *ret) {
        int r = 0;
        for (size_t i = 0; r == 0 && i < l->nprograms; i++)
                r = add_preloaded(&l->programs[i], ret);
        return r;
}

int learned_preloaded_paths_of(const struct learned *l, const char *program, struct string_list *ret) {
        for (size_t i = 0; i < l->nprograms; i++)
                if (strcmp(l->programs[i].path, program) == 0)
                        return add_preloaded(&l->programs[i], ret);
        return 0;
}

/* A shared object the loader could map into this process: not the program itself, not data. */
static bool worth_learning(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        struct elf_info info;
        if (fd < 0 || elf_info_read(fd, &info) < 0)
                return false;
        return info.is_elf && info.machine_matches && info.is_dyn && info.has_dynamic && !info.pie_flag;
}

/* A later zygote would load it into itself: it must be a file only we or root could have put there
 * (trusted-path.h). Said once per file: a file is judged once. */
static bool trusted(const char *path) {
        char why[PATH_MAX + 128];
        if (!trusted_path_refusal(path, why, sizeof why))
                return true;
        log_warning("not learning %s, loaded after main: %s", path, why);
        return false;
}

int learned_note(struct learned *l, const char *program, const char *path, const struct file_id *id, time_t launched,
                 const char *cache_dir) {
        if (path[0] != '/' || strchr(path, '\n') || strncmp(path, cache_dir, strlen(cache_dir)) == 0)
                return 0;
        if (id && is_known(l, id->dev, id->ino))
                return 0;
        struct stat st;
        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        struct file_id found = { st.st_dev, st.st_ino };
        if (!id)
                id = &found;
        if (is_known(l, id->dev, id->ino))
                return 0;
        if (!worth_learning(path) || !trusted(path))
                return add_known(l, id->dev, id->ino); /* judged once */
        /* Written while the program ran, by it (a plugin it builds or copies into place, then loads)
         * or beside it: preloaded, it would be what the next launch's dlopen of that path finds by
         * its name, however the file changes again before that launch loads it. Judged again when
         * seen next. */
        if (st.st_ctime >= launched)
                return 0;
        struct learned_program *p = add_program(l, program);
        int r = p ? add_object(p, path) : 0;
        if (r == 0)
                r = add_known(l, id->dev, id->ino);
        if (r > 0)
                l->learned_now++;
        return r;
}

static int write_state(int fd, const void *data) {
        const struct learned *l = data;
        if (dprintf(fd, "%s\n", STATE_HEADER) < 0)
                return -errno;
        for (size_t i = 0; i < l->nprograms; i++) {
                if (l->programs[i].n && dprintf(fd, "program %s\n", l->programs[i].path) < 0)
                        return -errno;
                for (size_t j = 0; j < l->programs[i].n; j++)
                        if (dprintf(fd, "object %s\n", l->programs[i].objects[j].path) < 0)
                                return -errno;
        }
        return dprintf(fd, "end\n") < 0 ? -errno : 0;
}

/* Rewrites the memory copy whole with `merged`. */
static int save_memory(FILE *f, const struct learned *merged) {
        int fd = fileno(f);
        if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        return write_state(fd, merged);
}

int learned_save(const struct learned *l) {
        struct learned merged = { 0 };
        const char *why;
        unsigned line;
        _cleanup_fclose_ FILE *f = open_state(l->file, &why);
        if (f && parse_state(f, &merged, &line) < 0)
                free_programs(&merged); /* rewritten whole below */
        /* Locked from reading to rewriting: an old and a new zygote may both be saving. */
        _cleanup_fclose_ FILE *memory = open_memory(l->memory_fd, LOCK_EX, "r+e");
        int r = memory ? load_memory(&merged, memory) : 0;
        if (r >= 0)
                r = merge(&merged, l);
        if (r >= 0 && memory)
                (void) save_memory(memory, &merged); /* a memfd fails only for want of memory */
        if (r >= 0)
                r = private_file_replace(l->file, write_state, &merged);
        free_programs(&merged);
        return r;
}
