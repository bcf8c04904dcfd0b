/* SPDX-License-Identifier: MIT */
#include "pointer-scan.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

#define CHUNK (64u * 1024u)

struct scan {
        const struct scan_range *ranges;
        size_t n;
        pointer_scan_fn fn;
        void *userdata;
        uintptr_t buf[CHUNK / sizeof(uintptr_t)];
};

static ssize_t in_range(const struct scan *s, uintptr_t v) {
        for (size_t i = 0; i < s->n; i++)
                if (v >= s->ranges[i].lo && v < s->ranges[i].hi)
                        return (ssize_t) i;
        return -1;
}

static int scan_words(struct scan *s, uintptr_t at, size_t nwords) {
        for (size_t i = 0; i < nwords; i++) {
                ssize_t hit = in_range(s, s->buf[i]);
                uintptr_t address = at + i * sizeof(uintptr_t);
                /* The buffer holds copies of the words it was filled with: not pointers of anyone's. */
                bool own = address >= (uintptr_t) s->buf && address < (uintptr_t) s->buf + sizeof s->buf;
                if (hit >= 0 && !own && in_range(s, address) < 0) {
                        int r = s->fn(address, (size_t) hit, s->userdata);
                        if (r != 0)
                                return r;
                }
        }
        return 0;
}

static int scan_mapping(struct scan *s, int mem, uintptr_t start, uintptr_t end) {
        for (uintptr_t at = start; at < end; at += CHUNK) {
                size_t want = end - at < CHUNK ? end - at : CHUNK;
                ssize_t got = pread(mem, s->buf, want, (off_t) at);
                if (got <= 0)
                        continue; /* unreadable page (a guard, say): nothing in it points anywhere */
                int r = scan_words(s, at, (size_t) got / sizeof(uintptr_t));
                if (r != 0)
                        return r;
        }
        return 0;
}

/* A line of /proc/self/maps that may hold pointers: private, readable and writable, not the stack
 * nor the kernel's pages. */
static bool worth_scanning(const char *perms, const char *name, uintptr_t start, uintptr_t end) {
        if (strncmp(perms, "rw", 2) != 0 || perms[3] != 'p')
                return false;
        if (strcmp(name, "[stack]") == 0 || strcmp(name, "[vvar]") == 0 || strcmp(name, "[vsyscall]") == 0)
                return false;
        return end - start <= SCAN_MAX_MAPPING;
}

int pointer_scan(const struct scan_range *ranges, size_t n, pointer_scan_fn fn, void *userdata) {
        _cleanup_fclose_ FILE *maps = fopen("/proc/self/maps", "re");
        if (!maps)
                return -errno;
        _cleanup_close_ int mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
        if (mem < 0)
                return -errno;
        _cleanup_free_ struct scan *s = malloc(sizeof *s);
        if (!s)
                return -ENOMEM;
        *s = (struct scan){ .ranges = ranges, .n = n, .fn = fn, .userdata = userdata };
        char line[4096];
        while (fgets(line, sizeof line, maps)) {
                uintptr_t start, end;
                char perms[8] = "", name[4096] = "";
                if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %*s %4095[^\n]", &start, &end, perms, name) < 3)
                        continue;
                if (!worth_scanning(perms, name, start, end))
                        continue;
                int r = scan_mapping(s, mem, start, end);
                if (r != 0)
                        return r;
        }
        return 0;
}
