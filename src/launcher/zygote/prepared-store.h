/* SPDX-License-Identifier: MIT */
/* --prepare-display across restarts: the last launch of each prepared program (its request as the
 * client sent it, and the path of its working directory), kept in a file beside the learned one, so
 * that a zygote started later (the next boot, an upgrade, a refresh) prepares a child for the first
 * launch it serves, not only from the second on. The request holds the launch's environment: the
 * file is written 0600 and read only when it is the daemon user's and no one else can write it.
 *
 * The file: "headstart-prepared 1", then per program "program PATH", "cwd PATH" and
 * "request NFDS SIZE" lines, the request's SIZE bytes and a newline; then "end". */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct prepared_record {
        char *program; /* the registered program's path */
        char *cwd;     /* the launch's working directory */
        uint32_t nfds; /* the fds that came with the request */
        void *request; /* the LAUNCH payload, as received */
        size_t size;
};

/* The records in file; 0 when it is missing, and when it cannot be used (said in one line). */
size_t prepared_store_load(const char *file, struct prepared_record **ret);
/* The records in the file's text (size bytes): 0, or -EBADMSG or -ENOMEM with what was read so far
 * in *ret (*ret_n of them; *ret NULL and *ret_n 0 at the start). */
int prepared_store_parse(const char *data, size_t size, struct prepared_record **ret, size_t *ret_n);
/* Replaces file with these records (a complete file renamed into place). Returns 0 or a negative errno. */
int prepared_store_save(const char *file, const struct prepared_record *records, size_t n);
void prepared_records_free(struct prepared_record *records, size_t n);
