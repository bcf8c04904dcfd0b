/* SPDX-License-Identifier: MIT */
/* The client side of the launch protocol: what headstart-run and the benchmark use to ask the
 * daemon for a launch. Functions return a negative errno on failure; nothing here logs. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "protocol.h"

/* Connects to the daemon at `path` (NULL: $HEADSTART_SOCKET, else $XDG_RUNTIME_DIR/headstart/socket). */
int hs_client_connect(const char *path);

/* Sends a LAUNCH for the program file `path` (absolute) with argv and envp. The program gets what
 * exec would give it from this process: working directory, umask, resource limits, ignored
 * signals, `sigmask` as its signal mask, and every fd not marked close-on-exec. */
int hs_client_send_launch(int sock, const char *path, char *const argv[], char *const envp[], const sigset_t *sigmask);

struct hs_reply {
        enum hs_message_type type;
        pid_t pid;   /* LAUNCHED */
        int pidfd;   /* LAUNCHED; the caller owns it */
        int code;    /* EXITED: CLD_*; DECLINED: hs_decline_reason; ERROR: errno */
        int status;  /* EXITED: exit status or signal */
        char text[HS_MAX_TEXT + 1]; /* DECLINED, ERROR */
};

/* Reads one reply. -ECONNRESET when the daemon closed the connection. */
int hs_client_read_reply(int sock, struct hs_reply *ret);
