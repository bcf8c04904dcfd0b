/* SPDX-License-Identifier: MIT */
#include "preload-tested.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eligibility.h"
#include "image-cache.h"
#include "macro.h"
#include "preload.h"
#include "process-state.h"
#include "throwaway.h"

/* What a program's trial load in a throwaway child found (its exit status). */
enum program_trial { PROGRAM_LOADS, PROGRAM_FAILS, PROGRAM_UNTRIED };

/* Whether the learned objects could keep the program from loading: one the daemon serves, reaching
 * a library's thread-local variables by initial-exec code (the block must then be static, and an
 * object may have made it dynamic); not one with its own thread-local block, which a launch
 * installs first (tls-reserve.h). Decided here, once, so that no child is forked for the others. */
static bool worth_checking(const char *path, const char *interp) {
        struct program_facts facts;
        char buf[256];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        return fd >= 0 && program_facts_read(fd, true, &facts) >= 0 && facts.elf.tls_static_elsewhere &&
               !facts.elf.has_tls && !eligibility_verdict(&facts, interp, buf, sizeof buf);
}

/* In the throwaway child: opens the program as a launch does, from a loadable copy of it (here in
 * memory, where the image cache keeps one on the disk). */
static enum program_trial load_program(const char *path, const char **ret_why) {
        struct program_facts facts;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || program_facts_read(fd, true, &facts) < 0)
                return PROGRAM_UNTRIED;
        if (facts.elf.pie_flag && (fd = image_loadable_memfd(fd, facts.st.st_size, &facts.elf)) < 0)
                return PROGRAM_UNTRIED;
        char name[64];
        snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
        if (dlopen(name, RTLD_LAZY | RTLD_GLOBAL))
                return PROGRAM_LOADS;
        *ret_why = dlerror();
        return PROGRAM_FAILS;
}

/* In the throwaway child: loads paths[from..n) in turn and writes "INDEX RESULT [DETAIL]" per object,
 * RESULT o (loaded), f (failed), t (started a thread: the child stops there) or, when each, s (its
 * constructors changed the process itself, process-state.h). Without each, the process is compared
 * once, after them all, and a change is the line "s" (the caller tries them again, each). One that
 * loaded them all from the first then tries each program in a child of its own and writes
 * "p INDEX o" (it loads) or "p INDEX f". */
static _Noreturn void test_loads(const char *const *paths, size_t from, size_t n,
                                 const struct programs_to_check *programs, bool each, int out) {
        const int threads = preload_count_threads();
        process_state_neutral();
        struct process_state *state = process_state_take();
        const char *changed;
        for (size_t i = from; i < n; i++) {
                if (!dlopen(paths[i], RTLD_NOW | RTLD_LOCAL)) {
                        const char *e = dlerror();
                        dprintf(out, "%zu f %.300s\n", i, e ? e : "");
                } else if (preload_count_threads() != threads) {
                        dprintf(out, "%zu t\n", i);
                        _exit(0);
                } else if (each && state && (changed = process_state_changed(state))) {
                        dprintf(out, "%zu s %s\n", i, changed);
                        process_state_free(state);
                        state = process_state_take();
                } else
                        dprintf(out, "%zu o\n", i);
        }
        if (!each && state && process_state_changed(state)) {
                dprintf(out, "s\n");
                _exit(0);
        }
        for (size_t k = 0; from == 0 && k < programs->n; k++) {
                pid_t pid = throwaway_fork();
                if (pid == 0) {
                        close(out); /* what its constructors start must not hold our reader */
                        const char *why;
                        _exit(load_program(programs->paths[k], &why));
                }
                int status = 0;
                while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
                        ;
                bool fine = pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) != PROGRAM_FAILS;
                dprintf(out, "p %zu %c\n", k, fine ? 'o' : 'f');
        }
        _exit(0);
}

static char *reason_for(char result, const char *detail) {
        char buf[512];
        if (result == 'f')
                snprintf(buf, sizeof buf, "cannot be loaded with every symbol bound: %s", detail);
        else if (result == 's')
                snprintf(buf, sizeof buf,
                         "its constructors change %s, which every program the daemon starts would share, and each "
                         "launch of its own programs would reset",
                         detail);
        else
                snprintf(buf, sizeof buf, "loading it starts a thread; the daemon forks and must stay single-threaded");
        return strdup(buf);
}

