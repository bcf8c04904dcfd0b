/* SPDX-License-Identifier: MIT */
/* The forked child: makes the process look as if the client had exec'd the program, then loads the
 * program image and calls its main. Runs between fork and main, so it is short, allocates little,
 * and reports any failure to the daemon before main through the report pipe. */
#include "run-program.h"

#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "after-main.h"
#include "arch.h"
#include "prepare-toolkit.h"
#include "entry.h"
#include "proc-title.h"
#include "qt-file-path.h"
#include "toolkit-start.h"
#include "wire.h"

extern char **environ;

#if defined(__SANITIZE_ADDRESS__)
/* LeakSanitizer asks this at exit. A served program's exit is not the daemon's: its heap holds the
 * daemon's live state, which would be reported as leaks and change the program's exit status. */
static bool leak_check_off;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) {
        return leak_check_off;
}
#  define TURN_OFF_LEAK_CHECK() (leak_check_off = true)
#else
#  define TURN_OFF_LEAK_CHECK() ((void) 0)
#endif

static _Noreturn void fail(int report_fd, const char *what, const char *detail) {
        char msg[HS_MAX_TEXT];
        int n = snprintf(msg, sizeof msg, "%s: %s", what, detail);
        if (n > 0)
                (void) !write(report_fd, msg, (size_t) n < sizeof msg ? (size_t) n : sizeof msg - 1);
        _exit(127);
}

static _Noreturn void fail_errno(int report_fd, const char *what) {
        fail(report_fd, what, strerror(errno));
}

/* Whether the client answered ACCEPT. The connection is non-blocking (its file description is the
 * zygote's too), so we poll; no deadline: the client has one, and closes the connection when it
 * gives up. */
static bool client_accepts(int conn_fd) {
        struct hs_header h;
        size_t got = 0;
        while (got < sizeof h) {
                if (hs_wait_readable(conn_fd, -1) < 0)
                        return false;
                ssize_t n = recv(conn_fd, (char *) &h + got, sizeof h - got, MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n <= 0)
                        return false;
                got += (size_t) n;
        }
        return hs_header_check(&h) == 0 && h.type == HS_MSG_ACCEPT && h.size == 0;
}

/* LAUNCHED, with our pidfd, said by the child itself right before main, not by the zygote, and main
 * runs only once the client has answered ACCEPT. One process both tells the client and runs the
 * program, and the client decides: whenever the zygote dies or the client gives up waiting (a
 * stopped zygote), either the client took the launch (and reads the status from the pidfd) or it
 * execs the program while this child never calls main. Said by the zygote, its death between the
 * two let the program run twice or not at all; without ACCEPT, a client that timed out would exec a
 * program this child then ran too. */
static void announce(int conn_fd, int report_fd) {
        struct hs_launched msg = { .pid = getpid() };
        int pidfd = pidfd_open(getpid(), 0);
        int r = hs_send_message(conn_fd, HS_MSG_LAUNCHED, &msg, sizeof msg, &pidfd, pidfd >= 0, 0);
        if (pidfd >= 0)
                close(pidfd);
        if (r < 0 || !client_accepts(conn_fd))
                fail(report_fd, "the client did not take the launch", "it gave up waiting or went away");
        close(conn_fd);
}

/* Dispositions as exec leaves them: handled signals back to default, ignored ones stay ignored. */
static void reset_signals(uint64_t ignored) {
        for (int sig = 1; sig < NSIG; sig++) {
                if (sig == SIGKILL || sig == SIGSTOP)
                        continue;
                bool ign = sig <= (int) HS_SIGNAL_COUNT && (ignored & (UINT64_C(1) << (sig - 1)));
                struct sigaction sa = { .sa_handler = ign ? SIG_IGN : SIG_DFL };
                (void) sigaction(sig, &sa, NULL); /* glibc refuses its own internal signals; fine */
        }
}

static int cmp_int(const void *a, const void *b) {
        return *(const int *) a - *(const int *) b;
}

/* The child's own fds, kept until main: the report pipe, the client's connection, the program file. */
#define OWN_FDS 3

