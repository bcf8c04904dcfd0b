/* SPDX-License-Identifier: MIT */
#include "plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static int add_program(struct pin_plan *plan, uint64_t id, double launches, const char *path) {
        if (id != plan->nprograms || !(launches >= 0) || path[0] != '/')
                return -EBADMSG; /* IDs come in order, so that a range can name only programs above it */
        struct pin_program *p = realloc(plan->programs, (plan->nprograms + 1) * sizeof *p);
        if (!p)
                return -ENOMEM;
        plan->programs = p;
        p[plan->nprograms] = (struct pin_program){ .path = strdup(path), .launches = launches };
        if (!p[plan->nprograms].path)
                return -ENOMEM;
        plan->nprograms++;
        return 0;
}

static int add_file(struct pin_plan *plan, uint64_t size, const char *path) {
        struct pin_file *f = realloc(plan->files, (plan->nfiles + 1) * sizeof *f);
        if (!f)
                return -ENOMEM;
        plan->files = f;
        f[plan->nfiles] = (struct pin_file){ .path = strdup(path), .size = size };
        if (!f[plan->nfiles].path)
                return -ENOMEM;
        plan->nfiles++;
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

static int add_range(struct pin_plan *plan, uint64_t offset, uint64_t length, const char *ids) {
        if (plan->nfiles == 0 || length == 0 || offset > UINT64_MAX - length)
                return -EBADMSG;
        struct pin_file *f = &plan->files[plan->nfiles - 1];
        struct pin_range r = { .offset = offset, .length = length };
        int e = parse_ids(plan, ids, &r);
        if (e < 0) {
                free(r.programs);
                return e;
        }
        struct pin_range *ranges = realloc(f->ranges, (f->nranges + 1) * sizeof *ranges);
        if (!ranges) {
                free(r.programs);
                return -ENOMEM;
        }
        f->ranges = ranges;
        f->ranges[f->nranges++] = r;
        return 0;
}

/* One line; returns 0, 1 at "end", -EBADMSG for a malformed line, -ENOMEM. */
static int parse_line(struct pin_plan *plan, char *line) {
        uint64_t a, b;
        double launches;
        int n = 0;
        if (strcmp(line, "end") == 0)
                return 1;
        if (sscanf(line, "program %" SCNu64 " %lf %n", &a, &launches, &n) == 2 && n > 0)
                return add_program(plan, a, launches, line + n);
        if (sscanf(line, "file %" SCNu64 " %n", &a, &n) == 1 && n > 0 && line[n] == '/')
                return add_file(plan, a, line + n);
        if (sscanf(line, "range %" SCNu64 " %" SCNu64 " %n", &a, &b, &n) == 2 && n > 0 && line[n] != '\0')
                return add_range(plan, a, b, line + n);
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

int pin_plan_read(const char *path, struct pin_plan *ret) {
        *ret = (struct pin_plan){ 0 };
        FILE *f = fopen(path, "re");
        if (!f)
                return log_error_errno(errno, "cannot read the plan %s", path);
        char *line = NULL;
        size_t cap = 0;
        unsigned lineno = 0;
        int r = 0;
        bool ended = false;
        while (r >= 0 && !ended && getline(&line, &cap, f) >= 0) {
                line[strcspn(line, "\n")] = '\0';
                if (++lineno == 1) {
                        r = check_header(path, line);
                        continue;
                }
                int p = parse_line(ret, line);
                if (p == -EBADMSG)
                        log_warning("%s:%u: skipped, not a plan line: %.80s", path, lineno, line);
                else if (p < 0)
                        r = (log_error("out of memory"), -ENOMEM);
                ended = p == 1;
        }
        free(line);
        fclose(f);
        if (r >= 0 && lineno == 0) {
                log_error("%s is empty, not a pin plan", path);
                r = -EBADMSG;
        }
        if (r >= 0 && !ended)
                log_warning("%s has no 'end' line: it may be cut short; pinning what it holds", path);
        if (r < 0)
                pin_plan_done(ret);
        return r;
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
