/* SPDX-License-Identifier: MIT */
/* Reads a data file at start-up, the way the profiler should flag (read: the whole file copied in
 * with read()) or not (map: mmap, then the pages it needs). Prints a checksum of every 4096th byte. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long sum_sparse(const unsigned char *data, size_t size) {
        unsigned long sum = 0;
        for (size_t i = 0; i < size; i += 4096)
                sum += data[i];
        return sum;
}

int main(int argc, char *argv[]) {
        if (argc != 3 || (strcmp(argv[1], "read") != 0 && strcmp(argv[1], "map") != 0)) {
                fprintf(stderr, "usage: startup-data read|map FILE\n");
                return 2;
        }
        int fd = open(argv[2], O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
                perror(argv[2]);
                return 1;
        }
        size_t size = (size_t) st.st_size;
        unsigned char *data;
        if (strcmp(argv[1], "map") == 0) {
                data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
                if (data == MAP_FAILED)
                        return 1;
        } else {
                data = malloc(size);
                for (size_t done = 0; data && done < size;) {
                        ssize_t n = read(fd, data + done, size - done < 65536 ? size - done : 65536);
                        if (n <= 0)
                                return 1;
                        done += (size_t) n;
                }
        }
        if (!data)
                return 1;
        printf("checksum %lu\n", sum_sparse(data, size));
        return 0;
}
