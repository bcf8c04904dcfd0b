/* SPDX-License-Identifier: MIT */
/* A zygote: loads what its programs need (their closures, what they were seen to load after main,
 * the warm programs themselves), runs the warm-up steps, then serves launches until retired. */
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "closure-cache.h"
#include "eligibility.h"
#include "learn.h"
#include "log.h"
#include "macro.h"
#include "options.h"
#include "pool.h"
#include "preload.h"
#include "warm-program.h"
#include "preload-tested.h"
#include "read-at-load.h"
#include "prepared.h"
#include "server.h"
#include "signals.h"
#include "trusted-path.h"
#include "throwaway.h"
#include "tls-reserve.h"
#include "warm-up.h"

/* The first file of a program and its closure that anyone but us or root could have put there, as
 * "why" in buf; NULL when none. Preloading runs their code in the zygote, unasked, whenever one
 * changes on disk (a refresh): a file planted in a folder others can write to must not get that. */
static const char *untrusted_file(const char *program, const struct string_list *closure, char *buf, size_t size) {
        if (trusted_path_refusal(program, buf, size))
                return buf;
        for (size_t k = 0; k < closure->n; k++)
                if (trusted_path_refusal(closure->items[k], buf, size))
                        return buf;
        return NULL;
}

/* Why an earlier try of this zygote left out a library of closure (options.h), or NULL. */
static const char *left_out_library(const struct daemon_options *o, const struct string_list *closure) {
        for (size_t i = 0; i < o->zygote.leave_out.n; i++) {
                const char *entry = o->zygote.leave_out.items[i], *tab = strchr(entry, '\t');
                for (size_t k = 0; tab && k < closure->n; k++)
                        if (strlen(closure->items[k]) == (size_t) (tab - entry) &&
                            strncmp(closure->items[k], entry, (size_t) (tab - entry)) == 0)
                                return tab + 1;
        }
        return NULL;
}

/* A registered program's libraries as the loader resolved them, and the file it resolved them for. */
struct app_closure {
        struct string_list libs;
        dev_t dev;
        ino_t ino;
};

/* The program's libraries as the loader resolves them (and the names it found no file at, added to
 * missing): the last start's answer when nothing it depends on changed, else the loader's, kept. */
static int resolve_closure(struct closure_cache *cache, const char *interp, const char *path, const struct stat *st,
                           struct string_list *closure, struct string_list *missing) {
        if (closure_cache_take(cache, path, st, closure, missing))
                return 0;
        struct string_list mine = { 0 };
        int r = preload_resolve_closure(interp, path, closure, &mine, throwaway_deadline() * 1000u);
        if (r >= 0)
                closure_cache_remember(cache, path, st, closure, &mine);
        for (size_t i = 0; r >= 0 && i < mine.n; i++)
                r = string_list_add_new(missing, mine.items[i]);
        string_list_done(&mine);
        return r;
}

/* Why the loader could not list a registered program's libraries: the file's kind when that is
 * why (a script, a static program, another architecture), not a library it could not find. */
static const char *unresolvable_why(const char *path, const char *interp, char *buf, size_t size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct program_facts facts;
        if (fd >= 0 && program_facts_read(fd, true, &facts) >= 0 &&
            (!facts.elf.is_elf || !facts.elf.has_dynamic || !facts.elf.is_64bit || !facts.elf.machine_matches))
                return eligibility_verdict(&facts, interp, buf, size);
        return "the dynamic loader cannot resolve its libraries (`ld.so --list PROGRAM` says which is not found)";
}

/* Resolves --app and then --warm programs into one list; the warm ones are its last *ret_nwarm.
 * A program that is missing, whose libraries the loader cannot resolve, or one of whose files
 * another user could replace, is left out with a log line: its clients exec it, and the others are
 * served. So is one that needs a library this zygote could not preload before (*left_out, with why
 * in *left_out_why). The closures of the others go into libs, and each one's into closures (as
 * many as resolved has, in its order): the loader is asked at most once per program (not while the
 * last start's answer holds: closure-cache.h). Where its search found
 * no file goes into missing (preload.h), for a program left out too: it may be servable then. */
