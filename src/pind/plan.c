/* SPDX-License-Identifier: MIT */
#include "plan.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

/* How many lines are read between two questions whether to stop: a few milliseconds' worth. */
#define LINES_PER_CHECK 4096

/* A plan being read: its arrays have room for more than they hold, and grow by half each time.
 * Growing by one element at a time copies the whole array at every line on allocators that do
 * not grow in place. */
struct reader {
        struct pin_plan *plan;
        size_t programs_room, files_room, ranges_room; /* ranges: of the last file */
        bool file_skipped; /* the last file line was not one: its ranges are not the file's before it */
};

/* array with room for n + 1 elements of size (possibly moved), or NULL (array then untouched). */
static void *grow(void *array, size_t *room, size_t n, size_t size) {
        if (n < *room)
                return array;
        size_t more = *room ? *room + *room / 2 : 16;
        if (more > SIZE_MAX / size)
                return NULL;
        void *p = realloc(array, more * size);
        if (p)
                *room = more;
        return p;
}

static int add_program(struct reader *rd, uint64_t id, double launches, const char *path) {
        struct pin_plan *plan = rd->plan;
        if (id != plan->nprograms || !(launches >= 0) || path[0] != '/' || id >= UINT32_MAX)
                return -EBADMSG; /* IDs come in order, so that a range can name only programs above it */
        struct pin_program *p = grow(plan->programs, &rd->programs_room, plan->nprograms, sizeof *p);
        if (!p)
                return -ENOMEM;
        plan->programs = p;
        p[plan->nprograms] = (struct pin_program){ .path = strdup(path), .launches = launches };
        if (!p[plan->nprograms].path)
                return -ENOMEM;
        plan->nprograms++;
        return 0;
}

static int add_file(struct reader *rd, uint64_t size, const char *path) {
        struct pin_plan *plan = rd->plan;
        struct pin_file *f = grow(plan->files, &rd->files_room, plan->nfiles, sizeof *f);
        if (!f)
                return -ENOMEM;
        plan->files = f;
        f[plan->nfiles] = (struct pin_file){ .path = strdup(path), .size = size };
        if (!f[plan->nfiles].path)
                return -ENOMEM;
        plan->nfiles++;
        rd->ranges_room = 0;
        return 0;
}

/* "1,4,7": program IDs already declared, at least one. */
static int parse_ids(const struct pin_plan *plan, const char *s, struct pin_range *r) {
        size_t n = 1;
        for (const char *c = s; *c; c++)
                n += *c == ',';
        r->programs = calloc(n, sizeof *r->programs);
        if (!r->programs)
                return -ENOMEM;
        for (;;) {
                char *end;
                errno = 0;
                unsigned long id = strtoul(s, &end, 10);
                if (errno || end == s || *s == '-' || id >= plan->nprograms || (*end != ',' && *end != '\0'))
                        return -EBADMSG;
                r->programs[r->nprograms++] = (uint32_t) id;
                if (*end == '\0')
                        return 0;
                s = end + 1;
        }
}

static int add_range(struct reader *rd, uint64_t offset, uint64_t length, const char *ids) {
        struct pin_plan *plan = rd->plan;
        if (plan->nfiles == 0 || length == 0 || offset > UINT64_MAX - length)
                return -EBADMSG;
        struct pin_file *f = &plan->files[plan->nfiles - 1];
        struct pin_range r = { .offset = offset, .length = length };
        int e = parse_ids(plan, ids, &r);
        if (e < 0) {
                free(r.programs);
                return e;
        }
        struct pin_range *ranges = grow(f->ranges, &rd->ranges_room, f->nranges, sizeof *ranges);
        if (!ranges) {
                free(r.programs);
                return -ENOMEM;
        }
        f->ranges = ranges;
        f->ranges[f->nranges++] = r;
        return 0;
}

/* One line; returns 0, 1 at "end", -EBADMSG for a malformed line, -ENOENT for a range of a file line
 * that was malformed (not to be taken for the file's before it), -ENOMEM. */
