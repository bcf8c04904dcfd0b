/* SPDX-License-Identifier: MIT */
#include "after-main.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "close-hook.h"
#include "macro.h"

struct after_main_page *after_main_page_new(void) {
        void *p = mmap(NULL, AFTER_MAIN_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
}

void after_main_page_free(struct after_main_page *page) {
        if (page)
                (void) munmap(page, AFTER_MAIN_PAGE_SIZE);
}

/* The child's state between arming and exit: what fork needs, and nothing else. */
static struct {
        struct after_main_page *page;
        size_t objects_at_main;
        size_t used;                 /* bytes of paths the page holds */
        unsigned long long recorded; /* the loader's count of objects loaded ever, at the last record */
        pid_t pid;
} armed;
static pthread_mutex_t recording = PTHREAD_MUTEX_INITIALIZER;

struct writer {
        size_t index, used;
};

static bool recorded(const char *path, size_t used) {
        for (const char *p = armed.page->paths; p < armed.page->paths + used; p += strlen(p) + 1)
                if (strcmp(p, path) == 0)
                        return true;
        return false;
}

static int record_one(struct dl_phdr_info *info, size_t size, void *data) {
        (void) size;
        struct writer *w = data;
        size_t index = w->index++;
        if (index < armed.objects_at_main || info->dlpi_name[0] != '/' || recorded(info->dlpi_name, w->used))
                return 0;
        size_t len = strlen(info->dlpi_name) + 1, room = sizeof armed.page->paths - 1 - w->used;
        if (len > room)
                return 1; /* full: the rest is not learned */
        memcpy(armed.page->paths + w->used, info->dlpi_name, len);
        w->used += len;
        return 0;
}

/* Adds to the page the objects loaded after main that it lacks: at exit, and before each dlclose,
 * while what is closed is still loaded (close-hook.h). */
static int loads_so_far(struct dl_phdr_info *info, size_t size, void *data) {
        (void) size;
        *(unsigned long long *) data = info->dlpi_adds;
        return 1; /* the first object tells */
}

static void record_loaded(void) {
        /* A process the program forked inherits the hooks; only the program itself reports. */
        if (getpid() != armed.pid)
                return;
        pthread_mutex_lock(&recording);
        unsigned long long adds = 0;
        (void) dl_iterate_phdr(loads_so_far, &adds);
        if (adds == armed.recorded) { /* nothing loaded since: a plugin host closing many is not slowed */
                pthread_mutex_unlock(&recording);
                return;
        }
        armed.recorded = adds;
        struct writer w = { .used = armed.used };
        (void) dl_iterate_phdr(record_one, &w);
        armed.page->paths[w.used] = '\0';
        armed.used = w.used;
        __atomic_store_n(&armed.page->written, 1u, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&recording);
}

static int count_one(struct dl_phdr_info *info, size_t size, void *data) {
        (void) info, (void) size;
        (*(size_t *) data)++;
        return 0;
}

void after_main_arm(struct after_main_page *page) {
        if (!page)
                return;
        armed.page = page;
        armed.pid = getpid();
        armed.used = 0;
        armed.recorded = 0;
        armed.objects_at_main = 0;
        (void) dl_iterate_phdr(count_one, &armed.objects_at_main);
        hs_entry_before_dlclose(record_loaded);
        (void) atexit(record_loaded);
}

void after_main_page_read(const struct after_main_page *page, void (*fn)(const char *path, void *data), void *data) {
        if (!page || !__atomic_load_n(&page->written, __ATOMIC_ACQUIRE))
                return;
        const char *end = page->paths + sizeof page->paths;
        for (const char *p = page->paths; p < end && *p; p += strlen(p) + 1)
                if (memchr(p, '\0', (size_t) (end - p)))
                        fn(p, data);
                else
                        break;
}

/* "start-end perms offset major:minor inode   path" */
static bool parse_maps_line(char *line, char **ret_path, dev_t *ret_dev, ino_t *ret_ino) {
        char perms[8];
        unsigned major, minor;
        unsigned long long inode;
        int path_at = 0;
        if (sscanf(line, "%*x-%*x %7s %*x %x:%x %llu %n", perms, &major, &minor, &inode, &path_at) != 4 || !path_at)
                return false;
        char *path = line + path_at;
        path[strcspn(path, "\n")] = '\0';
        if (!strchr(perms, 'x') || inode == 0 || path[0] != '/' || strstr(path, " (deleted)"))
                return false;
        *ret_path = path;
        *ret_dev = makedev(major, minor);
        *ret_ino = (ino_t) inode;
        return true;
}

int after_main_scan_maps(pid_t pid, void (*fn)(const char *path, dev_t dev, ino_t ino, void *data), void *data) {
        char name[64];
        snprintf(name, sizeof name, "/proc/%d/maps", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(name, "re");
        if (!f)
                return -errno;
        _cleanup_free_ char *line = NULL;
        char *path;
        size_t cap = 0;
        dev_t dev, last_dev = 0;
        ino_t ino, last_ino = 0;
        while (getline(&line, &cap, f) >= 0)
                /* A shared object has one executable segment; the check also skips repeated lines. */
                if (parse_maps_line(line, &path, &dev, &ino) && (dev != last_dev || ino != last_ino)) {
                        fn(path, dev, ino, data);
                        last_dev = dev;
                        last_ino = ino;
                }
        return 0;
}
