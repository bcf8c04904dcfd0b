/* SPDX-License-Identifier: MIT */
/* elf_exports_read, which reads only a file's headers, symbol tables and relocations, against
 * elf_exports_of on the whole file read into memory: the same exports, field by field, and the same
 * answer for a file cut short. On this machine's own programs and libraries (those missing are
 * skipped). Prints "N passed, N failed". */
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "elf-info.h"

static bool same_string(const char *a, const char *b) {
        return a == b || (a && b && strcmp(a, b) == 0);
}

static bool same_export(const struct elf_export *a, const struct elf_export *b) {
        return same_string(a->name, b->name) && same_string(a->version, b->version) && a->value == b->value &&
               a->size == b->size && a->copied == b->copied && a->copy_only == b->copy_only &&
               a->shndx == b->shndx && a->sym_offset == b->sym_offset && a->sym_addr == b->sym_addr &&
               a->hidden == b->hidden && a->weak_function == b->weak_function &&
               a->weak_type_info == b->weak_type_info;
}

/* Both readers on the file open at fd: their return values, and their exports when they have any. */
static size_t compare(int fd, const char *what) {
        struct elf_file whole = { 0 };
        struct elf_exports from_whole = { 0 }, from_parts = { 0 };
        int r_whole = elf_file_read(fd, &whole);
        if (r_whole >= 0)
                r_whole = elf_exports_of(&whole, &from_whole);
        int r_parts = elf_exports_read(fd, &from_parts);
        CHECK(r_whole == r_parts);
        CHECK(from_whole.n == from_parts.n);
        size_t differ = 0;
        for (size_t i = 0; i < from_whole.n && i < from_parts.n; i++)
                differ += !same_export(&from_whole.items[i], &from_parts.items[i]);
        CHECK(differ == 0);
        if (r_whole != r_parts || from_whole.n != from_parts.n || differ)
                fprintf(stderr, "%s: whole file %d, %zu exports; parts %d, %zu exports; %zu differ\n", what, r_whole,
                        from_whole.n, r_parts, from_parts.n, differ);
        size_t n = from_whole.n;
        elf_exports_done(&from_whole);
        elf_exports_done(&from_parts);
        elf_file_done(&whole);
        return n;
}

/* The first size bytes of path, in a file of the working directory (meson runs tests in the build folder). */
static int cut_copy(const char *path, off_t size) {
        int in = open(path, O_RDONLY | O_CLOEXEC);
        int out = open("elf-exports-cut", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        char buf[65536];
        off_t done = 0;
        while (in >= 0 && out >= 0 && done < size) {
                ssize_t n = read(in, buf, (size_t) (size - done) < sizeof buf ? (size_t) (size - done) : sizeof buf);
                if (n <= 0 || write(out, buf, (size_t) n) != n)
                        break;
                done += n;
        }
        if (in >= 0)
                close(in);
        CHECK(out >= 0 && done == size);
        return out;
}

/* Both readers on the file at path and on copies of it cut where its symbol tables or relocations
 * are (at the end and in the middle) and before its headers end. 0 when it is not there. */
static int check_file(const char *path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        size_t n = compare(fd, path);
        struct stat st;
        if (n > 0 && fstat(fd, &st) == 0)
                for (off_t size = st.st_size / 2; size > 0; size = size > 4096 ? size / 64 : 0) {
                        int cut = cut_copy(path, size);
                        if (cut >= 0) {
                                compare(cut, "a cut copy");
                                close(cut);
                        }
                }
        close(fd);
        return 1;
}

int main(void) {
        /* Libraries with versions, C++ type information and a large one, from the folder this
         * machine's libc is in; programs with copy relocations; a file that is not ELF. */
        static const char *const libraries[] = { "libc.so.6", "libstdc++.so.6", "libgtk-3.so.0", "libQt5Core.so.5",
                                                 "libglib-2.0.so.0" };
        static const char *const others[] = { "/usr/bin/ls", "/usr/bin/bash", "/usr/bin/galculator", "/usr/bin/python3",
                                              "/etc/passwd" };
        Dl_info libc = { 0 };
        char dir[PATH_MAX], path[2 * PATH_MAX];
        CHECK(dladdr((void *) printf, &libc) != 0 && libc.dli_fname);
        snprintf(dir, sizeof dir, "%s", libc.dli_fname ? libc.dli_fname : "/usr/lib/libc.so.6");
        const char *libdir = dirname(dir);
        int tried = 0;
        for (size_t i = 0; i < sizeof libraries / sizeof *libraries; i++) {
                snprintf(path, sizeof path, "%s/%s", libdir, libraries[i]);
                tried += check_file(path);
        }
        for (size_t i = 0; i < sizeof others / sizeof *others; i++)
                tried += check_file(others[i]);
        unlink("elf-exports-cut");
        CHECK(tried >= 4);
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
}
