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
#include "read-ahead.h"

static bool is_dropped(const struct pinner *p, dev_t dev, ino_t ino) {
        for (size_t i = 0; i < p->ndropped; i++)
                if (p->dropped[i].dev == dev && p->dropped[i].ino == ino)
                        return true;
        return false;
}

/* A file of the plan with no range: launches open it, or look it up, but read nothing of it that
 * needs pinning. Holding it open keeps its inode and the dentries of its path cached, which a cold
 * launch would otherwise read from storage to find it. */
static int hold_file(struct pinned_file *pf, int fd, const struct stat *st) {
        *pf = (struct pinned_file){ .plan = pf->plan, .dev = st->st_dev, .ino = st->st_ino, .mtime = st->st_mtim,
                                    .size = st->st_size, .held_fd = fd };
        return 0;
}

static int map_file(struct pinner *p, struct pinned_file *pf) {
        const struct pin_file *plan = pf->plan;
        _cleanup_close_ int fd = open(plan->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return log_warning_errno(errno, "%s: cannot open it; not pinned", plan->path);
        if (plan->nranges == 0)
                return hold_file(pf, TAKE_FD(fd), &st);
        if (!S_ISREG(st.st_mode))
                return log_warning("%s: not a regular file; not pinned (make a new plan)", plan->path), -ESTALE;
        if ((uint64_t) st.st_size != plan->size || st.st_size == 0)
                return log_warning("%s: %lld bytes where the plan has %llu; not pinned (make a new plan)", plan->path,
                                   (long long) st.st_size, (unsigned long long) plan->size),
                       -ESTALE;
        if (is_dropped(p, st.st_dev, st.st_ino))
                return -ESTALE;
        bool *locked = calloc(plan->nranges ? plan->nranges : 1, sizeof *locked);
        void *map = locked ? mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
        if (map == MAP_FAILED) {
                free(locked);
                return log_warning_errno(errno, "%s: cannot map it; not pinned", plan->path);
        }
        /* The faults of mlock read only the page they lock, not the readahead window around it
         * (8 MiB on some disks), which no launch asked for. */
        (void) madvise(map, (size_t) st.st_size, MADV_RANDOM);
        *pf = (struct pinned_file){ .plan = plan, .dev = st.st_dev, .ino = st.st_ino, .mtime = st.st_mtim,
                                    .size = st.st_size, .map = map, .map_len = (size_t) st.st_size, .locked = locked,
                                    .held_fd = -1 };
        return 0;
}

int pinner_map(struct pinner *p, const struct pin_plan *plan, uint64_t budget, bool (*interrupted)(void)) {
        *p = (struct pinner){ .budget = budget, .dropped = p->dropped, .ndropped = p->ndropped,
                              .repinned_at = time(NULL), .interrupted = interrupted };
        p->files = calloc(plan->nfiles ? plan->nfiles : 1, sizeof *p->files);
        if (!p->files)
                return log_error("out of memory"), -ENOMEM;
        p->nfiles = plan->nfiles;
        for (size_t i = 0; i < plan->nfiles; i++)
                p->files[i] = (struct pinned_file){ .plan = &plan->files[i], .held_fd = -1 };
        for (size_t i = 0; i < plan->nfiles; i++) {
                if (interrupted && interrupted())
                        return -EINTR;
                (void) map_file(p, &p->files[i]);
        }
        return 0;
}

/* Asked once per so many ranges locked: each lock may read from storage, a question is one
 * system call. */
#define RANGES_PER_CHECK 64

static size_t page_size(void) {
        static size_t page;
        if (!page)
                page = (size_t) sysconf(_SC_PAGESIZE);
        return page;
}

/* The range in whole pages, clipped to the file; 0 when nothing of it is left. */
static size_t page_span(const struct pinned_file *pf, const struct pin_range *r, size_t *ret_start) {
        size_t page = page_size();
        *ret_start = 0;
        if (!pf->map || r->offset >= (uint64_t) pf->size)
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

static void tell_limit(struct pinner *p, int error) {
        uint64_t limit = memlock_limit();
        unsigned long long want_kib = p->wanted / 1024 + 64;
        p->limit_told = true;
        if (p->wanted + 64 * 1024 <= limit) /* not the limit: the kernel refused for another reason */
                return (void) log_error("mlock: %s at %llu KiB of the %llu KiB planned, within RLIMIT_MEMLOCK (%llu "
                                        "KiB): a container may deny locking memory (CAP_IPC_LOCK)",
                                        strerror(error), (unsigned long long) (p->locked / 1024),
                                        (unsigned long long) (p->wanted / 1024), (unsigned long long) (limit / 1024));
        log_error("RLIMIT_MEMLOCK (%llu KiB) stops pinning at %llu KiB of the %llu KiB planned within the budget: "
                  "raise it (LimitMEMLOCK=%lluK in the unit, or ulimit -l %llu)",
                  (unsigned long long) (limit / 1024), (unsigned long long) (p->locked / 1024),
                  (unsigned long long) (p->wanted / 1024), want_kib, want_kib);
}

/* Sets want[i] for the ranked ranges that fit the budget, highest first. */
static void choose(struct pinner *p, const struct ranked *ranked, size_t n, bool *want) {
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++) {
                const struct pinned_file *pf = &p->files[ranked[i].file];
                size_t start, len = page_span(pf, &pf->plan->ranges[ranked[i].range], &start);
                want[i] = len > 0 && total + len <= p->budget;
                total += want[i] ? len : 0;
        }
        p->wanted = total;
}

/* Locks or unlocks one range; returns whether it did. */
static bool set_locked(struct pinner *p, const struct ranked *r, bool lock) {
        struct pinned_file *pf = &p->files[r->file];
        size_t start, len = page_span(pf, &pf->plan->ranges[r->range], &start);
        if (!pf->map || pf->locked[r->range] == lock)
                return false;
        /* mlock reads in what is not cached; a page beyond a file cut short since fails here with
         * ENOMEM rather than faulting in our hands. Without CAP_IPC_LOCK, a lock beyond
         * RLIMIT_MEMLOCK fails too (ENOMEM, or EPERM when the limit is 0). */
        char *at = (char *) pf->map + start;
        /* What is not cached is read first in large requests for exactly the range (MADV_WILLNEED
         * marks no page for readahead, see map_file), then locked. */
        if (lock)
                read_ahead_mapping(at, len);
        if (lock ? mlock(at, len) < 0 : munlock(at, len) < 0)
                return false;
        /* Unlocked pages would stay mapped here, which keeps them from being evicted like any other
         * cached page: drop them from our page tables (the page cache keeps its copy). */
        if (!lock)
                (void) madvise(at, len, MADV_DONTNEED);
        pf->locked[r->range] = lock;
        pf->locked_bytes = lock ? pf->locked_bytes + len : pf->locked_bytes - len;
        p->locked = lock ? p->locked + len : p->locked - len;
        return true;
}

bool pinner_repin(struct pinner *p, const struct ranked *ranked, size_t n) {
        bool *want = calloc(n ? n : 1, sizeof *want);
        if (!want)
                return log_error("out of memory"), false;
        choose(p, ranked, n, want);
        bool changed = false;
        int limited = 0; /* the errno of the first lock refused for a limit */
        for (size_t i = 0; i < n; i++) /* unlock first: what goes makes room for what comes */
                if (!want[i])
                        changed |= set_locked(p, &ranked[i], false);
        for (size_t i = 0; i < n; i++) {
                if (p->interrupted && i % RANGES_PER_CHECK == 0 && p->interrupted())
                        break; /* the caller stops: what is locked is released with the rest */
                if (want[i] && !p->files[ranked[i].file].locked[ranked[i].range]) {
                        bool done = set_locked(p, &ranked[i], true);
                        changed |= done;
                        if (!done && !limited &&
                            (errno == EPERM || errno == EAGAIN ||
                             (errno == ENOMEM && p->locked < p->wanted && p->wanted > memlock_limit())))
                                limited = errno;
                }
        }
        free(want);
        if (limited && !p->limit_told)
                tell_limit(p, limited);
        if (changed)
                p->repinned_at = time(NULL);
        return changed;
}

void pinner_release(struct pinner *p, bool keep_dropped) {
        for (size_t i = 0; i < p->nfiles; i++) {
                if (p->files[i].map)
                        (void) munmap(p->files[i].map, p->files[i].map_len); /* unlocks too */
                if (p->files[i].held_fd >= 0)
                        close(p->files[i].held_fd);
                free(p->files[i].locked);
        }
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
                if (!pf->map && pf->held_fd < 0)
                        continue;
                if (stat(pf->plan->path, &st) < 0 || st.st_dev != pf->dev || st.st_ino != pf->ino) {
                        stale = true; /* replaced (or removed): pinned anew from what is there now */
                        continue;
                }
                if (pf->map && (st.st_size != pf->size || st.st_mtim.tv_sec != pf->mtime.tv_sec ||
                                st.st_mtim.tv_nsec != pf->mtime.tv_nsec)) {
                        drop(p, pf);
                        stale = true;
                }
        }
        return stale;
}

