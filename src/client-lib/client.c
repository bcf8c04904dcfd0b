/* SPDX-License-Identifier: MIT */
#include "headstart/client.h"

#include <dirent.h>
#include <poll.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exit-status.h"
#include "kept-prctl.h"
#include "macro.h"
#include "protocol.h"
#include "wire.h"


struct hs_launch {
        int sock;
        pid_t pid;
        int pidfd;
        bool ended; /* the daemon said how the program ended: code, status */
        int code, status;
        char reason[HS_MAX_TEXT + 1];
};

static int default_socket_path(char *buf, size_t size) {
        /* secure_getenv: a setuid program linking us must not be pointed at a socket by its caller. */
        const char *env = secure_getenv("HEADSTART_SOCKET");
        if (env && *env) {
                snprintf(buf, size, "%s", env);
                return 0;
        }
        return hs_default_socket_path(buf, size);
}

/* Whoever listens on the socket gets our open files with the launch and tells us how the program
 * ended, and we forward our signals to the process it names: only our own user's daemon may.
 * The kernel says who listens (SO_PEERCRED): our user, or root for a socket that the system
 * manager made for a user's daemon (headstart@.socket), which is then that user's file (owner:
 * the file connected to's, -1 when not known); the listener's word about itself counts for
 * nothing. -EACCES for any other. */
static int listener_is_ours(int fd, uid_t owner) {
        struct ucred peer;
        socklen_t len = sizeof peer;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0)
                return -errno;
        uid_t us = geteuid();
        if (peer.uid != us && peer.uid != 0)
                return -EACCES;
        return peer.uid == 0 && owner != us ? -EACCES : 0;
}

/* Connects to the socket file open as node (O_PATH) through /proc, so that the file whose owner
 * was read is the one connected to: by its path, another user who can rename in a folder of the
 * path could swap the file between the two. Without /proc, by the path, with no owner known. */
static int connect_node(int fd, int node, const char *path, uid_t *owner) {
        struct stat st;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (fstat(node, &st) < 0)
                return -errno;
        if (!S_ISSOCK(st.st_mode))
                return -ECONNREFUSED; /* as connect() says of a file that is not a socket */
        snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d", node);
        *owner = st.st_uid;
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0)
                return 0;
        if (errno != ENOENT || access("/proc/self/fd", F_OK) == 0)
                return -errno;
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        *owner = (uid_t) -1;
        return connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0 ? -errno : 0;
}

static int connect_daemon(const char *path) {
        char buf[sizeof ((struct sockaddr_un *) NULL)->sun_path];
        if (!path) {
                int r = default_socket_path(buf, sizeof buf);
                if (r < 0)
                        return r;
                path = buf;
        } else if (strlen(path) >= sizeof buf)
                return -ENAMETOOLONG;

        _cleanup_close_ int node = open(path, O_PATH | O_CLOEXEC);
        if (node < 0)
                return -errno;
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        uid_t owner = (uid_t) -1;
        int r = connect_node(fd, node, path, &owner);
        if (r < 0)
                return r;
        r = listener_is_ours(fd, owner);
        return r < 0 ? r : TAKE_FD(fd);
}

static uint64_t sigset_bits(const sigset_t *set) {
        uint64_t bits = 0;
        for (int sig = 1; sig <= (int) HS_SIGNAL_COUNT; sig++)
                if (sigismember(set, sig) == 1)
                        bits |= UINT64_C(1) << (sig - 1);
        return bits;
}

static uint64_t ignored_signals(void) {
        uint64_t bits = 0;
        for (int sig = 1; sig <= (int) HS_SIGNAL_COUNT; sig++) {
                struct sigaction sa;
                if (sigaction(sig, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN)
                        bits |= UINT64_C(1) << (sig - 1);
        }
        return bits;
}

/* The fds exec would hand over: every open one without FD_CLOEXEC. */
static int inherited_fds(int *fds, uint32_t *targets, uint32_t *ret_n) {
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                return -errno;
        uint32_t n = 0;
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                int fd = atoi(de->d_name);
                if (fd == dirfd(d))
                        continue;
                int flags = fcntl(fd, F_GETFD);
                if (flags < 0 || (flags & FD_CLOEXEC))
                        continue;
                if (n >= HS_MAX_PASSED_FDS) {
                        r = -EMFILE;
                        break;
                }
                fds[n] = fd;
                targets[n] = (uint32_t) fd;
                n++;
        }
        closedir(d);
        *ret_n = n;
        return r;
}

