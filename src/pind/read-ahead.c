/* SPDX-License-Identifier: MIT */
#include "read-ahead.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>

/* Below the readahead limit of any disk we know of (read_ahead_kb 0 still allows max_sectors_kb). */
#define PIECE ((uint64_t) 64 * 1024)

int read_ahead_file(int fd, uint64_t offset, uint64_t length) {
        for (uint64_t done = 0; done < length; done += PIECE) {
                uint64_t piece = length - done < PIECE ? length - done : PIECE;
                if (readahead(fd, (off64_t) (offset + done), (size_t) piece) < 0 && done == 0)
                        return -errno;
        }
        return 0;
}

void read_ahead_mapping(void *start, size_t length) {
        for (size_t done = 0; done < length; done += PIECE) {
                size_t piece = length - done < PIECE ? length - done : PIECE;
                (void) madvise((char *) start + done, piece, MADV_WILLNEED);
        }
}
