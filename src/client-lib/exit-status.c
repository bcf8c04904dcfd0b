/* SPDX-License-Identifier: MIT */
#include "exit-status.h"

#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <time.h>

/* linux/pidfd.h of Linux 6.15, which Debian 12's headers predate: a pidfd keeps the exit status of
 * its process once it is reaped, for whoever holds the pidfd. */
struct pidfd_exit_info {
        uint64_t mask;
        uint64_t cgroupid;
        uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
        int32_t exit_code; /* as wait(2) gives it */
};
#define PIDFD_INFO_EXIT (1UL << 3)
#define PIDFD_GET_INFO _IOWR(0xFF, 11, struct pidfd_exit_info)

/* Asked every 10 ms for 5 s: with a second, a test's client once lost a status (the sanitizer
 * build, on a loaded machine); only a system whose init never reaps waits the whole bound.
 *
 * The kernel reads the status before it looks the process up, so a reap between the two fails the
 * call with ESRCH, and the status is there at the next call (2,590 such failures in 5,000 reaps
 * watched by a thread asking without pause, Linux 6.18). Giving up at the first, headstart-run
 * lost the status of a program whose zygote was killed in one CI run (tests/test_fallback.py). A
 * kernel that keeps no status fails every call once the process is reaped: a few in a row end the
 * wait. */
int exit_status_from_pidfd(int pidfd) {
        unsigned failed_as_reaped = 0;
        for (int tries = 0; tries < 500; tries++) {
                struct pidfd_exit_info info = { .mask = PIDFD_INFO_EXIT };
                if (ioctl(pidfd, PIDFD_GET_INFO, &info) < 0) {
                        if (errno != ESRCH || ++failed_as_reaped > 3)
                                return -1;
                } else if (info.mask & PIDFD_INFO_EXIT)
                        return info.exit_code;
                (void) nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
        }
        return -1;
}
