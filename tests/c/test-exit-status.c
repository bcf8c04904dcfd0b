/* SPDX-License-Identifier: MIT */
/* exit_status_from_pidfd against reaps at the same moment: the kernel fails a call that meets the
 * reap with ESRCH (it reads the status before it looks the process up), and the status is there at
 * the next call. headstart-run gave up at the first failure and said the status was lost. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "exit-status.h"

#define ROUNDS 2000

static atomic_int pidfd = -1, status;
static atomic_bool asked, answered;

static void *reader(void *unused) {
        (void) unused;
        for (int round = 0; round < ROUNDS; round++) {
                while (!atomic_load(&asked))
                        ;
                atomic_store(&asked, false);
                atomic_store(&status, exit_status_from_pidfd(atomic_load(&pidfd)));
                atomic_store(&answered, true);
        }
        return NULL;
}

/* Linux 6.15 and later keep the status on the pidfd; before, there is nothing to read. */
static bool kernel_keeps_status(void) {
        struct utsname u;
        int major = 0, minor = 0;
        return uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
               (major > 6 || (major == 6 && minor >= 15));
}

int main(void) {
        if (!kernel_keeps_status()) {
                fprintf(stderr, "skipped: this kernel keeps no exit status on a pidfd\n");
                return 77;
        }
        pthread_t t;
        if (pthread_create(&t, NULL, reader, NULL) != 0)
                return 1;
        int lost = 0;
        for (int round = 0; round < ROUNDS; round++) {
                pid_t child = fork();
                if (child == 0)
                        _exit(7);
                atomic_store(&pidfd, (int) syscall(SYS_pidfd_open, child, 0));
                siginfo_t si;
                (void) waitid(P_PID, (id_t) child, &si, WEXITED | WNOWAIT); /* a zombie, as for the client */
                atomic_store(&asked, true);
                for (volatile int spin = rand() % 2000; spin > 0; spin--) /* the reap at a varying moment */
                        ;
                (void) waitpid(child, NULL, 0);
                while (!atomic_load(&answered))
                        ;
                atomic_store(&answered, false);
                if (atomic_load(&status) != 7 << 8)
                        lost++;
                close(atomic_load(&pidfd));
        }
        pthread_join(t, NULL);
        CHECK(lost == 0);
        if (lost)
                fprintf(stderr, "%d of %d statuses lost\n", lost, ROUNDS);
        printf("%d passed, %d failed\n", passed, failed);
        return failed != 0;
}
