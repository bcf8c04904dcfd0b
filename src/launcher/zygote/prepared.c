/* SPDX-License-Identifier: MIT */
#include "prepared.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "children.h"
#include "conn.h"
#include "cpu-spare.h"
#include "image-cache.h"
#include "launch-settle.h"
#include "log.h"
#include "macro.h"
#include "per-start-variables.h"
#include "pool.h"
#include "preload.h"
#include "prepare-judge.h"
#include "prepared-store.h"
#include "run-program.h"
#include "server.h"

/* After a launch, the next child is prepared no sooner than this, and then only once the program
 * launched has settled (launch-settle.h) and the CPUs have had one to spare since the last look
 * (looked at every PREPARE_LAUNCH_POLL_MS), or after PREPARE_LAUNCH_MAX_MS in any case: its
 * toolkit's start would otherwise compete for a CPU with the program just started, which the user is
 * waiting for. On a two-CPU board, where a GTK program takes 1.5 s to its first frame, a child forked
 * 100 ms after each launch ran beside all of it; one forked once a CPU was spare ran beside the
 * second half of a 0.7 s launch. The next launch of the same program comes after this one's window
 * is closed, seconds later at the least. */
#define PREPARE_DELAY_MS 100u
#define PREPARE_LAUNCH_POLL_MS 200u
#define PREPARE_LAUNCH_MAX_S 5
#define PREPARE_LAUNCH_MAX_MS (PREPARE_LAUNCH_MAX_S * 1000u)
/* After a failed fork or a failure that may pass (the display not there), doubling up to the most:
 * a try costs a fork and a toolkit's start that fails, and at boot the display comes a while after
 * us, so the first launch must not find a minute's pause (a device's did). */
#define PREPARE_RETRY_MS 1000u
#define PREPARE_RETRY_MAX_MS 10000u
/* A zygote that starts with launches kept by the last (prepared-store.h) prepares their children
 * this much later: at boot, after the programs started with it, which need the CPUs first. */
#define PREPARE_AFTER_START_MS 1000u
/* For this long after the zygote starts (at boot: the home screen and the compositor starting
 * beside it), a child for a program not launched yet is forked only when the CPUs have one to spare
 * (cpu-spare.h), looked at every PREPARE_SPARE_POLL_MS: on a device whose CPUs are its boot's
 * bottleneck, a toolkit started ahead for a later launch took seconds of CPU from the home screen's
 * first frame. Once the program is launched, the pause after each launch above applies instead. */
#define PREPARE_SPARE_WINDOW_S 20
#define PREPARE_SPARE_WINDOW_MS (PREPARE_SPARE_WINDOW_S * 1000u)
#define PREPARE_SPARE_POLL_MS 500u
/* How long after its fork a child still starting is waited for by a launch, before any child of
 * its program was ready to tell how long it takes: long, as a GTK start takes 0.1 s here but far
 * longer on a slow board at boot; what it bounds is the cost of a stuck child. */
#define PREPARE_WAIT_FIRST_MS 5000u
/* A launch waits this long at most, well within a client's wait for its answer (2 s by default,
 * HS_LAUNCH_DEFAULT_TIMEOUT_MS), after which the client execs the program itself. */
#define PREPARE_WAIT_MAX_MS 1500u

/* The program a --prepare-display names, as the zygote registered it (served or exec'd); or NULL. */
static const struct registered_file *registered_program(const struct server *s, const char *name,
                                                        const char **ret_why) {
        char path[PATH_MAX];
        struct stat st;
        *ret_why = "the program cannot be found";
        if (preload_find_program(name, path) < 0 || stat(path, &st) < 0)
                return NULL;
        *ret_why = "it is not registered (--app or --warm)";
        for (size_t i = 0; i < s->nregistered; i++) {
                const struct registered_file *reg = &s->registered[i];
                if (reg->dev != st.st_dev || reg->ino != st.st_ino)
                        continue;
                *ret_why = NULL;
                return reg;
        }
        return NULL;
}