/* Gives each passed fd its target number, without the close-on-exec flag, and closes every other
 * fd except the child's own, which are moved above the targets, and those a prepared toolkit holds
 * (kept, none a target). The fds are first moved above every target so that placing one never
 * overwrites another still to be placed. */
static int place_fds(const uint32_t *targets, int *fds, uint32_t n, int *own[OWN_FDS], const int *kept,
                     size_t nkept) {
        int top = 3;
        for (uint32_t i = 0; i < n; i++)
                if ((int) targets[i] >= top)
                        top = (int) targets[i] + 1;

        for (uint32_t i = 0; i < n; i++) {
                fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, top);
                if (fds[i] < 0)
                        return -errno;
        }
        for (unsigned i = 0; i < OWN_FDS; i++)
                if ((*own[i] = fcntl(*own[i], F_DUPFD_CLOEXEC, top)) < 0)
                        return -errno;
        for (uint32_t i = 0; i < n; i++)
                if (dup2(fds[i], (int) targets[i]) < 0)
                        return -errno;

        int keep[HS_MAX_PASSED_FDS + OWN_FDS + PREPARED_MAX_FDS];
        size_t nkeep = 0;
        for (uint32_t i = 0; i < n; i++)
                keep[nkeep++] = (int) targets[i];
        for (unsigned i = 0; i < OWN_FDS; i++)
                keep[nkeep++] = *own[i];
        for (size_t i = 0; i < nkept && i < PREPARED_MAX_FDS; i++)
                keep[nkeep++] = kept[i];
        qsort(keep, nkeep, sizeof keep[0], cmp_int);

        unsigned lo = 0;
        for (size_t i = 0; i < nkeep; i++) {
                if ((unsigned) keep[i] > lo)
                        (void) close_range(lo, (unsigned) keep[i] - 1, 0);
                lo = (unsigned) keep[i] + 1;
        }
        (void) close_range(lo, ~0U, 0);
        return 0;
}

bool child_rlimit_checked_at_use(unsigned resource) {
        switch (resource) {
        case RLIMIT_NPROC:
        case RLIMIT_SIGPENDING:
        case RLIMIT_MSGQUEUE:
        case RLIMIT_NICE:
        case RLIMIT_RTPRIO:
        case RLIMIT_RTTIME:
        case RLIMIT_LOCKS:
        case RLIMIT_CORE:
                return true;
        default:
                return false;
        }
}

/* glibc sizes the threads it creates without a stack size of their own from RLIMIT_STACK, once, as
 * the process starts (__pthread_early_init): the zygote's from the daemon's limit at its exec. Under
 * exec the program's threads get the client's: 64 MiB for `ulimit -s 65536`, 2 MiB when unlimited. */
static void set_default_thread_stack(rlim_t limit) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        size_t size = limit == RLIM_INFINITY ? (size_t) 2 * 1024 * 1024 : (size_t) limit;
        if (size < HS_THREAD_STACK_MIN)
                size = HS_THREAD_STACK_MIN;
        size = (size + page - 1) & ~(page - 1);
        pthread_attr_t a;
        if (pthread_getattr_default_np(&a) != 0)
                return;
        if (pthread_attr_setstacksize(&a, size) == 0)
                (void) pthread_setattr_default_np(&a);
        pthread_attr_destroy(&a);
}

/* The limits the request gives: those checked at use (at_use), the others (others), or both. */
static int apply_rlimits(const struct hs_launch_request *req, bool at_use, bool others) {
        for (unsigned i = 0; i < HS_RLIMIT_COUNT; i++) {
                if (!(child_rlimit_checked_at_use(i) ? at_use : others))
                        continue;
                struct rlimit rl = { .rlim_cur = req->fixed.rlimits[i].cur, .rlim_max = req->fixed.rlimits[i].max };
                if (setrlimit((int) i, &rl) < 0)
                        return -errno;
                if (i == RLIMIT_STACK)
                        set_default_thread_stack(rl.rlim_cur);
        }
        return 0;
}

/* What the C library calls the program, which libraries read in the process (Mesa picks its
 * per-program settings by it). */
static void set_invocation_names(const struct hs_launch_request *req) {
        program_invocation_name = req->argv[0];
        program_invocation_short_name = basename(req->argv[0]);
}

