/* SPDX-License-Identifier: MIT */
/* --prepare-display, in the waiting child: the program's toolkit (GTK 3 or GTK 4) opens the display
 * and reads its settings and theme before the launch arrives, as the program itself would first
 * thing in main, in this process, which becomes the program. The zygote decides which programs and
 * launches may take such a child (zygote/prepared.h); this is what runs in it.
 *
 * The child tells the zygote on its channel, which it otherwise only reads: PREPARED_READY once the
 * toolkit has started, or PREPARED_RETRY / PREPARED_FAILED and why, when it is of no use (the first
 * for what may pass, the display not there yet or gone; the second for what would happen again). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "protocol.h"

enum toolkit { TOOLKIT_NONE, TOOLKIT_GTK3, TOOLKIT_GTK4 };

/* What a program's launches must be like to take its prepared child, beyond being like the last
 * (prepare-judge.c reads them from its file). */
struct prepare_terms {
        /* It names itself (g_set_prgname) before its toolkit starts, which GTK reads as it opens an
         * X11 display but, on Wayland, only as it makes a window: prepared on Wayland only. */
        bool names_itself;
        /* It gives GTK 3 options of its own as it starts (gtk_init_with_args, gtk_parse_args), which
         * a started GTK no longer parses: only a launch without arguments, which has none to parse. */
        bool no_arguments;
        /* It starts libadwaita (adw_init, or an AdwApplication, which calls it at its startup): the
         * child starts it too, after GTK 4, as AdwApplication would. */
        bool starts_adwaita;
};

/* Why each term holds, for the log and headstart check. */
#define PREPARE_WHY_WAYLAND_ONLY "it names itself (g_set_prgname), which GTK reads as it opens an X11 display"
/* GLib's messages carry the program's name (g_get_prgname) as they are printed: those of a start
 * ahead would name the program as it was before it named itself. */
#define PREPARE_WHY_PRINTED_UNNAMED                                                                       \
        "its toolkit printed messages as it started, which would carry the name the program had before " \
        "it named itself"
#define PREPARE_WHY_NO_ARGUMENTS "it parses options of its own as GTK starts (gtk_init_with_args)"

#define PREPARED_READY 'R'
#define PREPARED_RETRY 'T'
#define PREPARED_FAILED 'F'

/* The most fds a toolkit may hold open once initialised that are watched for a hang-up and kept. */
#define PREPARED_MAX_FDS 128

struct prepared_process {
        int kept[PREPARED_MAX_FDS]; /* what the toolkit holds: kept open through the launch */
        size_t nkept;
        int output[2]; /* what it wrote on stdout and on stderr meanwhile (memfds): toolkit-start.h */
};

/* "gtk3", "gtk4", "none": a word, for --status. */
const char *toolkit_name(enum toolkit tk);
/* What a child prepared on the terms starts ahead: toolkit_name, or "gtk4+adwaita". */
const char *toolkit_started_ahead(enum toolkit tk, const struct prepare_terms *terms);

/* Initialises the toolkit tk in this waiting child (only on a Wayland display when the terms say
 * so), which takes the settings of the request shape
 * (the program's last launch: environment, arguments, umask, limits, signals; the caller entered its
 * working directory) as it will for its launch, with the fds the launch places held meanwhile
 * (stdout and stderr captured; the shape has 0, 1 and 2 among them). *channel, the zygote's channel,
 * is moved out of the way of the toolkit's fds. Returns 0, or PREPARED_RETRY or PREPARED_FAILED
 * with why. */
int toolkit_prepare(enum toolkit tk, const struct prepare_terms *terms, const struct hs_launch_request *shape,
                    int *channel, struct prepared_process *ret, char *why, size_t size);

/* toolkit_prepare, then tells the zygote on the channel whether this child can take a launch (and
 * waits for it with prepared_wait). cwd_error: errno of entering the launch's working directory, or
 * 0. Returns NULL, or why it cannot, in why (which it also sent); such a child still waits for the
 * request the zygote may have sent meanwhile, and fails that launch (the client then execs). */
const char *toolkit_prepare_and_tell(enum toolkit tk, const struct prepare_terms *terms,
                                     const struct hs_launch_request *shape, int cwd_error, int *channel,
                                     struct prepared_process *ret, char *why, size_t size);

/* Waits until the channel is readable. False when a connection the toolkit holds was closed by its
 * other end meanwhile (the compositor went away): the toolkit's state is then of no use. Then lists
 * again what the toolkit holds, as its threads may have opened or closed some meanwhile. */
bool prepared_wait(struct prepared_process *p, const struct hs_launch_request *shape, int channel);

/* Sets the variables the service manager gives each start anew (per-start-variables.h), which no
 * toolkit reads as it starts, as the launch's environment envp has them (or unsets them): a launch
 * whose environment differs from the prepared child's only in those takes it (a launcher started as
 * a service has new ones at each boot), and gets its own. */
void prepared_take_per_start_variables(char *const *envp);

