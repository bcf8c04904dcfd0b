/* SPDX-License-Identifier: MIT */
#include "warm-up.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "macro.h"
#include "preload.h"
#include "throwaway.h"
#include "warm-up-verdicts.h"

struct step {
        const char *name;
        const char *library; /* must already be loaded: a warm-up never loads anything itself */
        const char *symbol;  /* called with no argument; its result is kept (the point is its side effect) */
        const char *what;
        void *(*run)(void);  /* a step of our own code instead of symbol, calling into library */
};

static void *gtk4_classes(void);

/* Each measured with `headstart bench` on the GTK sample (docs/results.md). */
static const struct step steps[] = {
        { "fontconfig", "libfontconfig.so.1", "FcInit",
          "fontconfig's configuration files parsed and its font caches mapped", NULL },
        { "gdk-pixbuf", "libgdk_pixbuf-2.0.so.0", "gdk_pixbuf_get_formats",
          "gdk-pixbuf's list of image loaders read from its loaders.cache", NULL },
        { "gtk4-classes", "libgtk-4.so.1", NULL,
          "GTK 4's types registered and its widget classes initialised (class_init)", gtk4_classes },
};

const char *warm_up_known(void) {
        return "fontconfig, gdk-pixbuf, gtk4-classes, or LIBRARY:FUNCTION";
}

/* A function of a loaded library, or NULL. */
static void *loaded_symbol(const char *library, const char *symbol) {
        void *h = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
        void *sym = h ? dlsym(h, symbol) : NULL;
        if (h)
                dlclose(h);
        return sym;
}

/* GTK 4 registers its types and runs each class's class_init (templates, CSS names, actions,
 * properties, signals) the first time a program uses the class: tens of ms for a window's worth.
 * None of it needs a display. Registered with gtk_test_register_all_types, then each widget class
 * g_type_class_ref'd, concrete ones first (abstract parents get initialised with them). Widgets
 * only: of GTK 4.8's other classes GtkIMContextSimple's starts a thread (it reads the compose
 * tables in one), which a forking zygote must not. GType is a gsize; the two flags are GLib's
 * G_TYPE_FLAG_CLASSED and G_TYPE_FLAG_ABSTRACT. */
static void *gtk4_classes(void) {
        enum { FLAG_CLASSED = 1 << 0, FLAG_ABSTRACT = 1 << 4 };
        void (*register_all)(void) = (void (*)(void)) loaded_symbol("libgtk-4.so.1", "gtk_test_register_all_types");
        const size_t *(*list_all)(unsigned *) =
                (const size_t *(*) (unsigned *) ) loaded_symbol("libgtk-4.so.1", "gtk_test_list_all_types");
        void *(*class_ref)(size_t) = (void *(*) (size_t)) loaded_symbol("libgobject-2.0.so.0", "g_type_class_ref");
        int (*test_flags)(size_t, unsigned) =
                (int (*)(size_t, unsigned)) loaded_symbol("libgobject-2.0.so.0", "g_type_test_flags");
        int (*is_a)(size_t, size_t) = (int (*)(size_t, size_t)) loaded_symbol("libgobject-2.0.so.0", "g_type_is_a");
        size_t (*widget_type)(void) = (size_t (*)(void)) loaded_symbol("libgtk-4.so.1", "gtk_widget_get_type");
        if (!register_all || !list_all || !class_ref || !test_flags || !is_a || !widget_type)
                return NULL;
        register_all();
        unsigned n = 0;
        const size_t *types = list_all(&n);
        size_t widget = widget_type();
        for (int abstract = 0; abstract <= 1; abstract++)
                for (unsigned i = 0; i < n; i++)
                        if (is_a(types[i], widget) && test_flags(types[i], FLAG_CLASSED) &&
                            !!test_flags(types[i], FLAG_ABSTRACT) == abstract)
                                (void) class_ref(types[i]); /* kept: the point is that it stays initialised */
        return NULL;
}

static const struct step *find_step(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(steps); i++)
                if (strcmp(steps[i].name, name) == 0)
                        return &steps[i];
        return NULL;
}

/* LIBRARY:FUNCTION, a step of the user's own: a library a registered program links, and a function
 * of it that takes no argument. */
static bool split_custom(const char *name, char *library, size_t size, const char **ret_symbol) {
        const char *colon = strchr(name, ':');
        if (!colon || colon == name || !colon[1] || (size_t) (colon - name) >= size)
                return false;
        snprintf(library, size, "%.*s", (int) (colon - name), name);
        *ret_symbol = colon + 1;
        return true;
}

int warm_up_check_name(const char *name) {
        char library[256];
        const char *symbol;
        return find_step(name) || split_custom(name, library, sizeof library, &symbol) ? 0 : -EINVAL;
}

/* Sockets open in this process: a step may open none. */
static int count_sockets(void) {
        int n = 0;
        DIR *d = opendir("/proc/self/fd");
        for (struct dirent *de; d && (de = readdir(d));) {
                struct stat st;
                if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, 0) == 0 && S_ISSOCK(st.st_mode))
                        n++;
        }
        if (d)
                closedir(d);
        return n;
}

