/* SPDX-License-Identifier: MIT */
#include "kept-prctl.h"

#include <stddef.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* linux/prctl.h of Linux 6.3 and 6.7, which Debian 12's headers predate. */
#ifndef PR_GET_MDWE
#define PR_GET_MDWE 66
#endif
#ifndef PR_MDWE_REFUSE_EXEC_GAIN
#define PR_MDWE_REFUSE_EXEC_GAIN (1UL << 0)
#endif
#ifndef PR_MDWE_NO_INHERIT
#define PR_MDWE_NO_INHERIT (1UL << 1)
#endif

const char *kept_prctl_inherited(void) {
        int r = prctl(PR_GET_MDWE, 0, 0, 0, 0);
        /* PR_MDWE_NO_INHERIT: exec drops it, and so does fork. */
        if (r > 0 && (r & PR_MDWE_REFUSE_EXEC_GAIN) && !(r & PR_MDWE_NO_INHERIT))
                return "refuses memory both writable and executable (prctl PR_SET_MDWE, systemd's "
                       "MemoryDenyWriteExecute=)";
        int tsc = 0;
        if (prctl(PR_GET_TSC, &tsc, 0, 0, 0) == 0 && tsc == PR_TSC_SIGSEGV)
                return "may not read the time-stamp counter (prctl PR_SET_TSC)";
        r = prctl(PR_MCE_KILL_GET, 0, 0, 0, 0);
        if (r >= 0 && r != PR_MCE_KILL_DEFAULT)
                return "has a machine-check kill policy (prctl PR_MCE_KILL)";
        /* SECBIT_KEEP_CAPS is the one exec clears; the others stay (SECBIT_NO_SETUID_FIXUP: a root
         * program keeps its capabilities through setuid). Setting them needs CAP_SETPCAP. */
        r = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
        if (r > 0 && (r & ~SECBIT_KEEP_CAPS) != 0)
                return "has securebits set (prctl PR_SET_SECUREBITS, systemd's SecureBits=)";
        /* Not a prctl, but kept alike and shown nowhere else: a NUMA memory policy (numactl's
         * --membind, --preferred, --interleave). 0 is MPOL_DEFAULT. */
        int mode = 0;
        if (syscall(SYS_get_mempolicy, &mode, NULL, 0, NULL, 0) == 0 && mode != 0)
                return "has a NUMA memory policy (set_mempolicy, numactl)";
        return NULL;
}
