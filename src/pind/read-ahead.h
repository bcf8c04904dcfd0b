/* SPDX-License-Identifier: MIT */
/* Asking the kernel to read a range into the page cache without waiting for it. One readahead(2) or
 * MADV_WILLNEED reads at most the larger of the disk's read_ahead_kb and max_sectors_kb (see
 * force_page_cache_ra in mm/readahead.c), as little as 128 KiB on many disks, and drops the rest of
 * the range without a word: a longer range is asked for in pieces small enough for any disk. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Returns 0, or a negative errno when the kernel refused the first piece. */
int read_ahead_file(int fd, uint64_t offset, uint64_t length);

/* The same for a range of a shared file mapping; page-aligned start. */
void read_ahead_mapping(void *start, size_t length);
