/* SPDX-License-Identifier: MIT */
/* Runs a command as on a kernel before Linux 6.9: pidfd_send_signal with PIDFD_SIGNAL_PROCESS_GROUP
 * fails with EINVAL there, as a seccomp filter makes it here, for the command and all it starts.
 * Usage: no-group-signal PROGRAM [ARG...] */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#  define OWN_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#  define OWN_ARCH AUDIT_ARCH_AARCH64
#endif

#define PIDFD_SIGNAL_PROCESS_GROUP (1u << 2)

int main(int argc, char *argv[]) {
        if (argc < 2) {
                fprintf(stderr, "usage: no-group-signal PROGRAM [ARG...]\n");
                return 2;
        }
        struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, OWN_ARCH, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_send_signal, 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[3])),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PIDFD_SIGNAL_PROCESS_GROUP, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof filter / sizeof filter[0], .filter = filter };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
                perror("no-group-signal: seccomp");
                return 1;
        }
        execvp(argv[1], argv + 1);
        perror("no-group-signal: exec");
        return 127;
}
