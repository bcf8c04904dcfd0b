/* SPDX-License-Identifier: MIT */
/* A request as the daemon reads it from any process of its user: a header, then a payload that
 * hs_launch_parse validates. The first byte says how many fds came with it. */
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 + sizeof(struct hs_header))
                return 0;
        size_t nfds = data[0] % (HS_MAX_FDS + 2);
        struct hs_header h;
        memcpy(&h, data + 1, sizeof h);
        (void) hs_header_check(&h);
        /* In its own buffer, aligned as the daemon's malloc'ed one is. */
        size_t n = size - 1 - sizeof h;
        uint8_t *payload = malloc(n ? n : 1);
        if (!payload)
                return 0;
        memcpy(payload, data + 1 + sizeof h, n);
        struct hs_launch_request req;
        const char *what = NULL;
        if (hs_launch_parse(payload, n, nfds, &req, &what) == 0) {
                /* What the daemon then reads of it, all of which must be inside the payload. */
                size_t total = strlen(req.path);
                for (char **a = req.argv; *a; a++)
                        total += strlen(*a);
                for (char **e = req.envp; *e; e++)
                        total += strlen(*e);
                for (uint32_t i = 0; i < req.fixed.nfds; i++)
                        total += req.fd_targets[i];
                hs_launch_request_done(&req);
                (void) total;
        }
        free(payload);
        return 0;
}
