/* SPDX-License-Identifier: MIT */
/* libheadstart-probe.so: an LD_AUDIT module that records one launch as a timeline of JSON lines
 * (docs/schema/probe-trace.schema.json; docs/measuring.md says what each event means). The loader calls it at each step of start-up; it changes
 * nothing in the program except the one GOT slot that lets it see main entered. */
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "bindings.h"
#include "start-main.h"
#include "trace.h"

#define NO_OBJECT UINT32_MAX
/* headstart/profiling/after_main_trace.py looks for it; under /dev/null, it can never exist. */
#define PROBE_MAIN_MARK "/dev/null/headstart-probe-main"

static const struct link_map *program;
static unsigned n_objects; /* an object's cookie is its index in the order of mapping */
static bool enabled, relocated, main_entered, exited;
static bool count_bindings; /* every binding through la_symbind: costly, so asked for */
/* Stop at exit, so that the profiler can read the process's memory: only when the profiler is our
 * parent, so that the programs this one starts, which inherit the probe, never stop. */
static pid_t stop_at_exit_for;
static unsigned libc_index = NO_OBJECT; /* its cookie: the profiler stops the process when it closes */
static unsigned pending_requester = NO_OBJECT; /* who asked for the object being searched */
static char pending_name[256];

static void main_entered_now(void);

/* The launch request time from whoever started the program, in CLOCK_MONOTONIC nanoseconds. */
static void trace_launch_start(void) {
        const char *s = getenv("HEADSTART_LAUNCH_START_NS");
        char *end;
        unsigned long long v = s && *s ? strtoull(s, &end, 10) : 0;
        if (v && !*end)
                trace_u64("launch_start", v);
        else
                trace_null("launch_start");
}

static bool env_flag(const char *name) {
        const char *v = getenv(name);
        return v && *v && strcmp(v, "0") != 0;
}

unsigned la_version(unsigned version) {
        enabled = trace_open();
        if (enabled) {
                trace_begin("start", trace_now());
                trace_u64("probe", 1);
                trace_launch_start();
                trace_end();
        }
        start_main_on_entry(main_entered_now);
        count_bindings = env_flag("HEADSTART_PROBE_BINDINGS");
        const char *stopper = getenv("HEADSTART_PROBE_STOP_AT_EXIT");
        stop_at_exit_for = stopper ? (pid_t) strtol(stopper, NULL, 10) : 0;
        return version < LAV_CURRENT ? version : LAV_CURRENT;
}

/* Bytes spanned by the object's loadable segments, read from its program headers in memory. */
static uint64_t mapped_size(const struct link_map *map, bool is_program) {
        const ElfW(Phdr) *phdr;
        size_t phnum;
        if (is_program) {
                phdr = (const ElfW(Phdr) *) getauxval(AT_PHDR);
                phnum = getauxval(AT_PHNUM);
        } else {
                /* A library's first segment starts at offset 0, so its ELF header sits at its base. */
                const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *) map->l_addr;
                if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
                        return 0;
                phdr = (const ElfW(Phdr) *) ((const char *) eh + eh->e_phoff);
                phnum = eh->e_phnum;
        }
        uintptr_t low = UINTPTR_MAX, high = 0;
        for (size_t i = 0; phdr && i < phnum; i++)
                if (phdr[i].p_type == PT_LOAD) {
                        if (phdr[i].p_vaddr < low)
                                low = phdr[i].p_vaddr;
                        if (phdr[i].p_vaddr + phdr[i].p_memsz > high)
                                high = phdr[i].p_vaddr + phdr[i].p_memsz;
                }
        return high > low ? high - low : 0;
}

static const char *object_path(const struct link_map *map, bool is_program, char *buf, size_t size) {
        if (!is_program)
                return map->l_name;
        ssize_t n = readlink("/proc/self/exe", buf, size - 1);
        if (n < 0)
                return "";
        buf[n] = '\0';
        return buf;
}

char *la_objsearch(const char *name, uintptr_t *cookie, unsigned flag) {
        if (flag == LA_SER_ORIG) {
                pending_requester = (unsigned) *cookie;
                size_t n = strnlen(name, sizeof pending_name - 1);
                memcpy(pending_name, name, n);
                pending_name[n] = '\0';
        }
        return (char *) name;
}

static const char *kind_of(const struct link_map *map, unsigned index, Lmid_t lmid) {
        if (index == 0 && lmid == LM_ID_BASE)
                return "program";
        if (map->l_addr == getauxval(AT_SYSINFO_EHDR))
                return "vdso";
        if (map->l_addr == getauxval(AT_BASE))
                return "loader";
        return "library";
}

