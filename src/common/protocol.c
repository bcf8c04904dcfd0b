/* SPDX-License-Identifier: MIT */
/* Encoding and validation of protocol messages, and where the socket is. No I/O, no logging. */
#include "protocol.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

int hs_default_socket_path(char *buf, size_t size) {
        const char *dir = secure_getenv("XDG_RUNTIME_DIR");
        if (!dir || dir[0] != '/')
                return -ENXIO;
        int n = snprintf(buf, size, "%s/headstart/socket", dir);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

void hs_header_init(struct hs_header *h, enum hs_message_type type, uint32_t size) {
        *h = (struct hs_header){
                .magic = HS_PROTOCOL_MAGIC,
                .version = HS_PROTOCOL_VERSION,
                .type = (uint16_t) type,
                .size = size,
        };
}

int hs_header_check(const struct hs_header *h) {
        if (h->magic != HS_PROTOCOL_MAGIC)
                return -EPROTO;
        if (h->version != HS_PROTOCOL_VERSION)
                return -EPROTONOSUPPORT;
        if (h->size > HS_MAX_PAYLOAD)
                return -EMSGSIZE;
        return 0;
}

/* Splits `size` bytes at `p` into exactly `count` NUL-terminated strings, storing pointers in ret[]. */
static int split_strings(char *p, size_t size, size_t count, char **ret) {
        size_t n = 0;
        char *end = p + size;

        while (p < end) {
                char *nul = memchr(p, '\0', (size_t) (end - p));
                if (!nul || n >= count)
                        return -EBADMSG;
                ret[n++] = p;
                p = nul + 1;
        }
        return n == count ? 0 : -EBADMSG;
}

static int fail(const char **ret_what, const char *what, int r) {
        *ret_what = what;
        return r;
}

static int check_fd_targets(const uint32_t *targets, uint32_t n, const char **ret_what) {
        for (uint32_t i = 0; i < n; i++) {
                if (targets[i] >= HS_MAX_TARGET_FD)
                        return fail(ret_what, "fd target out of range", -EBADMSG);
                for (uint32_t j = 0; j < i; j++)
                        if (targets[j] == targets[i])
                                return fail(ret_what, "fd target given twice", -EBADMSG);
        }
        return 0;
}

int hs_launch_parse(const void *payload, size_t size, size_t nfds_received, struct hs_launch_request *ret_req,
                    const char **ret_what) {
        struct hs_launch_fixed f;
        const char *p = payload;

        if (size < sizeof f)
                return fail(ret_what, "payload shorter than its fixed part", -EBADMSG);
        memcpy(&f, p, sizeof f);
        if ((f.flags & ~HS_LAUNCH_FLAGS_KNOWN) != 0)
                return fail(ret_what, "unknown flags", -EBADMSG);
        if (f.reserved != 0)
                return fail(ret_what, "reserved field not zero", -EBADMSG);
        if (f.nfds > HS_MAX_PASSED_FDS)
                return fail(ret_what, "too many file descriptors", -EBADMSG);
        if (nfds_received != (size_t) f.nfds + 2)
                return fail(ret_what, "file descriptor count differs from the one attached", -EBADMSG);
        if (f.path_size < 2 || f.path_size > HS_MAX_PATH)
                return fail(ret_what, "program path length", -EBADMSG);
        if (f.argc < 1)
                return fail(ret_what, "argv is empty", -EBADMSG);
        if ((uint64_t) f.argc + f.envc > HS_MAX_STRINGS)
                return fail(ret_what, "too many strings", -EBADMSG);
        if (f.umask > 0777)
                return fail(ret_what, "umask", -EBADMSG);

        uint64_t want = sizeof f + (uint64_t) f.nfds * sizeof(uint32_t) + f.path_size + f.strings_size;
        if (want != size)
                return fail(ret_what, "sizes do not add up to the payload size", -EBADMSG);

        /* The fd targets follow the fixed part at a 4-byte aligned offset (the fixed part is 8-aligned). */
        const uint32_t *targets = (const uint32_t *) (p + sizeof f);
        int r = check_fd_targets(targets, f.nfds, ret_what);
        if (r < 0)
                return r;

        char *path = (char *) (p + sizeof f + f.nfds * sizeof(uint32_t));
        if (path[f.path_size - 1] != '\0' || strlen(path) != f.path_size - 1)
                return fail(ret_what, "program path is not one NUL-terminated string", -EBADMSG);
        if (path[0] != '/')
                return fail(ret_what, "program path is not absolute", -EBADMSG);

        _cleanup_free_ char **strings = calloc((size_t) f.argc + f.envc + 2, sizeof(char *));
        if (!strings)
                return fail(ret_what, "out of memory", -ENOMEM);
        r = split_strings(path + f.path_size, f.strings_size, (size_t) f.argc + f.envc, strings);
        if (r < 0)
                return fail(ret_what, "argument and environment strings do not match their counts", r);

        /* One allocation holds argv, its NULL, envp and its NULL. */
        memmove(strings + f.argc + 1, strings + f.argc, f.envc * sizeof(char *));
        strings[f.argc] = NULL;
        strings[f.argc + 1 + f.envc] = NULL;

        *ret_req = (struct hs_launch_request){
                .fixed = f,
                .fd_targets = targets,
                .path = path,
                .argv = TAKE_PTR(strings),
        };
        ret_req->envp = ret_req->argv + f.argc + 1;
        return 0;
}

const char *hs_env_value(char *const *envp, const char *name) {
        size_t len = strlen(name);
        for (; envp && *envp; envp++)
                if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
                        return *envp + len + 1;
        return NULL;
}

void hs_launch_request_done(struct hs_launch_request *req) {
        free(req->argv);
        req->argv = req->envp = NULL;
}

static size_t strings_size(char *const *v, size_t *ret_count) {
        size_t n = 0, total = 0;
        for (; v && v[n]; n++)
                total += strlen(v[n]) + 1;
        *ret_count = n;
        return total;
}

static char *put_strings(char *p, char *const *v, size_t count) {
        for (size_t i = 0; i < count; i++) {
                size_t l = strlen(v[i]) + 1;
                memcpy(p, v[i], l);
                p += l;
        }
        return p;
}

void *hs_launch_encode(const struct hs_launch_fixed *fixed, const uint32_t *fd_targets, const char *path,
                       char *const *argv, char *const *envp, size_t *ret_size) {
        size_t argc, envc;
        size_t asize = strings_size(argv, &argc);
        size_t esize = strings_size(envp, &envc);
        size_t psize = strlen(path) + 1;
        size_t tsize = (size_t) fixed->nfds * sizeof(uint32_t);
        size_t total = sizeof *fixed + tsize + psize + asize + esize;

        if (total > HS_MAX_PAYLOAD || psize > HS_MAX_PATH || argc + envc > HS_MAX_STRINGS ||
            fixed->nfds > HS_MAX_PASSED_FDS) {
                errno = E2BIG;
                return NULL;
        }

        char *buf = malloc(total);
        if (!buf)
                return NULL;

        struct hs_launch_fixed f = *fixed;
        f.argc = (uint32_t) argc;
        f.envc = (uint32_t) envc;
        f.path_size = (uint32_t) psize;
        f.strings_size = (uint32_t) (asize + esize);

        char *p = buf;
        memcpy(p, &f, sizeof f);
        p += sizeof f;
        if (tsize > 0)
                memcpy(p, fd_targets, tsize);
        p += tsize;
        memcpy(p, path, psize);
        p += psize;
        p = put_strings(p, argv, argc);
        put_strings(p, envp, envc);

        *ret_size = total;
        return buf;
}