/* The bytes locked of each program's ranges, in one pass over the ranges (bytes[nprograms]). */
static void program_bytes(const struct pinner *p, uint64_t *bytes) {
        for (size_t i = 0; i < p->nfiles; i++)
                for (size_t j = 0; p->files[i].map && j < p->files[i].plan->nranges; j++) {
                        const struct pin_range *r = &p->files[i].plan->ranges[j];
                        size_t start, len = page_span(&p->files[i], r, &start);
                        for (size_t k = 0; p->files[i].locked[j] && k < r->nprograms; k++)
                                bytes[r->programs[k]] += len;
                }
}

void pinner_log_status(const struct pinner *p, const struct pin_plan *plan, const struct launch_counts *c,
                       bool each) {
        size_t mapped = 0;
        for (size_t i = 0; i < p->nfiles; i++) {
                if (!p->files[i].map)
                        continue;
                mapped++;
                if (each)
                        log_info("pinned %llu KiB of %s", (unsigned long long) (p->files[i].locked_bytes / 1024),
                                 p->files[i].plan->path);
        }
        /* Per program in one pass: asking each program's bytes of every range took minutes with
         * thousands of programs and hundreds of thousands of ranges. */
        _cleanup_free_ uint64_t *bytes = each ? calloc(plan->nprograms ? plan->nprograms : 1, sizeof *bytes) : NULL;
        if (bytes)
                program_bytes(p, bytes);
        for (size_t i = 0; bytes && i < plan->nprograms; i++)
                log_info("program %s: %.1f launches, %llu KiB of its pages pinned", plan->programs[i].path,
                         c->count[i], (unsigned long long) (bytes[i] / 1024));
        struct tm tm;
        char when[32] = "?";
        if (localtime_r(&p->repinned_at, &tm))
                strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        log_info("pinned %llu KiB of the budget's %llu KiB (files: %zu, programs: %zu); last re-pin %s%s",
                 (unsigned long long) (p->locked / 1024), (unsigned long long) (p->budget / 1024), mapped,
                 plan->nprograms, when, each ? "" : " (SIGUSR1 lists each)");
}