/* Tests paths[from..n) in one child, and the programs after them if it loaded them all from the
 * first (program_loads[k] says which loaded). Returns the index after the last object it judged; the
 * object at that index crashed the child when the child died of a signal there. *ret_changed: the
 * objects, together, changed the process (test them again, each). */
static size_t test_batch(const char *const *paths, size_t from, size_t n, bool *ok, char **reasons,
                         const struct programs_to_check *programs, bool *program_loads, bool each, int *ret_signal,
                         bool *ret_changed) {
        int p[2];
        *ret_signal = 0;
        *ret_changed = false;
        if (pipe2(p, O_CLOEXEC) < 0)
                return n;
        pid_t pid = throwaway_fork();
        if (pid == 0) {
                close(p[0]);
                test_loads(paths, from, n, programs, each, p[1]);
        }
        close(p[1]);
        size_t next = pid < 0 ? n : from;
        FILE *f = pid < 0 ? NULL : fdopen(p[0], "re");
        char *line = NULL;
        size_t cap = 0;
        while (f && getline(&line, &cap, f) >= 0) {
                size_t i;
                char result;
                int at = 0;
                line[strcspn(line, "\n")] = '\0';
                if (strcmp(line, "s") == 0) {
                        *ret_changed = true;
                        continue;
                }
                if (sscanf(line, "p %zu %c", &i, &result) == 2 && i < programs->n) {
                        program_loads[i] = result == 'o';
                        continue;
                }
                if (sscanf(line, "%zu %c %n", &i, &result, &at) < 2 || i < from || i >= n)
                        continue;
                ok[i] = result == 'o';
                if (!ok[i])
                        reasons[i] = reason_for(result, at ? line + at : "");
                next = i + 1;
        }
        free(line);
        if (f)
                fclose(f);
        else
                close(p[0]);
        int status = 0;
        while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (pid > 0 && WIFSIGNALED(status))
                *ret_signal = WTERMSIG(status);
        return next;
}

/* Whether the program loads in a throwaway child, as a launch loads it, once the objects paths[i]
 * with i < upto and ok[i] are loaded as the daemon would load them; if it fails, why in err. */
static enum program_trial program_loads_after(const char *const *paths, size_t upto, const bool *ok,
                                              const char *program, char *err, size_t size) {
        int p[2];
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
                return PROGRAM_UNTRIED;
        pid_t pid = throwaway_fork();
        if (pid == 0) {
                close(p[0]);
                for (size_t i = 0; i < upto; i++)
                        if (ok[i])
                                (void) dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
                const char *why = NULL;
                enum program_trial t = load_program(program, &why);
                if (why)
                        (void) !write(p[1], why, strlen(why));
                _exit(t);
        }
        close(p[1]);
        int status = 0;
        while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        /* Read once it has ended, without waiting: what its constructors started may hold the pipe. */
        ssize_t got = pid > 0 ? read(p[0], err, size - 1) : -1;
        err[got > 0 ? got : 0] = '\0';
        close(p[0]);
        if (pid < 0)
                return PROGRAM_UNTRIED;
        if (WIFSIGNALED(status)) {
                snprintf(err, size, "its constructors ended the test child (%s)", strsignal(WTERMSIG(status)));
                return PROGRAM_FAILS;
        }
        if (WEXITSTATUS(status) <= PROGRAM_UNTRIED)
                return (enum program_trial) WEXITSTATUS(status);
        snprintf(err, size, "its constructors ended the test child with exit status %d", WEXITSTATUS(status));
        return PROGRAM_FAILS;
}

/* The one object to blame for the program failing with objects[0, n) loaded: the last of the
 * shortest prefix with which it fails, found by halving, when every answer was clear and the
 * program loads with that object left out of the prefix; else n. */
