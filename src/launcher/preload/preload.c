/* SPDX-License-Identifier: MIT */
#include "preload.h"

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "elf-info.h"
#include "eligibility.h"
#include "fp-control.h"
#include "log.h"
#include "macro.h"
#include "path-search.h"
#include "wire.h"
#include "throwaway.h"

extern char **environ;

int preload_find_program(const char *name, char buf[static PATH_MAX]) {
        char found[PATH_MAX];
        int r = hs_find_program(name, found, sizeof found);
        if (r < 0)
                return r;
        return realpath(found, buf) ? 0 : -errno;
}

int preload_find_library(const char *name, char *buf, size_t size) {
        if (strchr(name, '/'))
                return snprintf(buf, size, "%s", name) < (int) size ? 0 : -ENAMETOOLONG;
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = throwaway_fork();
        if (pid == 0) {
                close(p[0]);
                void *handle = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
                struct link_map *map;
                if (handle && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map->l_name[0] == '/')
                        (void) !write(p[1], map->l_name, strlen(map->l_name));
                else if (!handle) /* why, after a mark no path starts with */
                        (void) !dprintf(p[1], "!%s", dlerror());
                _exit(0);
        }
        int r = pid < 0 ? -errno : 0;
        close(p[1]);
        ssize_t n = r < 0 ? 0 : read(p[0], buf, size - 1);
        close(p[0]);
        while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        if (r < 0)
                return r;
        buf[n > 0 ? n : 0] = '\0';
        if (buf[0] == '/')
                return 0;
        if (buf[0] == '!') /* the loader's reason */
                memmove(buf, buf + 1, strlen(buf)); /* its NUL too */
        return -ENOENT;
}

const char *preload_program_problem(const char *path) {
        struct stat st;
        if (stat(path, &st) < 0)
                return errno == ENOENT ? "no such file" : "cannot look at the file";
        if (S_ISDIR(st.st_mode))
                return "a directory, not a program";
        if (!S_ISREG(st.st_mode))
                return "not a regular file (a device, a FIFO or a socket), not a program";
        if (access(path, X_OK) < 0)
                return "not executable (no execute permission): exec would refuse it too";
        if (access(path, R_OK) < 0)
                return "cannot read it (no read permission): only exec can run it";
        return NULL;
}

const char *preload_program_refusal(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct elf_info info;
        if (fd >= 0 && elf_info_read(fd, &info) == 0 && info.needs_sanitizer_runtime)
                return ELIGIBILITY_SANITIZER;
        return NULL;
}

int preload_own_interp(char *buf, size_t size) {
        _cleanup_close_ int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct elf_info info;
        int r = elf_info_read(fd, &info);
        if (r < 0)
                return r;
        if (!info.has_interp)
                return -ENOEXEC;
        snprintf(buf, size, "%s", info.interp);
        return 0;
}

/* Lines look like "\tlibfoo.so.1 => /usr/lib/libfoo.so.1 (0x...)"; we keep the resolved paths. */
static int parse_list_line(char *line, struct string_list *libs) {
        char *arrow = strstr(line, " => ");
        if (!arrow)
                return 0;
        char *path = arrow + 4;
        if (path[0] != '/')
                return log_error("the loader cannot find a library of it: %s", line), -ENOENT;
        char *end = strstr(path, " (0x");
        if (end)
                *end = '\0';
        return string_list_contains(libs, path) ? 0 : string_list_add(libs, path);
}

/* LD_DEBUG=libs says "     PID:\t  trying file=/dir/libfoo.so.1" for each name the loader opens
 * or looks for while it searches; we keep the names. */
static int parse_debug_line(const char *line, struct string_list *tried) {
        const char *name = strstr(line, ":\t  trying file=");
        if (!name)
                return 0;
        name += strlen(":\t  trying file=");
        return name[0] != '/' || string_list_contains(tried, name) ? 0 : string_list_add(tried, name);
}

/* Everything the loader writes to fd, until it closes it or timeout_ms pass (-ETIMEDOUT). Not
 * waited for without end: the loader opens each library it looks for, and one at a FIFO (or on a
 * hung file system) blocks it for ever; read from a zygote as it judges a launch, any client of our
 * user with such a program held every launch after it (each client waited its deadline and exec'd). */
