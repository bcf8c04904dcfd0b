/* SPDX-License-Identifier: MIT */
#include "pool.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "after-main.h"
#include "run-program.h"
#include "children.h"
#include "client-context.h"
#include "conn.h"
#include "log.h"
#include "prepared.h"
#include "proc-stat.h"
#include "wire.h"

/* The two messages on a waiting child's channel: the image to load, with the report pipe, the
 * client's connection and the image's fd; then the client's LAUNCH payload with the client's fds, as
 * received. Two, because the client may send the most fds one message can carry. The image message
 * is an image_header and the bind plan's bytes. */
#define POOL_MSG_IMAGE 100
#define POOL_MSG_REQUEST 101

struct image_header {
        struct image_start start;
        uint64_t dev, ino; /* the program file, whose --schedule the child applies */
        uint64_t plan_size;
};

/* Reads the image message into *spec, pointing into payload. */
static int parse_image(const struct server *s, void *payload, size_t size, struct child_spec *spec,
                       struct bind_plan *plan) {
        struct image_header h;
        if (size < sizeof h)
                return -EBADMSG;
        memcpy(&h, payload, sizeof h);
        char *rest = (char *) payload + sizeof h;
        size -= sizeof h;
        if (h.plan_size != size || bind_plan_parse(rest, h.plan_size, plan) < 0)
                return -EBADMSG;
        spec->start = h.start;
        spec->plan = plan;
        spec->schedule = schedule_for(s->schedules, s->nschedules, (dev_t) h.dev, (ino_t) h.ino);
        return 0;
}

static _Noreturn void wait_for_request(const struct server *s, int channel, pid_t daemon,
                                       struct after_main_page *page, const struct prepared_program *p) {
        /* The launch's working directory, in which the toolkit resolves what is relative in its
         * environment; its fd is the zygote's, closed below. */
        int cwd_error = p && fchdir(p->cwd_fd) < 0 ? errno : 0;
        /* Nothing of the daemon's stays open here: a client's connection held by a waiting child
         * would not see the daemon close it. */
        if (channel > 0)
                (void) close_range(0, (unsigned) channel - 1, 0);
        (void) close_range((unsigned) channel + 1, ~0U, 0);
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != daemon)
                _exit(0);

        struct prepared_process prepared;
        char why[HS_MAX_TEXT];
        const char *unusable =
                p ? toolkit_prepare_and_tell(p->toolkit, &p->terms, &p->shape, cwd_error, &channel, &prepared,
                                             why, sizeof why)
                  : NULL;

        struct hs_header h;
        int own[3] = { -1, -1, -1 }, fds[HS_MAX_FDS];
        size_t nown = 0, nfds = 0;
        void *image = NULL, *payload = NULL;
        if (hs_recv_message_alloc(channel, &h, &image, own, 3, &nown) < 0 || h.type != POOL_MSG_IMAGE || nown != 3)
                _exit(0); /* the daemon let us go */
        struct child_spec spec = { .report_fd = own[0], .conn_fd = own[1], .image_fd = own[2], .after_main = page };
        struct bind_plan plan;
        if (parse_image(s, image, h.size, &spec, &plan) < 0)
                _exit(127);
        if (unusable) {
                dprintf(spec.report_fd, "cannot use the toolkit prepared ahead: %s", unusable);
                _exit(127);
        }
        spec.prepared = p ? &prepared : NULL;
        if (hs_recv_message_alloc(channel, &h, &payload, fds, HS_MAX_FDS, &nfds) < 0 || h.type != POOL_MSG_REQUEST)
                _exit(127);
        (void) prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);

        /* The daemon parsed this same payload before passing it on; it cannot fail here. */
        struct hs_launch_request req;
        const char *what;
        if (hs_launch_parse(payload, h.size, nfds, &req, &what) < 0)
                _exit(127);
        spec.req = &req;
        spec.fds = fds;
        child_run(&spec);
}

/* After a failed fork the pool is left alone for this long, so the loop does not spin. */
#define POOL_RETRY_MS 1000u
/* After a hand-over, so long that the refill fork does not compete for a CPU with the program that
 * is starting (a fork of a daemon holding GTK takes most of a millisecond). */
#define POOL_SETTLE_MS 5u

static int add_one(struct server *s, struct prepared_program *p) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        pid_t daemon = getpid();
        struct after_main_page *page = s->learned ? after_main_page_new() : NULL;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(sv[0]);
                close(sv[1]);
                after_main_page_free(page);
                return r;
        }
        if (pid == 0)
                wait_for_request(s, sv[1], daemon, page, p);
        close(sv[1]);

        struct child *ch = child_watch(s->epoll_fd, pid);
        if (!ch) {
                close(sv[0]);
                after_main_page_free(page);
                return -ENOMEM;
        }
        ch->channel_fd = sv[0];
        /* What a prepared child says (started, or of no use) is read as it comes. */
        int r = p ? watch_fd(s->epoll_fd, sv[0], &p->watch, EPOLLIN) : 0;
        if (r < 0)
                log_warning_errno(r, "cannot watch the child preparing %s; read when a launch comes", p->program);
        ch->after_main = page;
        ch->waiting = true;
        ch->prepared = p;
        child_list_push(&s->pool, ch);
        if (p)
                p->child = ch;
        else
                s->npool++;
        return 0;
}

int pool_add_prepared(struct server *s, struct prepared_program *p) {
        return add_one(s, p);
}