/* Its image as the zygote loaded it (the cache's entry for the same file). */
static const struct image_entry *image_of(struct server *s, const struct registered_file *reg) {
        struct image_entry *e;
        struct stat st;
        _cleanup_close_ int fd = open(reg->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != reg->dev || st.st_ino != reg->ino ||
            image_cache_get(&s->cache, fd, &st, reg->path, true, NULL, &e) < 0 || e->reason)
                return NULL;
        return e;
}

/* The program of the image, if it is the very file judged (not one written over it since: the
 * zygote serving it may not have noticed yet). */
static struct prepared_program *find(const struct server *s, const struct image_entry *image) {
        for (struct prepared_program *p = s->prepared; p; p = p->next)
                if (file_identity_same(&p->id, &image->id))
                        return p;
        return NULL;
}

static bool has_entry(char *const *env, const char *entry) {
        for (; *env; env++)
                if (strcmp(*env, entry) == 0)
                        return true;
        return false;
}

/* The first entry of a that b lacks (name and value), leaving out the per-start ones; or NULL. */
static const char *first_missing(char *const *a, char *const *b) {
        for (; *a; a++)
                if (!per_start_variable(*a) && !has_entry(b, *a))
                        return *a;
        return NULL;
}

/* NULL when a (the kept launch's) and b (this launch's) have the same entries in the same order, but
 * for those the service manager sets anew at each start; else how they differ, by name only (a value
 * may be a secret, and this goes to the log). */
static const char *environment_difference(char *const *a, char *const *b) {
        static char text[160];
        for (char *const *x = a, *const *y = b;; x++, y++) {
                while (*x && per_start_variable(*x))
                        x++;
                while (*y && per_start_variable(*y))
                        y++;
                if (!*x && !*y)
                        return NULL;
                if (!*x || !*y || strcmp(*x, *y) != 0)
                        break;
        }
        /* The environment's order is the program's too (environ): the same entries in another order
         * differ, but naming the first place they part would name a variable that did not change. */
        const char *entry = first_missing(b, a), *what = "new, or another value";
        if (!entry) {
                entry = first_missing(a, b);
                what = "gone";
        }
        if (!entry)
                return "another environment (the same variables in another order)";
        int len = (int) strcspn(entry, "=");
        snprintf(text, sizeof text, "another environment (%.*s: %s)", len > 64 ? 64 : len, entry, what);
        return text;
}

/* GTK 3's own options, which gtk_init takes out of argv: a prepared GTK 3 has parsed none. */
static bool has_gtk3_option(char *const *argv) {
        static const char *const options[] = { "--gtk-", "--gdk-", "--g-fatal-warnings", "--class",
                                                "--name",  "--display", "--screen", "--sync" };
        for (size_t i = 1; argv[0] && argv[i]; i++)
                for (size_t j = 0; j < ELEMENTSOF(options); j++)
                        if (strncmp(argv[i], options[j], strlen(options[j])) == 0)
                                return true;
        return false;
}

/* GLib's settings kept in a file of the user's (the keyfile backend: chosen by the variable, and by
 * GLib itself in a Flatpak sandbox). A toolkit started ahead reads that file into memory, and a
 * waiting child runs no main loop to see it change: the program then wrote its stale copy over a
 * change made meanwhile by another process (a trial: gsettings set, then a launch; the setting was
 * lost). Creating the backend also makes its folder in $HOME, which a launch that ends before its
 * toolkit starts (--help) would not. */
static bool uses_keyfile_settings(char *const *envp) {
        const char *backend = hs_env_value(envp, "GSETTINGS_BACKEND");
        return backend && strcmp(backend, "keyfile") == 0;
}

/* Why the arguments argv or the environment envp of a launch rule out a prepared child for p, or NULL. */
static const char *unpreparable(const struct prepared_program *p, char *const *argv, char *const *envp) {
        if (p->terms.no_arguments && argv[0] && argv[1])
                return "arguments, which it parses as GTK starts (gtk_init_with_args)";
        if (p->toolkit == TOOLKIT_GTK3 && has_gtk3_option(argv))
                return "a GTK option among its arguments";
        if (uses_keyfile_settings(envp))
                return "GSETTINGS_BACKEND=keyfile, whose file a waiting child would read before changes made "
                       "while it waits, and the program write over them";
        return NULL;
}

