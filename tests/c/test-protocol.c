/* SPDX-License-Identifier: MIT */
/* Unit tests of the protocol encoder, parser and framing. Prints "N passed, N failed". */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "protocol.h"
#include "wire.h"


static char *argv_ok[] = { "prog", "-x", "", "last arg", NULL };
static char *envp_ok[] = { "A=1", "PATH=/bin", NULL };

static void *encode(uint32_t nfds, const uint32_t *targets, const char *path, size_t *size) {
        struct hs_launch_fixed f = { .umask = 022, .nfds = nfds };
        return hs_launch_encode(&f, targets, path, argv_ok, envp_ok, size);
}

static void test_round_trip(void) {
        uint32_t targets[] = { 0, 1, 2, 5 };
        size_t size;
        void *buf = encode(4, targets, "/usr/bin/prog", &size);
        CHECK(buf != NULL);

        struct hs_launch_request req;
        const char *what = NULL;
        CHECK(hs_launch_parse(buf, size, 6, &req, &what) == 0);
        CHECK(req.fixed.argc == 4 && req.fixed.envc == 2 && req.fixed.umask == 022);
        CHECK(strcmp(req.path, "/usr/bin/prog") == 0);
        CHECK(strcmp(req.argv[2], "") == 0 && strcmp(req.argv[3], "last arg") == 0 && req.argv[4] == NULL);
        CHECK(strcmp(req.envp[0], "A=1") == 0 && strcmp(req.envp[1], "PATH=/bin") == 0 && req.envp[2] == NULL);
        CHECK(req.fd_targets[3] == 5);
        /* The strings sit back to back, as exec lays them out (proc-title.c relies on it). */
        CHECK(req.argv[1] == req.argv[0] + 5 && req.envp[0] == req.argv[3] + strlen(req.argv[3]) + 1);
        hs_launch_request_done(&req);
        free(buf);
}

static void expect_bad(void *buf, size_t size, size_t nfds, const char *label) {
        struct hs_launch_request req;
        const char *what = NULL;
        int r = hs_launch_parse(buf, size, nfds, &req, &what);
        CHECK(r < 0 && what != NULL);
        if (r >= 0) {
                fprintf(stderr, "accepted a bad request: %s\n", label);
                hs_launch_request_done(&req);
        }
}

static void test_malformed(void) {
        uint32_t targets[] = { 3, 3 };
        size_t size;
        char *buf = encode(0, NULL, "/bin/x", &size);
        struct hs_launch_fixed f;

        expect_bad(buf, sizeof f - 1, 2, "short");
        expect_bad(buf, size, 3, "fd count mismatch");
        expect_bad(buf, size - 1, 2, "truncated strings");

        memcpy(&f, buf, sizeof f);
        f.argc = 5;
        memcpy(buf, &f, sizeof f);
        expect_bad(buf, size, 2, "argc larger than the strings");
        f.argc = 0;
        memcpy(buf, &f, sizeof f);
        expect_bad(buf, size, 2, "empty argv");
        f.argc = 4;
        f.flags = HS_LAUNCH_FLAGS_KNOWN + 1u; /* a bit no version-1 peer knows */
        memcpy(buf, &f, sizeof f);
        expect_bad(buf, size, 2, "unknown flags");
        f.flags = 0;
        f.reserved = 1;
        memcpy(buf, &f, sizeof f);
        expect_bad(buf, size, 2, "reserved field not zero");
        f.reserved = 0;
        f.umask = 01000;
        memcpy(buf, &f, sizeof f);
        expect_bad(buf, size, 2, "umask");
        free(buf);

        buf = encode(0, NULL, "relative/x", &size);
        expect_bad(buf, size, 2, "relative path");
        buf[sizeof f + 3] = '\0'; /* a NUL inside the path */
        expect_bad(buf, size, 2, "path with an inner NUL");
        free(buf);

        buf = encode(2, targets, "/bin/x", &size);
        expect_bad(buf, size, 4, "duplicate targets");
        free(buf);

        uint32_t far[] = { HS_MAX_TARGET_FD };
        buf = encode(1, far, "/bin/x", &size);
        expect_bad(buf, size, 3, "target out of range");
        free(buf);

        /* Strings that do not end in NUL. */
        buf = encode(0, NULL, "/bin/x", &size);
        buf[size - 1] = 'x';
        expect_bad(buf, size, 2, "unterminated string");
        free(buf);
}

