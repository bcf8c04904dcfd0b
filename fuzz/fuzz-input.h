/* SPDX-License-Identifier: MIT */
/* What the targets share: the input as a file, for parsers that read one. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* A memfd holding the input, at offset 0; -1 when it cannot be made. */
static inline int fuzz_input_fd(const uint8_t *data, size_t size) {
        int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
        if (fd < 0)
                return -1;
        if (write(fd, data, size) != (ssize_t) size || lseek(fd, 0, SEEK_SET) != 0) {
                close(fd);
                return -1;
        }
        return fd;
}

/* Its path, for parsers that take one: /proc/self/fd/N. */
static inline void fuzz_input_path(int fd, char *buf, size_t size) {
        snprintf(buf, size, "/proc/self/fd/%d", fd);
}