/* The prepared child held the same numbers while its toolkit opened its own, which therefore took
 * the numbers exec would give them. */
static bool same_targets(const struct hs_launch_request *a, const struct hs_launch_request *b) {
        if (a->fixed.nfds != b->fixed.nfds ||
            memcmp(a->fd_targets, b->fd_targets, a->fixed.nfds * sizeof a->fd_targets[0]) != 0)
                return false;
        unsigned stdio = 0;
        for (uint32_t i = 0; i < b->fixed.nfds; i++)
                if (b->fd_targets[i] <= 2)
                        stdio |= 1u << b->fd_targets[i];
        return stdio == 7;
}

/* The first resource limit in which a launch's (b) differs from the prepared child's (a) and that
 * shaped its toolkit's start; those checked at use it sets as it takes the launch
 * (child_rlimit_checked_at_use). -1: none. */
static int limit_difference(const struct hs_rlimit *a, const struct hs_rlimit *b) {
        for (unsigned i = 0; i < HS_RLIMIT_COUNT; i++)
                if ((a[i].cur != b[i].cur || a[i].max != b[i].max) && !child_rlimit_checked_at_use(i))
                        return (int) i;
        return -1;
}

/* Why a launch with the request req in the working directory cwd_fd is not one p's child was
 * prepared for, or NULL. */
static const char *mismatch(const struct prepared_program *p, const struct hs_launch_request *req, int cwd_fd) {
        const struct hs_launch_request *a = &p->shape;
        struct stat cwd;
        if (fstat(cwd_fd, &cwd) < 0 || cwd.st_dev != p->cwd_dev || cwd.st_ino != p->cwd_ino)
                return "another working directory";
        if (strcmp(a->argv[0], req->argv[0]) != 0)
                return "another argv[0]";
        const char *environment = environment_difference(a->envp, req->envp);
        if (environment)
                return environment;
        if (a->fixed.umask != req->fixed.umask)
                return "another umask";
        if (a->fixed.sigmask != req->fixed.sigmask || a->fixed.sigignore != req->fixed.sigignore)
                return "other blocked or ignored signals";
        int limit = limit_difference(a->fixed.rlimits, req->fixed.rlimits);
        if (limit >= 0) {
                static const char *const names[HS_RLIMIT_COUNT] = {
                        "CPU",     "FSIZE", "DATA",  "STACK",      "CORE",     "RSS",  "NPROC",  "NOFILE",
                        "MEMLOCK", "AS",    "LOCKS", "SIGPENDING", "MSGQUEUE", "NICE", "RTPRIO", "RTTIME",
                };
                static char text[64];
                snprintf(text, sizeof text, "another resource limit (RLIMIT_%s)", names[limit]);
                return text;
        }
        if (!same_targets(a, req))
                return "other file descriptors passed (or not stdin, stdout and stderr)";
        return unpreparable(p, req->argv, req->envp);
}

/* The launch waiting for p's child, if any, is tried again: the child is ready or gone. */
static void wake_waiting(struct prepared_program *p) {
        if (!p->waiting)
                return;
        conn_wake(p->waiting);
        p->waiting = NULL;
}

void prepared_stop_waiting(struct conn *c) {
        if (!c->awaiting)
                return;
        c->awaiting->waiting = NULL;
        c->awaiting = NULL;
}

/* Lets p's child go: killed, as it may be inside its toolkit's start; reaped as any waiting child. */
static void release(struct server *s, struct prepared_program *p) {
        struct child *ch = p->child;
        p->child = NULL;
        p->ready = false;
        wake_waiting(p);
        if (!ch)
                return;
        child_close_channel(s, ch);
        (void) pidfd_send_signal(ch->pidfd, SIGKILL, NULL, 0);
}

