/* SPDX-License-Identifier: MIT */
#include "prepared-store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "private-dir.h"
#include "protocol.h"

#define HEADER "headstart-prepared 1\n"
/* A few programs' requests of a few KiB each: a file as large as the largest message is not ours. */
#define MAX_FILE_SIZE ((off_t) HS_MAX_PAYLOAD)

void prepared_records_free(struct prepared_record *records, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(records[i].program);
                free(records[i].cwd);
                free(records[i].request);
        }
        free(records);
}

/* The file's bytes if it is ours: one another user could write would choose what we prepare. */
static char *read_own_file(const char *file, size_t *ret_size, const char **ret_why) {
        _cleanup_close_ int fd = private_file_open(file, ret_why);
        struct stat st;
        if (fd < 0)
                return NULL;
        if (fstat(fd, &st) < 0)
                *ret_why = "cannot be read";
        else if (st.st_size > MAX_FILE_SIZE)
                *ret_why = "too large";
        char *data = *ret_why ? NULL : malloc((size_t) st.st_size + 1);
        if (!*ret_why && (!data || pread(fd, data, (size_t) st.st_size, 0) != st.st_size)) {
                *ret_why = "cannot be read";
                free(data);
                return NULL;
        }
        if (data)
                data[st.st_size] = '\0';
        *ret_size = data ? (size_t) st.st_size : 0;
        return data;
}

/* The text after prefix up to the line's end, copied; *at moves past the line. NULL if not so. */
static char *take_line(const char **at, const char *end, const char *prefix) {
        size_t len = strlen(prefix);
        const char *nl = memchr(*at, '\n', (size_t) (end - *at));
        if (!nl || (size_t) (nl - *at) < len || memcmp(*at, prefix, len) != 0)
                return NULL;
        char *value = strndup(*at + len, (size_t) (nl - *at) - len);
        *at = nl + 1;
        return value;
}

static int parse_record(const char **at, const char *end, struct prepared_record *r) {
        _cleanup_free_ char *sizes = NULL;
        unsigned nfds;
        size_t size;
        int used = 0;
        if (!(r->program = take_line(at, end, "program ")) || !(r->cwd = take_line(at, end, "cwd ")) ||
            !(sizes = take_line(at, end, "request ")) || sscanf(sizes, "%u %zu%n", &nfds, &size, &used) != 2 ||
            sizes[used] != '\0' || size > HS_MAX_PAYLOAD || (size_t) (end - *at) < size + 1 || (*at)[size] != '\n')
                return -EBADMSG;
        if (!(r->request = malloc(size ? size : 1)))
                return -ENOMEM;
        memcpy(r->request, *at, size);
        r->size = size;
        r->nfds = nfds;
        *at += size + 1;
        return 0;
}

int prepared_store_parse(const char *data, size_t size, struct prepared_record **ret, size_t *ret_n) {
        const char *at = data, *end = data + size;
        size_t len = strlen(HEADER);
        if (size < len || memcmp(data, HEADER, len) != 0)
                return -EBADMSG;
        at += len;
        while (!(end - at == 4 && memcmp(at, "end\n", 4) == 0)) {
                struct prepared_record *grown = realloc(*ret, (*ret_n + 1) * sizeof **ret);
                if (!grown)
                        return -ENOMEM;
                *ret = grown;
                grown[*ret_n] = (struct prepared_record){ 0 };
                int r = parse_record(&at, end, &grown[(*ret_n)++]);
                if (r < 0)
                        return r;
        }
        return 0;
}

size_t prepared_store_load(const char *file, struct prepared_record **ret) {
        const char *why;
        size_t size, n = 0;
        _cleanup_free_ char *data = read_own_file(file, &size, &why);
        *ret = NULL;
        int r = data ? prepared_store_parse(data, size, ret, &n) : 0;
        if (why || r < 0) {
                log_warning("%s: %s; no child is prepared before each program's first launch", file,
                            why ? why : r == -ENOMEM ? "out of memory" : "malformed");
                prepared_records_free(*ret, n);
                *ret = NULL;
                return 0;
        }
        return n;
}

struct records {
        const struct prepared_record *records;
        size_t n;
};

static int write_records(int fd, const void *data) {
        const struct records *all = data;
        int own = fcntl(fd, F_DUPFD_CLOEXEC, 3); /* the FILE's, closed with it; fd stays the caller's */
        FILE *f = own >= 0 ? fdopen(own, "we") : NULL;
        if (!f) {
                if (own >= 0)
                        close(own);
                return -ENOMEM;
        }
        fputs(HEADER, f);
        for (size_t i = 0; i < all->n; i++) {
                const struct prepared_record *r = &all->records[i];
                fprintf(f, "program %s\ncwd %s\nrequest %u %zu\n", r->program, r->cwd, r->nfds, r->size);
                fwrite(r->request, 1, r->size, f);
                fputc('\n', f);
        }
        fputs("end\n", f);
        int r = fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
        return fclose(f) == 0 ? r : -EIO;
}

int prepared_store_save(const char *file, const struct prepared_record *records, size_t n) {
        return private_file_replace(file, write_records, &(struct records){ records, n });
}