static int register_apps(const struct daemon_options *o, const char *interp, struct closure_cache *cache,
                         struct string_list *resolved,
                         struct app_closure *closures, struct string_list *libs, struct string_list *missing,
                         size_t *ret_nwarm, struct string_list *left_out, struct string_list *left_out_why) {
        size_t nwarm = 0;
        for (size_t i = 0; i < o->apps.n + o->warm.n; i++) {
                bool warm = i >= o->apps.n;
                const char *name = warm ? o->warm.items[i - o->apps.n] : o->apps.items[i];
                char path[PATH_MAX], why[PATH_MAX + 128];
                const char *problem = preload_find_program(name, path) < 0 ? "cannot find the program"
                                                                          : preload_program_problem(path);
                struct string_list closure = { 0 };
                struct stat st;
                if (!problem && stat(path, &st) < 0)
                        problem = "cannot find the program";
                if (!problem)
                        problem = preload_program_refusal(path);
                if (!problem && resolve_closure(cache, interp, path, &st, &closure, missing) < 0)
                        problem = unresolvable_why(path, interp, why, sizeof why);
                if (!problem)
                        problem = untrusted_file(path, &closure, why, sizeof why);
                const char *unloadable = problem ? NULL : left_out_library(o, &closure);
                for (size_t k = 0; !problem && !unloadable && k < closure.n; k++)
                        if (string_list_add_new(libs, closure.items[k]) < 0)
                                problem = "out of memory";
                if (!problem && !unloadable && string_list_contains(resolved, path)) {
                        log_warning("%s %s: %s is registered already (--app ones first, then --warm); once is enough",
                                    warm ? "--warm" : "--app", name, path);
                        string_list_done(&closure);
                        continue;
                }
                if (unloadable || problem) {
                        log_warning("%s %s: %s; its clients will exec it, the other programs are served",
                                    warm ? "--warm" : "--app", name, unloadable ? unloadable : problem);
                        string_list_done(&closure);
                        if (unloadable &&
                            (string_list_add(left_out, path) < 0 || string_list_add(left_out_why, unloadable) < 0))
                                return log_error("out of memory");
                        continue;
                }
                if (string_list_add(resolved, path) < 0)
                        return string_list_done(&closure), log_error("out of memory");
                closures[resolved->n - 1] = (struct app_closure){ closure, st.st_dev, st.st_ino };
                nwarm += warm;
        }
        *ret_nwarm = nwarm;
        return 0;
}

/* Starts this zygote again as a fresh image, with one more option when given (the supervisor keeps
 * watching the same process). Returns only if it cannot. */
static int start_again(const struct daemon_options *o, char *const argv[], const char *option, const char *value) {
        size_t n = 0;
        while (argv[n])
                n++;
        _cleanup_free_ const char **args = calloc(n + 3, sizeof *args);
        if (!args)
                return log_error("out of memory");
        memcpy(args, argv, n * sizeof *args);
        args[n] = option;
        args[n + 1] = option ? value : NULL;
        /* What the supervisor handed us stays open across exec, at the numbers the arguments say. */
        const int fds[] = { o->zygote.listen_fd, o->zygote.control_fd, o->zygote.learned_fd, o->zygote.counts_fd };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                if (fds[i] >= 0)
                        (void) fcntl(fds[i], F_SETFD, 0);
        execv("/proc/self/exe", (char *const *) args);
        return log_error_errno(errno, "cannot start this zygote again");
}

/* A library of a registered program could not be preloaded: this process may now have a thread it
 * cannot be rid of, so it starts again, told to leave that library's programs out. */
static int start_again_without(const struct daemon_options *o, char *const argv[], const char *library,
                               const char *why) {
        _cleanup_free_ char *entry = NULL;
        if (asprintf(&entry, "%s\t%s", library, why) < 0)
                return log_error("out of memory");
        log_warning("starting this zygote again without the programs that need %s", library);
        return start_again(o, argv, "--zygote-leave-out", entry);
}

/* Loads libs: the --preload libraries (the first npreloads), then the registered programs'
 * closures. A library of the closures that cannot be loaded starts this zygote again without its
 * programs; a --preload one is the user's to leave out. */