static void retry_later(struct prepared_program *p) {
        p->retry_ms = p->retry_ms ? p->retry_ms * 2 : PREPARE_RETRY_MS;
        if (p->retry_ms > PREPARE_RETRY_MAX_MS)
                p->retry_ms = PREPARE_RETRY_MAX_MS;
        p->prepare_at = now_ms() + p->retry_ms;
}

/* What p's child said on its channel since we last read it (prepare-toolkit.h): that its toolkit has
 * started, or why it is of no use, which lets it go. */
static void read_news(struct server *s, struct prepared_program *p) {
        char news[HS_MAX_TEXT];
        ssize_t n = recv(p->child->channel_fd, news, sizeof news - 1, MSG_DONTWAIT);
        if (n < 0)
                return; /* nothing new */
        if (n == 0) {
                /* It ended: its pidfd tells how (prepared_child_gone); not watched until then. */
                (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, p->child->channel_fd, NULL);
                return;
        }
        news[n] = '\0';
        char *why = news;
        if (*why == PREPARED_READY) {
                p->ready = true;
                p->retrying[0] = '\0';
                display_watch_stop(&p->display, s->epoll_fd);
                p->prepare_ms = (unsigned) (now_ms() - p->forked_ms);
                wake_waiting(p);
                why++;
        }
        if (*why == '\0')
                return;
        log_warning("cannot prepare %s's toolkit for its launches: %s", p->program, why + 1);
        if (*why == PREPARED_RETRY) {
                retry_later(p);
                snprintf(p->retrying, sizeof p->retrying, "%s", why + 1);
                int r = display_watch_start(&p->display, s->epoll_fd, p->shape.envp);
                if (r < 0 && s->options->verbose)
                        log_info("%s: cannot watch for its display to appear (%s); trying again in %u ms",
                                 p->program, strerror(-r), p->retry_ms);
        } else
                snprintf(p->failed, sizeof p->failed, "%s", why + 1);
        release(s, p);
}

void prepared_on_display(struct server *s, struct display_watch *w) {
        struct prepared_program *p = s->prepared;
        while (p && &p->display != w)
                p = p->next;
        if (!p || !display_watch_read(w) || p->child || !p->prepare_at)
                return;
        if (s->options->verbose)
                log_info("%s: its display appeared; preparing its toolkit now", p->program);
        p->prepare_at = now_ms();
}

void prepared_on_news(struct server *s, struct prepared_program *p) {
        if (p->child && p->child->channel_fd >= 0) /* not let go earlier in this batch of events */
                read_news(s, p);
}

/* When a launch stops waiting for p's child (CLOCK_MONOTONIC ms): it takes twice as long as the
 * last one did, which a child forked for the launch would take at least once. */
static uint64_t wait_deadline(const struct prepared_program *p) {
        return p->forked_ms + (p->prepare_ms ? 2ull * p->prepare_ms : PREPARE_WAIT_FIRST_MS);
}

/* A child still starting later than a launch waits for is let go, and another tried after a pause:
 * it may be stopped, or its compositor hung, and no launch must wait for it again. */
static bool let_go_if_late(struct server *s, struct prepared_program *p) {
        if (!p->child || p->ready || now_ms() < wait_deadline(p))
                return false;
        snprintf(p->retrying, sizeof p->retrying, "its child was not ready %llu ms after its fork",
                 (unsigned long long) (wait_deadline(p) - p->forked_ms));
        log_warning("cannot prepare %s's toolkit for its launches: %s", p->program, p->retrying);
        retry_later(p);
        release(s, p);
        return true;
}

/* p's child, with what it said read, if it may take a launch now or soon. */
static struct child *current_child(struct server *s, struct prepared_program *p) {
        if (!p || !p->child || p->child->channel_fd < 0)
                return NULL;
        read_news(s, p);
        if (!p->child || let_go_if_late(s, p))
                return NULL;
        return p->child;
}

