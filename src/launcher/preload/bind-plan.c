/* SPDX-License-Identifier: MIT */
#include "bind-plan.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch.h"
#include "loaded-relocs.h"
#include "macro.h"
#include "pointer-scan.h"

#define BIND_MAX_SLOTS 65536u
#define BIND_MAX_FIXUPS 4096u

/* The library variables with pointers into themselves that a copy may move, each shown by a test
 * with real programs to behave as under exec once moved. Under exec the library's references to
 * them bind to the program's copy: a constructor builds them there, and a relocation against their
 * own symbol points there. Each here is reached only through such references (its GOT slot, the
 * plan's slots redo them), has no pointer into it that the loader resolves locally (a relative
 * relocation) nor code that addresses it without its GOT, and the other pointers into it are in
 * writable memory, which pointer-scan.c finds. */
static const struct {
        const char *library; /* the start of the defining object's file name */
        const char *symbol;
} MOVABLE[] = {
        /* libstdc++'s standard streams, which ios_base::Init builds once and which point into
         * themselves (ios_base's _M_word) and at each other (cin, cerr and clog are tied to cout),
         * from nowhere else (tests/test_cxx_streams.py). */
        { "libstdc++.so.", "_ZSt4cout" },
        { "libstdc++.so.", "_ZSt4cerr" },
        { "libstdc++.so.", "_ZSt4clog" },
        { "libstdc++.so.", "_ZSt3cin" },
        { "libstdc++.so.", "_ZSt5wcout" },
        { "libstdc++.so.", "_ZSt5wcerr" },
        { "libstdc++.so.", "_ZSt5wclog" },
        { "libstdc++.so.", "_ZSt4wcin" },
        /* apt's c1out, an std::ostream its library's constructor builds (pointing into itself like
         * the streams): pointed at from elsewhere only by the C library's list of exit handlers,
         * which destroys it (apt-get, apt-mark: tests/test_moved_variables.py). */
        { "libapt-private.so.", "c1out" },
        /* libbfd's four standard sections, initialised by relocations against their own symbol
         * (output_section, symbol_ptr_ptr): exec points them, and libbfd's global symbols, at the
         * program's copy; no code of libbfd changes them before main (binutils' cross tools:
         * tests/test_moved_variables.py). */
        { "libbfd-", "_bfd_std_section" },
};

static bool movable(const char *file, const char *symbol) {
        const char *base = basename(file);
        for (size_t i = 0; i < ELEMENTSOF(MOVABLE); i++)
                if (strncmp(base, MOVABLE[i].library, strlen(MOVABLE[i].library)) == 0 &&
                    strcmp(symbol, MOVABLE[i].symbol) == 0)
                        return true;
        return false;
}

struct builder {
        const struct elf_export **sorted; /* the exports by name */
        size_t nsorted;
        struct bind_slot *slots;
        size_t nslots, cap;
        uintptr_t relro_start, relro_end;
        const struct interposed_list *interposed;
        const char *refused; /* the name of a symbol bound through a relocation we cannot redo */
};

static int cmp_export(const void *a, const void *b) {
        return strcmp((*(const struct elf_export *const *) a)->name, (*(const struct elf_export *const *) b)->name);
}

static int cmp_name(const void *key, const void *item) {
        return strcmp(key, (*(const struct elf_export *const *) item)->name);
}

/* Whether the loader would bind this reference to this definition (the version rules of glibc's
 * symbol lookup, for a definition in the executable). */
static bool binds_to(const struct elf_export *x, const struct loaded_reloc *r) {
        if (x->hidden)
                return r->version && x->version && strcmp(r->version, x->version) == 0;
        if (!x->version)
                return !r->hidden_version;
        return !r->version || strcmp(r->version, x->version) == 0;
}

static int add_slot(struct builder *b, const struct loaded_reloc *r, uint64_t value, bool absolute, bool same_code) {
        if (b->nslots == b->cap) {
                size_t cap = b->cap ? b->cap * 2 : 64;
                if (cap > BIND_MAX_SLOTS)
                        return -E2BIG;
                struct bind_slot *s = realloc(b->slots, cap * sizeof *s);
                if (!s)
                        return -ENOMEM;
                b->slots = s;
                b->cap = cap;
        }
        uintptr_t a = (uintptr_t) r->slot;
        b->slots[b->nslots++] = (struct bind_slot){
                .slot = a,
                .value = value + (uint64_t) r->addend,
                .relro = a >= b->relro_start && a < b->relro_end,
                .absolute = absolute,
                .same_code = same_code,
        };
        return 0;
}