static void set_names(const struct hs_launch_request *req) {
        /* exec names the process (comm) after the file it runs, not after argv[0]. */
        (void) prctl(PR_SET_NAME, basename(req->path), 0, 0, 0);
        set_invocation_names(req);
        proc_title_set(req);
}

/* Loads exactly the file the daemon checked, through its fd: a path could name another file by
 * now (a rename, a symlinked directory). Lazy binding, as exec would do unless the program asks for
 * -z now itself. A warm program is already loaded and relocated in the daemon: dlopen finds it by
 * its device and inode. RTLD_GLOBAL (here, in the child only: programs warm in one zygote never see
 * each other's symbols) puts the program and its libraries in the global scope, as exec does: what
 * it exports is found through dlopen(NULL), as GModule and GtkBuilder look up a program's own
 * types by name (Debian's baobab fails to build its window without). */
static void *load_program(int image_fd, const struct hs_launch_request *req, int report_fd,
                          struct link_map **ret_program) {
        char name[64];
        snprintf(name, sizeof name, "/proc/self/fd/%d", image_fd);
        void *handle = dlopen(name, RTLD_LAZY | RTLD_GLOBAL);
        if (!handle)
                fail(report_fd, "cannot load the program", dlerror());
        close(image_fd);
        if (dlinfo(handle, RTLD_DI_LINKMAP, ret_program) < 0)
                fail(report_fd, "cannot find the loaded program", dlerror());
        /* What dladdr and dl_iterate_phdr say the program is: its path, as exec would have it, not
         * a descriptor that is closed by now. */
        (*ret_program)->l_name = (char *) req->path;
        return handle;
}

/* An executable's main is the one its _start hands to the C library, as under exec; a shared object
 * exports it. */
static hs_main_fn find_main(void *handle, uintptr_t base, const struct image_start *start,
                            const struct hs_launch_request *req, int report_fd) {
        struct hs_program_image image = {
                .entry = base + start->entry,
                .phdr = (const ElfW(Phdr) *) (base + start->phdr),
                .phnum = start->phnum,
                .execfn = req->path,
        };
        if (hs_entry_adopt_auxv(&image) < 0)
                fail(report_fd, "cannot describe the program in the auxiliary vector",
                     "the daemon did not start through libheadstart-entry.so");
        if (!start->executable) {
                hs_main_fn main_fn = (hs_main_fn) dlsym(handle, "main");
                if (!main_fn)
                        fail(report_fd, "cannot find main", dlerror());
                return main_fn;
        }
        hs_main_fn main_fn = hs_entry_find_main(&image, (int) req->fixed.argc, req->argv, environ);
        if (!main_fn)
                fail(report_fd, "cannot find main", "its entry point did not call __libc_start_main");
        return main_fn;
}

const char *child_take_request_settings(const struct hs_launch_request *req, bool preparing) {
        umask((mode_t) req->fixed.umask);
        if (apply_rlimits(req, !preparing, true) < 0)
                return "cannot apply the resource limits";
        /* A child prepared ahead keeps the daemon's name and title while it waits: pidof and pgrep
         * must not find the program running before it is launched. Its launch gives it them. */
        if (preparing)
                set_invocation_names(req);
        else
                set_names(req);
        environ = req->envp;

        sigset_t mask;
        sigemptyset(&mask);
        for (int sig = 1; sig <= (int) HS_SIGNAL_COUNT; sig++)
                if (req->fixed.sigmask & (UINT64_C(1) << (sig - 1)))
                        sigaddset(&mask, sig);
        sigprocmask(SIG_SETMASK, &mask, NULL);
        return NULL;
}

void child_reset_signals(const struct hs_launch_request *req) {
        reset_signals(req->fixed.sigignore);
}