bool prepared_wait_for_child(struct server *s, struct conn *c, const struct hs_launch_request *req,
                             const struct image_entry *image) {
        struct prepared_program *p = find(s, image);
        if (c->waited || !current_child(s, p) || p->ready || p->waiting || mismatch(p, req, c->fds[HS_FD_CWD]))
                return false;
        p->waiting = c;
        c->awaiting = p;
        uint64_t latest = now_ms() + PREPARE_WAIT_MAX_MS;
        c->deadline = wait_deadline(p) < latest ? wait_deadline(p) : latest;
        if (s->options->verbose)
                log_info("%s: waiting up to %llu ms for the prepared child, still starting", p->program,
                         (unsigned long long) (c->deadline - now_ms()));
        return true;
}

struct child *prepared_take(struct server *s, const struct conn *c, const struct hs_launch_request *req,
                            const struct image_entry *image, int report_fd) {
        struct prepared_program *p = find(s, image);
        if (!current_child(s, p) || !p->ready)
                return NULL;
        const char *why = mismatch(p, req, c->fds[HS_FD_CWD]);
        if (why) {
                if (s->options->verbose)
                        log_info("%s: not the prepared child: %s", p->program, why);
                return NULL;
        }
        char changed[PATH_MAX];
        if (settings_files_changed(&p->settings, p->cwd_fd, changed, sizeof changed)) {
                if (s->options->verbose)
                        log_info("%s: not the prepared child: its toolkit's settings changed since it was "
                                 "prepared (%s); letting it go",
                                 p->program, changed);
                release(s, p);
                return NULL;
        }
        struct child *ch = pool_hand_over(s, p->child, c, image, report_fd);
        if (ch) {
                p->taken++;
                p->retry_ms = 0;
        }
        return ch;
}

static void forget_shape(struct prepared_program *p) {
        if (!p->has_shape)
                return;
        hs_launch_request_done(&p->shape);
        free(p->payload);
        close(p->cwd_fd);
        p->payload = NULL;
        p->has_shape = false;
}

/* Whether a launch could ever take a child prepared with p's shape: the matching's own conditions. */
static bool could_match(const struct prepared_program *p) {
        return same_targets(&p->shape, &p->shape) && !unpreparable(p, p->shape.argv, p->shape.envp);
}

/* Makes the request (payload, size bytes, with nfds fds; ours to keep or free) in the working
 * directory cwd_fd (ours too) what the next child is prepared with. Returns whether it differs from
 * the one kept before; false also when it cannot be kept. */
static bool adopt_shape(struct server *s, struct prepared_program *p, void *payload, size_t size, size_t nfds,
                        int cwd_fd) {
        struct hs_launch_request shape;
        struct stat cwd;
        const char *what;
        if (!payload || cwd_fd < 0 || fstat(cwd_fd, &cwd) < 0 || !S_ISDIR(cwd.st_mode) ||
            hs_launch_parse(payload, size, nfds, &shape, &what) < 0) {
                free(payload);
                if (cwd_fd >= 0)
                        close(cwd_fd);
                return false;
        }
        bool changed = !p->has_shape || mismatch(p, &shape, cwd_fd);
        if (changed) {
                p->failed[0] = '\0'; /* another launch: worth trying again */
                p->retrying[0] = '\0';
                p->retry_ms = 0;
                display_watch_stop(&p->display, s->epoll_fd); /* its display may be another */
        }
        forget_shape(p);
        p->payload = payload;
        p->payload_size = size;
        p->shape = shape;
        p->has_shape = true;
        p->cwd_fd = cwd_fd;
        p->cwd_dev = cwd.st_dev;
        p->cwd_ino = cwd.st_ino;
        return changed;
}

/* Keeps c's request as what the next child is prepared with; whether it differs from the last. */
static bool keep_shape(struct server *s, struct prepared_program *p, const struct conn *c) {
        void *payload = malloc(c->header.size);
        if (payload)
                memcpy(payload, c->payload, c->header.size);
        return adopt_shape(s, p, payload, c->header.size, c->nfds, fcntl(c->fds[HS_FD_CWD], F_DUPFD_CLOEXEC, 3));
}

/* The path of the working directory open at fd, malloc'ed; NULL when it is gone or its name would not
 * fit a line of the store. */
