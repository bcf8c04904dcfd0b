/* SPDX-License-Identifier: MIT */
/* A program for the tests: reports what a program can observe about how it was started, or does
 * one thing the tests need (exit with a code, die of a signal, wait for signals, copy stdin).
 * Built like the sample apps (PIE, -rdynamic, -fPIC), so it runs by exec and through the daemon. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void print_file(const char *label, const char *path) {
        char buf[65536];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
        if (fd >= 0)
                close(fd);
        printf("%s:", label);
        for (ssize_t i = 0; i < n; i++)
                putchar(buf[i] ? buf[i] : '|');
        putchar('\n');
}

/* Whether the address lies in this program's own file, as the auxiliary vector says under exec. */
static int in_this_program(unsigned long address) {
        Dl_info here, there;
        return dladdr((void *) address, &there) && dladdr((void *) in_this_program, &here) &&
               here.dli_fbase == there.dli_fbase;
}

int main(int argc, char *argv[]);

static void report(int argc, char *argv[]) {
        for (int i = 0; i < argc; i++)
                printf("argv[%d]=%s\n", i, argv[i]);
        for (char **e = environ; *e; e++)
                printf("env=%s\n", *e);
        char cwd[4096];
        printf("cwd=%s\n", getcwd(cwd, sizeof cwd) ? cwd : strerror(errno));
        mode_t m = umask(0);
        umask(m);
        printf("umask=%04o\n", (unsigned) m);
        for (int r = 0; r < RLIM_NLIMITS; r++) {
                struct rlimit rl;
                getrlimit(r, &rl);
                printf("rlimit[%d]=%llu/%llu\n", r, (unsigned long long) rl.rlim_cur, (unsigned long long) rl.rlim_max);
        }
        sigset_t set;
        sigprocmask(SIG_SETMASK, NULL, &set);
        printf("blocked=");
        for (int s = 1; s < 65; s++)
                if (sigismember(&set, s) == 1)
                        printf("%d,", s);
        printf("\nignored=");
        for (int s = 1; s < 65; s++) {
                struct sigaction sa;
                if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
                        printf("%d,", s);
        }
        printf("\nhandled=");
        for (int s = 1; s < 65; s++) {
                struct sigaction sa;
                if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler != SIG_IGN && sa.sa_handler != SIG_DFL)
                        printf("%d,", s);
        }
        printf("\nfds=");
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d))
                        printf("%s,", de->d_name);
        if (d)
                closedir(d);
        char comm[17] = "";
        prctl(PR_GET_NAME, comm, 0, 0, 0);
        printf("\ncomm=%s\n", comm);
        printf("invocation_name=%s\n", program_invocation_name);
        printf("invocation_short_name=%s\n", program_invocation_short_name);
        printf("own_process_group=%d\n", getpgrp() == getpid());
        printf("session_leader=%d\n", getsid(0) == getpid());
        int tty = open("/dev/tty", O_RDONLY | O_CLOEXEC);
        printf("controlling_tty=%d\n", tty >= 0);
        printf("execfn=%s\n", (const char *) getauxval(AT_EXECFN));
        printf("auxv_entry_in_program=%d\n", in_this_program(getauxval(AT_ENTRY)));
        printf("auxv_phdr_in_program=%d\n", in_this_program(getauxval(AT_PHDR)));
        /* What GModule and GtkBuilder do to find a program's own type functions by name: the
         * program's exported symbols are in the global scope under exec (with -rdynamic). */
        void *global = dlopen(NULL, RTLD_LAZY);
        printf("main_in_global_scope=%d\n", global && dlsym(global, "main") == (void *) main);
        print_file("cmdline", "/proc/self/cmdline");
        print_file("environ", "/proc/self/environ");
}

/* Announces readiness on stdout, then waits until a handler of one of sigs has set *flag. The
 * signals stay blocked except inside sigsuspend: with pause, one that came between the look at the
 * flag and the wait was handled before it, and the wait never ended (seen under the sanitizers,
 * whose interceptor of pause widens that window). */
static void announce_and_wait(const int *sigs, size_t n, void (*handler)(int), volatile sig_atomic_t *flag) {
        sigset_t block, old;
        sigemptyset(&block);
        for (size_t i = 0; i < n; i++) {
                signal(sigs[i], handler);
                sigaddset(&block, sigs[i]);
        }
        sigprocmask(SIG_BLOCK, &block, &old);
        printf("ready\n");
        fflush(stdout);
        while (!*flag)
                sigsuspend(&old);
        sigprocmask(SIG_SETMASK, &old, NULL);
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig) {
        got_signal = sig;
}

/* Announces readiness on stdout, then exits with the number of the first signal it gets. */
static int wait_signal(void) {
        int sigs[] = { SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT, SIGWINCH, SIGCONT };
        announce_and_wait(sigs, sizeof sigs / sizeof sigs[0], on_signal, &got_signal);
        printf("got %d\n", (int) got_signal);
        return (int) got_signal;
}

