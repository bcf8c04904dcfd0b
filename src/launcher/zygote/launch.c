/* SPDX-License-Identifier: MIT */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "after-main.h"
#include "children.h"
#include "client-context.h"
#include "run-program.h"
#include "conn.h"
#include "launch-counts.h"
#include "launch-report-send.h"
#include "loader-env.h"
#include "log.h"
#include "macro.h"
#include "peer-process.h"
#include "pool.h"
#include "prepared.h"
#include "server.h"
#include "wire.h"

/* The client execs the program itself, with its own scheduling, as plain exec would. It is not given
 * the program's --schedule first, though it says it execs the program (EXECS_WHEN_DECLINED): nothing
 * makes it, and the program it execs runs in its environment (LD_PRELOAD) and under its ptrace, so
 * the daemon's privilege (CAP_SYS_NICE, a cgroup) would go to code of the client's choosing. */
static void decline(enum hs_decline_reason code, const char *why, struct launch_verdict *ret) {
        *ret = (struct launch_verdict){ .outcome = LAUNCH_DECLINED, .code = code };
        snprintf(ret->text, sizeof ret->text, "%s", why);
}

static const struct schedule *program_schedule(const struct server *s, int program_fd) {
        struct stat st;
        return fstat(program_fd, &st) < 0 ? NULL : schedule_for(s->schedules, s->nschedules, st.st_dev, st.st_ino);
}

/* A program without a --schedule gets the daemon's scheduling when served, the client's by exec. */
static const char *client_schedule_refusal(const struct conn *c, const struct schedule *configured, char *buf,
                                           size_t size) {
        if (configured) /* the program gets its own, served or exec'd */
                return NULL;
        const char *differs = c->client_pidfd < 0 ? "it cannot be looked at" : schedule_difference(c->client_pid);
        if (!differs)
                return NULL;
        snprintf(buf, size, "the client is scheduled otherwise than the daemon (%s), which exec keeps", differs);
        return buf;
}

/* A limit above our own hard limit is one our child could not set (only root may raise it). A limit
 * on the address space would count the zygote's mappings, which exec's program does not have (a
 * served python3 starts with twice exec's): what fits under it by exec may not when served. */
static const char *rlimits_refusal(const struct hs_launch_request *req) {
        if (req->fixed.rlimits[RLIMIT_AS].cur != RLIM_INFINITY)
                return "the client limits the address space (ulimit -v), which the daemon's mappings would use up";
        if (geteuid() == 0)
                return NULL;
        for (unsigned i = 0; i < HS_RLIMIT_COUNT; i++) {
                struct rlimit rl;
                if (getrlimit((int) i, &rl) < 0)
                        continue;
                if (req->fixed.rlimits[i].max > rl.rlim_max)
                        return "a resource limit of the client is above the daemon's hard limit";
        }
        return NULL;
}

/* A client with a controlling terminal: served only if the user said the program needs no more of
 * it than its stdio, since the program cannot have it as its own controlling terminal. */
static const char *terminal_refusal(const struct server *s, const struct hs_launch_request *req, int program_fd) {
        if (!(req->fixed.flags & HS_LAUNCH_FLAG_CTTY) || (req->fixed.flags & HS_LAUNCH_FLAG_TERMINAL_OK))
                return NULL;
        struct stat st;
        for (size_t i = 0; fstat(program_fd, &st) == 0 && i < s->nterminal_ok; i++)
                if (s->terminal_ok[i].dev == st.st_dev && s->terminal_ok[i].ino == st.st_ino)
                        return NULL;
        return "a controlling terminal is attached, which a served program cannot have (/dev/tty, job control); "
               "headstart-run --terminal or the daemon's `terminal = PROGRAM` serves a program that only "
               "writes to it";
}

static const struct registered_file *registered(const struct server *s, dev_t dev, ino_t ino) {
        for (size_t i = 0; i < s->nregistered; i++)
                if (s->registered[i].dev == dev && s->registered[i].ino == ino)
                        return &s->registered[i];
        return NULL;
}

static const char *registered_path(const struct server *s, dev_t dev, ino_t ino) {
        const struct registered_file *reg = registered(s, dev, ino);
        return reg ? reg->path : NULL;
}