unsigned la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
        uint64_t t = trace_now();
        unsigned index = n_objects++;
        if (index == 0)
                program = map;
        const char *base_name = strrchr(map->l_name, '/');
        if (lmid == LM_ID_BASE && base_name && strcmp(base_name, "/libc.so.6") == 0)
                libc_index = index;
        *cookie = index;
        if (!enabled)
                return 0;
        const char *kind = kind_of(map, index, lmid);
        bool is_program = strcmp(kind, "program") == 0;
        char exe[4096];
        const char *path = object_path(map, is_program, exe, sizeof exe);
        const char *slash = strrchr(path, '/');
        trace_begin("map", t);
        trace_u64("index", index);
        trace_str("kind", kind);
        trace_str("name", slash ? slash + 1 : path);
        trace_str("path", path);
        trace_u64("base", map->l_addr);
        trace_u64("size", mapped_size(map, is_program));
        trace_u64("namespace", (uint64_t) lmid);
        if (pending_requester != NO_OBJECT) {
                trace_u64("needed_by", pending_requester);
                trace_str("needed_as", pending_name);
        } else {
                trace_null("needed_by");
                trace_null("needed_as");
        }
        trace_end();
        pending_requester = NO_OBJECT;
        /* Without counting, only the program's own PLT is audited: it may call __libc_start_main. */
        if (count_bindings)
                return LA_FLG_BINDTO | LA_FLG_BINDFROM;
        return is_program ? LA_FLG_BINDFROM : LA_FLG_BINDTO;
}

/* After main, each dlopen that maps new objects is bracketed by LA_ACT_ADD and LA_ACT_CONSISTENT
 * (glibc 2.36 dl-open.c: mapped, then relocated; their constructors run after): its loading cost.
 * Written out at once, so that a program stopped when ready (not at exit) keeps them. */
static void record_load_after_main(unsigned flag) {
        static bool adding;
        if (flag == LA_ACT_ADD && !adding) {
                adding = true;
                trace_begin("load_begin", trace_now());
                trace_end();
        } else if (flag == LA_ACT_CONSISTENT && adding) {
                adding = false;
                trace_begin("load_end", trace_now());
                trace_end();
                trace_flush();
        }
}

/* glibc reports the initial set consistent once every object is mapped and relocated. */
void la_activity(uintptr_t *cookie, unsigned flag) {
        (void) cookie;
        if (!enabled)
                return;
        if (main_entered && !exited) {
                record_load_after_main(flag);
                return;
        }
        if (flag != LA_ACT_CONSISTENT || relocated || !program)
                return;
        relocated = true;
        trace_begin("relocated", trace_now());
        trace_end();
        start_main_patch(program);
}

static void record_main(const char *via) {
        if (main_entered)
                return;
        uint64_t t = trace_now();
        main_entered = true;
        trace_begin("main", t);
        trace_str("via", via);
        trace_end();
        trace_flush();
        /* Where main is in a system-call trace of the launch (headstart profile's, by strace): a
         * path that cannot exist, looked up once. The flush is no mark: it also comes whenever the
         * buffer fills, which loading a program of 200 libraries does before main. */
        (void) access(PROBE_MAIN_MARK, F_OK);
}

static void main_entered_now(void) {
        record_main("libc_start_main");
}

/* Called by __libc_start_main after the constructors, just before main. */
void la_preinit(uintptr_t *cookie) {
        (void) cookie;
        if (!enabled)
                return;
        trace_begin("constructors_done", trace_now());
        trace_end();
        if (!start_main_caught())
                record_main("preinit"); /* no call of __libc_start_main was caught: the nearest point */
}

uintptr_t la_symbind64(ElfW(Sym) * sym, unsigned ndx, uintptr_t *refcook, uintptr_t *defcook, unsigned *flags,
                       const char *symname) {
        (void) ndx, (void) flags;
        if (!enabled)
                return sym->st_value;
        bindings_count((unsigned) *refcook, (unsigned) *defcook, main_entered);
        if (*refcook == 0 && !start_main_caught() && strcmp(symname, "__libc_start_main") == 0)
                return start_main_redirect(sym->st_value);
        return sym->st_value;
}

static void stop_for_profiler(void) {
        if (stop_at_exit_for > 0 && getppid() == stop_at_exit_for)
                kill(getpid(), SIGSTOP);
}

/* At exit the loader closes the objects, the program first, the C library last but for the
 * loader: the libraries' destructors run in between. The profiler reads the memory when the C
 * library closes, so that the pages those destructors touch count among the launch's. */
unsigned la_objclose(uintptr_t *cookie) {
        if (!enabled)
                return 0;
        if (*cookie == 0 && !exited) {
                exited = true;
                trace_begin("exit", trace_now());
                trace_end();
                bindings_emit();
                trace_flush();
                if (libc_index == NO_OBJECT)
                        stop_for_profiler();
        } else if (exited && *cookie == libc_index) {
                stop_for_profiler();
        }
        return 0;
}
