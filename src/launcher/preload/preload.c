/* SPDX-License-Identifier: MIT */
#include "preload.h"

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bind-plan.h"
#include "constructors.h"
#include "elf-info.h"
#include "eligibility.h"
#include "exit-registrations.h"
#include "log.h"
#include "macro.h"
#include "path-search.h"
#include "process-state.h"
#include "shared-state.h"
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

/* Reads `ld.so --list`'s lines from fd (closed here) into libs, and the names its search tried into
 * tried if it is not NULL. */
static int read_list(int fd, struct string_list *libs, struct string_list *tried) {
        _cleanup_fclose_ FILE *f = fdopen(fd, "re");
        if (!f) {
                close(fd);
                return -errno;
        }
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        int r = 0;
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
                if (access(tried->items[i], F_OK) < 0 && errno == ENOENT &&
                    !string_list_contains(missing, tried->items[i]) && string_list_add(missing, tried->items[i]) < 0)
                        return -ENOMEM;
        return 0;
}

int preload_resolve_closure(const char *interp, const char *program, struct string_list *libs,
                            struct string_list *missing) {
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
        int pr = read_list(pipefd[0], libs, missing ? &tried : NULL);

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

/* What loading the program in the throwaway child found, its first byte on the report pipe. The
 * exit status cannot carry it: the program's constructors may call exit() themselves. */
enum trial { TRIAL_FINE = 'F', TRIAL_FAILED = 'X', TRIAL_THREAD = 'T', TRIAL_SHARED = 'S', TRIAL_AT_EXIT = 'A',
             TRIAL_OUTPUT = 'O', TRIAL_WRITTEN = 'W', TRIAL_PROCESS = 'P', TRIAL_AT_FORK = 'K',
             TRIAL_LOADS = 'L', TRIAL_COPIES = 'C',
             TRIAL_ENDED = 'E' /* no verdict: its constructors ended the process */ };

/* dlopen()s the program's loadable copy, whose constructors it hides from dlopen (constructors.h);
 * its link map in *ret_map. */
static void *open_warm(const char *image, struct link_map **ret_map) {
        void *handle = dlopen(image, RTLD_NOW);
        if (handle && dlinfo(handle, RTLD_DI_LINKMAP, ret_map) < 0)
                return NULL;
        return handle;
}

/* Runs its constructors with the daemon's own arguments: a warm program's run once, here. */
static void run_warm(const struct link_map *map, const struct program_constructors *c, char *const argv[]) {
        int argc = 0;
        while (argv[argc])
                argc++;
        program_constructors_run(c, map->l_addr, argc, (char **) argv, environ);
}

/* Runs them with the program's registrations for the exit recorded into exits: made in its
 * launches, not in the daemon (exit-registrations.h). Returns 0 or a negative errno. */
static int run_warm_recorded(const struct link_map *map, const struct program_constructors *c, char *const argv[],
                             struct exit_registrations *exits) {
        int r = exit_registrations_record(map, exits);
        if (r < 0)
                return r;
        run_warm(map, c, argv);
        r = exit_registrations_stop(map);
        return r < 0 ? r : exits->error;
}

static void *load_warm(const char *image, const struct program_constructors *c, char *const argv[],
                       struct exit_registrations *exits) {
        struct link_map *map;
        void *handle = open_warm(image, &map);
        if (handle && run_warm_recorded(map, c, argv, exits) < 0)
                log_warning("what %s registered to run at exit may not be made again in each launch", image);
        return handle;
}

/* Output in stdio's buffers, which every child would inherit and print as its own. */
static size_t pending_output(void) {
        return __fpending(stdout) + __fpending(stderr);
}

static _Noreturn void report_verdict(int report, enum trial verdict, const char *library) {
        char buf[1 + 256];
        int n = snprintf(buf, sizeof buf, "%c%s", verdict, library ? library : "");
        (void) !write(report, buf, (size_t) n < sizeof buf ? (size_t) n : sizeof buf - 1);
        _exit(0);
}

static int count_one(struct dl_phdr_info *info, size_t size, void *count) {
        (void) info;
        (void) size;
        ++*(size_t *) count;
        return 0;
}

/* Objects loaded in this process: what a constructor dlopen()s would stay in the daemon, in every
 * program it starts, with whatever that object's own constructors registered. */
static size_t loaded_objects(void) {
        size_t n = 0;
        dl_iterate_phdr(count_one, &n);
        return n;
}

/* The bytes of the program's copies of library variables (bind-plan.h: opterr, std::cout), which
 * each launch fills from the library's variable: what the constructors write there, main would not
 * see. NULL when there are none, or out of memory (*ret_failed). */
static unsigned char *copies_take(const struct bind_plan *plan, uintptr_t base, size_t *ret_size, bool *ret_failed) {
        size_t size = 0;
        for (uint32_t i = 0; plan && i < plan->ncopies; i++)
                size += plan->copies[i].size;
        *ret_size = size;
        *ret_failed = false;
        unsigned char *buf = size ? malloc(size) : NULL;
        if (size && !buf)
                *ret_failed = true;
        for (uint32_t i = 0, at = 0; buf && i < plan->ncopies; at += plan->copies[i++].size)
                memcpy(buf + at, (const void *) (base + plan->copies[i].offset), plan->copies[i].size);
        return buf;
}

static bool copies_changed(const struct bind_plan *plan, uintptr_t base, const unsigned char *before, size_t size) {
        size_t now_size;
        bool failed;
        _cleanup_free_ unsigned char *now = copies_take(plan, base, &now_size, &failed);
        return failed || (size && memcmp(now, before, size) != 0);
}

static _Noreturn void trial_child(const char *image, const struct program_constructors *c,
                                  const struct bind_plan *plan, char *const argv[], int report) {
        int before = preload_count_threads();
        size_t pending = pending_output();
        /* What its constructors write on stdout and stderr, which under exec every launch would
         * print, and served warm only the daemon's log. */
        int written = memfd_create("written", MFD_CLOEXEC);
        if (written < 0 || dup2(written, STDOUT_FILENO) < 0 || dup2(written, STDERR_FILENO) < 0)
                report_verdict(report, TRIAL_FAILED, NULL);
        process_state_neutral();
        struct process_state *process = process_state_take();
        struct shared_state state;
        struct exit_registrations exits = { 0 };
        struct link_map *map;
        if (!process || shared_state_take(&state) < 0 || !open_warm(image, &map))
                report_verdict(report, TRIAL_FAILED, NULL);
        size_t objects = loaded_objects(), copies_size;
        bool failed;
        unsigned char *copies = copies_take(plan, map->l_addr, &copies_size, &failed);
        if (failed || run_warm_recorded(map, c, argv, &exits) < 0)
                report_verdict(report, TRIAL_FAILED, NULL);
        if (preload_count_threads() > before)
                report_verdict(report, TRIAL_THREAD, NULL);
        char library[256];
        if (shared_state_changed(&state, library, sizeof library))
                report_verdict(report, TRIAL_SHARED, library);
        if (exits.unrepeatable > 0 || exit_registrations_destructors(map))
                report_verdict(report, TRIAL_AT_EXIT, NULL);
        if (pending_output() != pending)
                report_verdict(report, TRIAL_OUTPUT, NULL);
        if (exits.atfork > 0)
                report_verdict(report, TRIAL_AT_FORK, NULL);
        if (lseek(written, 0, SEEK_END) > 0)
                report_verdict(report, TRIAL_WRITTEN, NULL);
        const char *changed = process_state_changed(process);
        if (changed)
                report_verdict(report, TRIAL_PROCESS, changed);
        if (loaded_objects() != objects)
                report_verdict(report, TRIAL_LOADS, NULL);
        if (copies_changed(plan, map->l_addr, copies, copies_size))
                report_verdict(report, TRIAL_COPIES, NULL);
        report_verdict(report, TRIAL_FINE, NULL);
}

/* Reads the child's whole report: its verdict, then the library it names, if any. */
static int read_verdict(int fd, char *library, size_t size) {
        char buf[1 + 256];
        size_t n = 0;
        for (;;) {
                ssize_t k = read(fd, buf + n, sizeof buf - 1 - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0 || (n += (size_t) k) == sizeof buf - 1)
                        break;
        }
        buf[n] = '\0';
        snprintf(library, size, "%s", n > 0 ? buf + 1 : "");
        return n > 0 ? (unsigned char) buf[0] : TRIAL_ENDED;
}

/* Loading runs the program's constructors, so try it first where a thread, what they leave in the
 * libraries every program shares (shared-state.h), or their calling exit() could do no harm.
 * Returns a trial or a negative errno; the library changed in library, or how the child ended. */
static int warm_trial(const char *image, const struct program_constructors *c, const struct bind_plan *plan,
                      char *const argv[], char *library, size_t size) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = throwaway_fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        if (pid == 0) {
                close(p[0]);
                trial_child(image, c, plan, argv, p[1]);
        }
        close(p[1]);
        int verdict = read_verdict(p[0], library, size);
        close(p[0]);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (verdict == TRIAL_ENDED && WIFEXITED(status)) {
                snprintf(library, size, "exit status %d", WEXITSTATUS(status));
                return TRIAL_ENDED;
        }
        if (!WIFEXITED(status) || verdict == TRIAL_FAILED)
                return -ENOEXEC;
        return verdict;
}

