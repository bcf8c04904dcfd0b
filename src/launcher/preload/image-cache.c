/* SPDX-License-Identifier: MIT */
#include "image-cache.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "eligibility.h"
#include "learn.h"
#include "preload.h"
#include "macro.h"
#include "private-dir.h"
#include "qt-registrations.h"
#include "tls-reserve.h"

static void entry_clear(struct image_entry *e) {
        if (e->fd >= 0)
                close(e->fd);
        free(e->copy);
        free(e->path);
        free(e->reason);
        bind_plan_done(&e->plan);
        exit_registrations_done(&e->start.exits);
        *e = (struct image_entry){ .fd = -1 };
}

/* Empties and removes the directory `name` under dirfd, which holds only files. */
static void remove_dir(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        (void) unlinkat(fd, de->d_name, 0);
        closedir(d);
        (void) unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* Each daemon process keeps its copies in a directory named after its pid, because an old zygote
 * and its successor run side by side during a refresh. */
#define COPIES_DIR_PREFIX "headstartd-"

/* The directories of daemon processes that are gone. Nothing else: the cache directory may be a
 * folder of the user's (--cache-dir ~/.cache), whose files are not ours to remove. */
static void remove_left_overs(int dirfd) {
        DIR *d = fdopendir(dirfd);
        if (!d) {
                close(dirfd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                const char *digits = de->d_name + strlen(COPIES_DIR_PREFIX);
                if (strncmp(de->d_name, COPIES_DIR_PREFIX, strlen(COPIES_DIR_PREFIX)) != 0 ||
                    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
                        continue;
                char *end;
                long pid = strtol(digits, &end, 10);
                if (*end != '\0' || end == digits || pid <= 0 || kill((pid_t) pid, 0) == 0 || errno == EPERM)
                        continue;
                remove_dir(dirfd, de->d_name);
        }
        closedir(d);
}

int image_cache_init(struct image_cache *c, const char *dir, const char *interp, const char **ret_why) {
        *c = (struct image_cache){ .interp = interp, .dir_fd = -1 };
        for (unsigned i = 0; i < IMAGE_CACHE_SIZE; i++)
                c->entries[i].fd = -1;
        *ret_why = NULL;
        /* Under socket activation nobody has created the socket's directory for us. */
        _cleanup_free_ char *parent = strdup(dir);
        if (!parent)
                return -ENOMEM;
        if (mkdir(dirname(parent), 0700) < 0 && errno != EEXIST)
                return -errno;
        /* What we load is copied here: a directory someone else can write to would let them swap
         * in a file of their own. */
        int fd = private_dir_open(dir, ret_why);
        if (fd < 0)
                return fd;
        /* Debian's initramfs mounts /run noexec: every launch failed there ("failed to map segment"),
         * each one exec'd instead, with nothing said at start. */
        struct statvfs sv;
        if (fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_NOEXEC)) {
                close(fd);
                *ret_why = "its file system is mounted noexec, so the copies of programs made there cannot run";
                return -EPERM;
        }
        remove_left_overs(fd);
        if (asprintf(&c->dir, "%s/" COPIES_DIR_PREFIX "%d", dir, (int) getpid()) < 0) {
                c->dir = NULL;
                return -ENOMEM;
        }
        c->dir_fd = private_dir_open(c->dir, ret_why);
        return c->dir_fd < 0 ? c->dir_fd : 0;
}

void image_cache_done(struct image_cache *c) {
        for (unsigned i = 0; i < IMAGE_CACHE_SIZE; i++)
                entry_clear(&c->entries[i]);
        if (c->dir) {
                _cleanup_free_ char *copy = strdup(c->dir);
                if (copy)
                        remove_dir(AT_FDCWD, copy);
        }
        if (c->dir_fd >= 0)
                close(c->dir_fd);
        c->dir_fd = -1;
        free(c->dir);
        c->dir = NULL;
}

void image_entry_load_name(const struct image_entry *e, char *buf, size_t size) {
        snprintf(buf, size, "/proc/%d/fd/%d", (int) getpid(), e->fd);
}

static int copy_fd(int from, int to, off_t size) {
        off_t off = 0;
        while (off < size) {
                ssize_t n = sendfile(to, from, &off, (size_t) (size - off));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
        }
        return 0;
}

static int clear_pie_flag(int fd, off_t offset) {
        uint64_t v;
        if (pread(fd, &v, sizeof v, offset) != (ssize_t) sizeof v)
                return -EIO;
        v &= ~(uint64_t) DF_1_PIE;
        if (pwrite(fd, &v, sizeof v, offset) != (ssize_t) sizeof v)
                return -EIO;
        return 0;
}

/* In the copy, the variables that the program's copy relocations fill are undefined: dlopen looks
 * a copy relocation up in the object's own scope, where the program itself comes first and would
 * be copied onto itself (leaving zeros for its constructors), while exec's loader skips the
 * executable. Undefined and without a value, the lookup finds the library's variable and copies it before any
 * constructor runs, as under exec; each launch restores the symbols in memory (bind-plan.c), so
 * that what the program loads later binds to its copies. */
static int undefine_copies(const struct elf_exports *ex, int out) {
        for (size_t i = 0; i < ex->n; i++) {
                const struct elf_export *x = &ex->items[i];
                Elf64_Sym sym;
                if (!x->copy_only)
                        continue;
                if (pread(out, &sym, sizeof sym, (off_t) x->sym_offset) != (ssize_t) sizeof sym)
                        return -EIO;
                /* glibc's lookup skips an undefined symbol only for a PLT reference; for data it
                 * skips the ones without a value. */
                sym.st_shndx = SHN_UNDEF;
                sym.st_value = 0;
                if (pwrite(out, &sym, sizeof sym, (off_t) x->sym_offset) != (ssize_t) sizeof sym)
                        return -EIO;
        }
        return 0;
}

/* In the copy, dlopen finds no constructor of the program's own: it would call them with the
 * daemon's argc and argv (constructors.h). DT_INIT becomes an empty DT_DEBUG, which the loader
 * reads only for the main program, and DT_INIT_ARRAYSZ 0. */
static int hide_constructors(int out, const struct elf_info *elf) {
        const Elf64_Dyn debug = { .d_tag = DT_DEBUG, .d_un.d_ptr = 0 };
        const uint64_t none = 0;
        if (elf->init && pwrite(out, &debug, sizeof debug, elf->init_tag_offset) != (ssize_t) sizeof debug)
                return -EIO;
        if (elf->init_arraysz && pwrite(out, &none, sizeof none, elf->init_arraysz_offset) != (ssize_t) sizeof none)
                return -EIO;
        return 0;
}

/* The program's bytes into out, made loadable by dlopen: the PIE flag cleared, copy relocations
 * undefined (undefine_copies says why), its constructors hidden (hide_constructors). */
static int write_loadable(int fd, int out, off_t size, const struct elf_info *elf, const struct elf_exports *ex) {
        int r = copy_fd(fd, out, size);
        if (r >= 0 && elf->pie_flag)
                r = clear_pie_flag(out, elf->flags_1_offset);
        if (r >= 0)
                r = undefine_copies(ex, out);
        if (r >= 0)
                r = hide_constructors(out, elf);
        return r;
}

/* Writes a loadable copy under a temporary name and renames it into place only if the source did
 * not change while we copied it, so that a copy never mixes two versions of a file. The copy is
 * loaded through the fd returned, never by its name. */
static int make_copy(struct image_cache *c, int fd, const char *path, const struct stat *st,
                     const struct elf_info *elf, const struct elf_exports *ex, struct image_entry *e) {
        _cleanup_free_ char *base_copy = strdup(path);
        if (!base_copy)
                return -ENOMEM;
        char final[4096], temp[64];
        snprintf(final, sizeof final, "%lx-%lx-%lx-%lx.%09ld-%lx.%09ld-%s", (unsigned long) st->st_dev,
                 (unsigned long) st->st_ino, (unsigned long) st->st_size, (unsigned long) st->st_mtim.tv_sec,
                 st->st_mtim.tv_nsec, (unsigned long) st->st_ctim.tv_sec, st->st_ctim.tv_nsec, basename(base_copy));
        snprintf(temp, sizeof temp, ".tmp-%d", (int) getpid());

        _cleanup_close_ int out = openat(c->dir_fd, temp, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0500);
        if (out < 0)
                return -errno;
        int r = write_loadable(fd, out, st->st_size, elf, ex);
        struct stat now;
        if (r >= 0 && fstat(fd, &now) < 0)
                r = -errno;
        struct file_identity copied = file_identity_of(st);
        if (r >= 0 && !file_identity_matches(&copied, &now))
                r = -ESTALE;
        if (r >= 0 && renameat(c->dir_fd, temp, c->dir_fd, final) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(c->dir_fd, temp, 0);
                return r;
        }
        e->copy = strdup(final);
        if (!e->copy)
                return -ENOMEM;
        e->fd = TAKE_FD(out);
        return 0;
}

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U /* Linux 6.3: asked for where vm.memfd_noexec would refuse it otherwise */
#endif

int image_loadable_memfd(int fd, off_t size, const struct elf_info *elf) {
        _cleanup_close_ int out = memfd_create("headstart-program", MFD_CLOEXEC | MFD_EXEC);
        if (out < 0 && errno == EINVAL) /* a kernel before 6.3 */
                out = memfd_create("headstart-program", MFD_CLOEXEC);
        if (out < 0)
                return -errno;
        struct elf_exports ex;
        int r = elf_exports_read(fd, &ex);
        if (r >= 0)
                r = write_loadable(fd, out, size, elf, &ex);
        elf_exports_done(&ex);
        return r < 0 ? r : TAKE_FD(out);
}

/* plan_binding's answer when the loader took too long: a machine busy for a moment (a device at boot)
 * as much as a library that blocks it, so it is not kept as the file's verdict; asked again next time. */
static const char LOADER_TIMED_OUT[] = "the dynamic loader did not list its libraries in time";

/* qt-registrations.h's verdict, for a program whose own objects are its file, its libraries, and
 * what the zygote learned it loads after main (which under exec registers with Qt too, only later). */
static const char *qt_registrations_refusal(const struct image_cache *c, const char *path, const struct stat *st,
                                            const struct string_list *libs, char *buf, size_t size) {
        struct string_list after_main = { 0 };
        int r = c->learned ? learned_preloaded_paths_of(c->learned, path, &after_main) : 0;
        const char *why = r < 0 ? "out of memory" :
                                  qt_registrations_verdict(st->st_dev, st->st_ino, libs, &after_main, buf, size);
        string_list_done(&after_main);
        return why;
}

/* The program's libraries as the loader resolves them, into libs. Returns NULL or why not. */
static const char *resolve_closure(const struct image_cache *c, const char *path, struct string_list *libs) {
        int r = preload_resolve_closure(c->interp, path, libs, NULL, PRELOAD_LIST_LAUNCH_TIMEOUT_MS);
        return r == -ETIMEDOUT ? LOADER_TIMED_OUT : r < 0 ? "the dynamic loader cannot resolve its libraries" : NULL;
}

/* Plans how its libraries bind to the program (see bind-plan.h), whose libraries are closure (as the
 * loader resolves them), or the loader is asked when closure is NULL. Returns NULL or why not. */
static const char *plan_binding(struct image_cache *c, const struct elf_exports *ex, const char *path,
                                const struct stat *st, const struct string_list *closure, struct image_entry *e,
                                char *buf, size_t size) {
        e->plan = (struct bind_plan){ 0 };
        bool registrations = qt_registrations_any();
        if (ex->n == 0 && !registrations) /* nothing of the program's for a library to bind to */
                return NULL;
        struct string_list libs = { 0 };
        const char *why = NULL;
        if (closure) {
                for (size_t i = 0; i < closure->n && !why; i++)
                        if (string_list_add(&libs, closure->items[i]) < 0)
                                why = "out of memory";
        } else
                why = resolve_closure(c, path, &libs);
        if (!why && registrations)
                why = qt_registrations_refusal(c, path, st, &libs, buf, size);
        /* Under exec, what the program loads after main binds to it first too. */
        for (size_t i = 0; !why && c->also_loaded && i < c->also_loaded->n; i++)
                if (!string_list_contains(&libs, c->also_loaded->items[i]) &&
                    string_list_add(&libs, c->also_loaded->items[i]) < 0)
                        why = "out of memory";
        if (!why && ex->n > 0)
                why = bind_plan_build(ex, &libs, &e->plan, buf, size);
        string_list_done(&libs);
        return why;
}

/* A program whose run path has $ORIGIN finds its libraries beside its file, but the daemon loads it
 * from a copy or a descriptor, where $ORIGIN is another folder: a library is then found only as one
 * already loaded, which the loader matches by its DT_SONAME (the zygote loaded it by path). One
 * without (a build tree's library linked without -soname) is not found, and every launch failed in
 * the child (a new user's trial). Returns NULL or why not. */
static const char *origin_libraries_verdict(const struct string_list *libs, char *buf, size_t size) {
        for (size_t i = 0; i < libs->n; i++) {
                _cleanup_close_ int fd = open(libs->items[i], O_RDONLY | O_CLOEXEC);
                struct elf_info info;
                if (fd >= 0 && elf_info_read(fd, &info) >= 0 && !info.has_soname) {
                        snprintf(buf, size,
                                 "it finds libraries through $ORIGIN, and %s has no SONAME: loaded from the "
                                 "daemon's copy, the program would not find it there",
                                 libs->items[i]);
                        return buf;
                }
        }
        return NULL;
}

/* A PIE (DF_1_PIE, which dlopen refuses), or any executable (one linked before that flag existed):
 * its constructors are the launch's to call (hide_constructors). A shared object exporting main is
 * loaded as it is. */
static bool needs_copy(const struct elf_info *elf) {
        return elf->pie_flag || eligibility_has_entry(elf);
}

static int build_entry(struct image_cache *c, int fd, const char *path, bool registered,
                       const struct string_list *closure, const struct stat *st, struct image_entry *e) {
        struct program_facts facts;
        char buf[512];

        int r = program_facts_read(fd, registered, &facts);
        if (r < 0)
                return r;
        /* The facts come from the same fd; a change since the caller's fstat is a new version. */
        if (facts.st.st_ino != st->st_ino || facts.st.st_size != st->st_size)
                return -ESTALE;

        _cleanup_(elf_exports_done) struct elf_exports ex = { 0 };
        const char *reason = eligibility_verdict(&facts, c->interp, buf, sizeof buf);
        if (!reason && elf_exports_read(fd, &ex) < 0)
                reason = "its dynamic symbols cannot be read";
        /* Both checks below read the closure: asked of the loader once when the caller has none. */
        struct string_list resolved = { 0 };
        if (!reason && facts.elf.origin_in_path && !closure && !(reason = resolve_closure(c, path, &resolved)))
                closure = &resolved;
        if (!reason && facts.elf.origin_in_path)
                reason = origin_libraries_verdict(closure, buf, sizeof buf);
        if (!reason)
                reason = plan_binding(c, &ex, path, st, closure, e, buf, sizeof buf);
        string_list_done(&resolved);
        if (reason == LOADER_TIMED_OUT)
                return -ETIMEDOUT;
        /* The dynamic loader resolved the closure by path: it must have been this file. If the path
         * names another one now (just replaced, another mount namespace), this launch is declined
         * and nothing is kept. */
        struct stat now;
        if (!reason && (stat(path, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino))
                return -ESTALE;
        if (reason)
                e->reason = strdup(reason);
        else if (needs_copy(&facts.elf))
                r = make_copy(c, fd, path, st, &facts.elf, &ex, e);
        else if ((e->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0)
                r = -errno;
        if (r < 0)
                return r;
        e->start = (struct image_start){ .entry = facts.elf.entry, .phdr = facts.elf.phdr_vaddr,
                                         .phnum = facts.elf.phnum,
                                         .executable = eligibility_has_entry(&facts.elf) };
        if (!reason && needs_copy(&facts.elf)) /* only the copy hides them */
                e->start.constructors = (struct program_constructors){
                        .init = facts.elf.init, .array = facts.elf.init_array, .count = facts.elf.init_arraysz / 8
                };
        if (!reason && facts.elf.has_tls)
                e->start.tls = (struct program_tls){ .offset = facts.elf.tls_offset, .filesz = facts.elf.tls_filesz,
                                                     .block_offset = tls_block_offset(&facts.elf) };
        if (!e->reason && e->fd < 0)
                return -ENOMEM;
        e->own_fini = facts.elf.own_fini;
        e->id = file_identity_of(st);
        return 0;
}

static void entry_forget(struct image_cache *c, struct image_entry *e) {
        if (e->copy)
                (void) unlinkat(c->dir_fd, e->copy, 0);
        entry_clear(e);
}

/* The entries of the other versions of the file at path: a program rebuilt or copied over in a
 * build's loop is asked for by its path again, never its old version, and each version kept holds a
 * copy of the program in the cache directory (XDG_RUNTIME_DIR: memory) and its file open (a deleted
 * one's blocks). Warm entries stay: their image is loaded in the daemon for good. */
static void forget_other_versions(struct image_cache *c, const char *path) {
        for (unsigned i = 0; i < IMAGE_CACHE_SIZE; i++) {
                struct image_entry *e = &c->entries[i];
                if (!e->warm && e->path && strcmp(e->path, path) == 0)
                        entry_forget(c, e);
        }
}

int image_cache_get(struct image_cache *c, int fd, const struct stat *st, const char *path, bool registered,
                    const struct string_list *closure, struct image_entry **ret) {
        for (unsigned i = 0; i < IMAGE_CACHE_SIZE; i++)
                if ((c->entries[i].fd >= 0 || c->entries[i].reason) && file_identity_matches(&c->entries[i].id, st)) {
                        *ret = &c->entries[i];
                        return 0;
                }

        forget_other_versions(c, path);
        for (unsigned tries = 0; c->entries[c->next].warm && tries < IMAGE_CACHE_SIZE; tries++)
                c->next = (c->next + 1) % IMAGE_CACHE_SIZE;
        struct image_entry *e = &c->entries[c->next];
        if (e->warm)
                return -ENOSPC;
        entry_forget(c, e);
        int r = build_entry(c, fd, path, registered, closure, st, e);
        if (r < 0) {
                entry_clear(e);
                return r;
        }
        e->path = strdup(path); /* without it, this version is only forgotten in its turn */
        c->next = (c->next + 1) % IMAGE_CACHE_SIZE;
        *ret = e;
        return 0;
}

int image_cache_rescan(struct image_cache *c) {
        int failed = 0;
        for (unsigned i = 0; i < IMAGE_CACHE_SIZE; i++) {
                struct image_entry *e = &c->entries[i];
                bool moves = false;
                for (uint32_t j = 0; j < e->plan.ncopies && !moves; j++)
                        moves = e->plan.copies[j].moved;
                if (e->fd < 0 || e->reason || !moves)
                        continue;
                const char *why = bind_plan_rescan(&e->plan);
                if (why) {
                        e->reason = strdup(why);
                        failed++;
                }
        }
        return failed;
}

const char *image_entry_warm_refusal(const struct image_entry *e) {
        /* Warm, its constructors would run in the daemon with its block in the reserve, which every
         * warm program and the daemon's later launches share. */
        if (e->start.tls.block_offset)
                return "its executable has thread-local storage (PT_TLS), which goes in the daemon's one "
                       "reserve at each launch: it cannot be loaded in the daemon ahead of time";
        /* The loader runs DT_FINI at the exit of every process the program is loaded in. */
        if (e->own_fini)
                return "it has a destructor of its own (DT_FINI, -Wl,-fini=), which would run at the exit of every "
                       "program the daemon starts";
        return NULL;
}
