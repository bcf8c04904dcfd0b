/* SPDX-License-Identifier: MIT */
/* Turning a forked child of the daemon into the requested program. */
#pragma once

#include "bind-plan.h"
#include "constructors.h"
#include "exit-registrations.h"
#include "prepare-toolkit.h"
#include "program-tls.h"
#include "protocol.h"
#include "schedule.h"

/* Where the program starts, relative to its load address, from its ELF header. */
struct image_start {
        uint64_t entry;      /* e_entry */
        uint64_t phdr;       /* the program headers */
        uint64_t phnum;
        uint64_t executable; /* started at entry, through its _start; else a shared object whose
                              * exported main is called */
        struct program_tls tls; /* its own thread-local block, from PT_TLS */
        struct program_constructors constructors; /* hidden from dlopen in the loadable copy; run by
                                                   * the launch (none: dlopen ran them, or a warm
                                                   * program's ran in the daemon) */
        struct exit_registrations exits; /* what a warm program's constructors registered to run at
                                          * exit, made again where they would have run */
};

/* Positions in the fds received with a LAUNCH request. */
enum {
        HS_FD_PROGRAM = 0,
        HS_FD_CWD = 1,
        HS_FD_FIRST_PASSED = 2,
};

struct child_spec {
        const struct hs_launch_request *req;
        int *fds;          /* as received: program, working directory, passed fds */
        int image_fd;      /* the file to load, open: exactly the one the daemon checked */
        struct image_start start;
        const struct bind_plan *plan; /* how to bind its libraries to it */
        int report_fd;     /* write end of the pipe that tells the daemon about failures before main */
        struct after_main_page *after_main; /* shared with the daemon, filled at exit; or NULL */
        const struct schedule *schedule;    /* the program's --schedule, or NULL */
        int conn_fd; /* the client's connection: the child itself says LAUNCHED on it, right before main */
        struct prepared_process *prepared; /* its toolkit initialised before the request (--prepare-display),
                                                  * with the same settings; or NULL */
};

/* What exec carries over from the client besides fds and the working directory: umask, limits,
 * names, environment, blocked signals. NULL, or what failed (errno set). preparing: for a child
 * preparing its toolkit ahead of a launch, which keeps the limits checked at use (below) as the
 * zygote's, to set the launch's own as it takes it. */
const char *child_take_request_settings(const struct hs_launch_request *req, bool preparing);
/* The resource limits (RLIMIT_*) that the kernel checks only as a process uses them (processes,
 * queued signals, locks...), not ones that shape what a toolkit's start does (its fds, memory,
 * stacks, files, CPU time). A child prepared ahead sets them as it takes its launch, so they may
 * differ from the launch it was prepared with: two of them derive from the memory the kernel finds
 * at boot, and differ between boots with another kernel or initramfs (RLIMIT_NPROC,
 * RLIMIT_SIGPENDING; the device's boots with the small initramfs had others). */
bool child_rlimit_checked_at_use(unsigned resource);
/* Signal dispositions as exec leaves them: handled back to default, the client's ignored ones ignored. */
void child_reset_signals(const struct hs_launch_request *req);

/* Never returns: the program's exit status, or 127 after reporting why it could not start. */
_Noreturn void child_run(const struct child_spec *spec);