static char *directory_path(int fd) {
        char fd_path[64], path[PATH_MAX];
        snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", fd);
        ssize_t len = readlink(fd_path, path, sizeof path - 1);
        if (len <= 0 || (size_t) len >= sizeof path - 1)
                return NULL;
        path[len] = '\0';
        /* A folder removed since reads "/... (deleted)", which names another or none. */
        struct stat named, held;
        if (path[0] != '/' || strchr(path, '\n') || stat(path, &named) < 0 || fstat(fd, &held) < 0 ||
            named.st_dev != held.st_dev || named.st_ino != held.st_ino)
                return NULL;
        return strdup(path);
}

/* Writes each program's last launch to the store (prepared-store.h), for the zygotes that come after. */
static void save_shapes(const struct server *s) {
        static bool warned; /* once: a launcher whose launches all differ would have us say it at each */
        size_t n = 0, most = 0;
        for (const struct prepared_program *p = s->prepared; p; p = p->next)
                most++;
        struct prepared_record *records = calloc(most ? most : 1, sizeof *records);
        int r = records ? 0 : -ENOMEM;
        for (const struct prepared_program *p = s->prepared; r == 0 && p; p = p->next) {
                char *cwd = p->has_shape && !strchr(p->program, '\n') ? directory_path(p->cwd_fd) : NULL;
                if (cwd)
                        records[n++] = (struct prepared_record){ .program = p->program, .cwd = cwd,
                                                                 .nfds = p->shape.fixed.nfds + HS_FD_FIRST_PASSED,
                                                                 .request = p->payload, .size = p->payload_size };
        }
        if (r == 0)
                r = prepared_store_save(s->prepared_file, records, n);
        for (size_t i = 0; i < n; i++)
                free(records[i].cwd);
        free(records);
        if (r < 0 && !warned) {
                warned = true;
                log_warning_errno(r, "%s: cannot save the launches prepared for; the next zygote prepares none "
                                  "before each program's first launch", s->prepared_file);
        }
}

/* What the store kept of the last zygote's launches: each prepared program's next child prepared
 * with its last launch, a while after this zygote starts. */
