/* SPDX-License-Identifier: MIT */
/*
 * The wire protocol between headstart-run (or any client) and headstartd, all of it.
 * docs/protocol.md explains it in prose; this header is the authority.
 *
 * Transport: a SOCK_STREAM Unix socket. Every message is a header followed by `size` payload bytes.
 * Integers are in host byte order: the socket is local, so both ends share one machine.
 * File descriptors travel as SCM_RIGHTS attached to the first byte of the message that carries them.
 *
 * Who sends what:
 *   client -> daemon: LAUNCH or STATUS (exactly one per connection)
 *   daemon -> client: for LAUNCH: LAUNCHED, then EXITED; or DECLINED (at any point before the
 *                     program's main); for STATUS: STATUS_REPLY; for anything malformed: ERROR,
 *                     after which the connection is closed.
 *   client -> daemon: ACCEPT, in answer to LAUNCHED: the program's main runs only once the client
 *                     has said it takes the launch, so a client that gave up waiting (and execs
 *                     the program itself) never has it run twice. Version 2 added it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a user's daemon listens unless told otherwise: $XDG_RUNTIME_DIR/headstart/socket (the
 * directory private, docs/protocol.md). Returns 0, -ENXIO when XDG_RUNTIME_DIR is unset or not
 * absolute, or -ENAMETOOLONG. Clients also honour $HEADSTART_SOCKET first; the daemon takes --socket. */
int hs_default_socket_path(char *buf, size_t size);

#define HS_PROTOCOL_MAGIC 0x52545348u /* "HSTR" in little-endian memory order */
#define HS_PROTOCOL_VERSION 2u

/* Limits. The kernel allows at most 6 MiB of argument and environment strings (3/4 of the 8 MiB
 * stack limit cap, fs/exec.c), so 16 MiB of payload leaves room for the pointer-free encoding. */
#define HS_MAX_PAYLOAD (16u * 1024u * 1024u)
#define HS_MAX_STRINGS (4u * 1024u * 1024u) /* argc + envc */
#define HS_MAX_PATH 4096u                     /* PATH_MAX */
#define HS_MAX_TEXT 1024u                     /* reason text in DECLINED and ERROR */
/* SCM_MAX_FD is 253 (include/net/scm.h); two of them are the program and the working directory. */
#define HS_MAX_FDS 253u
#define HS_MAX_PASSED_FDS (HS_MAX_FDS - 2u)
#define HS_MAX_TARGET_FD (1u << 20) /* fs.nr_open default ceiling */
#define HS_RLIMIT_COUNT 16u         /* RLIM_NLIMITS on Linux */
#define HS_SIGNAL_COUNT 64u         /* signals 1..64 as bits 0..63 */

enum hs_message_type {
        HS_MSG_LAUNCH = 1,
        HS_MSG_LAUNCHED = 2,
        HS_MSG_EXITED = 3,
        HS_MSG_DECLINED = 4,
        HS_MSG_ERROR = 5,
        HS_MSG_STATUS = 6,       /* empty payload */
        HS_MSG_STATUS_REPLY = 7, /* payload: human-readable text, "key: value" lines, not NUL-terminated */
        HS_MSG_ACCEPT = 8,       /* empty payload */
        HS_MSG_STOPPED = 9,      /* payload: struct hs_stopped; only to a client that asked (FOLLOWS_STOPS) */
};

struct hs_header {
        uint32_t magic;
        uint16_t version;
        uint16_t type;
        uint32_t size; /* payload bytes that follow */
};

struct hs_rlimit {
        uint64_t cur;
        uint64_t max;
};

/* LAUNCH payload: this fixed part, then
 *   uint32_t fd_targets[nfds]        the number each passed fd must have in the program
 *   char     path[path_size]         the program file as the client resolved it, NUL-terminated
 *   char     strings[strings_size]   argc argument strings then envc environment strings, each NUL-terminated
 * SCM_RIGHTS: [program (O_PATH is enough), working directory, passed fd 0 .. nfds-1]. */
struct hs_launch_fixed {
        uint32_t flags; /* HS_LAUNCH_FLAG_*; other bits must be 0 */
        uint32_t umask;
        uint64_t sigmask;   /* blocked signals */
        uint64_t sigignore; /* signals whose disposition is SIG_IGN (kept across exec, so kept here) */
        struct hs_rlimit rlimits[HS_RLIMIT_COUNT];
        uint32_t nfds;
        uint32_t argc;
        uint32_t envc;
        uint32_t path_size;
        uint32_t strings_size;
        uint32_t reserved; /* must be 0 */
};

