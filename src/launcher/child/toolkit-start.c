/* SPDX-License-Identifier: MIT */
#include "toolkit-start.h"

#include <dlfcn.h>
#include <errno.h>
#include <locale.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loaded-relocs.h"

/* The locale GTK set as it started in this child, and what it wrote on stdout and stderr; each
 * NULL once given to the program. */
static char *gtk_locale;
static struct held_output {
        char *text;
        size_t size;
} held[2];

static void write_all(int fd, const char *text, size_t size) {
        for (ssize_t w; size > 0; text += w, size -= (size_t) w)
                if ((w = write(fd, text, size)) <= 0)
                        return;
}

/* What GTK does at the program's first call that starts it, under exec, and does not again: it
 * sets the locale, and, opening the display, says what it has to say (GtkApplication's
 * local_command_line does not open it, nor does a remote instance's run ever). */
static void start_for_program(bool opens_display) {
        if (gtk_locale)
                (void) setlocale(LC_ALL, gtk_locale);
        free(gtk_locale);
        gtk_locale = NULL;
        for (int i = 0; opens_display && i < 2; i++) {
                write_all(i + 1, held[i].text, held[i].size);
                free(held[i].text);
                held[i] = (struct held_output){ 0 };
        }
}

/* GTK's own functions, which the ones below call once the locale is set. */
static struct {
        void (*init3)(int *, char ***);
        int (*init_check3)(int *, char ***);
        int (*init_with_args)(int *, char ***, const char *, const void *, const char *, void **);
        int (*parse_args)(int *, char ***);
        void *(*option_group)(int);
        void (*set_parse_hooks)(void *, void *, void *); /* GLib's g_option_group_set_parse_hooks */
        void (*init4)(void);
        int (*init_check4)(void);
        int (*local_command_line)(void *, char ***, int *);
        void (*startup)(void *);
} real;

static void init3(int *argc, char ***argv) {
        start_for_program(true);
        real.init3(argc, argv);
}

static int init_check3(int *argc, char ***argv) {
        start_for_program(true);
        return real.init_check3(argc, argv);
}

static int init_with_args(int *argc, char ***argv, const char *summary, const void *entries, const char *domain,
                          void **error) {
        start_for_program(true);
        return real.init_with_args(argc, argv, summary, entries, domain, error);
}

static int parse_args(int *argc, char ***argv) {
        start_for_program(true);
        return real.parse_args(argc, argv);
}

/* GTK 3's option group opens the display after its options were parsed; GTK's own hook does nothing
 * more in a started GTK, whose display is open. A launch that ends in the parse (--help, a bad
 * option, a --version callback) never gets there, and prints none of GTK's messages. */
static int options_parsed(void *context, void *group, void *data, void **error) {
        (void) context, (void) group, (void) data, (void) error;
        start_for_program(true);
        return 1;
}

static void *option_group(int open_default_display) {
        start_for_program(false);
        void *group = real.option_group(open_default_display);
        if (group && open_default_display)
                real.set_parse_hooks(group, NULL, (void *) options_parsed);
        return group;
}

static void init4(void) {
        start_for_program(true);
        real.init4();
}

static int init_check4(void) {
        start_for_program(true);
        return real.init_check4();
}

static int local_command_line(void *application, char ***arguments, int *exit_status) {
        start_for_program(false);
        return real.local_command_line(application, arguments, exit_status);
}

static void startup(void *application) {
        start_for_program(true);
        real.startup(application);
}

struct route {
        const char *name;
        void *ours;
        void **real;
};

#define ROUTE(name, ours, field) { name, (void *) (ours), (void **) &real.field }
static const struct route gtk3_routes[] = {
        ROUTE("gtk_init", init3, init3),
        ROUTE("gtk_init_check", init_check3, init_check3),
        ROUTE("gtk_init_with_args", init_with_args, init_with_args),
        ROUTE("gtk_parse_args", parse_args, parse_args),
        ROUTE("gtk_get_option_group", option_group, option_group),
        { NULL, NULL, NULL },
};
static const struct route gtk4_routes[] = {
        ROUTE("gtk_init", init4, init4),
        ROUTE("gtk_init_check", init_check4, init_check4),
        { NULL, NULL, NULL },
};
#undef ROUTE

static const struct route *routes;
static char toolkit_soname[32];

/* GLib's GTypeQuery, and the places in a GApplicationClass (gio/gapplication.h, the same since GLib
 * 2.28: subclasses compiled against it depend on them) of the two functions GtkApplication defines
 * that start GTK, after the GObjectClass it begins with. */
struct type_query {
        unsigned long type;
        const char *type_name;
        unsigned class_size, instance_size;
};
enum { STARTUP_SLOT = 0, LOCAL_COMMAND_LINE_SLOT = 4 };

