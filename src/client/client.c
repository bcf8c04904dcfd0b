/* SPDX-License-Identifier: MIT */
#include "client.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "wire.h"

static int default_socket_path(char *buf, size_t size) {
        const char *env = getenv("HEADSTART_SOCKET");
        if (env && *env) {
                snprintf(buf, size, "%s", env);
                return 0;
        }
        const char *dir = getenv("XDG_RUNTIME_DIR");
        if (!dir || dir[0] != '/')
                return -ENXIO;
        int n = snprintf(buf, size, "%s/headstart/socket", dir);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int hs_client_connect(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (!path) {
                int r = default_socket_path(sa.sun_path, sizeof sa.sun_path);
                if (r < 0)
                        return r;
        } else if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        else
                strcpy(sa.sun_path, path);

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        return TAKE_FD(fd);
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

static int open_cwd(void) {
        int fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        /* "." cannot be looked up in a deleted directory; the /proc link still reaches it. */
        if (fd < 0)
                fd = open("/proc/self/cwd", O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int hs_client_send_launch(int sock, const char *path, char *const argv[], char *const envp[], const sigset_t *sigmask) {
        int fds[HS_MAX_FDS];
        uint32_t targets[HS_MAX_PASSED_FDS];
        struct hs_launch_fixed f = { 0 };

        mode_t mask = umask(0);
        umask(mask);
        f.umask = (uint32_t) mask;
        f.sigmask = sigset_bits(sigmask);
        f.sigignore = ignored_signals();
        for (unsigned i = 0; i < HS_RLIMIT_COUNT; i++) {
                struct rlimit rl;
                if (getrlimit((int) i, &rl) < 0)
                        return -errno;
                f.rlimits[i] = (struct hs_rlimit){ rl.rlim_cur, rl.rlim_max };
        }
        int r = inherited_fds(fds + 2, targets, &f.nfds);
        if (r < 0)
                return r;

        _cleanup_close_ int program = open(path, O_PATH | O_CLOEXEC);
        if (program < 0)
                return -errno;
        _cleanup_close_ int cwd = open_cwd();
        if (cwd < 0)
                return cwd;
        fds[0] = program;
        fds[1] = cwd;

        size_t size;
        _cleanup_free_ void *payload = hs_launch_encode(&f, targets, path, argv, envp, &size);
        if (!payload)
                return -errno;
        return hs_send_message(sock, HS_MSG_LAUNCH, payload, size, fds, f.nfds + 2, 0);
}

int hs_client_read_reply(int sock, struct hs_reply *ret) {
        struct hs_header h;
        char payload[sizeof(struct hs_reason) + HS_MAX_TEXT];
        int fds[1] = { -1 };
        size_t nfds = 0;

        int r = hs_recv_message(sock, &h, payload, sizeof payload, fds, 1, &nfds);
        if (r < 0) {
                hs_close_fds(fds, nfds);
                return r;
        }
        *ret = (struct hs_reply){ .type = (enum hs_message_type) h.type, .pidfd = -1 };
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
        case HS_MSG_DECLINED:
        case HS_MSG_ERROR: {
                struct hs_reason m;
                if (h.size < sizeof m)
                        break;
                memcpy(&m, payload, sizeof m);
                ret->code = m.code;
                memcpy(ret->text, payload + sizeof m, h.size - sizeof m);
                ret->text[h.size - sizeof m] = '\0';
                hs_close_fds(fds, nfds);
                return 0;
        }
        }
        hs_close_fds(fds, nfds);
        return -EBADMSG;
}
