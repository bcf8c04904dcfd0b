/* SPDX-License-Identifier: MIT */
#include "path-search.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int absolute(const char *path, char *buf, size_t size) {
        char cwd[PATH_MAX];
        int n = path[0] == '/'              ? snprintf(buf, size, "%s", path)
                : getcwd(cwd, sizeof cwd) ? snprintf(buf, size, "%s/%s", cwd, path)
                                          : -1;
        if (n < 0)
                return -errno;
        return (size_t) n < size ? 0 : -ENAMETOOLONG;
}

/* What execve would run: a regular file we may execute (a directory of that name is skipped). */
static bool runnable(const char *path) {
        struct stat st;
        return access(path, X_OK) == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int hs_find_program(const char *name, char *buf, size_t size) {
        if (!*name)
                return -ENOENT;
        if (strchr(name, '/'))
                return absolute(name, buf, size);
        const char *path = getenv("PATH");
        if (!path)
                path = "/bin:/usr/bin";
        for (const char *p = path;; p++) {
                const char *end = strchrnul(p, ':');
                char candidate[PATH_MAX];
                int n = end > p ? snprintf(candidate, sizeof candidate, "%.*s/%s", (int) (end - p), p, name)
                                : snprintf(candidate, sizeof candidate, "%s", name);
                if (n > 0 && (size_t) n < sizeof candidate && runnable(candidate))
                        return absolute(candidate, buf, size);
                if (!*end)
                        return -ENOENT;
                p = end;
        }
}
