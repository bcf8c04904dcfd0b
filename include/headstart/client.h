/* SPDX-License-Identifier: MIT */
/*
 * libheadstart-client: start a program through headstartd from C, without running headstart-run.
 * For a home screen, a shell or a build tool that launches the same programs again and again.
 *
 *     struct hs_launch *l;
 *     int r = hs_launch_start("/usr/bin/app", argv, environ, NULL, &l);
 *     if (r == 0) {                       // running: hs_launch_pid(l), hs_launch_pidfd(l)
 *             int code, status;
 *             r = hs_launch_wait(l, &code, &status);
 *     }
 *     if (r == HS_LAUNCH_DECLINED)        // the daemon will not run it: run it yourself
 *             ...posix_spawn...;          // hs_launch_reason(l) says why
 *     hs_launch_free(l);
 *
 * The program gets what exec would give it from the caller unless the options say otherwise:
 * the caller's working directory, umask, resource limits, ignored signals and signal mask, and its
 * fds without FD_CLOEXEC. Functions return a negative errno on failure and never print anything.
 * A handle belongs to one thread at a time.
 */
#pragma once

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hs_launch;

struct hs_launch_options {
        /* NULL: $HEADSTART_SOCKET, else $XDG_RUNTIME_DIR/headstart/socket. */
        const char *socket;
        /* NULL: the caller's working directory. */
        const char *cwd;
        /* NULL: every fd of the caller without FD_CLOEXEC, at its own number (as exec).
         * Otherwise the program gets fds[i] as its fd i, for i < nfds, and no other fd;
         * a negative fds[i] leaves fd i closed. */
        const int *fds;
        size_t nfds;
        /* NULL: the caller's signal mask. */
        const sigset_t *sigmask;
        /* HS_LAUNCH_TERMINAL_OK: the program only writes to the terminal (no /dev/tty, no job control
         * of its own), so it may be served although the caller has a controlling terminal. Without
         * it, such a launch is declined unless the daemon's configuration names the program.
         * HS_LAUNCH_EXECS_WHEN_DECLINED: the caller execs the program itself, in this process, when
         * the launch is declined; it then runs with this process's scheduling, not the daemon's
         * --schedule for it, as plain exec would. Such a launch with the inherited fds is declined
         * here, without asking the daemon, when this process holds a POSIX record lock (fcntl) on
         * one of them, which exec keeps for the program, or when this process is a child subreaper
         * (prctl), which exec keeps and fork drops. Any launch is declined here when this process
         * has MDWE, a time-stamp counter that faults or a machine-check kill policy (prctl), which
         * fork and exec keep and the daemon cannot see.
         * HS_LAUNCH_FOLLOWS_STOPS, for a caller that stops and goes on with its program as a shell's
         * job would (headstart-run): hs_launch_wait() also returns each time the program stops, as
         * waitid(WSTOPPED) would tell its parent (the caller is not its parent: only the daemon sees
         * a stop), and the daemon signals the calling process itself: SIGSTOP when the program is
         * stopped by SIGSTOP, SIGCONT when it is continued or ends (a caller that passes SIGCONT on
         * should not pass that one back: it comes from the program's parent). docs/protocol.md,
         * "Stops", says how to stop with the other stop signals without a race.
         * HS_LAUNCH_OUTLIVES_CALLER, for a launcher (a home screen): the program keeps running when
         * the handle is freed or the caller ends, as a program posix_spawn'ed outlives its parent.
         * Without it the daemon kills the program, and the process group it leads, when the
         * connection drops: what headstart-run, which stands for the program, needs. */
        unsigned flags;
        /* How long to wait for the daemon's first answer, in ms; 0: HS_LAUNCH_DEFAULT_TIMEOUT_MS.
         * A daemon that does not answer in time (stopped, overloaded) gets -ETIMEDOUT: run the
         * program yourself. It cannot run twice: the daemon's child calls main only once this
         * function has accepted the launch. */
        unsigned timeout_ms;
};

#define HS_LAUNCH_DEFAULT_TIMEOUT_MS 2000u

#define HS_LAUNCH_TERMINAL_OK 0x2u
#define HS_LAUNCH_EXECS_WHEN_DECLINED 0x4u
#define HS_LAUNCH_FOLLOWS_STOPS 0x8u
#define HS_LAUNCH_OUTLIVES_CALLER 0x10u

/* Results other than 0 and negative errnos. In both cases the handle holds a reason text. */
enum {
        HS_LAUNCH_DECLINED = 1, /* the daemon cannot run this program as exec would: run it yourself */
        HS_LAUNCH_REJECTED = 2, /* the daemon refused the request itself (another user, a bad request) */
};