static int preload_all(const struct daemon_options *o, char *const argv[], const struct string_list *apps,
                       const struct string_list *libs, size_t npreloads) {
        size_t loaded = 0, failed = 0;
        /* Timed here, around the loading alone, for `headstart bench`'s preload-time figure. */
        const uint64_t start = now_us();
        char why[PATH_MAX + 256];
        int r = preload_load(libs, &loaded, &failed, why, sizeof why);
        const uint64_t took = now_us() - start;
        if (r < 0 && failed >= npreloads)
                return start_again_without(o, argv, libs->items[failed], why);
        if (r < 0)
                return log_error("--preload %s: leave it out", libs->items[failed]), r;
        log_info("preloaded %zu libraries for %zu programs in %llu us", loaded, apps->n, (unsigned long long) took);
        return 0;
}

/* What is preloaded runs in every program, so a file that anyone but us or root could have put there
 * is refused ("PATH -- why" in *refused), as ld.so refuses untrusted paths for set-user-ID programs. */
static int add_preloads(const struct string_list *preloads, struct string_list *libs, struct string_list *refused) {
        for (size_t i = 0; i < preloads->n; i++) {
                char why[PATH_MAX + 128], line[2 * PATH_MAX + 160], path[PATH_MAX];
                const char *name = preloads->items[i];
                bool found = preload_find_library(name, path, sizeof path) == 0;
                if (!found)
                        snprintf(why, sizeof why, "the dynamic loader cannot load it%s%s", path[0] ? ": " : "",
                                 path);
                if (!found || trusted_path_refusal(path, why, sizeof why)) {
                        log_warning("not preloading %s: %s", name, why);
                        snprintf(line, sizeof line, "%s -- %s", name, why);
                        if (string_list_add(refused, line) < 0)
                                return log_error("out of memory");
                } else if (string_list_add(libs, path) < 0)
                        return log_error("out of memory");
        }
        return 0;
}

/* The programs an option names (--terminal), by identity: a client may name them
 * by another path. */
static int find_programs(const char *option, const struct string_list *names, struct file_id **ret, size_t *ret_n) {
        *ret_n = 0;
        *ret = calloc(names->n ? names->n : 1, sizeof **ret);
        if (!*ret)
                return log_error("out of memory");
        for (size_t i = 0; i < names->n; i++) {
                char path[PATH_MAX];
                struct stat st;
                if (preload_find_program(names->items[i], path) < 0 || stat(path, &st) < 0) {
                        log_warning("--%s %s: cannot find the program", option, names->items[i]);
                        continue;
                }
                (*ret)[(*ret_n)++] = (struct file_id){ st.st_dev, st.st_ino };
        }
        return 0;
}

/* Loads what the registered programs were seen to load after main, each tested first, and with the
 * programs themselves. */
static void preload_learned(struct learned *l, const struct string_list *apps, const char *interp) {
        struct learned_object **objects;
        size_t n = learned_to_preload(l, apps, &objects);
        const char **paths = calloc(n ? n : 1, sizeof *paths);
        char **reasons = calloc(n ? n : 1, sizeof *reasons);
        if (!paths || !reasons) {
                log_warning("out of memory: preloading nothing learned");
                n = 0;
        }
        /* Learned from what programs did, not from our configuration: what they loaded from a place
         * another user can write to, that user could replace by the time we load it. Those are left
         * out; the others (objects[0..ntested)) are tested. */
        size_t ntested = 0, skipped = 0;
        for (size_t i = 0; i < n; i++) {
                char why[PATH_MAX + 128];
                struct learned_object *o = objects[i];
                if (!trusted_path_refusal(o->path, why, sizeof why)) {
                        objects[ntested] = o;
                        paths[ntested++] = o->path;
                } else if (!o->skipped) { /* one object learned for two programs is judged once */
                        o->skipped = strdup(why);
                        skipped++;
                        log_warning("not preloading %s, learned after main: %s", o->path, why);
                }
        }
        /* Every registered program is loaded in the launched child (a warm one in this zygote): an
         * object with which one no longer loads is left out. */
        const struct programs_to_check programs = { (const char *const *) apps->items, apps->n, interp };
        const uint64_t start = now_us();
        size_t loaded = ntested ? preload_tested(paths, ntested, reasons, &programs) : 0;
        const uint64_t took = now_us() - start;
        for (size_t i = 0; i < ntested; i++) {
                struct learned_object *o = objects[i];
                if (!reasons[i])
                        o->preloaded = true;
                else if (!o->skipped) {
                        o->skipped = reasons[i];
                        reasons[i] = NULL;
                        skipped++;
                        log_warning("not preloading %s, learned after main: %s", o->path, o->skipped);
                }
                free(reasons[i]);
        }
        if (n)
                log_info("preloaded %zu objects learned after main (%zu left out) in %llu us, tested first", loaded,
                         skipped, (unsigned long long) took);
        free(paths);
        free(reasons);
        free(objects);
}