static int read_all(int fd, unsigned timeout_ms, char **ret, size_t *ret_size) {
        const uint64_t deadline = now_ms() + timeout_ms;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, cap = 0;
        for (;;) {
                if (cap - size < 4096) {
                        char *more = realloc(buf, cap + 65536);
                        if (!more)
                                return -ENOMEM;
                        buf = more;
                        cap += 65536;
                }
                const uint64_t now = now_ms();
                int r = now >= deadline ? -ETIMEDOUT : hs_wait_readable(fd, (int) (deadline - now));
                if (r < 0)
                        return r;
                ssize_t k = read(fd, buf + size, cap - size);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                size += (size_t) k;
        }
        *ret_size = size;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* Reads `ld.so --list`'s lines from fd (closed here), within timeout_ms, into libs, and the names
 * its search tried into tried if it is not NULL. */
static int read_list(int fd, unsigned timeout_ms, struct string_list *libs, struct string_list *tried) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r = read_all(fd, timeout_ms, &text, &size);
        close(fd);
        if (r < 0 || size == 0)
                return r;
        _cleanup_fclose_ FILE *f = fmemopen(text, size, "r");
        if (!f)
                return -errno;
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, f) >= 0)
                if (r >= 0) {
                        line[strcspn(line, "\n")] = '\0';
                        r = parse_list_line(line, libs);
                        if (r >= 0 && tried)
                                r = parse_debug_line(line, tried);
                }
        return r;
}

/* Our environment with the loader's debugging set to its search (LD_DEBUG=libs, to its stderr):
 * environ's own LD_DEBUG and LD_DEBUG_OUTPUT, which do not change what it finds, left out. */
static char **debug_environ(void) {
        size_t n = 0;
        while (environ[n])
                n++;
        char **env = calloc(n + 2, sizeof *env);
        if (!env)
                return NULL;
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (strncmp(environ[i], "LD_DEBUG=", 9) != 0 && strncmp(environ[i], "LD_DEBUG_OUTPUT=", 16) != 0)
                        env[k++] = environ[i];
        env[k] = (char *) "LD_DEBUG=libs";
        return env;
}

/* Adds to missing the names of tried with no file there: the ones the loader looked for and found
 * nothing at. Looked at at once, so that a file put there while the zygote preloads is a change. */
static int add_missing(const struct string_list *tried, struct string_list *missing) {
        for (size_t i = 0; i < tried->n; i++)
                if (access(tried->items[i], F_OK) < 0 && errno == ENOENT && string_list_add_new(missing, tried->items[i]) < 0)
                        return -ENOMEM;
        return 0;
}

int preload_resolve_closure(const char *interp, const char *program, struct string_list *libs,
                            struct string_list *missing, unsigned timeout_ms) {
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return log_error_errno(errno, "pipe");
        _cleanup_free_ char **env = missing ? debug_environ() : NULL;
        if (missing && !env) {
                close(pipefd[0]);
                close(pipefd[1]);
                return log_error("out of memory");
        }

        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
        /* Its own complaints ("cannot read file data: Error 21") would only confuse: we say what
         * failed. Its search's trace, asked for, comes on the same pipe, whole lines at a time. */
        if (missing)
                posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDERR_FILENO);
        else
                posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        char *argv[] = { (char *) interp, (char *) "--list", (char *) program, NULL };
        pid_t pid;
        int r = posix_spawn(&pid, interp, &fa, NULL, argv, env ? env : environ);
        posix_spawn_file_actions_destroy(&fa);
        close(pipefd[1]);
        if (r != 0) {
                close(pipefd[0]);
                return log_error_errno(r, "cannot run %s --list", interp);
        }

        struct string_list tried = { 0 };
        int pr = read_list(pipefd[0], timeout_ms, libs, missing ? &tried : NULL);
        if (pr == -ETIMEDOUT) {
                (void) kill(pid, SIGKILL);
                log_warning("%s --list %s did not end within %u ms (a library it opens blocks it: a FIFO, a hung "
                            "file system); left to exec",
                            interp, program, timeout_ms);
        }

        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (pr >= 0 && missing)
                pr = add_missing(&tried, missing);
        string_list_done(&tried);
        if (pr < 0)
                return log_error_errno(pr, "cannot resolve the libraries of %s", program);
        /* Not a dynamically linked program, most often: each caller says so in its own words. */
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ENOEXEC;
}

