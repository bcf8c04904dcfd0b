/* SPDX-License-Identifier: MIT */
#include "eligibility.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

#include "tls-reserve.h"

int program_facts_read(int fd, bool registered, struct program_facts *ret) {
        struct program_facts f = { .registered = registered };

        if (fstat(fd, &f.st) < 0)
                return -errno;
        int r = elf_info_read(fd, &f.elf);
        if (r < 0)
                return r;
        /* Any security.capability attribute gives rights on exec that a fork of ours would not have. */
        ssize_t n = fgetxattr(fd, "security.capability", NULL, 0);
        f.has_capabilities = n > 0;
        *ret = f;
        return 0;
}

bool eligibility_has_entry(const struct elf_info *e) {
        return e->has_interp && e->entry != 0;
}

const char *eligibility_verdict(const struct program_facts *f, const char *interp, char *buf, size_t size) {
        const struct elf_info *e = &f->elf;

        /* Rights first: these must never be served, whatever else holds. */
        if (f->st.st_mode & (S_ISUID | S_ISGID))
                return "set-user-ID or set-group-ID: only exec gives it its owner's rights";
        if (f->has_capabilities)
                return "has file capabilities: only exec grants them";
        if (!e->is_elf)
                return "not an ELF file (a script?): exec runs it through its interpreter";
        if (!e->is_64bit || !e->machine_matches)
                return "built for another architecture or word size than the daemon";
        if (!e->has_dynamic)
                return "statically linked: there is no dynamic loader to share";
        if (!e->is_dyn)
                return "not position-independent (ET_EXEC): it must be loaded at a fixed address";
        if (e->has_interp && strcmp(e->interp, interp) != 0) {
                snprintf(buf, size, "asks for the dynamic loader %s, not the daemon's %s", e->interp, interp);
                return buf;
        }
        if (!e->has_interp && e->needed == 0)
                return "static PIE: there is no dynamic loader to share";
        const char *tls = e->has_tls ? tls_reserve_verdict(e, buf, size) : NULL;
        if (tls)
                return tls;
        if (e->needs_sanitizer_runtime)
                return ELIGIBILITY_SANITIZER;
        if (e->has_preinit)
                return "has DT_PREINIT_ARRAY, which the loader runs only for a program started by exec";
        if (e->reads_own_exe)
                return "looks at /proc/self/exe, which shows the daemon in a served program";
        if (!eligibility_has_entry(e) && !e->exports_main)
                return "a shared object that does not export main: there is nothing to run";
        if (!f->registered && (e->has_rpath || e->origin_in_path))
                return "uses DT_RPATH or $ORIGIN and is not registered with --app: its libraries could "
                       "resolve differently than under exec";
        return NULL;
}