/* The client has a controlling terminal. A served program cannot have it (it leads a session of its
 * own): it cannot open /dev/tty or take part in job control, so the daemon serves it only when the
 * user said that the program does not need that (the next flag, or `terminal = PROGRAM`). */
#define HS_LAUNCH_FLAG_CTTY 0x1u
/* The user allows serving with the terminal as stdio only (headstart-run --terminal). */
#define HS_LAUNCH_FLAG_TERMINAL_OK 0x2u
/* The client becomes the program itself (exec) when declined: the daemon first gives it the
 * program's configured scheduling (--schedule), which the client may lack the privilege to take.
 * The client names no policy: there is no field for one. */
#define HS_LAUNCH_FLAG_EXECS_WHEN_DECLINED 0x4u
/* The client follows the program's stops: the daemon, which alone sees them (as its parent), sends
 * STOPPED each time the program stops after its main began, by any signal from anyone. */
#define HS_LAUNCH_FLAG_FOLLOWS_STOPS 0x8u
/* The program outlives the client's connection, as a program posix_spawn'ed outlives its parent;
 * without it, the daemon kills the program and its process group when the connection drops. */
#define HS_LAUNCH_FLAG_OUTLIVES_CLIENT 0x10u
#define HS_LAUNCH_FLAGS_KNOWN                                                                           \
        (HS_LAUNCH_FLAG_CTTY | HS_LAUNCH_FLAG_TERMINAL_OK | HS_LAUNCH_FLAG_EXECS_WHEN_DECLINED |        \
         HS_LAUNCH_FLAG_FOLLOWS_STOPS | HS_LAUNCH_FLAG_OUTLIVES_CLIENT)

/* LAUNCHED payload; SCM_RIGHTS: [pidfd of the program]. */
struct hs_launched {
        int32_t pid;
        uint32_t reserved;
};

/* EXITED payload: the program's waitid() result. */
struct hs_exited {
        int32_t code;   /* CLD_EXITED, CLD_KILLED or CLD_DUMPED */
        int32_t status; /* exit status or signal number */
};

/* STOPPED payload: the signal that stopped the program (waitid's CLD_STOPPED status). */
struct hs_stopped {
        int32_t signal;
        uint32_t reserved;
};

/* DECLINED and ERROR payload: this, then `text` bytes of reason (not NUL-terminated). */
struct hs_reason {
        int32_t code; /* an hs_decline_reason for DECLINED, a positive errno for ERROR */
        uint32_t reserved;
};

/* Why the daemon would not serve a program: the client then execs it itself. */
enum hs_decline_reason {
        HS_DECLINE_UNSUPPORTED = 1, /* the program is of a kind the daemon cannot run as exec would */
        HS_DECLINE_ENVIRONMENT = 2, /* the client's loader environment, scheduling, rights or namespaces differ
                                     * from the daemon's */
        HS_DECLINE_LIMITS = 3,      /* a resource limit the daemon cannot grant */
        HS_DECLINE_START_FAILED = 4, /* loading failed in the child, before the program's main ran */
        HS_DECLINE_BUSY = 5,        /* too many launches in flight, or shutting down */
        HS_DECLINE_TERMINAL = 6,    /* the client has a controlling terminal the program may need */
        HS_DECLINE_COUNT
};

/* A LAUNCH request as the daemon sees it after validation. Pointers point into the payload buffer,
 * except argv and envp, which are NULL-terminated arrays the parser allocates. */
struct hs_launch_request {
        struct hs_launch_fixed fixed;
        const uint32_t *fd_targets;
        const char *path;
        char **argv;
        char **envp;
};

/* Checks a header; returns 0 or -EPROTO (not ours), -EPROTONOSUPPORT (other version), -EMSGSIZE. */
int hs_header_check(const struct hs_header *h);

/* Validates a LAUNCH payload and fills ret_req; nfds_received is how many fds came with it.
 * Returns 0 or a negative errno; on error, *ret_what names the bad field. */
int hs_launch_parse(const void *payload, size_t size, size_t nfds_received, struct hs_launch_request *ret_req,
                    const char **ret_what);
void hs_launch_request_done(struct hs_launch_request *req);
/* The value of NAME in a request's environment (envp, NULL-terminated), as getenv would find it: the
 * first entry NAME=...; NULL when there is none. */
const char *hs_env_value(char *const *envp, const char *name);

/* Encodes a LAUNCH payload. Returns a malloc'ed buffer of *ret_size bytes or NULL with errno set. */
void *hs_launch_encode(const struct hs_launch_fixed *fixed, const uint32_t *fd_targets, const char *path,
                       char *const *argv, char *const *envp, size_t *ret_size);

void hs_header_init(struct hs_header *h, enum hs_message_type type, uint32_t size);