/* Whether the word r filled, as the loader filled it without the program, points at the start of a
 * symbol of the name it refers to (a lazy slot still pointing into its PLT does not). */
static bool reaches_same_name(const struct loaded_reloc *r) {
        Dl_info info;
        void *target = (void *) (*r->slot + (uintptr_t) -r->addend);
        if (!dladdr(target, &info) || info.dli_saddr != target)
                return false;
        if (info.dli_sname && strcmp(info.dli_sname, r->name) == 0)
                return true;
        /* dladdr names one symbol of those at the address: a C++ constructor's or destructor's
         * variants (D1 and D2) are one function under two names. */
        void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        bool same = h && dlsym(h, r->name) == target;
        if (h)
                dlclose(h);
        return same;
}

/* A reference that exec binds to the program, or to a library that defines a symbol of the C
 * library again (an unversioned definition: only a reference to a non-default version misses it). */
static int visit_reloc(const struct loaded_reloc *r, void *userdata) {
        struct builder *b = userdata;
        const struct elf_export *const *found = bsearch(r->name, b->sorted, b->nsorted, sizeof *b->sorted, cmp_name);
        const struct interposed *i = found ? NULL : interposers_lookup(b->interposed, r->name);
        if (found ? !binds_to(*found, r) : !i || r->hidden_version)
                return 0;
        if (!loaded_reloc_is_address(r)) {
                b->refused = r->name;
                return -EPROTO;
        }
        bool alike = found && ((*found)->weak_function || (*found)->weak_type_info);
        return found ? add_slot(b, r, (*found)->value, false, alike && reaches_same_name(r))
                     : add_slot(b, r, i->address, true, false);
}

static int set_protection(uintptr_t page, size_t size, int prot) {
        return mprotect((void *) page, size, prot) < 0 ? -errno : 0;
}

static int cmp_slot(const void *a, const void *b) {
        const struct bind_slot *x = a, *y = b;
        return x->slot < y->slot ? -1 : x->slot > y->slot;
}

struct data_query {
        const char *name;
        uintptr_t base, start, end;
};

static int find_data(struct dl_phdr_info *info, size_t size, void *userdata) {
        (void) size;
        struct data_query *q = userdata;
        if (info->dlpi_addr != q->base || strcmp(info->dlpi_name, q->name) != 0)
                return 0;
        for (size_t i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
                        q->start = info->dlpi_addr + ph->p_vaddr;
                        q->end = q->start + ph->p_memsz;
                        return 1;
                }
        }
        return 1;
}

/* The writable data of the library that defines a moved variable, without its RELRO part (which
 * holds only what the loader relocated, and the binding plan redoes that): where the library's own
 * constructors leave pointers into the variable, as libstdc++'s leave cin's tie to cout. */
static void library_data(const void *source, struct bind_copy *c) {
        Dl_info info;
        struct link_map *l = NULL;
        if (!dladdr1(source, &info, (void **) &l, RTLD_DL_LINKMAP) || !l)
                return;
        struct data_query q = { .name = l->l_name, .base = l->l_addr };
        dl_iterate_phdr(find_data, &q);
        uintptr_t relro_start, relro_end;
        loaded_relro_range(l, &relro_start, &relro_end);
        if (relro_start <= q.start && relro_end > q.start)
                q.start = relro_end < q.end ? relro_end : q.end;
        c->data_start = q.start;
        c->data_end = q.end;
}

/* Why the variable at source cannot be copied as the loader would copy it, or NULL; c->moved set
 * when it is one of MOVABLE, whose pointers move along (whether or not it was built yet: under
 * GCC 12 the first constructor that includes <iostream> builds the streams, maybe a warm program's). */