static volatile sig_atomic_t continues;

static void on_continue(int sig) {
        (void) sig;
        continues++;
}

/* Announces readiness, then counts the SIGCONTs it gets until 0.5 s after the first: its exit status. */
static int count_continues(void) {
        announce_and_wait((int[]){ SIGCONT }, 1, on_continue, &continues);
        struct timespec left = { .tv_nsec = 500 * 1000 * 1000 };
        while (nanosleep(&left, &left) < 0 && errno == EINTR)
                ;
        return continues;
}

static int copy_stdin(void) {
        char buf[65536];
        ssize_t n;
        while ((n = read(STDIN_FILENO, buf, sizeof buf)) > 0)
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = write(STDOUT_FILENO, buf + off, (size_t) (n - off));
                        if (w < 0)
                                return 1;
                        off += w;
                }
        return n < 0;
}

int main(int argc, char *argv[]) {
        const char *what = argc > 1 ? argv[1] : "report";
        if (strcmp(what, "report") == 0) {
                report(argc, argv);
                return 0;
        }
        if (strcmp(what, "exit") == 0 && argc > 2) {
                printf("exiting with %d\n", atoi(argv[2]));
                return atoi(argv[2]);
        }
        if (strcmp(what, "kill") == 0 && argc > 2) {
                fprintf(stderr, "raising %d\n", atoi(argv[2]));
                if (atoi(argv[2]) == SIGSEGV)
                        *(volatile int *) 0 = 1;
                if (atoi(argv[2]) == SIGABRT)
                        abort();
                raise(atoi(argv[2]));
                return 100;
        }
        if (strcmp(what, "wait-signal") == 0)
                return wait_signal();
        if (strcmp(what, "stop-loop") == 0 && argc > 2) {
                /* Stops itself that many times, each until someone continues it. */
                for (int i = atoi(argv[2]); i > 0; i--)
                        raise(SIGTSTP);
                return 0;
        }
        if (strcmp(what, "count-continues") == 0)
                return count_continues();
        if (strcmp(what, "cat") == 0)
                return copy_stdin();
        if (strcmp(what, "libc-base") == 0) {
                /* Where libc is mapped: a fresh zygote has a fresh address layout. */
                Dl_info info;
                if (!dladdr((void *) printf, &info))
                        return 1;
                printf("libc_base=%p\n", info.dli_fbase);
                return 0;
        }
        if (strcmp(what, "tty") == 0) {
                /* What a program that only writes to a terminal looks at: isatty, the width, colour. */
                struct winsize ws = { 0 };
                (void) ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
                printf("isatty=%d%d%d columns=%d\n", isatty(0), isatty(1), isatty(2), ws.ws_col);
                printf(isatty(1) ? "\033[31mcoloured\033[0m\n" : "plain\n");
                return 0;
        }
        if (strcmp(what, "lock") == 0 && argc > 2) {
                /* Whose the POSIX record lock on fd N is: a process holds its own, and F_GETLK only
                 * reports another's. */
                struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
                if (fcntl(atoi(argv[2]), F_GETLK, &fl) < 0)
                        return 1;
                printf(fl.l_type == F_UNLCK ? "the lock is ours\n" : "the lock is another process's\n");
                return 0;
        }
        if (strcmp(what, "prctl") == 0) {
                /* What exec keeps of the caller's prctl settings, which no /proc file shows. PR_GET_MDWE
                 * is 66 (Linux 6.3, newer than Debian 12's headers). */
                int tsc = 0, subreaper = 0;
                prctl(PR_GET_TSC, &tsc, 0, 0, 0);
                prctl(PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0);
                printf("mdwe=%d tsc=%d subreaper=%d mce=%d securebits=%d\n", prctl(66, 0, 0, 0, 0), tsc,
                       subreaper, prctl(PR_MCE_KILL_GET, 0, 0, 0, 0), prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
                return 0;
        }
        if (strcmp(what, "mempolicy") == 0) {
                /* The NUMA memory policy (set_mempolicy), which fork and exec keep. */
                int mode = -1;
                unsigned long nodes = 0;
                if (syscall(SYS_get_mempolicy, &mode, &nodes, 64, 0, 0) < 0)
                        return 1;
                printf("mempolicy=%d nodes=%lx\n", mode, nodes);
                return 0;
        }
        if (strcmp(what, "sleep") == 0 && argc > 2) {
                sleep((unsigned) atoi(argv[2]));
                return 0;
        }
        fprintf(stderr, "observe: unknown command %s\n", what);
        return 2;
}

#ifdef WITH_TLS
/* A thread-local variable in the executable gives it a PT_TLS segment. */
__thread int observe_tls_counter = 1;
int observe_tls_touch(void) {
        return observe_tls_counter++;
}
#endif