/* Loads a --warm program into the zygote; if it cannot be, why into reg (it is served in preload
 * mode, and --status says why not warm). */
static void load_warm(struct registered_file *reg, struct image_entry *e, char *const argv[]) {
        const char *refusal = image_entry_warm_refusal(e);
        char image[64], why[512];
        image_entry_load_name(e, image, sizeof image);
        if (refusal)
                log_warning("%s cannot be warm, serving it in preload mode: %s", reg->path, refusal);
        else if (warm_program_load(reg->path, image, &e->start.constructors, &e->plan, &e->start.exits, argv, why,
                                     sizeof why) == 0) {
                reg->mode = MODE_WARM;
                e->start.constructors = (struct program_constructors){ 0 }; /* they ran here, once */
                return;
        }
        reg->mode = MODE_PRELOAD;
        reg->reason = strdup(refusal ? refusal : why);
}

/* Adds the program at path, the file st describes, to those the daemon reports in --status. */
static struct registered_file *register_file(struct server *s, const char *path, const struct stat *st) {
        struct registered_file *reg = &s->registered[s->nregistered];
        *reg = (struct registered_file){ .dev = st->st_dev, .ino = st->st_ino, .path = strdup(path) };
        if (!reg->path)
                return log_error("out of memory"), NULL;
        s->nregistered++;
        return reg;
}

/* Registers each app and decides its mode, preparing its image; loads the warm ones (the last
 * `nwarm` of apps) into the daemon. The left_out ones are registered to be exec'd, with their why. */
static int check_apps(struct server *s, const struct string_list *apps, const struct app_closure *closures,
                      size_t nwarm, const struct string_list *left_out, const struct string_list *left_out_why,
                      char *const argv[]) {
        s->registered = calloc(apps->n + left_out->n ? apps->n + left_out->n : 1, sizeof *s->registered);
        if (!s->registered)
                return log_error("out of memory");
        for (size_t i = 0; i < left_out->n; i++) {
                struct stat st;
                if (stat(left_out->items[i], &st) < 0)
                        return log_error_errno(errno, "cannot open %s", left_out->items[i]);
                struct registered_file *reg = register_file(s, left_out->items[i], &st);
                if (!reg || !(reg->reason = strdup(left_out_why->items[i])))
                        return log_error("out of memory");
        }
        for (size_t i = 0; i < apps->n; i++) {
                struct stat st;
                _cleanup_close_ int fd = open(apps->items[i], O_RDONLY | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0)
                        return log_error_errno(errno, "cannot open %s", apps->items[i]);
                struct registered_file *reg = register_file(s, apps->items[i], &st);
                if (!reg)
                        return -ENOMEM;

                struct image_entry *e;
                /* The file the loader resolved, unless it was replaced since (asked again then). */
                const struct app_closure *c = &closures[i];
                bool same = c->dev == st.st_dev && c->ino == st.st_ino;
                int r = image_cache_get(&s->cache, fd, &st, apps->items[i], true, same ? &c->libs : NULL, &e);
                if (r < 0) {
                        log_warning_errno(r, "%s: cannot prepare it; clients will exec it", apps->items[i]);
                        reg->reason = strdup("cannot prepare it for loading");
                } else if (e->reason) {
                        log_warning("%s will be exec'd, not served: %s", apps->items[i], e->reason);
                        reg->reason = strdup(e->reason);
                } else if (i >= apps->n - nwarm) {
                        load_warm(reg, e, argv);
                        e->warm = reg->mode == MODE_WARM;
                } else
                        reg->mode = MODE_PRELOAD;
        }
        return 0;
}