static int open_cwd(const char *path) {
        if (path) {
                int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
                return fd < 0 ? -errno : fd;
        }
        int fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        /* "." cannot be looked up in a deleted directory; the /proc link still reaches it. */
        if (fd < 0)
                fd = open("/proc/self/cwd", O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* The fds the caller chose: fds[i] becomes fd i. */
static int chosen_fds(const int *chosen, size_t n, int *fds, uint32_t *targets, uint32_t *ret_n) {
        uint32_t k = 0;
        for (size_t i = 0; i < n; i++) {
                if (chosen[i] < 0)
                        continue;
                if (k >= HS_MAX_PASSED_FDS)
                        return -EMFILE;
                if (fcntl(chosen[i], F_GETFD) < 0)
                        return -EBADF;
                fds[k] = chosen[i];
                targets[k] = (uint32_t) i;
                k++;
        }
        *ret_n = k;
        return 0;
}

_Static_assert(HS_LAUNCH_TERMINAL_OK == HS_LAUNCH_FLAG_TERMINAL_OK, "the public flag is the wire flag");
_Static_assert(HS_LAUNCH_EXECS_WHEN_DECLINED == HS_LAUNCH_FLAG_EXECS_WHEN_DECLINED, "the public flag is the wire flag");
_Static_assert(HS_LAUNCH_FOLLOWS_STOPS == HS_LAUNCH_FLAG_FOLLOWS_STOPS, "the public flag is the wire flag");
_Static_assert(HS_LAUNCH_OUTLIVES_CALLER == HS_LAUNCH_FLAG_OUTLIVES_CLIENT, "the public flag is the wire flag");
/* The flags a caller may give (the wire's others are ours to set). */
#define PUBLIC_FLAGS (HS_LAUNCH_TERMINAL_OK | HS_LAUNCH_EXECS_WHEN_DECLINED | HS_LAUNCH_FOLLOWS_STOPS | HS_LAUNCH_OUTLIVES_CALLER)

static bool has_controlling_terminal(void) {
        int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

/* Whether this process holds a POSIX record lock (fcntl F_SETLK) on one of fds. Such a lock belongs
 * to the process, not to its fds: exec keeps it for the program, and a served program would find
 * its file locked by another process (a wrapper that locks a file and execs its program would block
 * it). An OFD lock probe conflicts with the process's own record locks and names its pid; other
 * processes' locks and OFD locks (l_pid -1) are not ours. One system call an fd: /proc/locks, which
 * lists them all, took 7 to 27 ms to read after the machine had been idle for 0.3 s. */
static bool holds_posix_lock(const int *fds, uint32_t n) {
        for (uint32_t i = 0; i < n; i++) {
                struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
                if (fcntl(fds[i], F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid == getpid())
                        return true;
        }
        return false;
}

/* Whether this process was set by prctl to something exec keeps for the program and the daemon
 * cannot see (kept-prctl.h); what, into buf. A child subreaper, which fork drops, counts only for a
 * caller that execs the program in this process. */
static bool kept_prctl_state(bool execs_here, char *buf, size_t size) {
        const char *kept = kept_prctl_inherited();
        int subreaper = 0;
        if (kept)
                snprintf(buf, size, "the caller %s, which exec keeps for the program", kept);
        else if (execs_here && prctl(PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0) == 0 && subreaper)
                snprintf(buf, size, "the caller is a child subreaper (prctl PR_SET_CHILD_SUBREAPER), which exec "
                                    "keeps: the program's orphaned descendants would be its");
        return kept || subreaper;
}

/* Connects to the daemon and sends the launch; HS_LAUNCH_DECLINED (l->reason says why) without
 * connecting when a caller that execs when declined keeps something exec would keep. */
static int send_launch(struct hs_launch *l, const char *path, char *const argv[], char *const envp[],
                       const struct hs_launch_options *o) {
        int fds[HS_MAX_FDS];
        uint32_t targets[HS_MAX_PASSED_FDS];
        struct hs_launch_fixed f = { 0 };

        mode_t mask = umask(0);
        umask(mask);
        f.umask = (uint32_t) mask;
        sigset_t sigmask;
        if (!o->sigmask)
                sigprocmask(SIG_SETMASK, NULL, &sigmask);
        f.sigmask = sigset_bits(o->sigmask ? o->sigmask : &sigmask);
        f.sigignore = ignored_signals();
        f.flags = (has_controlling_terminal() ? HS_LAUNCH_FLAG_CTTY : 0) | (o->flags & PUBLIC_FLAGS);
        for (unsigned i = 0; i < HS_RLIMIT_COUNT; i++) {
                struct rlimit rl;
                if (getrlimit((int) i, &rl) < 0)
                        return -errno;
                f.rlimits[i] = (struct hs_rlimit){ rl.rlim_cur, rl.rlim_max };
        }
        int r = o->fds ? chosen_fds(o->fds, o->nfds, fds + 2, targets, &f.nfds)
                       : inherited_fds(fds + 2, targets, &f.nfds);
        if (r < 0)
                return r;
        if (!o->fds && (o->flags & HS_LAUNCH_EXECS_WHEN_DECLINED) && holds_posix_lock(fds + 2, f.nfds)) {
                snprintf(l->reason, sizeof l->reason, "the caller holds a POSIX record lock (fcntl), which exec "
                                                      "keeps for the program");
                return HS_LAUNCH_DECLINED;
        }
        if (kept_prctl_state(o->flags & HS_LAUNCH_EXECS_WHEN_DECLINED, l->reason, sizeof l->reason))
                return HS_LAUNCH_DECLINED;

        _cleanup_close_ int program = open(path, O_PATH | O_CLOEXEC);
        if (program < 0)
                return -errno;
        _cleanup_close_ int cwd = open_cwd(o->cwd);
        if (cwd < 0)
                return cwd;
        fds[0] = program;
        fds[1] = cwd;

        size_t size;
        _cleanup_free_ void *payload = hs_launch_encode(&f, targets, path, argv, envp, &size);
        if (!payload)
                return -errno;
        l->sock = connect_daemon(o->socket);
        if (l->sock < 0)
                return l->sock;
        return hs_send_message(l->sock, HS_MSG_LAUNCH, payload, size, fds, f.nfds + 2, 0);
}

struct reply {
        enum hs_message_type type;
        pid_t pid;   /* LAUNCHED */
        int pidfd;   /* LAUNCHED */
        int code;    /* EXITED: CLD_*; DECLINED: hs_decline_reason; ERROR: errno */
        int status;  /* EXITED: exit status or signal; STOPPED: signal */
};

/* Reads one reply; the reason text of DECLINED and ERROR goes to l->reason. */
static int read_reply(struct hs_launch *l, struct reply *ret) {
        struct hs_header h;
        char payload[sizeof(struct hs_reason) + HS_MAX_TEXT];
        int fds[1] = { -1 };
        size_t nfds = 0;

        int r = hs_recv_message(l->sock, &h, payload, sizeof payload, fds, 1, &nfds);
        if (r < 0) {
                hs_close_fds(fds, nfds);
                return r;
        }
        *ret = (struct reply){ .type = (enum hs_message_type) h.type, .pidfd = -1 };
        switch (h.type) {
        case HS_MSG_LAUNCHED: {
                struct hs_launched m;
                if (h.size != sizeof m || nfds != 1)
                        break;
                memcpy(&m, payload, sizeof m);
                ret->pid = m.pid;
                ret->pidfd = fds[0];
                return 0;
        }
        case HS_MSG_EXITED: {
                struct hs_exited m;
                if (h.size != sizeof m)
                        break;
                memcpy(&m, payload, sizeof m);
                ret->code = m.code;
                ret->status = m.status;
                hs_close_fds(fds, nfds);
                return 0;
        }
        case HS_MSG_STOPPED: {
                struct hs_stopped m;
                if (h.size != sizeof m)
                        break;
                memcpy(&m, payload, sizeof m);
                ret->code = CLD_STOPPED;
                ret->status = m.signal;
                hs_close_fds(fds, nfds);
                return 0;
        }
        case HS_MSG_DECLINED:
        case HS_MSG_ERROR: {
                struct hs_reason m;
                if (h.size < sizeof m)
                        break;
                memcpy(&m, payload, sizeof m);
                ret->code = m.code;
                memcpy(l->reason, payload + sizeof m, h.size - sizeof m);
                l->reason[h.size - sizeof m] = '\0';
                hs_close_fds(fds, nfds);
                return 0;
        }
        }
        hs_close_fds(fds, nfds);
        return -EBADMSG;
}

/* Whether this process may not look at the daemon's child pid, which has our IDs, groups,
 * capabilities and namespaces (the daemon compared them) and is dumpable: only a Linux security
 * module keeps it from us. Landlock does (its ptrace restriction: a process in a Landlock domain may
 * not look at one outside it), and shows its domains in no /proc file (Linux 6.18), so this is the
 * only way to see one: a served program would escape it. Following /proc/PID/root asks the kernel
 * whether we may read the process (PTRACE_MODE_READ), as /proc/PID/environ's open does not. One
 * system call; a child gone since (killed) is no answer. */
static bool kept_from_daemon_child(pid_t pid, int pidfd) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof path, "/proc/%d/root", (int) pid);
        return stat(path, &st) < 0 && errno == EACCES && pidfd_send_signal(pidfd, 0, NULL, 0) == 0;
}

/* Lets the launch go before main, as the protocol allows (the child exits at the end of the
 * stream): the caller execs. */
static int give_up_launch(struct hs_launch *l, const char *why) {
        close(l->sock);
        close(l->pidfd);
        *l = (struct hs_launch){ .sock = -1, .pidfd = -1 };
        snprintf(l->reason, sizeof l->reason, "%s", why);
        return HS_LAUNCH_DECLINED;
}

/* Whether exec would refuse these strings with E2BIG (fs/exec.c): one longer than 32 pages, or the
 * path and every string with a pointer to each (one at least for argv) beyond a quarter of the stack
 * limit, at most 6 MiB and at least 128 KiB. The daemon's own bound is far above (16 MiB), and a
 * served program would get what exec refuses. */
static bool beyond_exec_limits(const char *path, char *const argv[], char *const envp[]) {
        uint64_t limit = UINT64_C(6) << 20;
        struct rlimit stack;
        if (getrlimit(RLIMIT_STACK, &stack) == 0 && stack.rlim_cur != RLIM_INFINITY && stack.rlim_cur / 4 < limit)
                limit = stack.rlim_cur / 4;
        if (limit < 128 * 1024)
                limit = 128 * 1024;
        size_t longest = 32 * (size_t) sysconf(_SC_PAGESIZE);
        uint64_t used = strlen(path) + 1, pointers = 0;
        char *const *lists[] = { argv, envp };
        for (size_t i = 0; i < ELEMENTSOF(lists); i++)
                for (char *const *s = lists[i]; *s; s++, pointers++) {
                        size_t n = strlen(*s) + 1;
                        if (n > longest)
                                return true;
                        used += n;
                }
        return used + pointers * sizeof(void *) > limit;
}

int hs_launch_start(const char *path, char *const argv[], char *const envp[],
                           const struct hs_launch_options *options, struct hs_launch **ret) {
        static const struct hs_launch_options defaults = { 0 };
        const struct hs_launch_options *o = options ? options : &defaults;
        *ret = NULL;
        if (!path || path[0] != '/' || !argv || !argv[0] || !envp || (o->flags & ~PUBLIC_FLAGS))
                return -EINVAL;
        if (beyond_exec_limits(path, argv, envp))
                return -E2BIG;

        struct hs_launch *l = calloc(1, sizeof *l);
        if (!l)
                return -ENOMEM;
        l->pidfd = -1;
        l->sock = -1;
        int r = send_launch(l, path, argv, envp, o);
        if (r == HS_LAUNCH_DECLINED) {
                *ret = l;
                return r;
        }
        /* A daemon that refuses us (another user, say) replies and hangs up, which can break our
         * write: its reply still says why. */
        if (l->sock >= 0 && (r == -EPIPE || r == -ECONNRESET || r >= 0)) {
                struct reply reply = { .type = HS_MSG_STOPPED };
                r = 0;
                /* A stop before LAUNCHED is the child's before main (someone's SIGSTOP), not the program's. */
                while (r >= 0 && reply.type == HS_MSG_STOPPED) {
                        r = hs_wait_readable(l->sock, (int) (o->timeout_ms ? o->timeout_ms : HS_LAUNCH_DEFAULT_TIMEOUT_MS));
                        if (r >= 0)
                                r = read_reply(l, &reply);
                }
                if (r >= 0) {
                        switch (reply.type) {
                        case HS_MSG_LAUNCHED:
                                l->pid = reply.pid;
                                l->pidfd = reply.pidfd;
                                if (kept_from_daemon_child(l->pid, l->pidfd)) {
                                        r = give_up_launch(l, "the caller may not look at the daemon's "
                                                              "processes (Landlock, another security "
                                                              "module): a served program would escape "
                                                              "its confinement");
                                        break;
                                }
                                /* Only now may the program's main run (protocol.h, ACCEPT). */
                                r = hs_send_message(l->sock, HS_MSG_ACCEPT, NULL, 0, NULL, 0, 0);
                                break;
                        case HS_MSG_DECLINED:
                                r = HS_LAUNCH_DECLINED;
                                break;
                        case HS_MSG_ERROR:
                                r = HS_LAUNCH_REJECTED;
                                break;
                        default:
                                r = -EBADMSG;
                        }
                }
        }
        if (r < 0) {
                hs_launch_free(l);
                return r;
        }
        *ret = l;
        return r;
}

pid_t hs_launch_pid(const struct hs_launch *l) {
        return l->pid;
}

int hs_launch_pidfd(const struct hs_launch *l) {
        return l->pidfd;
}

int hs_launch_fd(const struct hs_launch *l) {
        return l->sock;
}

const char *hs_launch_reason(const struct hs_launch *l) {
        return l->reason;
}

int hs_launch_signal(struct hs_launch *l, int sig) {
        if (l->pidfd < 0)
                return -ESRCH;
        return pidfd_send_signal(l->pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

int hs_launch_wait(struct hs_launch *l, int *ret_code, int *ret_status) {
        if (l->pidfd < 0)
                return -ECHILD;
        if (l->ended) { /* asked again: the daemon has hung up since its answer */
                *ret_code = l->code;
                *ret_status = l->status;
                return 0;
        }
        struct reply reply;
        int r = read_reply(l, &reply);
        if (r < 0)
                return r;
        if (reply.type == HS_MSG_DECLINED)
                return HS_LAUNCH_DECLINED; /* failed before main: it never ran */
        if (reply.type != HS_MSG_EXITED && reply.type != HS_MSG_STOPPED)
                return -EBADMSG;
        *ret_code = reply.code;
        *ret_status = reply.status;
        l->ended = reply.type == HS_MSG_EXITED;
        l->code = reply.code;
        l->status = reply.status;
        return 0;
}

int hs_launch_orphan_status(struct hs_launch *l, int *ret_code, int *ret_status) {
        if (l->pidfd < 0)
                return -ECHILD;
        struct pollfd p = { .fd = l->pidfd, .events = POLLIN };
        if (poll(&p, 1, 0) == 0)
                return -EAGAIN; /* it runs */
        int status = exit_status_from_pidfd(l->pidfd);
        if (status < 0)
                return -ENODATA;
        *ret_code = WIFEXITED(status) ? CLD_EXITED : WCOREDUMP(status) ? CLD_DUMPED : CLD_KILLED;
        *ret_status = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
        return 0;
}

void hs_launch_free(struct hs_launch *l) {
        if (!l)
                return;
        if (l->sock >= 0)
                close(l->sock);
        if (l->pidfd >= 0)
                close(l->pidfd);
        free(l);
}

int hs_daemon_status(const char *socket, char **ret_text) {
        _cleanup_close_ int sock = connect_daemon(socket);
        if (sock < 0)
                return sock;
        int r = hs_send_message(sock, HS_MSG_STATUS, NULL, 0, NULL, 0, 0);
        /* A daemon that refuses us replies and hangs up, which can break our write: read why. */
        if (r >= 0 || r == -EPIPE || r == -ECONNRESET)
                r = hs_wait_readable(sock, HS_LAUNCH_DEFAULT_TIMEOUT_MS);
        if (r < 0)
                return r;
        struct hs_header h;
        void *payload;
        int fds[1];
        size_t nfds = 0;
        r = hs_recv_message_alloc(sock, &h, &payload, fds, 0, &nfds);
        if (r < 0)
                return r;
        if (h.type == HS_MSG_ERROR && h.size >= sizeof(struct hs_reason)) {
                struct hs_reason reason;
                memcpy(&reason, payload, sizeof reason);
                free(payload);
                return reason.code > 0 ? -reason.code : -EPROTO; /* EPERM: another user's daemon */
        }
        if (h.type != HS_MSG_STATUS_REPLY) {
                free(payload);
                /* The supervisor's answer while no zygote serves (one is starting) */
                return h.type == HS_MSG_DECLINED ? -EAGAIN : -EBADMSG;
        }
        char *text = realloc(payload, h.size + 1);
        if (!text) {
                free(payload);
                return -ENOMEM;
        }
        text[h.size] = '\0';
        *ret_text = text;
        return 0;
}