static const char *copy_refusal(const struct elf_export *x, const void *source, struct bind_copy *c, char *buf,
                                size_t size) {
        Dl_info info;
        const ElfW(Sym) *sym = NULL;
        if (!dladdr1(source, &info, (void **) &sym, RTLD_DL_SYMENT) || !sym)
                return snprintf(buf, size, "copies the variable %s, whose definition the daemon cannot inspect",
                                x->name),
                       buf;
        if (sym->st_size != x->size)
                return snprintf(buf, size,
                                "copies %s as %llu bytes, but its library defines %llu: exec would warn or "
                                "truncate it",
                                x->name, (unsigned long long) x->size, (unsigned long long) sym->st_size),
                       buf;
        if (movable(info.dli_fname, x->name)) {
                c->moved = 1;
                library_data(source, c);
                return NULL;
        }
        /* An object that points into itself (a C++ stream, say) would keep pointing at the old place. */
        const uintptr_t lo = (uintptr_t) source, hi = lo + x->size;
        for (uintptr_t p = (lo + sizeof(uintptr_t) - 1) & ~(sizeof(uintptr_t) - 1); p + sizeof(uintptr_t) <= hi;
             p += sizeof(uintptr_t)) {
                uintptr_t v = *(const uintptr_t *) p;
                if (v >= lo && v < hi)
                        return snprintf(buf, size,
                                        "a library variable it copies holds pointers into itself: %s, whose bytes "
                                        "cannot simply move to the program's copy",
                                        x->name),
                               buf;
        }
        return NULL;
}

/* The variable the libraries use now: a library's that defines a C library variable again (which
 * the plan binds them to), else the first definition in the daemon's global scope (which may be the
 * daemon's own copy), else the first of the program's libraries that defines it. */
static void *copy_source(const struct elf_export *x, const struct interposed_list *interposed, void *const *handles,
                         size_t nhandles) {
        const struct interposed *i = x->hidden ? NULL : interposers_lookup(interposed, x->name);
        if (i)
                return (void *) (uintptr_t) i->address;
        void *p = x->version ? dlvsym(RTLD_DEFAULT, x->name, x->version) : dlsym(RTLD_DEFAULT, x->name);
        for (size_t i = 0; !p && i < nhandles; i++)
                p = x->version ? dlvsym(handles[i], x->name, x->version) : dlsym(handles[i], x->name);
        return p;
}

static const char *plan_copies(const struct elf_exports *ex, const struct interposed_list *interposed,
                               void *const *handles, size_t nhandles, struct bind_plan *plan, char *buf, size_t size) {
        size_t n = 0;
        for (size_t i = 0; i < ex->n; i++)
                n += ex->items[i].copied;
        if (n == 0)
                return NULL;
        plan->copies = calloc(n, sizeof *plan->copies);
        if (!plan->copies)
                return "out of memory";
        for (size_t i = 0; i < ex->n; i++) {
                const struct elf_export *x = &ex->items[i];
                if (!x->copied)
                        continue;
                void *source = copy_source(x, interposed, handles, nhandles);
                if (!source)
                        return snprintf(buf, size, "copies the variable %s, which none of its libraries defines",
                                        x->name),
                               buf;
                struct bind_copy c = { .offset = x->value, .source = (uintptr_t) source, .size = x->size,
                                       .sym_addr = x->copy_only ? x->sym_addr : 0, .shndx = x->shndx };
                const char *why = copy_refusal(x, source, &c, buf, size);
                if (why)
                        return why;
                plan->copies[plan->ncopies++] = c;
        }
        return NULL;
}

struct fixup_builder {
        struct bind_plan *plan;
        const size_t *copy_of; /* the copy each scanned range is the source of */
        size_t cap;
        /* The plan's copies and the scan's ranges, which hold the variables' addresses: words of
         * ours, not the program's. Moved, the plan's sources would point at the copies halfway
         * through the child's fixups (the child applies the plan in the zygote's memory), and
         * the pointers after them would stay unmoved. */
        struct scan_range own[2];
};

static int add_fixup(uintptr_t address, size_t range, void *userdata) {
        struct fixup_builder *b = userdata;
        struct bind_plan *plan = b->plan;
        for (size_t i = 0; i < ELEMENTSOF(b->own); i++)
                if (address >= b->own[i].lo && address < b->own[i].hi)
                        return 0;
        if (plan->nfixups == b->cap) {
                size_t cap = b->cap ? b->cap * 2 : 16;
                if (cap > BIND_MAX_FIXUPS)
                        return -E2BIG;
                struct bind_fixup *f = realloc(plan->fixups, cap * sizeof *f);
                if (!f)
                        return -ENOMEM;
                plan->fixups = f;
                b->cap = cap;
        }
        plan->fixups[plan->nfixups++] = (struct bind_fixup){ .address = address, .copy = b->copy_of[range] };
        return 0;
}

