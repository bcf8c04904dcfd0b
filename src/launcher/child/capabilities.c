/* SPDX-License-Identifier: MIT */
#include "capabilities.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

bool capabilities_parse(const char *const hex[5], struct capabilities *ret) {
        uint64_t *sets[5] = { &ret->inheritable, &ret->permitted, &ret->effective, &ret->bounding, &ret->ambient };
        for (int i = 0; i < 5; i++) {
                char *end;
                errno = 0;
                *sets[i] = strtoull(hex[i], &end, 16);
                if (errno || end == hex[i])
                        return false;
        }
        return true;
}

static bool within(uint64_t theirs, uint64_t ours) {
        return (theirs & ~ours) == 0;
}

bool capabilities_can_lower(const struct capabilities *ours, const struct capabilities *theirs) {
        return theirs->bounding == ours->bounding && within(theirs->inheritable, ours->inheritable) &&
               within(theirs->permitted, ours->permitted) && within(theirs->effective, ours->effective) &&
               within(theirs->ambient, ours->ambient);
}

int capabilities_lower_to(const struct capabilities *c) {
        /* Ambient first: the kernel keeps it within permitted and inheritable, so raise back only what
         * the client has, once those are the client's. */
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return -errno;
        struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct data[2] = {
                { .effective = (uint32_t) c->effective, .permitted = (uint32_t) c->permitted,
                  .inheritable = (uint32_t) c->inheritable },
                { .effective = (uint32_t) (c->effective >> 32), .permitted = (uint32_t) (c->permitted >> 32),
                  .inheritable = (uint32_t) (c->inheritable >> 32) },
        };
        if (syscall(SYS_capset, &header, data) < 0)
                return -errno;
        for (unsigned long cap = 0; cap < 64; cap++)
                if ((c->ambient & (UINT64_C(1) << cap)) && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
                        return -errno;
        return 0;
}