static void load_shapes(struct server *s) {
        struct prepared_record *records;
        size_t n = prepared_store_load(s->prepared_file, &records);
        for (size_t i = 0; i < n; i++) {
                struct prepared_program *p = s->prepared;
                while (p && (p->refusal[0] || p->has_shape || strcmp(p->program, records[i].program) != 0))
                        p = p->next;
                if (!p)
                        continue;
                int cwd_fd = open(records[i].cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (adopt_shape(s, p, records[i].request, records[i].size, records[i].nfds, cwd_fd) && could_match(p))
                        p->prepare_at = now_ms() + PREPARE_AFTER_START_MS;
                records[i].request = NULL; /* adopt_shape took it */
        }
        prepared_records_free(records, n);
}

int prepared_init(struct server *s, const struct string_list *names) {
        for (size_t i = 0; i < names->n; i++) {
                const char *why;
                const struct registered_file *reg = registered_program(s, names->items[i], &why);
                const struct image_entry *image = reg && reg->mode != MODE_EXEC ? image_of(s, reg) : NULL;
                struct prepared_program *p = calloc(1, sizeof *p);
                if (!p || !(p->program = strdup(reg ? reg->path : names->items[i]))) {
                        free(p);
                        return log_error("out of memory");
                }
                p->watch.kind = WATCH_PREPARED;
                p->display = (struct display_watch){ .watch.kind = WATCH_DISPLAY, .fd = -1 };
                p->next = s->prepared;
                s->prepared = p;
                if (reg && reg->mode == MODE_EXEC)
                        snprintf(p->refusal, sizeof p->refusal, "it is exec'd, not served%s%s",
                                 reg->reason ? ": " : "", reg->reason ? reg->reason : "");
                else if (reg && !image)
                        why = "its file cannot be read";
                if (image) {
                        p->id = image->id;
                        bool scheduled = schedule_for(s->schedules, s->nschedules, image->id.dev, image->id.ino);
                        p->toolkit = prepare_judge(image, scheduled, &p->terms, p->refusal, sizeof p->refusal);
                } else if (!p->refusal[0])
                        snprintf(p->refusal, sizeof p->refusal, "%s", why);
                if (p->refusal[0])
                        log_warning("--prepare-display %s: its toolkit is not prepared ahead of launches: %s",
                                    names->items[i], p->refusal);
        }
        /* The first look, from which the first child's is counted. */
        (void) cpu_spare_look(&s->prepare_cpu, 0, now_ms(), PREPARE_SPARE_POLL_MS);
        if (names->n)
                load_shapes(s);
        return 0;
}

void prepared_note_launch(struct server *s, const struct conn *c, const struct image_entry *image, pid_t pid) {
        struct prepared_program *p = find(s, image);
        if (!p || p->refusal[0])
                return;
        p->launched_ms = now_ms();
        launch_settle_start(&p->settle, pid, p->launched_ms);
        /* A child prepared for another launch is of no use now; one still starting for a launch like
         * this one (which it was not ready for) serves the next. */
        bool changed = keep_shape(s, p, c);
        if (changed) {
                release(s, p);
                save_shapes(s);
        }
        /* A pause after a failure that may pass ends at a launch: one that started shows that what
         * failed (no display yet, at boot) may have passed, and launches bound the tries. */
        if (!p->child && p->has_shape && !p->failed[0] && could_match(p)) {
                p->prepare_at = now_ms() + PREPARE_DELAY_MS;
                p->retry_ms = 0;
                p->retrying[0] = '\0';
        }
}

int prepared_fill_in_ms(const struct server *s) {
        if (s->shutting_down || s->retiring)
                return -1;
        uint64_t now = now_ms(), next = UINT64_MAX;
        for (const struct prepared_program *p = s->prepared; p; p = p->next)
                if (p->prepare_at && !p->child && p->prepare_at < next)
                        next = p->prepare_at;
        return next == UINT64_MAX ? -1 : next <= now ? 0 : (int) (next - now);
}

/* How long a child put off for want of a CPU waits before the next look. */
static unsigned spare_poll_ms(const struct prepared_program *p) {
        return p->launched_ms ? PREPARE_LAUNCH_POLL_MS : PREPARE_SPARE_POLL_MS;
}

/* Until when p's child waits for a CPU to spare: PREPARE_LAUNCH_MAX_MS after its last launch; for a
 * program not launched yet, the zygote's first PREPARE_SPARE_WINDOW_MS. */
static uint64_t spare_window_end(const struct server *s, const struct prepared_program *p) {
        return p->launched_ms ? p->launched_ms + PREPARE_LAUNCH_MAX_MS : s->started_ms + PREPARE_SPARE_WINDOW_MS;
}

/* Whether p's child may be forked now: after its window; or when its last launch has settled, if it
 * was launched, and the CPUs had one to spare since the last look (one look per poll, shared by the
 * programs), a look from after its last launch. Both are looked at every poll, so that they cover the
 * same time. Taken here, once the launch is under way, not in the launch's own path. */
static bool time_to_prepare(struct server *s, struct prepared_program *p, uint64_t now) {
        if (now >= spare_window_end(s, p))
                return true;
        bool settled = !p->launched_ms || launch_settle_look(&p->settle, now, PREPARE_LAUNCH_POLL_MS);
        bool spare = cpu_spare_look(&s->prepare_cpu, p->launched_ms, now, spare_poll_ms(p));
        return settled && spare;
}

/* Whether p's last launch is still starting, by the last look. */
static bool launch_starting(const struct prepared_program *p) {
        return p->settle.pid && !p->settle.settled;
}

/* Why a child put off for want of a CPU is forked now. */
static const char *why_now(const struct server *s, const struct prepared_program *p, uint64_t now) {
        bool over = now >= spare_window_end(s, p);
        if (p->launched_ms)
                return over ? STRINGIFY(PREPARE_LAUNCH_MAX_S) " s have passed since its launch"
                            : "its launch has settled and a CPU is spare";
        return over ? "the zygote's first " STRINGIFY(PREPARE_SPARE_WINDOW_S) " s have passed" : "a CPU is spare";
}

void prepared_fill(struct server *s) {
        uint64_t now = now_ms();
        for (struct prepared_program *p = s->prepared; p; p = p->next) {
                if (!p->prepare_at || p->child || p->prepare_at > now)
                        continue;
                if (!time_to_prepare(s, p, now)) {
                        if (!p->waits_for_cpu && s->options->verbose)
                                log_info("%s: %s; preparing its toolkit once %s", p->program,
                                         launch_starting(p) ? "its launch is still starting" : "the CPUs are busy",
                                         p->launched_ms ? "it has settled and a CPU is spare" : "one is spare");
                        p->waits_for_cpu = true;
                        p->prepare_at = now + spare_poll_ms(p);
                        continue;
                }
                if (p->waits_for_cpu && s->options->verbose)
                        log_info("%s: %s; preparing its toolkit now", p->program, why_now(s, p, now));
                p->waits_for_cpu = false;
                p->prepare_at = 0;
                p->forked_ms = now;
                settings_files_look(&p->settings, p->shape.envp, p->cwd_fd);
                int r = pool_add_prepared(s, p);
                if (r < 0) {
                        log_warning_errno(r, "cannot fork a child to prepare %s; retrying in %u ms", p->program,
                                          PREPARE_RETRY_MS);
                        p->prepare_at = now + PREPARE_RETRY_MS;
                }
        }
}

void prepared_child_gone(struct server *s, struct child *ch) {
        struct prepared_program *p = ch->prepared;
        if (!p || p->child != ch)
                return; /* one we let go */
        p->child = NULL;
        p->ready = false;
        wake_waiting(p);
        if (ch->channel_fd >= 0) {
                /* Ended on its own while its toolkit started or waited (a crash in gtk_init): it
                 * would again with the same launch. */
                snprintf(p->failed, sizeof p->failed, "its child ended while its toolkit started or waited");
                log_warning("cannot prepare %s's toolkit for its launches: %s", p->program, p->failed);
        } else if (!s->shutting_down && !s->retiring) {
                p->prepare_at = now_ms() + PREPARE_DELAY_MS; /* taken by its launch */
        }
}

void prepared_done(struct server *s) {
        while (s->prepared) {
                struct prepared_program *p = s->prepared;
                s->prepared = p->next;
                display_watch_stop(&p->display, s->epoll_fd);
                forget_shape(p);
                settings_files_forget(&p->settings);
                free(p->program);
                free(p);
        }
}

const char *prepared_state(const struct prepared_program *p, const char **ret_why) {
        *ret_why = NULL;
        if (p->refusal[0])
                return *ret_why = p->refusal, "refused";
        if (p->failed[0])
                return *ret_why = p->failed, "failed";
        if (p->child)
                return p->ready ? "ready" : "starting";
        if (!p->has_shape)
                return "unlaunched";
        if (!could_match(p)) {
                static char why[HS_MAX_TEXT];
                const char *unlike = unpreparable(p, p->shape.argv, p->shape.envp);
                snprintf(why, sizeof why, "its last launch %s%s", unlike ? "had " : "",
                         unlike ? unlike : "did not pass stdin, stdout and stderr");
                return *ret_why = why, "idle";
        }
        if (p->retrying[0])
                return *ret_why = p->retrying, "retrying";
        if (p->waits_for_cpu)
                *ret_why = launch_starting(p) ? "its launch is still starting: waiting for it to settle and a CPU "
                                                "to spare, " STRINGIFY(PREPARE_LAUNCH_MAX_S) " s at most"
                           : p->launched_ms ? "the CPUs are busy after its launch: waiting for one to spare, "
                                         STRINGIFY(PREPARE_LAUNCH_MAX_S) " s at most"
                                       : "the CPUs are busy, as in the zygote's first " STRINGIFY(
                                                 PREPARE_SPARE_WINDOW_S) " s: waiting for one to spare";
        return "due";
}
