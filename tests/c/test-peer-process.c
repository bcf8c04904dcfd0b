/* SPDX-License-Identifier: MIT */
/* Unit tests of peer-process.h: on kernels before 6.5 the daemon finds the client by the pid it
 * connected with, and takes it only if that process holds the other end of the connection; a
 * process that does not (the pid used again by another) is refused. The daemon's own kernel here
 * has SO_PEERPIDFD, so the fallback is tested directly. Prints "N passed, N failed". */
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "peer-process.h"

static pid_t idle_child(void) {
        pid_t pid = fork();
        if (pid == 0) {
                pause();
                _exit(0);
        }
        return pid;
}

static void end_child(pid_t pid) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

static ino_t inode_of(int fd) {
        struct stat st;
        return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

int main(void) {
        pid_t stranger = idle_child(); /* started before the connection: holds no end of it */
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return perror("socketpair"), 1;
        pid_t client = fork();
        if (client == 0) {
                close(sv[0]);
                pause();
                _exit(0);
        }
        ino_t client_end = inode_of(sv[1]);
        close(sv[1]);

        ino_t peer = 0;
        CHECK(peer_socket_inode(sv[0], &peer) == 0 && client_end != 0 && peer == client_end);
        CHECK(process_holds_socket(client, client_end));
        CHECK(!process_holds_socket(stranger, client_end));
        CHECK(!process_holds_socket(getpid(), client_end)); /* we closed our copy */
        CHECK(process_holds_socket(getpid(), inode_of(sv[0])));

        int pidfd = peer_process_open_by_pid(sv[0], client);
        CHECK(pidfd >= 0);
        if (pidfd >= 0)
                close(pidfd);
        CHECK(peer_process_open_by_pid(sv[0], stranger) < 0); /* as if the client's pid were the stranger's now */

        end_child(client);
        CHECK(peer_process_open_by_pid(sv[0], client) < 0);
        int not_socket[2];
        if (pipe(not_socket) == 0) {
                CHECK(peer_socket_inode(not_socket[0], &peer) < 0);
                close(not_socket[0]);
                close(not_socket[1]);
        }
        end_child(stranger);
        close(sv[0]);
        printf("%d passed, %d failed\n", passed, failed);
        return failed != 0;
}
