/* SPDX-License-Identifier: MIT */
#include "launch-users.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"

#define MAX_LAUNCH_USERS 64

static uid_t users[MAX_LAUNCH_USERS];
static size_t nusers; /* 0: every user */

/* A name, else a number. */
static int add_user(const char *name) {
        const struct passwd *pw = getpwnam(name);
        char *end = NULL;
        errno = 0;
        unsigned long n = pw ? pw->pw_uid : strtoul(name, &end, 10);
        if (!pw && (!*name || *end || errno || n >= (uid_t) -1))
                return log_error("--launch-users: no user '%s'", name), -EINVAL;
        if (nusers == MAX_LAUNCH_USERS)
                return log_error("--launch-users: more than %d users", MAX_LAUNCH_USERS), -EINVAL;
        users[nusers++] = (uid_t) n;
        return 0;
}

int launch_users_parse(const char *list) {
        _cleanup_free_ char *copy = strdup(list);
        if (!copy)
                return log_error("out of memory"), -ENOMEM;
        nusers = 0;
        for (char *save = NULL, *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save))
                if (add_user(name) < 0)
                        return -EINVAL;
        return nusers ? 0 : (log_error("--launch-users: no user in '%s'", list), -EINVAL);
}

bool launch_user_counts(uid_t uid) {
        if (nusers == 0)
                return true;
        for (size_t i = 0; i < nusers; i++)
                if (users[i] == uid)
                        return true;
        return false;
}

uid_t launch_user_of(pid_t pid) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        unsigned long uid;
        while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "Uid: %lu", &uid) == 1)
                        return (uid_t) uid;
        return (uid_t) -1;
}