/* Why a trial's verdict keeps the program from being warm, "%s" standing for the detail the
 * trial reported (a library, a setting, an exit status); NULL for TRIAL_FINE and unknown ones. */
static const char *trial_refusal(int verdict) {
        switch (verdict) {
        case TRIAL_SHARED:
                return "its constructors change the data of %s, which every program the daemon starts shares; "
                       "under exec only its own launches would see it";
        case TRIAL_AT_EXIT:
                return "it has destructors, or its constructors register a thread-local object's destructor, which "
                       "would run at the exit of every program the daemon starts";
        case TRIAL_OUTPUT:
                return "its constructors leave output in stdio's buffers, which every program the daemon starts "
                       "would print";
        case TRIAL_WRITTEN:
                return "its constructors write output, which under exec each launch would print";
        case TRIAL_AT_FORK:
                return "its constructors register fork handlers (pthread_atfork), which would run at every fork of "
                       "the daemon and in every program it starts";
        case TRIAL_PROCESS:
                return "its constructors change %s, which each launch would reset or every program the daemon starts "
                       "would share; under exec only its own main would see it";
        case TRIAL_LOADS:
                return "its constructors load a library (dlopen), which would stay loaded in every program the daemon "
                       "starts";
        case TRIAL_COPIES:
                return "its constructors write to a library's variable that the program copies (such as opterr or "
                       "std::cout), which each launch fills again from the library's";
        case TRIAL_ENDED:
                return "its constructors end the process (%s), which would end the daemon";
        default:
                return NULL;
        }
}

