/* SPDX-License-Identifier: MIT */
#include "plan.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

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

static int add_range(struct pin_file *f, struct pin_range r) {
        struct pin_range *ranges = realloc(f->ranges, (f->nranges + 1) * sizeof *ranges);
        if (!ranges)
                return -ENOMEM;
        f->ranges = ranges;
        f->ranges[f->nranges++] = r;
        return 0;
}

/* One line; returns 0, 1 at "end", -EBADMSG for a malformed line, -ENOMEM. */
static int parse_line(struct pin_plan *plan, char *line) {
        uint64_t a, b, c;
        int n = 0;
        if (strcmp(line, "end") == 0)
                return 1;
        if (sscanf(line, "file %" SCNu64 " %n", &a, &n) == 1 && n > 0 && line[n] == '/')
                return add_file(plan, a, line + n);
        if (sscanf(line, "range %" SCNu64 " %" SCNu64 " %" SCNu64 "%n", &a, &b, &c, &n) == 3 && line[n] == '\0') {
                if (plan->nfiles == 0 || b == 0 || a > UINT64_MAX - b)
                        return -EBADMSG;
                return add_range(&plan->files[plan->nfiles - 1], (struct pin_range){ a, b, c });
        }
        return line[0] == '#' || line[0] == '\0' ? 0 : -EBADMSG;
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
                        if (strcmp(line, PIN_PLAN_HEADER) != 0) {
                                log_error("%s is not a pin plan (its first line is not '%s')", path, PIN_PLAN_HEADER);
                                r = -EBADMSG;
                        }
                        continue;
                }
                int p = parse_line(ret, line);
                if (p == -EBADMSG)
                        log_warning("%s:%u: skipped, not a plan line: %.80s", path, lineno, line);
                else if (p < 0)
                        r = log_error("out of memory");
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
        for (size_t i = 0; i < plan->nfiles; i++) {
                free(plan->files[i].path);
                free(plan->files[i].ranges);
        }
        free(plan->files);
        *plan = (struct pin_plan){ 0 };
}
