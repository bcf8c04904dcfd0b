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
#include "throwaway.h"
#include "warm-program.h"
#include "prepare-judge.h"

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

struct verdict {
        const char *program, *path; /* as given, and as found (NULL: not found) */
        const char *mode;           /* "exec", "preload" or "warm" */
        const char *reason;         /* exec: why */
        const char *warm_reason;    /* preload: why not warm */
        enum toolkit toolkit;       /* the GTK it links, which --prepare-display would start ahead */
        const char *prepare_reason; /* served: why --prepare-display would not (NULL: it would) */
        struct prepare_terms prepare_terms; /* ... and on what terms */
};

static void print_field(const char *name, const char *value) {
        printf(", \"%s\": ", name);
        if (value)
                print_json_string(value);
        else
                printf("null");
}

/* One line: {"program": ..., "path": ..., "mode": ..., "modes": [...], "reason": ..., ...}. */
static void print_verdict(const struct verdict *v) {
        bool exec = strcmp(v->mode, "exec") == 0;
        printf("{\"program\": ");
        print_json_string(v->program);
        if (v->path) {
                printf(", \"path\": ");
                print_json_string(v->path);
        }
        printf(", \"mode\": \"%s\", \"modes\": [", v->mode);
        if (!exec)
                printf(strcmp(v->mode, "warm") == 0 ? "\"preload\", \"warm\"" : "\"preload\"");
        printf("]");
        print_field("reason", v->reason);
        print_field("warm_reason", v->warm_reason);
        print_field("toolkit", exec ? NULL : toolkit_started_ahead(v->toolkit, &v->prepare_terms));
        print_field("prepare_display_reason", exec ? "it is exec'd, not served" : v->prepare_reason);
        const struct prepare_terms *t = &v->prepare_terms;
        char terms[512];
        snprintf(terms, sizeof terms, "%s%s%s",
                 t->names_itself ? "on Wayland, if GTK prints nothing as it starts: " PREPARE_WHY_WAYLAND_ONLY
                                   ", and GLib's messages carry that name"
                                 : "",
                 t->names_itself && t->no_arguments ? "; " : "",
                 t->no_arguments ? "launches without arguments: " PREPARE_WHY_NO_ARGUMENTS : "");
        print_field("prepare_display_only", exec || v->prepare_reason || !terms[0] ? NULL : terms);
        printf("}\n");
        fflush(stdout);
}

static _Noreturn void exec_verdict(const char *program, const char *path, const char *reason) {
        print_verdict(&(struct verdict){ .program = program, .path = path, .mode = "exec", .reason = reason });
        _exit(2);
}

/* In a child of its own: preload as a zygote would for --warm PROGRAM, then judge. */
static _Noreturn void judge(const char *program, const char *interp, const char *cache_dir) {
        char path[PATH_MAX];
        if (preload_find_program(program, path) < 0)
                exec_verdict(program, NULL, "cannot find the program");
        const char *problem = preload_program_problem(path);
        if (problem)
                exec_verdict(program, path, problem);
        const char *refusal = preload_program_refusal(path);
        if (refusal) { /* a verdict, not a problem of the file: as for a set-user-ID program */
                print_verdict(&(struct verdict){ .program = program, .path = path, .mode = "exec", .reason = refusal });
                _exit(0);
        }
        /* Its kind may make this fail (a static program); the rules below then say why it is exec. */
        struct string_list libs = { 0 };
        size_t loaded, failed;
        char unloaded[PATH_MAX + 256] = "";
        bool resolved = preload_resolve_closure(interp, path, &libs, NULL, throwaway_deadline() * 1000u) >= 0;
        bool preloaded = resolved && preload_load(&libs, &loaded, &failed, unloaded, sizeof unloaded) >= 0;
        struct image_cache cache;
        struct stat st;
        const char *why;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || image_cache_init(&cache, cache_dir, interp, &why) < 0)
                exec_verdict(program, path, "cannot read the program");
        struct image_entry *e;
        int r = image_cache_get(&cache, fd, &st, path, true, resolved ? &libs : NULL, &e);
        struct verdict v = { .program = program, .path = path, .mode = "exec" };
        if (r < 0)
                v.reason = strerror(-r);
        else if (!preloaded && unloaded[0])
                /* First: the binding plan's reason would only be that a library is not loaded. */
                v.reason = unloaded;
        else if (e->reason)
                v.reason = e->reason;
        else if (!resolved) /* ld.so --list failed: a library not found, most often */
                v.reason = "the dynamic loader cannot resolve its libraries (`ld.so --list PROGRAM` says which "
                           "is not found)";
        else if (!preloaded)
                v.reason = "its libraries cannot be preloaded";
        char image[64], not_warm_why[512], not_prepared_why[512];
        if (!v.reason) {
                image_entry_load_name(e, image, sizeof image);
                const char *not_warm = image_entry_warm_refusal(e);
                char *const argv[] = { (char *) path, NULL };
                int w = not_warm ? -ENOTSUP
                                 : warm_program_load(path, image, &e->start.constructors, &e->plan, &e->start.exits,
                                                     argv, not_warm_why, sizeof not_warm_why);
                v.mode = w == 0 ? "warm" : "preload";
                v.warm_reason = w == 0 ? NULL : not_warm ? not_warm : not_warm_why;
                /* As a zygote judges it without a --schedule: --status says when one refuses it. */
                v.toolkit = prepare_judge(e, false, &v.prepare_terms, not_prepared_why, sizeof not_prepared_why);
                v.prepare_reason = not_prepared_why[0] ? not_prepared_why : NULL;
        }
        print_verdict(&v);
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
                        print_verdict(&(struct verdict){ .program = o->check.items[i], .mode = "exec",
                                                         .reason = "judging it crashed the checker" });
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        result = -EINVAL;
        }
        (void) rmdir(cache_dir);
        return result;
}
