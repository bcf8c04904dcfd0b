/* SPDX-License-Identifier: MIT */
#include "pin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

/* One range of one file, for ranking all of them together. */
struct candidate {
        struct pinned_file *file;
        const struct pin_range *range;
};

static int cmp_weight(const void *a, const void *b) {
        const struct candidate *x = a, *y = b;
        if (x->range->weight != y->range->weight)
                return x->range->weight < y->range->weight ? 1 : -1;
        return x->range < y->range ? -1 : x->range > y->range; /* plan order among equals */
}

static int map_file(struct pinned_file *pf, const struct pin_file *plan) {
        _cleanup_close_ int fd = open(plan->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return log_warning_errno(errno, "%s: cannot open it; not pinned", plan->path);
        if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size != plan->size || st.st_size == 0)
                return log_warning("%s: %lld bytes where the plan has %llu; not pinned (make a new plan)", plan->path,
                                   (long long) st.st_size, (unsigned long long) plan->size),
                       -ESTALE;
        void *map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                return log_warning_errno(errno, "%s: cannot map it; not pinned", plan->path);
        *pf = (struct pinned_file){ .plan = plan, .dev = st.st_dev, .ino = st.st_ino, .mtime = st.st_mtim,
                                    .size = st.st_size, .map = map, .map_len = (size_t) st.st_size };
        return 0;
}

/* The range in whole pages, clipped to the file; 0 when nothing of it is left. */
static size_t page_span(const struct pinned_file *pf, const struct pin_range *r, size_t *ret_start) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        if (r->offset >= (uint64_t) pf->size)
                return 0;
        uint64_t end = r->offset + r->length < (uint64_t) pf->size ? r->offset + r->length : (uint64_t) pf->size;
        size_t start = (size_t) r->offset / page * page;
        size_t stop = ((size_t) end + page - 1) / page * page;
        *ret_start = start;
        return stop - start;
}

static uint64_t memlock_limit(void) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                return UINT64_MAX;
        return rl.rlim_cur;
}

static void lock_ranges(struct pinner *p, struct candidate *c, size_t n) {
        uint64_t limit = memlock_limit();
        bool limited = false;
        for (size_t i = 0; i < n; i++) {
                size_t start, len = page_span(c[i].file, c[i].range, &start);
                if (len == 0 || p->locked + len > p->budget)
                        continue;
                p->wanted += len;
                /* mlock reads in what is not cached; a page beyond a file cut short since fails
                 * here with ENOMEM rather than faulting in our hands. Without CAP_IPC_LOCK, a lock
                 * beyond RLIMIT_MEMLOCK fails too (ENOMEM, or EPERM when the limit is 0). */
                if (mlock((char *) c[i].file->map + start, len) < 0) {
                        limited |= errno == EPERM || errno == EAGAIN || (errno == ENOMEM && p->locked + len > limit);
                        continue;
                }
                c[i].file->locked += len;
                p->locked += len;
        }
        if (limited)
                log_error("RLIMIT_MEMLOCK (%llu KiB) stops pinning at %llu KiB of the %llu KiB planned within the "
                          "budget: raise it (LimitMEMLOCK=%lluK in the unit, or ulimit -l %llu)",
                          (unsigned long long) (limit / 1024), (unsigned long long) (p->locked / 1024),
                          (unsigned long long) (p->wanted / 1024), (unsigned long long) (p->wanted / 1024 + 64),
                          (unsigned long long) (p->wanted / 1024 + 64));
}

static bool is_dropped(const struct pinner *p, const struct pinned_file *pf) {
        for (size_t i = 0; i < p->ndropped; i++)
                if (p->dropped[i].dev == pf->dev && p->dropped[i].ino == pf->ino)
                        return true;
        return false;
}

int pinner_apply(struct pinner *p, const struct pin_plan *plan, uint64_t budget) {
        *p = (struct pinner){ .budget = budget, .dropped = p->dropped, .ndropped = p->ndropped };
        p->files = calloc(plan->nfiles ? plan->nfiles : 1, sizeof *p->files);
        size_t ncand = 0;
        for (size_t i = 0; i < plan->nfiles; i++)
                ncand += plan->files[i].nranges;
        struct candidate *c = calloc(ncand ? ncand : 1, sizeof *c);
        if (!p->files || !c) {
                free(c);
                return log_error("out of memory"), -ENOMEM;
        }
        size_t k = 0;
        for (size_t i = 0; i < plan->nfiles; i++) {
                struct pinned_file *pf = &p->files[p->nfiles];
                if (map_file(pf, &plan->files[i]) < 0)
                        continue;
                if (is_dropped(p, pf)) {
                        (void) munmap(pf->map, pf->map_len);
                        continue;
                }
                p->nfiles++;
                for (size_t j = 0; j < plan->files[i].nranges; j++)
                        c[k++] = (struct candidate){ pf, &plan->files[i].ranges[j] };
        }
        qsort(c, k, sizeof *c, cmp_weight);
        lock_ranges(p, c, k);
        free(c);
        return 0;
}

void pinner_release(struct pinner *p, bool keep_dropped) {
        for (size_t i = 0; i < p->nfiles; i++)
                (void) munmap(p->files[i].map, p->files[i].map_len); /* unlocks too */
        free(p->files);
        struct file_identity *dropped = keep_dropped ? p->dropped : NULL;
        size_t ndropped = keep_dropped ? p->ndropped : 0;
        if (!keep_dropped)
                free(p->dropped);
        *p = (struct pinner){ .dropped = dropped, .ndropped = ndropped };
}

static void drop(struct pinner *p, const struct pinned_file *pf) {
        struct file_identity *d = realloc(p->dropped, (p->ndropped + 1) * sizeof *d);
        if (!d)
                return;
        p->dropped = d;
        d[p->ndropped++] = (struct file_identity){ pf->dev, pf->ino };
        log_warning("%s changed in place: its planned ranges no longer fit it; unpinned until it is replaced or "
                    "a new plan comes",
                    pf->plan->path);
}

bool pinner_stale(struct pinner *p) {
        bool stale = false;
        for (size_t i = 0; i < p->nfiles; i++) {
                const struct pinned_file *pf = &p->files[i];
                struct stat st;
                if (stat(pf->plan->path, &st) < 0 || st.st_dev != pf->dev || st.st_ino != pf->ino) {
                        stale = true; /* replaced (or removed): pinned anew from what is there now */
                        continue;
                }
                if (st.st_size != pf->size || st.st_mtim.tv_sec != pf->mtime.tv_sec ||
                    st.st_mtim.tv_nsec != pf->mtime.tv_nsec) {
                        drop(p, pf);
                        stale = true;
                }
        }
        return stale;
}

void pinner_log_status(const struct pinner *p) {
        for (size_t i = 0; i < p->nfiles; i++)
                log_info("pinned %llu KiB of %s", (unsigned long long) (p->files[i].locked / 1024), p->files[i].plan->path);
        log_info("pinned %llu KiB in %zu files, budget %llu KiB", (unsigned long long) (p->locked / 1024), p->nfiles,
                 (unsigned long long) (p->budget / 1024));
}