static int parse_line(struct reader *rd, char *line) {
        uint64_t a, b;
        double launches;
        int n = 0;
        if (strcmp(line, "end") == 0)
                return 1;
        if (sscanf(line, "program %" SCNu64 " %lf %n", &a, &launches, &n) == 2 && n > 0)
                return add_program(rd, a, launches, line + n);
        if (sscanf(line, "file %" SCNu64 " %n", &a, &n) == 1 && n > 0 && line[n] == '/') {
                int r = add_file(rd, a, line + n);
                rd->file_skipped = r == -EBADMSG;
                return r;
        }
        if (strncmp(line, "file ", 5) == 0) {
                rd->file_skipped = true;
                return -EBADMSG;
        }
        if (sscanf(line, "range %" SCNu64 " %" SCNu64 " %n", &a, &b, &n) == 2 && n > 0 && line[n] != '\0')
                return rd->file_skipped ? -ENOENT : add_range(rd, a, b, line + n);
        return line[0] == '#' || line[0] == '\0' ? 0 : -EBADMSG;
}

static int check_header(const char *path, const char *line) {
        if (strcmp(line, PIN_PLAN_HEADER) == 0)
                return 0;
        if (strncmp(line, "headstart-pin-plan ", 19) == 0)
                log_error("%s is a pin plan of another version ('%s'; this headstart-pind reads '%s'): make it "
                          "again with `headstart pin plan`",
                          path, line, PIN_PLAN_HEADER);
        else
                log_error("%s is not a pin plan (its first line is not '%s')", path, PIN_PLAN_HEADER);
        return -EBADMSG;
}

/* Where a range starts or stops covering pages, for the sweep in split_file(). */
struct edge {
        uint64_t at;
        uint32_t range;
        bool start;
};

static int cmp_edge(const void *a, const void *b) {
        const struct edge *x = a, *y = b;
        return x->at < y->at ? -1 : x->at > y->at;
}

/* The programs that the ranges covering a stretch of pages name, each once: count[p] is how many
 * covering ranges name p, list holds the programs counted above 0 and where[p] is p's place in it. */
struct cover {
        uint32_t *count, *where, *list;
        size_t n;
};

static void cover_add(struct cover *c, const struct pin_range *r) {
        for (size_t i = 0; i < r->nprograms; i++) {
                uint32_t p = r->programs[i];
                if (c->count[p]++ == 0) {
                        c->where[p] = (uint32_t) c->n;
                        c->list[c->n++] = p;
                }
        }
}

static void cover_remove(struct cover *c, const struct pin_range *r) {
        for (size_t i = 0; i < r->nprograms; i++) {
                uint32_t p = r->programs[i];
                if (--c->count[p] == 0) {
                        uint32_t last = c->list[--c->n];
                        c->list[c->where[p]] = last;
                        c->where[last] = c->where[p];
                }
        }
}

static void free_ranges(struct pin_range *ranges, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(ranges[i].programs);
        free(ranges);
}

/* Rewrites the ranges of f as runs of whole pages that do not overlap, in file order, clipped to
 * the file's planned size: each run names every program that a range covering its pages named,
 * each program once. Ranges that overlap (plans merged, two programs' ranges of one file, bytes
 * sharing a page) would otherwise count their pages against the budget once per range, and
 * unlocking one range would unlock pages that another still holds. Returns 0 or -ENOMEM. */
static int split_file(struct pin_file *f, uint64_t page, struct cover *c) {
        if (f->nranges == 0)
                return 0;
        _cleanup_free_ struct edge *edges = calloc(2 * f->nranges, sizeof *edges);
        if (!edges)
                return -ENOMEM;
        size_t n = 0;
        /* A file cannot be larger than off_t holds: one planned larger is never mapped anyway. */
        uint64_t size = f->size <= (uint64_t) INT64_MAX ? f->size : 0;
        for (size_t i = 0; i < f->nranges; i++) {
                const struct pin_range *r = &f->ranges[i];
                if (r->offset >= size)
                        continue;
                uint64_t end = r->length < size - r->offset ? r->offset + r->length : size;
                edges[n++] = (struct edge){ r->offset / page * page, (uint32_t) i, true };
                edges[n++] = (struct edge){ (end + page - 1) / page * page, (uint32_t) i, false };
        }
        qsort(edges, n, sizeof *edges, cmp_edge);

        struct pin_range *runs = NULL;
        size_t nruns = 0, room = 0;
        for (size_t i = 0; i < n;) {
                uint64_t at = edges[i].at;
                for (; i < n && edges[i].at == at; i++)
                        (edges[i].start ? cover_add : cover_remove)(c, &f->ranges[edges[i].range]);
                if (c->n == 0 || i == n)
                        continue;
                struct pin_range *more = grow(runs, &room, nruns, sizeof *runs);
                uint32_t *programs = more ? malloc(c->n * sizeof *programs) : NULL;
                if (!programs) {
                        free_ranges(more ? more : runs, nruns);
                        return -ENOMEM;
                }
                runs = more;
                memcpy(programs, c->list, c->n * sizeof *programs);
                runs[nruns++] = (struct pin_range){ .offset = at, .length = edges[i].at - at, .programs = programs,
                                                    .nprograms = c->n };
        }
        free_ranges(f->ranges, f->nranges);
        f->ranges = runs;
        f->nranges = nruns;
        return 0;
}