/* The daemon may hold many connections; its children get the client's limits back. */
static void raise_fd_limit(void) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

/* The programs we start each lead a process group of the supervisor's session, which none of them
 * leads: a terminal one of them opens does not become its controlling terminal (only a session
 * leader takes one so), and when we end, their groups are not orphaned (their new parent, the
 * supervisor, is in the same session), so a stopped one is not sent SIGHUP. Nor may they inherit
 * one from us: a daemon started from a shell has its terminal, which we give up (TIOCNOTTY, which
 * for a process that does not lead its session detaches it alone). */
static void drop_controlling_terminal(void) {
        int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0) {
                (void) ioctl(fd, TIOCNOTTY);
                close(fd);
        }
}

/* A zygote: preload, then serve launches on the socket the supervisor gave us. */
int zygote_run(const struct daemon_options *o, char *const argv[], const char *path) {
        drop_controlling_terminal();
        /* Given to us without close-on-exec, like the socket; nothing we start may inherit it. */
        if (o->zygote.learned_fd >= 0)
                (void) fcntl(o->zygote.learned_fd, F_SETFD, FD_CLOEXEC);
        /* Static, not on the stack: every program the zygote serves calls main below these frames, and
         * there they took 100 KiB of each one's RLIMIT_STACK (the server's image cache alone is 60 KB;
         * main was 113 KiB down against exec's 10). One zygote runs per process. */
        static char interp[256], cache_dir[PATH_MAX + 16];
        static char copy[PATH_MAX], learn_file[PATH_MAX + 16], learn_dir[PATH_MAX + 16], closures_file[PATH_MAX + 32],
                    warm_up_file[PATH_MAX + 32];
        static struct server s;
        int r = preload_own_interp(interp, sizeof interp);
        if (r < 0)
                return log_error_errno(r, "cannot find the daemon's own dynamic loader");

        struct string_list apps = { 0 }, libs = { 0 }, learned_loaded = { 0 }, refused_preloads = { 0 };
        struct string_list left_out = { 0 }, left_out_why = { 0 }, missing = { 0 };
        size_t nwarm = 0, nclosures = o->apps.n + o->warm.n;
        struct app_closure *closures = NULL;
        struct learned learned = { 0 };
        struct closure_cache closure_cache;
        struct warm_up_result *warm_up = NULL;
        s.listen_fd = s.epoll_fd = s.signal_fd = s.control_fd = s.files.fd = -1;
        snprintf(copy, sizeof copy, "%s", path);
        const char *dir = dirname(copy);
        snprintf(cache_dir, sizeof cache_dir, "%s/cache", dir);
        snprintf(learn_file, sizeof learn_file, "%s/learned", dir);
        if (o->cache_dir)
                snprintf(cache_dir, sizeof cache_dir, "%s", o->cache_dir);
        if (o->learn_file)
                snprintf(learn_file, sizeof learn_file, "%s", o->learn_file);
        snprintf(learn_dir, sizeof learn_dir, "%s", learn_file);
        const char *state_dir = dirname(learn_dir); /* where the learned file is: our other state too */
        snprintf(closures_file, sizeof closures_file, "%s/closures", state_dir);
        snprintf(warm_up_file, sizeof warm_up_file, "%s/warm-up", state_dir);

        /* Every signal into the signalfd from the start, except a stop, which ends us at once
         * until we are about to serve. */
        int signal_fd = zygote_signals_open();
        if (signal_fd < 0)
                return log_error_errno(signal_fd, "cannot set up signal handling");
        zygote_stop_at_once(true);
        read_at_load_start(); /* until the pool's first child: it must not inherit the hook */

        closures = calloc(nclosures ? nclosures : 1, sizeof *closures);
        r = closures ? add_preloads(&o->preloads, &libs, &refused_preloads) : log_error("out of memory");
        const size_t npreloads = libs.n;
        const uint64_t start = now_us();
        closure_cache_load(&closure_cache, closures_file, interp);
        if (r >= 0)
                r = register_apps(o, interp, &closure_cache, &apps, closures, &libs, &missing, &nwarm, &left_out,
                                  &left_out_why);
        if (r >= 0) {
                log_info("resolved the libraries of %zu programs in %llu us (%zu as at the last start)", apps.n,
                         (unsigned long long) (now_us() - start), closure_cache.taken);
                closure_cache_save(&closure_cache, closures_file, &apps);
        }
        closure_cache_done(&closure_cache);
        if (r < 0 || (r = preload_all(o, argv, &apps, &libs, npreloads)) < 0)
                goto out;
        if (!o->no_learn) {
                if ((r = learned_load(&learned, learn_file, o->zygote.learned_fd)) < 0)
                        goto out;
                preload_learned(&learned, &apps, interp);
                if ((r = learned_preloaded_paths(&learned, &learned_loaded)) < 0)
                        goto out;
        }
        warm_up = calloc(o->warm_up.n ? o->warm_up.n : 1, sizeof *warm_up);
        if (!warm_up) {
                r = log_error("out of memory");
                goto out;
        }
        if (warm_up_run(&o->warm_up, warm_up_file, warm_up) < 0) {
                log_warning("starting this zygote again, to try each warm-up step first");
                r = start_again(o, argv, NULL, NULL);
                goto out;
        }
        raise_fd_limit();
        r = server_init(&s, o, o->zygote.listen_fd, signal_fd, cache_dir, interp);
        signal_fd = -1;
        if (r < 0)
                goto out;
        s.warm_up = warm_up;
        s.refused_preloads = &refused_preloads;
        s.cache.also_loaded = &learned_loaded;
        s.cache.learned = o->no_learn ? NULL : &learned;
        /* Once, before any fork (the pool's children inherit what it found). */
        const char *tls = tls_reserve_problem();
        if (tls)
                log_info("programs with thread-local storage in the executable will be exec'd: %s", tls);
        if ((r = check_apps(&s, &apps, closures, nwarm, &left_out, &left_out_why, argv)) < 0 ||
            (r = find_programs("terminal", &o->terminal, &s.terminal_ok, &s.nterminal_ok)) < 0 ||
            (r = schedules_load(&o->schedules, false, &s.schedules, &s.nschedules)) < 0)
                goto out;
        if (image_cache_rescan(&s.cache) > 0)
                log_warning("some programs copy a C++ stream whose pointers cannot be found; they will be exec'd");
        snprintf(s.prepared_file, sizeof s.prepared_file, "%s/prepared", state_dir);
        if ((r = prepared_init(&s, &o->prepare_display)) < 0)
                goto out;
        if (!o->no_learn) {
                s.learned = &learned;
                r = learned_snapshot_self(&learned);
                for (size_t i = 0; i < s.nregistered && r >= 0; i++)
                        r = learned_ignore(&learned, s.registered[i].dev, s.registered[i].ino);
                if (r < 0) {
                        log_warning_errno(r, "cannot see what the daemon has loaded; learning nothing");
                        s.learned = NULL;
                        r = 0;
                }
        }
        server_watch_files(&s, &missing);
        if ((r = read_at_load_stop(environ, &s.read_at_load)) < 0)
                goto out;
        zygote_stop_at_once(false);
        pool_fill(&s);
        server_ready(&s);
        r = server_run(&s);
out:
        if (signal_fd >= 0)
                close(signal_fd);
        server_done(&s);
        for (size_t i = 0; closures && i < nclosures; i++)
                string_list_done(&closures[i].libs);
        free(closures);
        string_list_done(&apps);
        string_list_done(&left_out);
        string_list_done(&left_out_why);
        string_list_done(&missing);
        string_list_done(&learned_loaded);
        string_list_done(&libs);
        string_list_done(&refused_preloads);
        learned_done(&learned);
        for (size_t i = 0; warm_up && i < o->warm_up.n; i++)
                free(warm_up[i].refused);
        free(warm_up);
        return r;
}