/* Every pointer this process holds into a variable that moves to the program's copy: the loader
 * of a fresh process would have built the variable there, and these pointers with it. */
static const char *plan_fixups(struct bind_plan *plan) {
        free(plan->fixups);
        plan->fixups = NULL;
        plan->nfixups = 0;
        size_t n = 0;
        for (uint32_t i = 0; i < plan->ncopies; i++)
                n += plan->copies[i].moved;
        if (n == 0)
                return NULL;
        _cleanup_free_ struct scan_range *ranges = calloc(n, sizeof *ranges);
        _cleanup_free_ size_t *copy_of = calloc(n, sizeof *copy_of);
        if (!ranges || !copy_of)
                return "out of memory";
        n = 0;
        for (uint32_t i = 0; i < plan->ncopies; i++)
                if (plan->copies[i].moved) {
                        const struct bind_copy *c = &plan->copies[i];
                        ranges[n] = (struct scan_range){ .lo = c->source, .hi = c->source + c->size };
                        copy_of[n++] = i;
                }
        struct fixup_builder b = {
                .plan = plan,
                .copy_of = copy_of,
                .own = { { (uintptr_t) plan->copies, (uintptr_t) (plan->copies + plan->ncopies) },
                         { (uintptr_t) ranges, (uintptr_t) (ranges + n) } },
        };
        int r = pointer_scan(ranges, n, add_fixup, &b);
        if (r == -E2BIG)
                return "a library variable it copies is pointed at from too many places to move it";
        return r < 0 ? "the daemon cannot read its own memory to move a library variable the program copies" : NULL;
}

static const char *plan_slots(const struct elf_exports *ex, const struct interposed_list *interposed,
                              void *const *handles, size_t nhandles, struct bind_plan *plan, char *buf, size_t size) {
        struct builder b = { .nsorted = ex->n, .interposed = interposed };
        b.sorted = calloc(ex->n, sizeof *b.sorted);
        if (!b.sorted)
                return "out of memory";
        for (size_t i = 0; i < ex->n; i++)
                b.sorted[i] = &ex->items[i];
        qsort(b.sorted, b.nsorted, sizeof *b.sorted, cmp_export);

        int r = 0;
        for (size_t i = 0; r == 0 && i < nhandles; i++) {
                struct link_map *l;
                if (dlinfo(handles[i], RTLD_DI_LINKMAP, &l) < 0)
                        continue;
                loaded_relro_range(l, &b.relro_start, &b.relro_end);
                r = loaded_relocs_walk(l, visit_reloc, &b);
        }
        free(b.sorted);
        if (r < 0) {
                free(b.slots);
                if (r == -EPROTO)
                        return snprintf(buf, size,
                                        "a library refers to %s, which exec would bind elsewhere, through a "
                                        "relocation the daemon cannot redo",
                                        b.refused),
                               buf;
                return r == -E2BIG ? "its libraries refer to too many of its symbols" : "out of memory";
        }
        if (b.nslots > 1)
                qsort(b.slots, b.nslots, sizeof *b.slots, cmp_slot);
        plan->slots = b.slots;
        plan->nslots = (uint32_t) b.nslots;
        return NULL;
}

/* The program's own references bind where the plan cannot see them yet (it is loaded at each
 * launch): the names go along, for bind_plan_apply to look up in the loaded program. */
static const char *plan_rebinds(const struct interposed_list *interposed, struct bind_plan *plan) {
        for (uint32_t i = 0; i < interposed->n; i++) {
                if (interposed->items[i].program_defines)
                        continue;
                struct interposed *r = realloc(plan->rebinds, (plan->nrebinds + 1) * sizeof *r);
                if (!r)
                        return "out of memory";
                plan->rebinds = r;
                r[plan->nrebinds++] = interposed->items[i];
        }
        return NULL;
}

