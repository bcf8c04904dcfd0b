/* SPDX-License-Identifier: MIT */
#include "warm-up-verdicts.h"

#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "per-start-variables.h"
#include "private-dir.h"

#define HEADER "headstart-warm-up 1"

extern char **environ;

/* FNV-1a, 64 bits: a key to compare with the last start's, not a defence against anyone (the file
 * is ours alone: private-dir.h). */
static void mix(uint64_t *h, const void *data, size_t size) {
        const unsigned char *p = data;
        for (size_t i = 0; i < size; i++)
                *h = (*h ^ p[i]) * 0x100000001b3ull;
}

static int mix_object(struct dl_phdr_info *info, size_t size, void *data) {
        (void) size;
        const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
        struct stat st;
        if (stat(name, &st) < 0)
                return 0; /* the vDSO */
        uint64_t *h = data;
        mix(h, name, strlen(name) + 1);
        uint64_t id[] = { st.st_dev, st.st_ino, (uint64_t) st.st_size, (uint64_t) st.st_mtim.tv_sec,
                          (uint64_t) st.st_mtim.tv_nsec, (uint64_t) st.st_ctim.tv_sec, (uint64_t) st.st_ctim.tv_nsec };
        mix(h, id, sizeof id);
        return 0;
}

/* systemd's socket activation sets these anew at each start too. */
static bool set_per_start(const char *entry) {
        return per_start_variable(entry) || strncmp(entry, "LISTEN_", 7) == 0;
}

static void process_key(char key[static 17]) {
        uint64_t h = 0xcbf29ce484222325ull;
        dl_iterate_phdr(mix_object, &h);
        for (char **e = environ; *e; e++)
                if (!set_per_start(*e))
                        mix(&h, *e, strlen(*e) + 1);
        snprintf(key, 17, "%016llx", (unsigned long long) h);
}

void warm_up_verdicts_load(struct warm_up_verdicts *v, const char *path) {
        *v = (struct warm_up_verdicts){ 0 };
        process_key(v->key);
        const char *why = NULL;
        int fd = private_file_open(path, &why);
        if (fd < 0) {
                if (fd != -ENOENT)
                        log_warning("%s: %s; each warm-up step is tried first", path, why ? why : strerror(-fd));
                return;
        }
        FILE *f = fdopen(fd, "r");
        if (!f) {
                close(fd);
                return;
        }
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        bool header = false, ours = false;
        for (ssize_t len; (len = getline(&line, &cap, f)) > 0;) {
                if (line[len - 1] == '\n')
                        line[len - 1] = '\0';
                if (!header) { /* none of ours: nothing kept */
                        if (strcmp(line, HEADER) != 0)
                                break;
                        header = true;
                } else if (!ours) { /* made under another key: nothing kept */
                        if (strncmp(line, "key ", 4) != 0 || strcmp(line + 4, v->key) != 0)
                                break;
                        ours = true;
                } else if (strncmp(line, "passed ", 7) == 0 && string_list_add(&v->passed, line + 7) < 0) {
                        break;
                }
        }
        fclose(f);
        if (!ours)
                string_list_done(&v->passed);
}

bool warm_up_verdicts_passed(const struct warm_up_verdicts *v, const char *step) {
        return string_list_contains(&v->passed, step);
}

bool warm_up_verdicts_forget(const char *path) {
        if (unlink(path) == 0 || errno == ENOENT)
                return true;
        log_warning_errno(errno, "cannot remove %s; each warm-up step is tried first", path);
        return false;
}

struct to_write {
        const char *key;
        const struct string_list *ran;
};

static int write_verdicts(int fd, const void *data) {
        const struct to_write *w = data;
        if (dprintf(fd, HEADER "\nkey %s\n", w->key) < 0)
                return -errno;
        for (size_t i = 0; i < w->ran->n; i++)
                if (!strchr(w->ran->items[i], '\n') && dprintf(fd, "passed %s\n", w->ran->items[i]) < 0)
                        return -errno;
        return 0;
}

void warm_up_verdicts_save(const struct warm_up_verdicts *v, const char *path, const struct string_list *ran) {
        if (ran->n == 0)
                return;
        int r = private_file_replace(path, write_verdicts, &(struct to_write){ v->key, ran });
        if (r < 0)
                log_warning("cannot write %s: %s; each warm-up step is tried first at the next start", path,
                            strerror(-r));
}

void warm_up_verdicts_done(struct warm_up_verdicts *v) {
        string_list_done(&v->passed);
}