static int split_ranges(struct pin_plan *plan) {
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
        size_t n = plan->nprograms ? plan->nprograms : 1;
        _cleanup_free_ uint32_t *count = calloc(n, sizeof *count);
        _cleanup_free_ uint32_t *where = calloc(n, sizeof *where);
        _cleanup_free_ uint32_t *list = calloc(n, sizeof *list);
        if (!count || !where || !list)
                return -ENOMEM;
        struct cover c = { count, where, list, 0 };
        for (size_t i = 0; i < plan->nfiles; i++)
                if (split_file(&plan->files[i], page, &c) < 0)
                        return -ENOMEM;
        return 0;
}

int pin_plan_read_fd(int fd, const char *path, bool (*interrupted)(void), struct pin_plan *ret) {
        *ret = (struct pin_plan){ 0 };
        _cleanup_fclose_ FILE *f = fdopen(fd, "r");
        if (!f) {
                int e = errno;
                close(fd);
                return log_error_errno(e, "cannot read the plan %s", path);
        }
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        unsigned lineno = 0;
        int r = 0;
        bool ended = false;
        struct reader rd = { .plan = ret };
        while (r >= 0 && !ended && getline(&line, &cap, f) >= 0) {
                line[strcspn(line, "\n")] = '\0';
                if (++lineno == 1) {
                        r = check_header(path, line);
                        continue;
                }
                if (interrupted && lineno % LINES_PER_CHECK == 0 && interrupted()) {
                        r = -EINTR;
                        break;
                }
                int p = parse_line(&rd, line);
                if (p == -EBADMSG)
                        log_warning("%s:%u: skipped, not a plan line: %.80s", path, lineno, line);
                else if (p == -ENOENT)
                        log_warning("%s:%u: skipped, a range of the file line skipped above", path, lineno);
                else if (p < 0)
                        r = (log_error("out of memory"), -ENOMEM);
                ended = p == 1;
        }
        if (r >= 0 && ferror(f))
                r = log_error_errno(EIO, "cannot read the plan %s", path);
        if (r >= 0 && lineno == 0) {
                log_error("%s is empty, not a pin plan", path);
                r = -EBADMSG;
        }
        if (r >= 0 && !ended)
                log_warning("%s has no 'end' line: it may be cut short; pinning what it holds", path);
        if (r >= 0 && split_ranges(ret) < 0)
                r = (log_error("out of memory"), -ENOMEM);
        if (r < 0)
                pin_plan_done(ret);
        return r;
}

int pin_plan_read(const char *path, struct pin_plan *ret) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return *ret = (struct pin_plan){ 0 }, log_error_errno(errno, "cannot read the plan %s", path);
        return pin_plan_read_fd(fd, path, NULL, ret);
}

void pin_plan_done(struct pin_plan *plan) {
        for (size_t i = 0; i < plan->nprograms; i++)
                free(plan->programs[i].path);
        for (size_t i = 0; i < plan->nfiles; i++) {
                free(plan->files[i].path);
                for (size_t j = 0; j < plan->files[i].nranges; j++)
                        free(plan->files[i].ranges[j].programs);
                free(plan->files[i].ranges);
        }
        free(plan->programs);
        free(plan->files);
        *plan = (struct pin_plan){ 0 };
}
