/* SPDX-License-Identifier: MIT */
#include "program-tls.h"

#include <errno.h>
#include <unistd.h>

#include "tls-reserve.h"

int program_tls_install(const struct program_tls *tls, int image_fd) {
        if (tls->block_offset == 0)
                return 0;
        if (tls->block_offset > TLS_RESERVE_SIZE || tls->filesz > tls->block_offset)
                return -EINVAL; /* the daemon checked both */
        /* The reserve as the program's block sits in it: zeros above and below, its .tdata at
         * TP - block_offset, and zeros to memsz (as glibc clears .tbss). */
        unsigned char image[TLS_RESERVE_SIZE] = { 0 };
        unsigned char *block = image + TLS_RESERVE_SIZE - tls->block_offset;
        for (uint64_t got = 0; got < tls->filesz;) {
                ssize_t n = pread(image_fd, block + got, tls->filesz - got, (off_t) (tls->offset + got));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                got += (uint64_t) n;
        }
        return tls_reserve_fill(image);
}