const char *bind_plan_build(const struct elf_exports *ex, const struct string_list *closure, struct bind_plan *plan,
                            char *buf, size_t size) {
        *plan = (struct bind_plan){ 0 };
        if (ex->n == 0)
                return NULL;
        void **handles = calloc(closure->n ? closure->n : 1, sizeof *handles);
        if (!handles)
                return "out of memory";
        const char *why = NULL;
        size_t n = 0;
        for (; n < closure->n && !why; n++) {
                handles[n] = dlopen(closure->items[n], RTLD_LAZY | RTLD_NOLOAD);
                if (!handles[n]) {
                        snprintf(buf, size,
                                 "needs a library the daemon has not loaded to bind its libraries to it as exec "
                                 "would: %s; register the program (--app) so that its libraries are preloaded",
                                 closure->items[n]);
                        why = buf;
                }
        }
        struct interposed_list interposed = { 0 };
        if (!why)
                why = interposers_find(ex, closure, handles, &interposed, buf, size);
        if (!why)
                why = plan_copies(ex, &interposed, handles, n, plan, buf, size);
        if (!why)
                why = plan_slots(ex, &interposed, handles, n, plan, buf, size);
        if (!why)
                why = plan_fixups(plan);
        if (!why)
                why = plan_rebinds(&interposed, plan);
        interposed_list_done(&interposed);
        for (size_t i = 0; i < n; i++)
                if (handles[i])
                        dlclose(handles[i]);
        free(handles);
        if (why)
                bind_plan_done(plan);
        return why;
}

const char *bind_plan_rescan(struct bind_plan *plan) {
        return plan_fixups(plan);
}

void bind_plan_done(struct bind_plan *plan) {
        free(plan->copies);
        free(plan->slots);
        free(plan->fixups);
        free(plan->rebinds);
        *plan = (struct bind_plan){ 0 };
}


/* The value a pointer into a moved variable's old place gets in the program's copy, or v itself. */
static uintptr_t moved_value(const struct bind_plan *plan, uintptr_t base, uintptr_t v) {
        for (uint32_t i = 0; i < plan->ncopies; i++) {
                const struct bind_copy *c = &plan->copies[i];
                if (c->moved && v >= c->source && v < c->source + c->size)
                        return v - c->source + base + c->offset;
        }
        return v;
}

/* The copy's own words that point into a moved variable (into itself, or a stream into the one it
 * is tied to), as they would have been built in the program's copies. */
static void move_inside(const struct bind_plan *plan, uintptr_t base, uintptr_t to, uint64_t size) {
        for (uintptr_t p = (to + sizeof(uintptr_t) - 1) & ~(sizeof(uintptr_t) - 1); p + sizeof(uintptr_t) <= to + size;
             p += sizeof(uintptr_t)) {
                uintptr_t v;
                memcpy(&v, (const void *) p, sizeof v);
                uintptr_t w = moved_value(plan, base, v);
                if (w != v)
                        memcpy((void *) p, &w, sizeof w);
        }
}

static bool in_moved(const struct bind_plan *plan, uintptr_t p) {
        for (uint32_t i = 0; i < plan->ncopies; i++)
                if (plan->copies[i].moved && p >= plan->copies[i].source && p < plan->copies[i].source + plan->copies[i].size)
                        return true;
        return false;
}

/* The defining libraries' own data, read now: a stream built in this child, after the plan was
 * made, left its pointers there (cin's tie). The old variables themselves stay as they are. */
static void move_in_library_data(const struct bind_plan *plan, uintptr_t base) {
        for (uint32_t i = 0; i < plan->ncopies; i++) {
                const struct bind_copy *c = &plan->copies[i];
                bool seen = false;
                for (uint32_t j = 0; j < i && !seen; j++)
                        seen = plan->copies[j].data_start == c->data_start && plan->copies[j].moved;
                if (!c->moved || seen || c->data_start >= c->data_end)
                        continue;
                for (uintptr_t p = (c->data_start + sizeof(uintptr_t) - 1) & ~(sizeof(uintptr_t) - 1);
                     p + sizeof(uintptr_t) <= c->data_end; p += sizeof(uintptr_t)) {
                        if (in_moved(plan, p))
                                continue;
                        uintptr_t v = *(const uintptr_t *) p;
                        uintptr_t w = moved_value(plan, base, v);
                        if (w != v)
                                *(uintptr_t *) p = w;
                }
        }
}

/* The pointers found elsewhere when the plan was made (pointer-scan.h), through /proc/self/mem: a
 * word that is no longer mapped is an error rather than a fault, and one that no longer points into
 * the variable is left alone. */
