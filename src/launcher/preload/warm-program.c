/* SPDX-License-Identifier: MIT */
#include "warm-program.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bind-plan.h"
#include "constructors.h"
#include "exit-registrations.h"
#include "log.h"
#include "macro.h"
#include "preload.h"
#include "process-state.h"
#include "shared-state.h"
#include "throwaway.h"

extern char **environ;

/* What loading the program in the throwaway child found, its first byte on the report pipe. The
 * exit status cannot carry it: the program's constructors may call exit() themselves. */
enum trial { TRIAL_FINE = 'F', TRIAL_FAILED = 'X', TRIAL_THREAD = 'T', TRIAL_SHARED = 'S', TRIAL_AT_EXIT = 'A',
             TRIAL_OUTPUT = 'O', TRIAL_WRITTEN = 'W', TRIAL_PROCESS = 'P', TRIAL_AT_FORK = 'K',
             TRIAL_LOADS = 'L', TRIAL_COPIES = 'C',
             TRIAL_ENDED = THROWAWAY_ENDED /* no verdict: its constructors ended the process */ };

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

struct trial_args {
        const char *image;
        const struct program_constructors *c;
        const struct bind_plan *plan;
        char *const *argv;
};

static _Noreturn void trial_child(void *arg, int report) {
        const struct trial_args *t = arg;
        const char *image = t->image;
        const struct program_constructors *c = t->c;
        const struct bind_plan *plan = t->plan;
        char *const *argv = t->argv;
        int before = preload_count_threads();
        size_t pending = pending_output();
        /* What its constructors write on stdout and stderr, which under exec every launch would
         * print, and served warm only the daemon's log. */
        int written = memfd_create("written", MFD_CLOEXEC);
        if (written < 0 || dup2(written, STDOUT_FILENO) < 0 || dup2(written, STDERR_FILENO) < 0)
                throwaway_report(report, TRIAL_FAILED, NULL);
        process_state_neutral();
        struct process_state *process = process_state_take();
        struct shared_state state;
        struct exit_registrations exits = { 0 };
        struct link_map *map;
        if (!process || shared_state_take(&state) < 0 || !open_warm(image, &map))
                throwaway_report(report, TRIAL_FAILED, NULL);
        size_t objects = loaded_objects(), copies_size;
        bool failed;
        unsigned char *copies = copies_take(plan, map->l_addr, &copies_size, &failed);
        if (failed || run_warm_recorded(map, c, argv, &exits) < 0)
                throwaway_report(report, TRIAL_FAILED, NULL);
        if (preload_count_threads() > before)
                throwaway_report(report, TRIAL_THREAD, NULL);
        char library[256];
        if (shared_state_changed(&state, library, sizeof library))
                throwaway_report(report, TRIAL_SHARED, library);
        if (exits.unrepeatable > 0 || exit_registrations_destructors(map))
                throwaway_report(report, TRIAL_AT_EXIT, NULL);
        if (pending_output() != pending)
                throwaway_report(report, TRIAL_OUTPUT, NULL);
        if (exits.atfork > 0)
                throwaway_report(report, TRIAL_AT_FORK, NULL);
        if (lseek(written, 0, SEEK_END) > 0)
                throwaway_report(report, TRIAL_WRITTEN, NULL);
        const char *changed = process_state_changed(process);
        if (changed)
                throwaway_report(report, TRIAL_PROCESS, changed);
        if (loaded_objects() != objects)
                throwaway_report(report, TRIAL_LOADS, NULL);
        if (copies_changed(plan, map->l_addr, copies, copies_size))
                throwaway_report(report, TRIAL_COPIES, NULL);
        throwaway_report(report, TRIAL_FINE, NULL);
}

/* Loading runs the program's constructors, so try it first where a thread, what they leave in the
 * libraries every program shares (shared-state.h), or their calling exit() could do no harm.
 * Returns a trial or a negative errno; the library changed in library, or how the child ended. */
static int warm_trial(const char *image, const struct program_constructors *c, const struct bind_plan *plan,
                      char *const argv[], char *library, size_t size) {
        struct trial_args args = { image, c, plan, argv };
        int verdict = throwaway_trial(trial_child, &args, library, size);
        return verdict == THROWAWAY_KILLED || verdict == TRIAL_FAILED ? -ENOEXEC : verdict;
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

int warm_program_load(const char *program, const char *image, const struct program_constructors *c,
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