int preload_count_threads(void) {
        DIR *d = opendir("/proc/self/task");
        if (!d)
                return -errno;
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

/* dlopen()s lib with every symbol bound, else lazily (lazy binding tolerates symbols that are never
 * called; exec would too). Local scope, as under exec: a preloaded library must not interpose on
 * other programs. NULL with the loader's complaint in err when it cannot be loaded either way. */
static void *open_library(const char *lib, char *err, size_t size) {
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        if (h)
                return h;
        const char *e = dlerror();
        snprintf(err, size, "%s", e ? e : "no reason given");
        h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
        if (h)
                log_warning("cannot preload %s with every symbol bound (%s); binding it lazily", lib, err);
        else if ((e = dlerror()))
                snprintf(err, size, "%s", e);
        return h;
}

/* One pass over the libraries not loaded yet (pending[i]): how many it loaded, or -EDEADLK with the
 * library in *ret_failed. A library that cannot be loaded stays pending, its complaint in why when it
 * is the first. */
static int load_pass(const struct string_list *libs, bool *pending, int threads, uint64_t fp_control,
                     size_t *ret_failed, char *why, size_t size) {
        int loaded = 0;
        bool said = false;
        for (size_t i = 0; i < libs->n; i++) {
                if (!pending[i])
                        continue;
                const char *lib = libs->items[i];
                char err[512];
                if (!dlopen(lib, RTLD_NOW | RTLD_NOLOAD) && !open_library(lib, err, sizeof err)) {
                        if (!said)
                                snprintf(why, size, "cannot preload %s: %s", lib, err);
                        said = true;
                        continue;
                }
                if (preload_count_threads() != threads) {
                        snprintf(why, size,
                                 "preloading %s (and the libraries it needs) started a thread; the daemon forks "
                                 "and must stay single-threaded",
                                 lib);
                        *ret_failed = i;
                        return -EDEADLK;
                }
                /* Every child forked after would start with it (fp-control.h): such a library's
                 * programs go to exec, as one that starts a thread does. */
                if (hs_fp_control() != fp_control) {
                        snprintf(why, size,
                                 "preloading %s (and the libraries it needs) changed the floating-point "
                                 "environment (flush-to-zero, rounding: -ffast-math), which every program the "
                                 "daemon forks would start with",
                                 lib);
                        *ret_failed = i;
                        return -EDEADLK;
                }
                pending[i] = false;
                loaded++;
        }
        return loaded;
}

int preload_load(const struct string_list *libs, size_t *ret_loaded, size_t *ret_failed, char *why, size_t size) {
        /* Not 1: under qemu-user, the emulator's own threads show in /proc/self/task too. */
        const int threads = preload_count_threads();
        const uint64_t fp_control = hs_fp_control();
        _cleanup_free_ bool *pending = calloc(libs->n ? libs->n : 1, sizeof *pending);
        if (!pending)
                return snprintf(why, size, "out of memory"), log_error("out of memory");
        for (size_t i = 0; i < libs->n; i++)
                pending[i] = true;
        /* In the loader's order, again while a pass loads something: a library that needs one it
         * finds only among those already loaded (libsystemd-core needs libsystemd-shared, which exec
         * finds through the program's RUNPATH, not the library's) loads once that one is in. */
        size_t loaded = 0;
        int r;
        while ((r = load_pass(libs, pending, threads, fp_control, ret_failed, why, size)) > 0)
                loaded += (size_t) r;
        if (r < 0)
                return log_error("%s", why), r;
        for (size_t i = 0; i < libs->n; i++)
                if (pending[i]) {
                        /* The first one pending, whose complaint is in why. */
                        *ret_failed = i;
                        return log_error("%s", why), -ENOENT;
                }
        *ret_loaded = loaded;
        return 0;
}