/* GtkApplication's class, ref'd (classes are never freed), from its first function after the
 * GObjectClass it begins with; or NULL. */
static void **application_functions(void *gtk) {
        unsigned long (*app_type)(void) = (unsigned long (*)(void)) dlsym(gtk, "gtk_application_get_type");
        unsigned long (*from_name)(const char *) = (unsigned long (*)(const char *)) dlsym(gtk, "g_type_from_name");
        void (*query)(unsigned long, struct type_query *) = (void (*)(unsigned long, struct type_query *)) dlsym(
                gtk, "g_type_query");
        void *(*class_ref)(unsigned long) = (void *(*)(unsigned long)) dlsym(gtk, "g_type_class_ref");
        if (!app_type || !from_name || !query || !class_ref)
                return NULL;
        struct type_query object = { 0 };
        query(from_name("GObject"), &object);
        if (object.class_size == 0)
                return NULL;
        return (void **) ((char *) class_ref(app_type()) + object.class_size);
}

/* Whether fn is a function of the library named soname (GtkApplication's own). */
static bool in_library(void *fn, const char *soname) {
        Dl_info info;
        return fn && dladdr(fn, &info) && info.dli_fname && strcmp(basename(info.dli_fname), soname) == 0;
}

static const char *route_application(void *gtk) {
        void **functions = application_functions(gtk);
        if (!functions)
                return "GtkApplication's class cannot be found";
        void **slots[] = { functions + LOCAL_COMMAND_LINE_SLOT, functions + STARTUP_SLOT };
        if (!in_library(*slots[0], toolkit_soname) || !in_library(*slots[1], toolkit_soname))
                return "GtkApplication's local_command_line and startup are not where GLib 2.28 and later put them";
        real.local_command_line = (int (*)(void *, char ***, int *)) *slots[0];
        real.startup = (void (*)(void *)) *slots[1];
        *slots[0] = (void *) local_command_line;
        *slots[1] = (void *) startup;
        return NULL;
}

const char *toolkit_start_keep(enum toolkit tk, void *gtk) {
        bool gtk3 = tk == TOOLKIT_GTK3;
        routes = gtk3 ? gtk3_routes : gtk4_routes;
        strcpy(toolkit_soname, gtk3 ? "libgtk-3.so.0" : "libgtk-4.so.1");
        for (const struct route *r = routes; r->name; r++)
                if (!(*r->real = dlsym(gtk, r->name)))
                        return "its toolkit lacks a function that starts it";
        real.set_parse_hooks = (void (*)(void *, void *, void *)) dlsym(gtk, "g_option_group_set_parse_hooks");
        if (!real.set_parse_hooks)
                return "its toolkit's GLib has no g_option_group_set_parse_hooks";
        const char *failed = route_application(gtk);
        if (failed)
                return failed;
        const char *name = setlocale(LC_ALL, NULL);
        gtk_locale = name ? strdup(name) : NULL;
        return gtk_locale ? NULL : "cannot keep the toolkit's locale";
}

/* The whole memfd fd, or NULL (its size in *size); closed. */
static char *read_whole(int fd, size_t *size) {
        off_t end = lseek(fd, 0, SEEK_END);
        char *text = end > 0 ? malloc((size_t) end) : NULL;
        ssize_t n = text ? pread(fd, text, (size_t) end, 0) : 0;
        close(fd);
        *size = n > 0 ? (size_t) n : 0;
        return text;
}

void toolkit_start_defer(int output[2]) {
        (void) setlocale(LC_ALL, "C");
        for (int i = 0; i < 2; i++) {
                held[i].text = read_whole(output[i], &held[i].size);
                output[i] = -1;
        }
}

struct rerouting {
        uintptr_t relro_start, relro_end;
};

static int reroute(const struct loaded_reloc *r, void *userdata) {
        const struct rerouting *o = userdata;
        if (!loaded_reloc_is_address(r))
                return 0;
        for (const struct route *route = routes; route->name; route++)
                if (strcmp(r->name, route->name) == 0)
                        return loaded_slot_write(r->slot, (uintptr_t) route->ours + (uintptr_t) r->addend,
                                                 o->relro_start, o->relro_end);
        return 0;
}

static int reroute_object(const struct link_map *object) {
        struct rerouting o;
        loaded_relro_range(object, &o.relro_start, &o.relro_end);
        return loaded_relocs_walk(object, reroute, &o);
}

int toolkit_start_route(const struct link_map *program) {
        if (!routes)
                return -EINVAL;
        int r = reroute_object(program);
        const struct link_map *l = program;
        while (l->l_prev)
                l = l->l_prev;
        for (; r == 0 && l; l = l->l_next)
                if (l != program && loaded_needs(l, toolkit_soname))
                        r = reroute_object(l);
        return r;
}
