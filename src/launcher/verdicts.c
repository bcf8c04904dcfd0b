/* SPDX-License-Identifier: MIT */
#include "verdicts.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image-cache.h"
#include "log.h"
#include "macro.h"
#include "preload.h"

static void print_json_string(const char *s) {
        putchar('"');
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                if (c == '"' || c == '\\')
                        printf("\\%c", c);
                else if (c < 0x20)
                        printf("\\u%04x", c);
                else
                        putchar(c);
        }
        putchar('"');
}

/* One line: {"program": ..., "path": ..., "mode": ..., "modes": [...], "reason": ...}. */
static void print_verdict(const char *program, const char *path, const char *mode, const char *reason,
                          const char *warm_reason) {
        printf("{\"program\": ");
        print_json_string(program);
        if (path) {
                printf(", \"path\": ");
                print_json_string(path);
        }
        printf(", \"mode\": \"%s\", \"modes\": [", mode);
        if (strcmp(mode, "exec") != 0)
                printf(strcmp(mode, "warm") == 0 ? "\"preload\", \"warm\"" : "\"preload\"");
        printf("], \"reason\": ");
        if (reason)
                print_json_string(reason);
        else
                printf("null");
        printf(", \"warm_reason\": ");
        if (warm_reason)
                print_json_string(warm_reason);
        else
                printf("null");
        printf("}\n");
        fflush(stdout);
}

/* In a child of its own: preload as a zygote would for --warm PROGRAM, then judge. */
static _Noreturn void judge(const char *program, const char *interp, const char *cache_dir) {
        char path[PATH_MAX];
        if (preload_find_program(program, path) < 0) {
                print_verdict(program, NULL, "exec", "cannot find the program", NULL);
                _exit(2);
        }
        const char *problem = preload_program_problem(path);
        if (problem) {
                print_verdict(program, path, "exec", problem, NULL);
                _exit(2);
        }
        /* Its kind may make this fail (a static program); the rules below then say why it is exec. */
        struct string_list libs = { 0 };
        size_t loaded, failed;
        char unloaded[PATH_MAX + 256] = "";
        bool preloaded = preload_resolve_closure(interp, path, &libs) >= 0 &&
                         preload_load(&libs, &loaded, &failed, unloaded, sizeof unloaded) >= 0;
        struct image_cache cache;
        struct stat st;
        const char *why;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || image_cache_init(&cache, cache_dir, interp, &why) < 0) {
                print_verdict(program, path, "exec", "cannot read the program", NULL);
                _exit(2);
        }
        struct image_entry *e;
        int r = image_cache_get(&cache, fd, &st, path, true, &e);
        if (r < 0)
                print_verdict(program, path, "exec", strerror(-r), NULL);
        else if (!preloaded && unloaded[0])
                /* First: the binding plan's reason would only be that a library is not loaded. */
                print_verdict(program, path, "exec", unloaded, NULL);
        else if (e->reason)
                print_verdict(program, path, "exec", e->reason, NULL);
        else if (!preloaded)
                print_verdict(program, path, "exec", "its libraries cannot be preloaded (see the message above)",
                              NULL);
        else {
                char image[64];
                image_entry_load_name(e, image, sizeof image);
                char why[512];
                const char *not_warm = image_entry_warm_refusal(e);
                char *const argv[] = { (char *) path, NULL };
                int w = not_warm ? -ENOTSUP
                                 : preload_warm_program(path, image, &e->start.constructors, argv, why, sizeof why);
                print_verdict(program, path, w == 0 ? "warm" : "preload", NULL,
                              w == 0 ? NULL : not_warm ? not_warm : why);
        }
        image_cache_done(&cache);
        _exit(r < 0 ? 2 : 0);
}

int check_run(const struct daemon_options *o) {
        char interp[256];
        int r = preload_own_interp(interp, sizeof interp);
        if (r < 0)
                return log_error_errno(r, "cannot find the daemon's own dynamic loader");
        char cache_dir[] = "/tmp/headstart-check-XXXXXX";
        if (!mkdtemp(cache_dir))
                return log_error_errno(errno, "cannot make a temporary directory");

        int result = 0;
        for (size_t i = 0; i < o->check.n; i++) {
                fflush(stdout);
                pid_t pid = fork();
                if (pid < 0) {
                        result = log_error_errno(errno, "fork");
                        break;
                }
                if (pid == 0)
                        judge(o->check.items[i], interp, cache_dir);
                int status;
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
                if (WIFSIGNALED(status))
                        print_verdict(o->check.items[i], NULL, "exec", "judging it crashed the checker", NULL);
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        result = -EINVAL;
        }
        (void) rmdir(cache_dir);
        return result;
}
