/* SPDX-License-Identifier: MIT */
/* The file of launches kept for --prepare-display (prepared-store.h), and each request in it as a
 * zygote parses it when it starts. */
#include <stdlib.h>

#include "prepared-store.h"
#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct prepared_record *records = NULL;
        size_t n = 0;
        if (prepared_store_parse((const char *) data, size, &records, &n) == 0)
                for (size_t i = 0; i < n; i++) {
                        struct hs_launch_request req;
                        const char *what;
                        if (hs_launch_parse(records[i].request, records[i].size, records[i].nfds, &req, &what) == 0)
                                hs_launch_request_done(&req);
                }
        prepared_records_free(records, n);
        return 0;
}