int preload_warm_program(const char *program, const char *image, const struct program_constructors *c,
                         const struct bind_plan *plan, struct exit_registrations *exits, char *const argv[], char *why,
                         size_t size) {
        char library[256];
        int r = warm_trial(image, c, plan, argv, library, sizeof library);
        if (r < 0) {
                snprintf(why, size, "it cannot be loaded into the daemon (its constructors or libraries fail there)");
                return log_warning_errno(r, "%s cannot be loaded into the daemon; serving it in preload mode", program);
        }
        if (r == TRIAL_THREAD) {
                snprintf(why, size, "it starts a thread while it loads, and the daemon forks");
                return log_warning("%s starts a thread while it loads, so it cannot be warm in a daemon that forks; "
                                   "serving it in preload mode",
                                   program),
                       -EDEADLK;
        }
        const char *refusal = trial_refusal(r);
        if (refusal)
                snprintf(why, size, refusal, library);
        else if (r != TRIAL_FINE)
                snprintf(why, size, "its test load gave a verdict this daemon does not know (%d)", r);
        if (r != TRIAL_FINE)
                return log_warning("%s cannot be warm: %s; serving it in preload mode", program, why), -EBUSY;
        if (!load_warm(image, c, argv, exits)) {
                snprintf(why, size, "it cannot be loaded into the daemon (%s)", dlerror());
                return log_warning("%s cannot be loaded into the daemon (%s); serving it in preload mode", program,
                                   why),
                       -ENOEXEC;
        }
        return 0;
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
static int load_pass(const struct string_list *libs, bool *pending, int threads, size_t *ret_failed, char *why,
                     size_t size) {
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
                pending[i] = false;
                loaded++;
        }
        return loaded;
}

int preload_load(const struct string_list *libs, size_t *ret_loaded, size_t *ret_failed, char *why, size_t size) {
        /* Not 1: under qemu-user, the emulator's own threads show in /proc/self/task too. */
        const int threads = preload_count_threads();
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
        while ((r = load_pass(libs, pending, threads, ret_failed, why, size)) > 0)
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