/* Finds the function in the loaded library, or says why not. */
static const char *resolve(const struct step *step, void *(**ret_fn)(void)) {
        void *h = dlopen(step->library, RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
                return "its library is not loaded (no registered program uses it)";
        if (step->run) {
                dlclose(h);
                *ret_fn = step->run;
                return NULL;
        }
        void *sym = dlsym(h, step->symbol);
        dlclose(h);
        if (!sym)
                return "its library does not define the function it calls";
        *ret_fn = (void *(*)(void)) sym; /* POSIX: dlsym's result converts to a function pointer */
        return NULL;
}

/* The test child's verdict, one byte on a pipe: not its exit status, which the step itself could
 * set by calling exit(). */
enum { TEST_OK = 'o', TEST_THREAD = 't', TEST_SOCKET = 's' };

static const char *verdict_text(char verdict) {
        switch (verdict) {
        case TEST_OK:
                return NULL;
        case TEST_THREAD:
                return "it starts a thread; the daemon forks and must stay single-threaded";
        case TEST_SOCKET:
                return "it opens a socket: every program would share one connection";
        default:
                return "the test child failed";
        }
}

/* What a step left in this process that a forking zygote must not hold, given the threads and
 * sockets before it: TEST_THREAD, TEST_SOCKET or TEST_OK. */
static char left_behind(int threads, int sockets) {
        return preload_count_threads() != threads ? TEST_THREAD : count_sockets() != sockets ? TEST_SOCKET : TEST_OK;
}

static _Noreturn void step_child(void *arg, int report) {
        void *(*const *fn)(void) = arg;
        int threads = preload_count_threads(), sockets = count_sockets();
        (void) (*fn)();
        throwaway_report(report, left_behind(threads, sockets), NULL);
}

static const char *test_in_child(void *(*fn)(void)) {
        static char why[128];
        char detail[64];
        int verdict = throwaway_trial(step_child, &fn, detail, sizeof detail);
        if (verdict < 0)
                return "cannot fork a test child";
        if (verdict == THROWAWAY_KILLED && strcmp(detail, "the deadline") == 0)
                snprintf(why, sizeof why, "it did not return within %u s in the test child", throwaway_deadline());
        else if (verdict == THROWAWAY_KILLED)
                return "it killed the test child";
        else if (verdict == THROWAWAY_ENDED)
                snprintf(why, sizeof why, "it ended the test child (%s): it would end the daemon", detail);
        else
                return verdict_text((char) verdict);
        return why;
}

int warm_up_run(const struct string_list *names, const char *verdicts_path, struct warm_up_result *ret) {
        struct warm_up_verdicts kept;
        struct string_list ran = { 0 };
        bool forgotten = false;
        int r = 0;
        warm_up_verdicts_load(&kept, verdicts_path);
        for (size_t i = 0; i < names->n; i++) {
                char library[256];
                struct step custom = { .name = names->items[i], .library = library, .what = "done" };
                const struct step *step = find_step(names->items[i]);
                if (!step && split_custom(names->items[i], library, sizeof library, &custom.symbol))
                        step = &custom;
                void *(*fn)(void) = NULL;
                const char *why = step ? resolve(step, &fn) : "unknown step";
                bool tried_before = !why && warm_up_verdicts_passed(&kept, names->items[i]);
                /* A zygote that dies in a kept step must leave no verdict behind: the file goes first,
                 * or the step is tried again. */
                if (tried_before && !forgotten)
                        tried_before = forgotten = warm_up_verdicts_forget(verdicts_path);
                if (!why && !tried_before)
                        why = test_in_child(fn);
                ret[i] = (struct warm_up_result){ .step = names->items[i], .refused = why ? strdup(why) : NULL };
                if (why) {
                        log_warning("warm-up %s refused: %s", names->items[i], why);
                        continue;
                }
                /* Run here without a trial, the step is checked after for what the trial looks for:
                 * a zygote that finds it must not fork. */
                int threads = tried_before ? preload_count_threads() : 0, sockets = tried_before ? count_sockets() : 0;
                uint64_t start = now_us();
                (void) fn();
                uint64_t took = now_us() - start;
                char found = tried_before ? left_behind(threads, sockets) : TEST_OK;
                if (found != TEST_OK) {
                        log_error("warm-up %s, run without a trial: %s, which its trial at an earlier start "
                                  "had not found",
                                  names->items[i], verdict_text(found));
                        r = -EAGAIN;
                        break;
                }
                (void) string_list_add(&ran, names->items[i]); /* out of memory: tried again next time */
                log_info("warm-up %s in %llu us%s: %s", step->name, (unsigned long long) took,
                         tried_before ? " (its trial passed at an earlier start)" : "", step->what);
        }
        if (r == 0)
                warm_up_verdicts_save(&kept, verdicts_path, &ran);
        warm_up_verdicts_done(&kept);
        string_list_done(&ran);
        return r;
}
