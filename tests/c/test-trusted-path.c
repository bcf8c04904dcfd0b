/* SPDX-License-Identifier: MIT */
/* Unit tests of trusted_path_check(): which files a privileged daemon may trust. Works in a folder
 * made in the working directory (meson runs tests in the build folder), which must itself be
 * trusted: exits 77 (skipped) when it is not. Prints "N passed, N failed". */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "trusted-path.h"


static char base[PATH_MAX];
static char why[PATH_MAX + 100];

static const char *at(const char *name) {
        static char buf[4][PATH_MAX];
        static unsigned next;
        char *p = buf[next++ % 4];
        if (snprintf(p, PATH_MAX, "%s/%s", base, name) >= PATH_MAX)
                abort(); /* the test's own names are short */
        return p;
}

static void make_file(const char *name, mode_t mode) {
        int fd = open(at(name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        CHECK(fd >= 0 && write(fd, "x\n", 2) == 2 && fchmod(fd, mode) == 0);
        if (fd >= 0)
                close(fd);
}

static void make_dir(const char *name, mode_t mode) {
        CHECK(mkdir(at(name), 0700) == 0 && chmod(at(name), mode) == 0);
}

static int check(const char *name) {
        why[0] = '\0';
        return trusted_path_check(at(name), geteuid(), why, sizeof why);
}

/* why names the component and says why. */
static int says(const char *component, const char *reason) {
        char expected[PATH_MAX + 100];
        if (snprintf(expected, sizeof expected, "%s is %s", at(component), reason) >= (int) sizeof expected)
                abort();
        if (strncmp(why, expected, strlen(expected)) == 0)
                return 1;
        fprintf(stderr, "why: '%s', expected it to start with '%s'\n", why, expected);
        return 0;
}

static void test_owned_file_in_owned_folders(void) {
        make_dir("ok", 0755);
        make_file("ok/plan", 0644);
        CHECK(check("ok/plan") == 0);
        make_file("ok/readonly", 0400);
        CHECK(check("ok/readonly") == 0);
        CHECK(check("ok") == 0); /* a folder is judged the same way */
        CHECK(check("ok/missing") == -ENOENT);
        CHECK(check("ok/plan/below") == -ENOTDIR);
        CHECK(check("ok/./../ok//plan") == 0);
        CHECK(trusted_path_check("", geteuid(), why, sizeof why) == -EINVAL);

        char cwd[PATH_MAX];
        CHECK(getcwd(cwd, sizeof cwd) != NULL && chdir(at("ok")) == 0); /* relative: the cwd's chain counts */
        CHECK(trusted_path_check("plan", geteuid(), why, sizeof why) == 0);
        CHECK(chdir(cwd) == 0);
}

static void test_writable_file(void) {
        make_file("ok/group", 0664);
        CHECK(check("ok/group") == -EPERM && says("ok/group", "writable by its group (mode 0664)"));
        make_file("ok/other", 0646);
        CHECK(check("ok/other") == -EPERM && says("ok/other", "writable by other users (mode 0646)"));
}

static void test_file_of_another_user(void) {
        if (geteuid() != 0)
                return (void) fprintf(stderr, "not root: the file of another user is not tested\n");
        make_file("ok/nobody", 0644);
        CHECK(chown(at("ok/nobody"), 65534, 65534) == 0);
        CHECK(check("ok/nobody") == -EPERM && says("ok/nobody", "owned by uid 65534, neither root nor uid 0"));
        /* The daemon's own user may own it. */
        CHECK(trusted_path_check(at("ok/nobody"), 65534, why, sizeof why) == 0);
        make_dir("ok/nobody-dir", 0755);
        make_file("ok/nobody-dir/plan", 0644);
        CHECK(chown(at("ok/nobody-dir"), 65534, 65534) == 0);
        CHECK(check("ok/nobody-dir/plan") == -EPERM && says("ok/nobody-dir", "owned by uid 65534"));
}

static void test_writable_folder_above(void) {
        make_dir("shared", 0777);
        make_dir("shared/sub", 0755);
        make_file("shared/sub/plan", 0644);
        CHECK(check("shared/sub/plan") == -EPERM && says("shared", "writable by other users (mode 0777)"));
        /* Sticky and root's, like /tmp: others may add names but not take ours, so ours pass, and a
         * name another user made first is refused by its owner. */
        make_dir("sticky", 01777);
        make_file("sticky/plan", 0644);
        if (geteuid() != 0) { /* ours, not root's: refused; the rest needs root */
                CHECK(check("sticky/plan") == -EPERM && says("sticky", "writable by other users (mode 1777)"));
                return;
        }
        CHECK(check("sticky/plan") == 0);
        make_file("sticky/theirs", 0644);
        CHECK(chown(at("sticky/theirs"), 65534, 65534) == 0);
        CHECK(check("sticky/theirs") == -EPERM && says("sticky/theirs", "owned by uid 65534"));
        /* Sticky but not root's: its owner may remove or rename anything in it. */
        make_dir("sticky-nobody", 01777);
        make_file("sticky-nobody/plan", 0644);
        CHECK(chown(at("sticky-nobody"), 65534, 65534) == 0);
        CHECK(check("sticky-nobody/plan") == -EPERM && says("sticky-nobody", "owned by uid 65534"));
        make_dir("group", 0775);
        make_file("group/plan", 0644);
        CHECK(check("group/plan") == -EPERM && says("group", "writable by its group (mode 0775)"));
}

static void test_symlinks(void) {
        /* A link in a trusted folder to a trusted file: followed, relative or absolute, .. included. */
        CHECK(symlink("plan", at("ok/relative")) == 0);
        CHECK(check("ok/relative") == 0);
        CHECK(symlink(at("ok/plan"), at("ok/absolute")) == 0);
        CHECK(check("ok/absolute") == 0);
        CHECK(symlink("../ok", at("ok/up")) == 0);
        CHECK(check("ok/up/up/up/plan") == 0);
        /* One that leads through a folder others may write to: refused, naming that folder. */
        CHECK(symlink(at("shared/sub/plan"), at("ok/out")) == 0);
        CHECK(check("ok/out") == -EPERM && says("shared", "writable by other users"));
        CHECK(symlink("../shared/sub", at("ok/outdir")) == 0);
        CHECK(check("ok/outdir/plan") == -EPERM && says("shared", "writable by other users"));
        /* A link in a folder others may add to is judged by who made it: they chose where it leads. */
        if (geteuid() == 0) {
                CHECK(symlink(at("ok/plan"), at("sticky/link")) == 0);
                CHECK(check("sticky/link") == 0);
                CHECK(lchown(at("sticky/link"), 65534, 65534) == 0);
                CHECK(check("sticky/link") == -EPERM && says("sticky/link", "owned by uid 65534"));
        }
        CHECK(symlink("loop", at("ok/loop")) == 0);
        CHECK(check("ok/loop") == -ELOOP);
}

static void test_open_file(void) {
        int fd = open(at("ok/plan"), O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK(trusted_path_check_fd(fd, at("ok/plan"), geteuid(), why, sizeof why) == 0);
        CHECK(trusted_path_check_fd(fd, at("ok/absolute"), geteuid(), why, sizeof why) == 0);
        /* Replaced after it was opened: what would be read is not what the path leads to. */
        make_file("ok/new", 0644);
        CHECK(rename(at("ok/new"), at("ok/plan")) == 0);
        CHECK(trusted_path_check_fd(fd, at("ok/plan"), geteuid(), why, sizeof why) == -EPERM &&
              strstr(why, "is not the file that was opened") != NULL);
        /* Made writable after it was opened, through another name: fstat(fd) tells. */
        close(fd);
        fd = open(at("ok/plan"), O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0 && chmod(at("ok/plan"), 0666) == 0);
        CHECK(trusted_path_check_fd(fd, at("ok/plan"), geteuid(), why, sizeof why) == -EPERM);
        close(fd);
}

int main(void) {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || trusted_path_check(cwd, geteuid(), why, sizeof why) != 0) {
                fprintf(stderr, "skipped: the working directory is not itself trusted (%s)\n", why);
                return 77;
        }
        if (snprintf(base, sizeof base, "%s/test-trusted-path.XXXXXX", cwd) >= (int) sizeof base || !mkdtemp(base) || chmod(base, 0755) < 0)
                return perror("mkdtemp"), 1;
        test_owned_file_in_owned_folders();
        test_writable_file();
        test_file_of_another_user();
        test_writable_folder_above();
        test_symlinks();
        test_open_file();
        char rm[PATH_MAX + 16];
        if (snprintf(rm, sizeof rm, "rm -rf '%s'", base) >= (int) sizeof rm || system(rm) != 0)
                fprintf(stderr, "could not remove %s\n", base);
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
}