static size_t object_to_blame(const char *const *paths, size_t n, const bool *ok, const char *program, char *err,
                              size_t size) {
        size_t loads = 0, fails = n; /* it loads with objects [0, loads), fails with [0, fails) */
        while (fails - loads > 1) {
                size_t mid = loads + (fails - loads) / 2;
                enum program_trial t = program_loads_after(paths, mid, ok, program, err, size);
                if (t == PROGRAM_UNTRIED)
                        return n;
                *(t == PROGRAM_LOADS ? &loads : &fails) = mid;
        }
        if (!ok[fails - 1] ||
            program_loads_after(paths, fails - 1, ok, program, err, size) != PROGRAM_LOADS ||
            program_loads_after(paths, fails, ok, program, err, size) != PROGRAM_FAILS)
                return n; /* the answers changed: a flaky load is no object's fault */
        return fails - 1;
}

/* Leaves out, one at a time, each object with which a program that loads without them no longer
 * does, and every other copy of its path (learned for several programs). Returns whether it left
 * anything out. */
static bool keep_program_loadable(const char *const *paths, size_t n, bool *ok, char **reasons,
                                  const char *program) {
        char err[512];
        bool changed = false;
        if (program_loads_after(paths, 0, ok, program, err, sizeof err) != PROGRAM_LOADS)
                return false; /* it does not load even without them: not theirs to answer for */
        while (program_loads_after(paths, n, ok, program, err, sizeof err) == PROGRAM_FAILS) {
                size_t k = object_to_blame(paths, n, ok, program, err, sizeof err);
                if (k == n)
                        break;
                char buf[PATH_MAX + 640];
                snprintf(buf, sizeof buf, "with it loaded, %s no longer loads: %s", program, err);
                for (size_t j = 0; j < n; j++)
                        if (ok[j] && strcmp(paths[j], paths[k]) == 0) {
                                ok[j] = false;
                                reasons[j] = strdup(buf);
                        }
                changed = true;
        }
        return changed;
}

size_t preload_tested(const char *const *paths, size_t n, char **reasons, const struct programs_to_check *all) {
        bool *ok = calloc(n ? n : 1, sizeof *ok);
        _cleanup_free_ bool *program_loads = calloc(all->n ? all->n : 1, sizeof *program_loads);
        _cleanup_free_ const char **checked = calloc(all->n ? all->n : 1, sizeof *checked);
        if (!ok || !program_loads || !checked) {
                free(ok);
                return 0;
        }
        struct programs_to_check programs_checked = { checked, 0, all->interp }, *programs = &programs_checked;
        for (size_t i = 0; i < all->n; i++)
                if (worth_checking(all->paths[i], all->interp))
                        checked[programs->n++] = all->paths[i];
        for (size_t i = 0; i < n;) {
                int sig;
                bool changed;
                size_t from = i;
                i = test_batch(paths, i, n, ok, reasons, programs, program_loads, false, &sig, &changed);
                if (changed) /* rare: find which, at the cost of a look after each object */
                        i = test_batch(paths, from, n, ok, reasons, programs, program_loads, true, &sig, &changed);
                if ((sig || i == from) && i < n) { /* it died loading paths[i] */
                        char buf[128];
                        if (sig == SIGALRM)
                                snprintf(buf, sizeof buf, "loading it took more than %u s in the test child",
                                         throwaway_deadline());
                        else
                                snprintf(buf, sizeof buf, "loading it ended the test child (%s)",
                                         sig ? strsignal(sig) : "no answer");
                        reasons[i++] = strdup(buf);
                }
        }
        /* Until a whole pass leaves nothing out: leaving one out for a program can change what the
         * others load beside (which object made a thread-local block static first). */
        for (bool changed = true, since = false; changed && n; since |= changed) {
                changed = false;
                for (size_t i = 0; i < programs->n; i++)
                        if (!program_loads[i] || since) /* not known to load beside what is left */
                                changed |= keep_program_loadable(paths, n, ok, reasons, programs->paths[i]);
        }
        size_t loaded = 0;
        for (size_t i = 0; i < n; i++) {
                if (!ok[i])
                        continue;
                if (dlopen(paths[i], RTLD_NOW | RTLD_LOCAL))
                        loaded++;
                else
                        reasons[i] = reason_for('f', dlerror());
        }
        free(ok);
        return loaded;
}
