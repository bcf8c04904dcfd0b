/* SPDX-License-Identifier: MIT */
/* A program file any client may name: the zygote reads its headers, dynamic section and symbols
 * before deciding how to serve it, so a crafted file must never crash or hang it. */
#include <unistd.h>

#include "elf-info.h"
#include "fuzz-input.h"
#include "toolkit-variables.h"

static void count_name(const char *name, void *data) {
        *(size_t *) data += name[0] != '\0';
}

/* Reads a range as the judge's search does (toolkit_variable_in): a byte outside the file shows under
 * ASan. */
static bool read_range(const char *bytes, size_t size, void *data) {
        *(size_t *) data += toolkit_variable_in(bytes, size) != NULL;
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        int fd = fuzz_input_fd(data, size);
        if (fd < 0)
                return 0;
        struct elf_info info;
        (void) elf_info_read(fd, &info);
        struct elf_exports exports;
        if (lseek(fd, 0, SEEK_SET) == 0 && elf_exports_read(fd, &exports) == 0)
                elf_exports_done(&exports);
        size_t names = 0; /* --prepare-display reads the libraries and symbols a named program needs */
        struct elf_file file = { 0 };
        if (elf_file_read(fd, &file) == 0) {
                (void) elf_needs_of(&file, count_name, count_name, &names);
                (void) elf_search_loaded(&file, read_range, &names); /* and the text of what it loads */
        }
        elf_file_done(&file);
        close(fd);
        return 0;
}