/* Finds what to load. Returns NULL with *ret_entry set, or why the program cannot be served. */
static const char *resolve_image(struct server *s, const struct hs_launch_request *req, int program_fd,
                                 const struct image_entry **ret_entry, char *buf, size_t size) {
        char proc[64];
        struct stat st;
        /* Only a regular file is opened: opening a FIFO would block the daemon, a device could act. */
        if (fstat(program_fd, &st) < 0 || !S_ISREG(st.st_mode))
                return "not a regular file";
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", program_fd);
        /* What exec refuses (EACCES), the daemon must not run: a file no one may execute (root too
         * needs an execute bit), or one on a file system mounted noexec, whose copy in our cache
         * would run. Clients are our own user, so our rights are theirs. */
        struct statvfs fs;
        if (fstatvfs(program_fd, &fs) == 0 && (fs.f_flag & ST_NOEXEC))
                return "its file system is mounted noexec: exec would refuse it too";
        if (faccessat(AT_FDCWD, proc, X_OK, AT_EACCESS) < 0)
                return "not executable (no execute permission): exec would refuse it too";
        /* The client sends an O_PATH fd, which works for execute-only files; dlopen needs to read. */
        _cleanup_close_ int fd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) {
                snprintf(buf, size, "cannot read the program file (%s): only exec can run it", strerror(errno));
                return buf;
        }
        if (fstat(fd, &st) < 0)
                return "cannot stat the program file";

        /* Registered to be exec'd: a library it needs could not be preloaded, or its image prepared. */
        const struct registered_file *reg = registered(s, st.st_dev, st.st_ino);
        if (reg && reg->mode == MODE_EXEC)
                return reg->reason;
        struct image_entry *e;
        int r = image_cache_get(&s->cache, fd, &st, req->path, reg != NULL, NULL, &e);
        if (r == -ESTALE)
                return "the file changed while the daemon read it, or the daemon sees another file at its path "
                       "(another mount namespace)";
        if (r == -ETIMEDOUT)
                return "the dynamic loader did not list its libraries within its deadline (a library it opens blocks "
                       "it, or the machine is busy); asked again at its next launch";
        if (r < 0) {
                snprintf(buf, size, "cannot prepare the program for loading: %s", strerror(-r));
                return buf;
        }
        if (e->reason)
                return e->reason;
        *ret_entry = e; /* its fd is the file checked, which the child loads, whatever the path names now */
        return NULL;
}

static struct child *fork_child(struct server *s, struct conn *c, const struct hs_launch_request *req,
                               const struct image_entry *image, int report_fd) {
        struct after_main_page *page = s->learned ? after_main_page_new() : NULL;
        pid_t pid = fork();
        if (pid < 0) {
                after_main_page_free(page);
                return NULL;
        }
        if (pid == 0) {
                struct child_spec spec = { .req = req, .fds = c->fds, .image_fd = image->fd, .start = image->start,
                                           .plan = &image->plan, .report_fd = report_fd, .after_main = page,
                                           .schedule = schedule_for(s->schedules, s->nschedules, image->id.dev,
                                                                    image->id.ino),
                                           .conn_fd = c->fd };
                child_run(&spec);
        }
        struct child *ch = child_watch(s->epoll_fd, pid);
        if (ch)
                ch->after_main = page;
        else
                after_main_page_free(page);
        return ch;
}