static void test_header(void) {
        struct hs_header h;
        hs_header_init(&h, HS_MSG_LAUNCH, 10);
        CHECK(hs_header_check(&h) == 0);
        h.magic = 0;
        CHECK(hs_header_check(&h) == -EPROTO);
        hs_header_init(&h, HS_MSG_LAUNCH, 10);
        h.version = 99;
        CHECK(hs_header_check(&h) == -EPROTONOSUPPORT);
        hs_header_init(&h, HS_MSG_LAUNCH, HS_MAX_PAYLOAD + 1);
        CHECK(hs_header_check(&h) == -EMSGSIZE);
}

static void test_encode_limits(void) {
        struct hs_launch_fixed f = { .nfds = HS_MAX_PASSED_FDS + 1 };
        size_t size;
        errno = 0;
        CHECK(hs_launch_encode(&f, NULL, "/bin/x", argv_ok, envp_ok, &size) == NULL && errno == E2BIG);
}

/* A large message with fds across a socketpair: framing survives partial reads and writes. */
static void test_wire(void) {
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);

        size_t big = 3 * 1024 * 1024;
        char *payload = malloc(big);
        for (size_t i = 0; i < big; i++)
                payload[i] = (char) (i * 7);
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int fds[2] = { devnull, STDERR_FILENO };

        if (fork() == 0) {
                close(sv[0]);
                _exit(hs_send_message(sv[1], HS_MSG_LAUNCH, payload, big, fds, 2, 0) == 0 ? 0 : 1);
        }
        close(sv[1]);

        struct hs_header h;
        char *got = malloc(big);
        int rfds[4];
        size_t nfds = 0;
        CHECK(hs_recv_message(sv[0], &h, got, big, rfds, 4, &nfds) == 0);
        CHECK(h.type == HS_MSG_LAUNCH && h.size == big && memcmp(got, payload, big) == 0);
        CHECK(nfds == 2);
        struct stat a, b;
        CHECK(nfds == 2 && fstat(rfds[0], &a) == 0 && fstat(devnull, &b) == 0 && a.st_ino == b.st_ino);
        CHECK(nfds == 2 && (fcntl(rfds[0], F_GETFD) & FD_CLOEXEC));
        hs_close_fds(rfds, nfds);

        /* End of stream reads as -ECONNRESET. */
        nfds = 0;
        CHECK(hs_recv_message(sv[0], &h, got, big, rfds, 4, &nfds) == -ECONNRESET);
        close(sv[0]);
        close(devnull);
        free(got);
        free(payload);
}

static void on_alarm(int sig) {
        (void) sig;
}

/* A caller whose timer interrupts the wait every 20 ms (no SA_RESTART, so poll fails with EINTR):
 * the wait began again at each signal, and a socket that never answers was waited for forever. */
static void test_wait_is_a_deadline_across_signals(void) {
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
        struct sigaction sa = { .sa_handler = on_alarm };
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval every = { .it_interval = { 0, 20000 }, .it_value = { 0, 20000 } };
        setitimer(ITIMER_REAL, &every, NULL);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CHECK(hs_wait_readable(sv[0], 150) == -ETIMEDOUT);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        setitimer(ITIMER_REAL, &(struct itimerval){ 0 }, NULL);
        /* Not a timing test: before, it never returned (meson's test timeout ended it). */
        CHECK(t1.tv_sec - t0.tv_sec < 30);
        close(sv[0]);
        close(sv[1]);
}

int main(void) {
        test_wait_is_a_deadline_across_signals();
        test_round_trip();
        test_malformed();
        test_header();
        test_encode_limits();
        test_wire();
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
}