static int move_fixups(const struct bind_plan *plan, uintptr_t base) {
        if (plan->nfixups == 0)
                return 0;
        _cleanup_close_ int mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
        if (mem < 0)
                return -errno;
        for (uint32_t i = 0; i < plan->nfixups; i++) {
                const struct bind_fixup *f = &plan->fixups[i];
                uintptr_t v;
                if (pread(mem, &v, sizeof v, (off_t) f->address) != (ssize_t) sizeof v)
                        return -EFAULT;
                uintptr_t w = moved_value(plan, base, v);
                if (w != v && pwrite(mem, &w, sizeof w, (off_t) f->address) != (ssize_t) sizeof w)
                        return -EFAULT;
        }
        return 0;
}

/* The copied variables' symbols, undefined in the loaded image (image-cache.c), defined again in
 * memory, through /proc/self/mem since the symbol table is read-only: only where they differ. */
static int restore_symbols(const struct bind_plan *plan, uintptr_t base) {
        int mem = -1, r = 0;
        for (uint32_t i = 0; r == 0 && i < plan->ncopies; i++) {
                const struct bind_copy *c = &plan->copies[i];
                if (!c->sym_addr)
                        continue;
                ElfW(Sym) now, want;
                memcpy(&now, (const void *) (uintptr_t) (base + c->sym_addr), sizeof now);
                want = now;
                want.st_shndx = (uint16_t) c->shndx;
                want.st_value = c->offset;
                if (memcmp(&now, &want, sizeof now) == 0)
                        continue;
                if (mem < 0 && (mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC)) < 0)
                        return -errno;
                if (pwrite(mem, &want, sizeof want, (off_t) (base + c->sym_addr)) != (ssize_t) sizeof want)
                        r = -EFAULT;
        }
        if (mem >= 0)
                close(mem);
        return r;
}

/* Copies of read-only data sit in the program's RELRO range, which dlopen has made read-only. */
static int fill_copies(const struct bind_plan *plan, const struct link_map *program, size_t page_size) {
        if (plan->ncopies == 0)
                return 0; /* the RELRO lookup walks every loaded object: not on the launch path for nothing */
        uintptr_t relro_start, relro_end;
        loaded_relro_range(program, &relro_start, &relro_end);
        for (uint32_t i = 0; i < plan->ncopies; i++) {
                const struct bind_copy *c = &plan->copies[i];
                uintptr_t to = program->l_addr + c->offset;
                bool relro = to < relro_end && to + c->size > relro_start;
                uintptr_t first = to & ~(page_size - 1), end = (to + c->size + page_size - 1) & ~(page_size - 1);
                int r = relro ? set_protection(first, end - first, PROT_READ | PROT_WRITE) : 0;
                if (r < 0)
                        return r;
                memcpy((void *) to, (const void *) (uintptr_t) c->source, c->size);
                if (plan->nfixups || c->moved)
                        move_inside(plan, program->l_addr, to, c->size);
                r = relro ? set_protection(first, end - first, PROT_READ) : 0;
                if (r < 0)
                        return r;
        }
        move_in_library_data(plan, program->l_addr);
        int r = move_fixups(plan, program->l_addr);
        return r < 0 ? r : restore_symbols(plan, program->l_addr);
}

struct program_rebind {
        const struct bind_plan *plan;
        uintptr_t relro_start, relro_end;
};

static int rebind_reloc(const struct loaded_reloc *r, void *userdata) {
        const struct program_rebind *p = userdata;
        const struct interposed_list list = { .items = p->plan->rebinds, .n = p->plan->nrebinds };
        const struct interposed *i = interposers_lookup(&list, r->name);
        if (!i || r->hidden_version)
                return 0;
        return loaded_reloc_is_address(r) ? loaded_slot_write(r->slot, (uintptr_t) (i->address + (uint64_t) r->addend), p->relro_start,
                                               p->relro_end)
                           : -EPROTO;
}

/* The program's own references to what a library defines again of the C library: dlopen bound
 * them to the daemon's C library, exec to that library. */
static int rebind_program(const struct bind_plan *plan, const struct link_map *program) {
        if (plan->nrebinds == 0)
                return 0;
        struct program_rebind p = { .plan = plan };
        loaded_relro_range(program, &p.relro_start, &p.relro_end);
        return loaded_relocs_walk(program, rebind_reloc, &p);
}