int pool_add_one(struct server *s) {
        int r = add_one(s, NULL);
        if (r < 0) {
                log_warning_errno(r, "cannot fork a child for the pool; retrying in %u ms", POOL_RETRY_MS);
                s->pool_retry_at = now_ms() + POOL_RETRY_MS;
        }
        return r;
}

int pool_refill_in_ms(const struct server *s) {
        if (s->shutting_down || s->retiring || s->npool >= s->options->pool_size)
                return -1;
        uint64_t now = now_ms();
        return now >= s->pool_retry_at ? 0 : (int) (s->pool_retry_at - now);
}

void pool_fill(struct server *s) {
        while (pool_refill_in_ms(s) == 0 && pool_add_one(s) >= 0)
                ;
}

static int send_image(int channel, const struct image_entry *e, int report_fd, int conn_fd) {
        struct image_header h = { .start = e->start, .dev = e->id.dev, .ino = e->id.ino, .plan_size = bind_plan_size(&e->plan) };
        size_t size = sizeof h + h.plan_size;
        uint8_t *buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, &h, sizeof h);
        bind_plan_write(&e->plan, buf + sizeof h);
        int fds[3] = { report_fd, conn_fd, e->fd };
        int r = hs_send_message(channel, POOL_MSG_IMAGE, buf, size, fds, 3, 1);
        free(buf);
        return r;
}

/* A stopped waiting child (SIGSTOP from any process of our user, or a tracer's stop) would not read
 * its request, and its client would wait for its deadline and exec. Looked at just before the
 * hand-over; one stopped after it costs its client that deadline, never the zygote (hand_over). */
static bool stopped(pid_t pid) {
        struct proc_stat st;
        return proc_stat_read(pid, &st) == 0 && (st.state == 'T' || st.state == 't');
}

/* What a hand-over writes to the channel at most: it must fit the channel's buffer (212,992 bytes
 * by default) at once, since it is sent without waiting (hand_over). */
#define POOL_MAX_HANDOVER (64u * 1024u)

/* Whether the image and the request fit the channel without waiting for the child to read; a
 * larger launch (a build tool's long command line) is forked for. */
static bool fits_channel(const struct conn *c, const struct image_entry *image) {
        size_t size = 2 * sizeof(struct hs_header) + sizeof(struct image_header) + bind_plan_size(&image->plan) +
                      c->header.size;
        return size <= POOL_MAX_HANDOVER;
}

/* Sent without waiting: any process of our user may stop a waiting child (SIGSTOP), or freeze its
 * cgroup, and a blocking send of a request larger than the channel's buffer then held the zygote in
 * sendmsg for as long as the child stayed so. Every client after waited its deadline and exec'd, and
 * the client's fds stayed open in the zygote (a reader of its stdout never saw end of file). A
 * child that does not take it at once is let go (pool_hand_over), and the launch forked. */
static int hand_over(struct child *ch, const struct conn *c, const struct image_entry *image, int report_fd) {
        int r = send_image(ch->channel_fd, image, report_fd, c->fd);
        if (r >= 0)
                r = hs_send_message(ch->channel_fd, POOL_MSG_REQUEST, c->payload, c->header.size, c->fds, c->nfds, 1);
        return r;
}

/* The oldest child still waiting (children are pushed at the front), so none waits forever; one we
 * have let go (no channel) is only waiting to be reaped; a prepared one is its program's. */
static struct child *oldest_waiting(const struct server *s) {
        struct child *found = NULL;
        for (struct child *ch = s->pool; ch; ch = ch->next)
                if (ch->channel_fd >= 0 && !ch->prepared)
                        found = ch;
        return found;
}

struct child *pool_take(struct server *s, const struct conn *c, const struct image_entry *image, int report_fd) {
        struct child *ch = oldest_waiting(s);
        return ch ? pool_hand_over(s, ch, c, image, report_fd) : NULL;
}

struct child *pool_hand_over(struct server *s, struct child *ch, const struct conn *c, const struct image_entry *image,
                             int report_fd) {
        if (!fits_channel(c, image))
                return NULL;
        bool current = client_context_inherited_unchanged(ch->pid), halted = current && stopped(ch->pid);
        int r = current && !halted ? hand_over(ch, c, image, report_fd) : -ESTALE;
        child_close_channel(s, ch);
        if (r < 0) {
                /* It stays in the pool until its pidfd says it ended: an event for it may already be
                 * pending in this batch, so it must not be freed here. */
                if (halted)
                        log_warning("a waiting child (%d) is stopped (a signal from a process of our user); forking "
                                    "instead",
                                    (int) ch->pid);
                else if (!current)
                        log_info("a waiting child (%d) has the scheduling, I/O priority or OOM score we had when "
                                 "it was forked, which another process changed since; forking instead",
                                 (int) ch->pid);
                else
                        log_warning_errno(r, "a waiting child (%d) did not take its request; forking instead",
                                          (int) ch->pid);
                (void) pidfd_send_signal(ch->pidfd, SIGKILL, NULL, 0);
                return NULL;
        }
        child_list_remove(&s->pool, ch);
        ch->waiting = false;
        if (ch->prepared)
                prepared_child_gone(s, ch);
        else
                s->npool--;
        s->pool_retry_at = now_ms() + POOL_SETTLE_MS;
        return ch;
}

void pool_release(struct server *s) {
        for (struct child *ch = s->pool; ch; ch = ch->next) {
                child_close_channel(s, ch);
                /* One may be inside its toolkit's start, which a hung compositor can make last. */
                if (ch->prepared)
                        (void) pidfd_send_signal(ch->pidfd, SIGKILL, NULL, 0);
        }
}
