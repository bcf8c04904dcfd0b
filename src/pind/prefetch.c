/* SPDX-License-Identifier: MIT */
#include "prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "read-ahead.h"

/* linux/ioprio.h, which glibc does not wrap. */
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_WHO_PROCESS 1

/* The file's fd when it is as planned, -1 otherwise (reported once: fds[i] becomes -2). */
static int file_fd(const struct pin_file *f, int *fd) {
        if (*fd != -1)
                return *fd;
        _cleanup_close_ int opened = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        *fd = -2;
        if (opened < 0 || fstat(opened, &st) < 0)
                log_warning_errno(errno, "%s: cannot open it; not prefetched", f->path);
        else if (!S_ISREG(st.st_mode))
                log_warning("%s: not a regular file; not prefetched (make a new plan)", f->path);
        else if ((uint64_t) st.st_size != f->size)
                log_warning("%s: %lld bytes where the plan has %llu; not prefetched (make a new plan)", f->path,
                            (long long) st.st_size, (unsigned long long) f->size);
        else
                *fd = TAKE_FD(opened);
        return *fd;
}

/* Reads [offset, offset + length) with pread: what the kernel then caches is the point, not the bytes. */
static int read_into_cache(int fd, uint64_t offset, uint64_t length) {
        static char buffer[64 * 1024];
        for (uint64_t done = 0; done < length;) {
                size_t piece = length - done < sizeof buffer ? (size_t) (length - done) : sizeof buffer;
                ssize_t got = pread(fd, buffer, piece, (off_t) (offset + done));
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0)
                        return -errno;
                if (got == 0) /* past the file's end */
                        break;
                done += (uint64_t) got;
        }
        return 0;
}

static bool holds_cap_fowner(void) {
        struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = { 0 };
        return syscall(SYS_capget, &header, caps) == 0 &&
               (caps[CAP_FOWNER / 32].effective & (1u << (CAP_FOWNER % 32)));
}

/* Whether mincore(2) tells the truth about fd's pages: Linux (since 5.0) reveals a file's page cache
 * only to its owner, to a process that may write it, or to one holding CAP_FOWNER; to anyone else
 * it answers that every page is cached. Asked once a file. */
static bool mincore_tells(int fd) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return false;
        if (st.st_uid == geteuid() || holds_cap_fowner())
                return true;
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        return faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0;
}

/* readahead(2) is a hint: under memory or I/O pressure the kernel may read less than asked, and a
 * test on a busy machine found a range never read. This second pass reads what the first left out,
 * and only that where mincore(2) can say which pages the cache holds (a page still being read is not
 * yet one, and pread waits for it): copying the others out too cost a device's boot CPU time for
 * nothing (38 MiB of its plan, under emulation). The plan's ranges are whole pages (split_file). */
static int read_missing(int fd, bool mincore_truthful, uint64_t offset, uint64_t length) {
        if (length == 0)
                return 0;
        if (!mincore_truthful)
                return read_into_cache(fd, offset, length);
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
        size_t npages = (size_t) ((length + page - 1) / page);
        void *map = mmap(NULL, (size_t) length, PROT_READ, MAP_SHARED, fd, (off_t) offset);
        _cleanup_free_ unsigned char *cached = malloc(npages);
        if (map == MAP_FAILED || !cached || mincore(map, (size_t) length, cached) < 0) {
                if (map != MAP_FAILED)
                        munmap(map, (size_t) length);
                return read_into_cache(fd, offset, length); /* cannot tell: read it all */
        }
        munmap(map, (size_t) length);
        for (size_t i = 0; i < npages;) {
                size_t run = 0;
                while (i + run < npages && !(cached[i + run] & 1))
                        run++;
                if (run > 0) {
                        int err = read_into_cache(fd, offset + i * page, run * page);
                        if (err < 0)
                                return err;
                }
                i += run > 0 ? run : 1;
        }
        return 0;
}

int prefetch(const struct pin_plan *plan, const struct ranked *ranked, size_t n, uint64_t budget) {
        if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT) < 0)
                log_warning_errno(errno, "cannot lower the I/O priority to idle; prefetching at the usual one");
        int *fds = malloc((plan->nfiles ? plan->nfiles : 1) * sizeof *fds);
        bool *asked = calloc(n ? n : 1, sizeof *asked);
        bool *truthful = calloc(plan->nfiles ? plan->nfiles : 1, sizeof *truthful); /* mincore_tells, a file */
        if (!fds || !asked || !truthful)
                return free(fds), free(asked), free(truthful), log_error("out of memory"), -ENOMEM;
        for (size_t i = 0; i < plan->nfiles; i++)
                fds[i] = -1;
        uint64_t total = 0;
        size_t nfiles = 0;
        for (size_t i = 0; i < n; i++) {
                const struct pin_file *f = &plan->files[ranked[i].file];
                const struct pin_range *r = &f->ranges[ranked[i].range];
                if (total + r->length > budget)
                        continue;
                bool opened = fds[ranked[i].file] != -1;
                int fd = file_fd(f, &fds[ranked[i].file]);
                if (fd < 0)
                        continue;
                if (!opened) {
                        nfiles++;
                        truthful[ranked[i].file] = mincore_tells(fd);
                }
                /* Starts the reads and returns, so that the disk gets them all at once; a range past a
                 * file's end reads nothing. */
                asked[i] = read_ahead_file(fd, r->offset, r->length) == 0;
                total += asked[i] ? r->length : 0;
        }
        for (size_t i = 0; i < n; i++) {
                const struct pin_file *f = &plan->files[ranked[i].file];
                const struct pin_range *r = &f->ranges[ranked[i].range];
                size_t file = ranked[i].file;
                int err = asked[i] ? read_missing(fds[file], truthful[file], r->offset, r->length) : 0;
                if (err < 0)
                        log_warning_errno(-err, "%s: cannot read it; partly prefetched", f->path);
        }
        for (size_t i = 0; i < plan->nfiles; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        free(fds);
        free(asked);
        free(truthful);
        log_info("prefetched %llu KiB from %zu files at idle I/O priority", (unsigned long long) (total / 1024), nfiles);
        return total > 0 || n == 0 ? 0 : -ENOENT;
}
