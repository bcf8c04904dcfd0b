/* SPDX-License-Identifier: MIT */
#include "children.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "after-main.h"
#include "log.h"
#include "prepared.h"
#include "server.h"

void child_list_push(struct child **head, struct child *ch) {
        ch->prev = NULL;
        ch->next = *head;
        if (*head)
                (*head)->prev = ch;
        *head = ch;
}

void child_list_remove(struct child **head, struct child *ch) {
        if (ch->prev)
                ch->prev->next = ch->next;
        else
                *head = ch->next;
        if (ch->next)
                ch->next->prev = ch->prev;
        ch->prev = ch->next = NULL;
}

struct child *child_watch(int epoll_fd, pid_t pid) {
        /* The child is ours and not yet reaped, so its pid cannot have been reused: no race. */
        int pidfd = pidfd_open(pid, 0);
        struct child *ch = pidfd >= 0 ? calloc(1, sizeof *ch) : NULL;
        if (ch) {
                *ch = (struct child){ .watch.kind = WATCH_CHILD, .pid = pid, .pidfd = pidfd, .report_fd = -1,
                                      .channel_fd = -1 };
                if (watch_fd(epoll_fd, pidfd, &ch->watch, EPOLLIN) == 0)
                        return ch;
        }
        log_error_errno(errno, "cannot supervise child %d; killing it", (int) pid);
        kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        if (pidfd >= 0)
                close(pidfd);
        free(ch);
        return NULL;
}

void child_free(struct server *s, struct child *ch) {
        if (ch->waiting) {
                child_list_remove(&s->pool, ch);
                if (ch->prepared)
                        prepared_child_gone(s, ch);
                else
                        s->npool--;
        } else {
                child_list_remove(&s->children, ch);
                s->nchildren--;
        }
        (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, ch->pidfd, NULL);
        close(ch->pidfd);
        if (ch->report_fd >= 0)
                close(ch->report_fd);
        child_close_channel(s, ch);
        after_main_page_free(ch->after_main);
        free(ch);
}

void child_close_channel(struct server *s, struct child *ch) {
        if (ch->channel_fd < 0)
                return;
        /* Out of the epoll set first: a child forked meanwhile may still hold the same socket, which
         * would keep it there (a prepared child's channel is watched, prepared.h). */
        (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, ch->channel_fd, NULL);
        close(ch->channel_fd);
        ch->channel_fd = -1;
}

bool child_reap(struct child *ch, struct child_end *ret) {
        *ret = (struct child_end){ 0 };
        if (waitid(P_PIDFD, (id_t) ch->pidfd, &ret->si, WEXITED | WNOHANG) < 0 || ret->si.si_pid == 0)
                return false;
        ssize_t n = ch->report_fd >= 0 ? read(ch->report_fd, ret->report, sizeof ret->report - 1) : 0;
        ret->report[n > 0 ? n : 0] = '\0';
        return true;
}

const char *child_describe_end(const siginfo_t *si, char *buf, size_t size) {
        const char *name = sigabbrev_np(si->si_status);
        if (si->si_code == CLD_EXITED)
                snprintf(buf, size, "exited with status %d", si->si_status);
        else
                snprintf(buf, size, "killed by SIG%s%s", name ? name : "?",
                         si->si_code == CLD_DUMPED ? " (core dumped)" : "");
        return buf;
}

bool child_is_ours(const struct server *s, pid_t pid) {
        for (const struct child *ch = s->children; ch; ch = ch->next)
                if (ch->pid == pid)
                        return true;
        for (const struct child *ch = s->pool; ch; ch = ch->next)
                if (ch->pid == pid)
                        return true;
        return false;
}