/* Asks the daemon to start the program file `path` (absolute) with argv and envp, and waits until
 * it has started or declined. Returns 0 (running), HS_LAUNCH_DECLINED or HS_LAUNCH_REJECTED with
 * *ret set, or a negative errno with *ret NULL: -ENOENT or -ECONNREFUSED: no daemon (-ENOENT also
 * for a program or working directory that is not there); -ENXIO: no socket named (neither
 * $HEADSTART_SOCKET nor $XDG_RUNTIME_DIR); -ETIMEDOUT: no answer within the options' timeout_ms;
 * -EACCES: another user listens on the socket, and nothing was sent to it; -E2BIG: exec would
 * refuse these arguments and environment (one string over 32 pages, or all of them over a quarter
 * of the stack limit); -EMFILE: more fds to pass than one message holds (251); -EINVAL: a path
 * that is not absolute, no argv[0], or a flag not defined here. On any of them run the program
 * yourself, which reports the error exec would. */
int hs_launch_start(const char *path, char *const argv[], char *const envp[], const struct hs_launch_options *options,
                    struct hs_launch **ret);

pid_t hs_launch_pid(const struct hs_launch *l);
/* A pidfd of the program, owned by the handle until it is freed; -1 when the program was not
 * started. The caller is not the program's parent, so it cannot waitid() on it, but it can poll it
 * (readable once the program has ended) and signal through it. The functions taking a handle need
 * one that hs_launch_start() set (not NULL). */
int hs_launch_pidfd(const struct hs_launch *l);
/* The connection to the daemon: it becomes readable when hs_launch_wait() would not block. */
int hs_launch_fd(const struct hs_launch *l);
/* Why the daemon declined or rejected the launch; "" otherwise. */
const char *hs_launch_reason(const struct hs_launch *l);

int hs_launch_signal(struct hs_launch *l, int sig);

/* Waits for the program to end. Returns 0 with *ret_code CLD_EXITED (*ret_status: exit status)
 * or CLD_KILLED/CLD_DUMPED (*ret_status: the signal), or, when the launch was started with
 * HS_LAUNCH_FOLLOWS_STOPS, CLD_STOPPED (*ret_status: the signal that stopped it; it may have been
 * continued since: call again to go on waiting); HS_LAUNCH_DECLINED when the program failed
 * to start before its main (run it yourself); -ECONNRESET when the daemon went away before it
 * said how the program ended: the program may still run (its pidfd becomes readable when it ends;
 * then hs_launch_orphan_status()). Called again after the end, it returns the same. */
int hs_launch_wait(struct hs_launch *l, int *ret_code, int *ret_status);

/* After hs_launch_wait() returned -ECONNRESET (the daemon went away): how the program ended, once its
 * pidfd is readable, as hs_launch_wait() says it. -EAGAIN while it runs; -ENODATA when the kernel
 * cannot say (before Linux 6.15, which keeps a reaped process's status for its pidfd's holders, or
 * when nobody reaped it within 5 s; this call waits that long at most). */
int hs_launch_orphan_status(struct hs_launch *l, int *ret_code, int *ret_status);

/* Closes the handle. A program still running is killed, with the process group it leads (its
 * children), once no one holds the connection (a child the caller forked after the launch may):
 * closing it tells the daemon its client is gone. A program posix_spawn'ed would outlive its
 * parent: launch with HS_LAUNCH_OUTLIVES_CALLER for that. */
void hs_launch_free(struct hs_launch *l);

/* What the daemon says about itself: its programs and their modes, pool, counters, refreshes.
 * Text of "key: value" lines, malloc'ed into *ret_text; the caller frees it. -ETIMEDOUT when the
 * daemon does not answer within HS_LAUNCH_DEFAULT_TIMEOUT_MS, -EAGAIN when no zygote serves at
 * that moment (the last one ended and the next is starting): ask again; -EACCES when another user
 * listens on the socket; -EPERM when the daemon is another user's and refused us. */
int hs_daemon_status(const char *socket, char **ret_text);

/* The same as one JSON object (a line), for scripts: each key once; a whole number as a number,
 * other values as strings; `program`, `learned`, `warm-up`, `declined` and `schedule`, one line
 * per item, always as arrays of strings. Malloc'ed into *ret_json; the caller frees it. */
int hs_daemon_status_json(const char *socket, char **ret_json);

#ifdef __cplusplus
}
#endif