_Noreturn void child_run(const struct child_spec *spec) {
        const struct hs_launch_request *req = spec->req;
        int report_fd = spec->report_fd;
        int *fds = spec->fds;

        TURN_OFF_LEAK_CHECK();
        /* First, as chrt, taskset or a cgroup would have it before exec: the loading runs under it too. */
        const char *step;
        int scheduled = spec->schedule ? schedule_apply(spec->schedule, 0, &step) : 0;
        if (scheduled < 0)
                fail(report_fd, step, strerror(-scheduled));
        /* A prepared child took the same dispositions before its toolkit set any of its own. */
        if (!spec->prepared)
                reset_signals(req->fixed.sigignore);
        /* A process group of its own, so that kill(0) and a terminal's signals reach no other
         * program, in the daemon's session, which it does not lead (drop_controlling_terminal in
         * zygote.c says why). */
        if (setpgid(0, 0) < 0)
                fail_errno(report_fd, "setpgid");
        if (fchdir(fds[HS_FD_CWD]) < 0)
                fail_errno(report_fd, "cannot enter the working directory");
        int conn_fd = spec->conn_fd, image_fd = spec->image_fd;
        struct prepared_process *prepared = spec->prepared;
        /* The program's file as /proc/self/exe would name it under exec, for Qt (qt-file-path.h); the
         * client's descriptor of it is closed with the others that are not the program's. Static:
         * main runs below this frame, and under exec it has the stack to itself. */
        static char exe[PATH_MAX];
        char fd_name[64];
        snprintf(fd_name, sizeof fd_name, "/proc/self/fd/%d", fds[HS_FD_PROGRAM]);
        ssize_t exe_len = readlink(fd_name, exe, sizeof exe - 1);
        if (exe_len < 0)
                fail_errno(report_fd, "cannot name the program's file");
        exe[exe_len] = '\0';
        if (place_fds(req->fd_targets, fds + HS_FD_FIRST_PASSED, req->fixed.nfds,
                      (int *[OWN_FDS]){ &report_fd, &conn_fd, &image_fd }, prepared ? prepared->kept : NULL,
                      prepared ? prepared->nkept : 0) < 0)
                fail_errno(report_fd, "cannot place the file descriptors");
        const char *failed = NULL;
        if (prepared) {
                /* The rest it took as it was prepared, from a request just like this one; its
                 * environment stays as the toolkit left it (GTK takes DESKTOP_STARTUP_ID out), but
                 * for what the service manager set anew for this launch. */
                set_names(req);
                prepared_take_per_start_variables(req->envp);
                /* Those it kept as the zygote's (child_take_request_settings): the launch's now. */
                if (apply_rlimits(req, true, false) < 0)
                        fail_errno(report_fd, "cannot apply the resource limits");
                toolkit_start_defer(prepared->output);
        } else if ((failed = child_take_request_settings(req, false))) {
                fail_errno(report_fd, failed);
        }

        /* Before dlopen: the relocations of what it loads refer to the program's block. */
        int r = program_tls_install(&spec->start.tls, image_fd);
        if (r < 0)
                fail(report_fd, "cannot give the program its thread-local storage", strerror(-r));
        struct link_map *program;
        void *handle = load_program(image_fd, req, report_fd, &program);
        r = bind_plan_apply(spec->plan, program);
        if (r < 0)
                fail(report_fd, "cannot bind the libraries to the program", strerror(-r));
        r = qt_file_path_set(exe);
        if (r < 0)
                fail(report_fd, "cannot give Qt the program's own file", strerror(-r));
        r = prepared ? toolkit_start_route(program) : 0;
        if (r < 0)
                fail(report_fd, "cannot route the program's start of its toolkit", strerror(-r));
        hs_main_fn main_fn = find_main(handle, program->l_addr, &spec->start, req, report_fd);
        (void) proc_auxv_set(); /* as proc_title_set, best effort */

        announce(conn_fd, report_fd);
        close(report_fd);
        /* As exec's loader runs them: every relocation done, the program bound, its auxiliary vector
         * its own (find_main), with its own arguments. After the announcement: a constructor that
         * exits or crashes ends the program, which the client must not run again. */
        program_constructors_run(&spec->start.constructors, program->l_addr, (int) req->fixed.argc, req->argv,
                                 environ);
        exit_registrations_replay(&spec->start.exits);
        after_main_arm(spec->after_main);
        /* A program starts with errno 0 under exec; what the daemon's own calls left would show in
         * a program that reports errno without a failing call of its own first (xrdb's "Can't open
         * display" became "Invalid argument", issue 30). */
        errno = 0;
        exit(main_fn((int) req->fixed.argc, req->argv, environ));
}