int bind_plan_apply(const struct bind_plan *plan, const struct link_map *program) {
        const size_t page_size = (size_t) sysconf(_SC_PAGESIZE);
        const uintptr_t base = program->l_addr;
        int r = fill_copies(plan, program, page_size);
        if (r >= 0)
                r = rebind_program(plan, program);
        if (r < 0)
                return r;
        /* Slots are sorted: a read-only page is opened once for all its slots. */
        uintptr_t open_page = 0;
        for (uint32_t i = 0; i < plan->nslots; i++) {
                const struct bind_slot *s = &plan->slots[i];
                uintptr_t page = (uintptr_t) s->slot & ~(page_size - 1);
                if (open_page && page != open_page) {
                        r = set_protection(open_page, page_size, PROT_READ);
                        if (r < 0)
                                return r;
                        open_page = 0;
                }
                if (s->relro && !open_page) {
                        r = set_protection(page, page_size, PROT_READ | PROT_WRITE);
                        if (r < 0)
                                return r;
                        open_page = page;
                }
                *(uintptr_t *) (uintptr_t) s->slot = s->absolute ? s->value : base + s->value;
        }
        return open_page ? set_protection(open_page, page_size, PROT_READ) : 0;
}

/* The bytes: a header of four uint32_t (ncopies, nslots, nfixups, nrebinds), then each array. */
#define PLAN_HEADER (4 * sizeof(uint32_t))

size_t bind_plan_size(const struct bind_plan *plan) {
        return PLAN_HEADER + plan->ncopies * sizeof(struct bind_copy) + plan->nslots * sizeof(struct bind_slot) +
               plan->nfixups * sizeof(struct bind_fixup) + plan->nrebinds * sizeof(struct interposed);
}

void bind_plan_write(const struct bind_plan *plan, void *buf) {
        uint32_t counts[4] = { plan->ncopies, plan->nslots, plan->nfixups, plan->nrebinds };
        uint8_t *p = buf;
        memcpy(p, counts, sizeof counts);
        p += PLAN_HEADER;
        if (plan->ncopies)
                memcpy(p, plan->copies, plan->ncopies * sizeof(struct bind_copy));
        p += plan->ncopies * sizeof(struct bind_copy);
        if (plan->nslots)
                memcpy(p, plan->slots, plan->nslots * sizeof(struct bind_slot));
        p += plan->nslots * sizeof(struct bind_slot);
        if (plan->nfixups)
                memcpy(p, plan->fixups, plan->nfixups * sizeof(struct bind_fixup));
        p += plan->nfixups * sizeof(struct bind_fixup);
        if (plan->nrebinds)
                memcpy(p, plan->rebinds, plan->nrebinds * sizeof(struct interposed));
}

int bind_plan_parse(const void *buf, size_t size, struct bind_plan *ret) {
        uint32_t counts[4];
        if (size < PLAN_HEADER)
                return -EBADMSG;
        memcpy(counts, buf, sizeof counts);
        struct bind_plan p = { .ncopies = counts[0], .nslots = counts[1], .nfixups = counts[2], .nrebinds = counts[3] };
        if (counts[0] > size || counts[1] > BIND_MAX_SLOTS || counts[2] > BIND_MAX_FIXUPS || counts[3] > size ||
            bind_plan_size(&p) != size)
                return -EBADMSG;
        const uint8_t *b = (const uint8_t *) buf + PLAN_HEADER;
        p.copies = (struct bind_copy *) (uintptr_t) b;
        p.slots = (struct bind_slot *) (uintptr_t) (b + p.ncopies * sizeof(struct bind_copy));
        p.fixups = (struct bind_fixup *) (uintptr_t) ((const uint8_t *) p.slots + p.nslots * sizeof(struct bind_slot));
        p.rebinds = (struct interposed *) (uintptr_t) ((const uint8_t *) p.fixups + p.nfixups * sizeof(struct bind_fixup));
        for (uint32_t i = 0; i < p.nrebinds; i++)
                if (memchr(p.rebinds[i].name, 0, sizeof p.rebinds[i].name) == NULL)
                        return -EBADMSG;
        *ret = p;
        return 0;
}