static void start(struct server *s, struct conn *c, const struct hs_launch_request *req,
                  const struct image_entry *image, const char *oom_score, struct launch_verdict *ret) {
        if (prepared_wait_for_child(s, c, req, image)) {
                *ret = (struct launch_verdict){ .outcome = LAUNCH_WAITING };
                return;
        }
        int report[2];
        if (pipe2(report, O_CLOEXEC | O_NONBLOCK) < 0)
                return decline(HS_DECLINE_BUSY, "the daemon is out of file descriptors", ret);

        struct child *ch = prepared_take(s, c, req, image, report[1]);
        enum launch_source source = ch ? LAUNCH_PREPARED : LAUNCH_FORKED;
        if (!ch && (ch = pool_take(s, c, image, report[1])))
                source = LAUNCH_POOLED;
        if (!ch)
                ch = fork_child(s, c, req, image, report[1]);
        close(report[1]);
        if (!ch) {
                close(report[0]);
                return decline(HS_DECLINE_BUSY, "the daemon cannot start more programs", ret);
        }
        ch->report_fd = report[0];
        client_context_give_oom_score(ch->pid, oom_score);
        ch->program = registered_path(s, image->id.dev, image->id.ino);
        ch->started_ms = now_ms();
        child_list_push(&s->children, ch);
        s->nchildren++;
        s->launches++;
        launch_counts_launched(s->counts, source);
        launch_report_send(s->report_fd, launch_report_socket(s->options), ch->program ? ch->program : req->path);
        prepared_note_launch(s, c, image, ch->pid);
        if (s->options->verbose)
                log_info("started %s as %d (%s%s)", req->path, (int) ch->pid, image->warm ? "warm" : "preload",
                         source == LAUNCH_PREPARED ? ", prepared ahead"
                         : source == LAUNCH_POOLED ? ", from the pool"
                                                   : "");
        *ret = (struct launch_verdict){
                .outcome = LAUNCH_STARTED,
                .child = ch,
                .refresh_wanted = s->options->refresh_launches && s->launches >= s->options->refresh_launches,
        };
}

void launch_handle(struct server *s, struct conn *c, struct launch_verdict *ret) {
        struct hs_launch_request req;
        const char *what = NULL;
        const struct image_entry *image = NULL;
        char buf[HS_MAX_TEXT], oom_score[OOM_SCORE_MAX];

        int r = hs_launch_parse(c->payload, c->header.size, c->nfds, &req, &what);
        if (r < 0) {
                *ret = (struct launch_verdict){ .outcome = LAUNCH_MALFORMED, .error = -r };
                snprintf(ret->text, sizeof ret->text, "%s", what);
                return;
        }

        const char *differs;
        const char *reason = NULL;
        c->follows_stops = req.fixed.flags & HS_LAUNCH_FLAG_FOLLOWS_STOPS;
        c->outlives_client = req.fixed.flags & HS_LAUNCH_FLAG_OUTLIVES_CLIENT;
        /* Once per connection: the kernel's record of who connected, never a pid the client names. */
        if (c->client_pidfd < 0)
                c->client_pidfd = peer_process_open(c->fd, &c->client_pid);
        if (s->shutting_down)
                reason = "the daemon is shutting down";
        else if (s->nchildren >= s->options->max_children)
                reason = "too many programs running";
        /* The client's context first, before anything looks at its fds: a fstat of a file on a FUSE
         * file system the client serves itself (mounted in a user namespace of its own) waits for
         * its answer, and a client confined so, declined all the same, held the zygote (and every
         * launch after) as long as it liked. */
        if (reason) {
                decline(HS_DECLINE_BUSY, reason, ret);
        } else if ((reason = client_context_refusal(c->client_pid, c->client_pidfd, oom_score))) {
                decline(HS_DECLINE_ENVIRONMENT, reason, ret);
        } else if (!loader_env_matches(s->loader_env, req.envp, &differs)) {
                snprintf(buf, sizeof buf, "the dynamic loader's environment differs from the daemon's (%.200s)",
                         differs);
                decline(HS_DECLINE_ENVIRONMENT, buf, ret);
        } else if ((reason = read_at_load_refusal(&s->read_at_load, req.envp, buf, sizeof buf))) {
                decline(HS_DECLINE_ENVIRONMENT, reason, ret);
        } else if ((reason = terminal_refusal(s, &req, c->fds[HS_FD_PROGRAM]))) {
                decline(HS_DECLINE_TERMINAL, reason, ret);
        } else if ((reason = rlimits_refusal(&req))) {
                decline(HS_DECLINE_LIMITS, reason, ret);
        } else if ((reason = client_schedule_refusal(c, program_schedule(s, c->fds[HS_FD_PROGRAM]), buf, sizeof buf))) {
                decline(HS_DECLINE_ENVIRONMENT, reason, ret);
        } else if ((reason = resolve_image(s, &req, c->fds[HS_FD_PROGRAM], &image, buf, sizeof buf))) {
                decline(HS_DECLINE_UNSUPPORTED, reason, ret);
        } else {
                start(s, c, &req, image, oom_score, ret);
        }
        hs_launch_request_done(&req);
}
