/* SPDX-License-Identifier: MIT */
#include "prepare-judge.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf-info.h"
#include "image-cache.h"
#include "macro.h"
#include "toolkit-variables.h"

#define MAX_DIRECT_LIBRARIES 64

/* What a program's file (and the library through which it links its toolkit) says of it. */
struct needs {
        enum toolkit toolkit;
        const char *refusal;
        const char *refused_import; /* the import refusal names, or NULL */
        char *libraries[MAX_DIRECT_LIBRARIES]; /* its DT_NEEDED, for a toolkit one of them links */
        size_t nlibraries;
        const char *environment_setter; /* the first of environment_setters it imports, or NULL */
        const char *reading;            /* the library whose imports are being read; NULL: the program */
        const char *setter_in, *refused_import_in; /* where those two imports were found (reading) */
        bool names_itself;     /* it imports g_set_prgname */
        bool reads_class;      /* it imports gdk_get_program_class */
        bool parses_options;   /* it imports gtk_init_with_args or gtk_parse_args */
        bool starts_adwaita;   /* it imports adw_init, adw_application_new or adw_application_get_type */
};

#define FONTS_OF_ITS_OWN "it changes fontconfig's fonts or configuration, which the font measured ahead already read"

/* What a program may call before its toolkit starts that a prepared toolkit would not see. */
static const struct {
        const char *symbol, *why;
} refused_imports[] = {
        { "gdk_set_allowed_backends", "it picks the display backend itself before its toolkit starts" },
        { "gtk_disable_setlocale", "it keeps its toolkit from setting the locale" },
        { "gdk_init", "it starts the display layer itself" },
        { "gdk_init_check", "it starts the display layer itself" },
        { "gdk_parse_args", "it starts the display layer itself" },
        /* Fonts of its own, or another configuration: Pango's font map, made as the settings' font
         * is measured ahead, keeps the font list it read before the program changed it. */
        { "FcConfigAppFontAddFile", FONTS_OF_ITS_OWN },
        { "FcConfigAppFontAddDir", FONTS_OF_ITS_OWN },
        { "FcConfigAppFontClear", FONTS_OF_ITS_OWN },
        { "FcConfigSetCurrent", FONTS_OF_ITS_OWN },
        { "FcConfigParseAndLoad", FONTS_OF_ITS_OWN },
        { "FcConfigParseAndLoadFromMemory", FONTS_OF_ITS_OWN },
        { "pango_fc_font_map_set_config", FONTS_OF_ITS_OWN },
};

/* Functions that change the environment: a program that imports one and names a variable its toolkit
 * reads as it starts (toolkit-variables.h) may set it before its toolkit starts, which a prepared
 * toolkit would not see. */
static const char *const environment_setters[] = { "setenv", "putenv", "unsetenv", "clearenv", "g_setenv",
                                                   "g_unsetenv" };

static bool find_toolkit_variable(const char *bytes, size_t size, void *data) {
        const char **found = data;
        *found = toolkit_variable_in(bytes, size);
        return *found != NULL;
}

/* The first variable its toolkit reads as it starts that the file names (a string, wherever it is in
 * what it loads), or NULL. One that cannot be searched may name any, to be safe. */
static const char *toolkit_variable_named(const struct elf_file *file) {
        const char *found = NULL;
        int r = elf_search_loaded(file, find_toolkit_variable, &found);
        return r < 0 ? "one (what it loads cannot be read)" : r > 0 ? found : NULL;
}

/* The toolkit a library name is, if it is one. */
static void note_toolkit(const char *name, void *data) {
        enum toolkit *toolkit = data;
        if (strcmp(name, "libgtk-3.so.0") == 0)
                *toolkit = TOOLKIT_GTK3;
        else if (strcmp(name, "libgtk-4.so.1") == 0)
                *toolkit = TOOLKIT_GTK4;
}

static void on_library(const char *name, void *data) {
        struct needs *n = data;
        enum toolkit toolkit = TOOLKIT_NONE;
        note_toolkit(name, &toolkit);
        if (toolkit)
                n->toolkit = toolkit;
        else if (n->nlibraries < MAX_DIRECT_LIBRARIES && (n->libraries[n->nlibraries] = strdup(name)))
                n->nlibraries++;
}

static void ignore(const char *name, void *data) {
        (void) name;
        (void) data;
}

static void on_import(const char *name, void *data) {
        struct needs *n = data;
        for (size_t i = 0; i < ELEMENTSOF(environment_setters); i++)
                if (!n->environment_setter && strcmp(name, environment_setters[i]) == 0) {
                        n->environment_setter = environment_setters[i];
                        n->setter_in = n->reading;
                }
        n->names_itself |= strcmp(name, "g_set_prgname") == 0;
        n->parses_options |= strcmp(name, "gtk_init_with_args") == 0 || strcmp(name, "gtk_parse_args") == 0;
        n->reads_class |= strcmp(name, "gdk_get_program_class") == 0;
        n->starts_adwaita |= strcmp(name, "adw_init") == 0 || strcmp(name, "adw_application_new") == 0 ||
                             strcmp(name, "adw_application_get_type") == 0;
        for (size_t i = 0; !n->refusal && i < ELEMENTSOF(refused_imports); i++)
                if (strcmp(name, refused_imports[i].symbol) == 0) {
                        n->refusal = refused_imports[i].why;
                        n->refused_import = refused_imports[i].symbol;
                        n->refused_import_in = n->reading;
                }
}


/* The library through which a program that does not link GTK itself links it: one of its own, as
 * geany's code is in libgeany and mousepad's in libmousepad, or one on top of GTK (gtkmm's). Its
 * code may run before GTK starts, on the program's behalf: it is judged as the program is. */
struct own_library {
        struct elf_file file; /* data NULL: none */
        const char *name;     /* as the program names it in DT_NEEDED */
};

/* The first of the libraries the program needs, as the daemon loaded them, that links GTK: into
 * own, with its imports read into n as the program's. Returns its toolkit, or TOOLKIT_NONE. */
static enum toolkit judge_own_library(struct needs *n, struct own_library *own) {
        enum toolkit toolkit = TOOLKIT_NONE;
        for (size_t i = 0; !toolkit && i < n->nlibraries; i++) {
                void *h = dlopen(n->libraries[i], RTLD_LAZY | RTLD_NOLOAD);
                struct link_map *map;
                if (!h)
                        continue;
                int fd = dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 ? open(map->l_name, O_RDONLY | O_CLOEXEC) : -1;
                if (fd >= 0 && elf_file_read(fd, &own->file) >= 0 &&
                    elf_needs_of(&own->file, note_toolkit, ignore, &toolkit) >= 0 && toolkit) {
                        own->name = n->reading = n->libraries[i];
                        (void) elf_needs_of(&own->file, ignore, on_import, n);
                        n->reading = NULL;
                } else {
                        toolkit = TOOLKIT_NONE;
                        elf_file_done(&own->file);
                }
                if (fd >= 0)
                        close(fd);
                dlclose(h);
        }
        return toolkit;
}

/* The first binding of the launch that does more than point the libraries at the program's copies
 * of their own variables (stdout, optind...), which take the values the toolkit left in the
 * originals, and at the program's copies of C++ inline functions and type information they also
 * have (the same code, struct bind_slot); NULL when none: then what the toolkit ran before the
 * binding behaves as it would after. */
static const struct bind_slot *unlike_binding(const struct bind_plan *plan) {
        for (uint32_t i = 0; i < plan->nslots; i++) {
                const struct bind_slot *slot = &plan->slots[i];
                bool copy = slot->same_code;
                for (uint32_t j = 0; !slot->absolute && !copy && j < plan->ncopies; j++)
                        copy = slot->value - plan->copies[j].offset < plan->copies[j].size;
                if (!copy)
                        return slot;
        }
        return NULL;
}

/* Into why: that the launch binds otherwise than the toolkit ran, naming the symbol where the file
 * says it (a library's definition another interposes is named by the plan). */
static void binds_otherwise(const struct bind_plan *plan, const struct bind_slot *slot, const struct elf_file *file,
                            char *why, size_t size) {
        const char *name = plan->nrebinds ? plan->rebinds[0].name : NULL;
        struct elf_exports ex = { 0 };
        if (!name && slot && !slot->absolute)
                (void) elf_exports_of(file, &ex); /* left empty when it cannot be read: no name then */
        for (size_t i = 0; !name && i < ex.n; i++)
                if (ex.items[i].value == slot->value)
                        name = ex.items[i].name;
        snprintf(why, size, "its libraries' references go to symbols it defines or another library interposes%s%s%s, "
                 "which its toolkit would not reach before the launch binds them",
                 name ? " (" : "", name ? name : "", name ? ")" : "");
        elf_exports_done(&ex);
}

static const char *in_file(const char *library) {
        return library ? library : "the program";
}

/* Into why (size bytes): why the program's toolkit cannot be prepared (n filled from its file and
 * own library), or "". */
static void judge(const struct needs *n, const struct elf_file *file, const struct own_library *own,
                  const struct elf_info *info, const struct image_entry *image, bool has_schedule, char *why,
                  size_t size) {
        const char *variable = NULL, *variable_in = NULL;
        const struct bind_slot *unlike = NULL;
        if (n->environment_setter && !(variable = toolkit_variable_named(file)) && own->file.data &&
            (variable = toolkit_variable_named(&own->file)))
                variable_in = own->name;
        if (n->refusal && n->refused_import)
                snprintf(why, size, "%s (%s imports %s)", n->refusal, in_file(n->refused_import_in), n->refused_import);
        else if (n->refusal)
                snprintf(why, size, "%s", n->refusal);
        else if (n->names_itself && n->reads_class)
                snprintf(why, size, "it names itself and reads the class GTK 3 derives from its name as it starts");
        else if (has_schedule)
                snprintf(why, size, "it has a --schedule, which the threads its toolkit starts early would not all get");
        else if (n->toolkit == TOOLKIT_NONE)
                snprintf(why, size, "it does not link GTK 3 or GTK 4, itself or through a library it needs");
        else if (variable)
                snprintf(why, size,
                         "it may set a variable its toolkit reads as it starts (%s imports %s; %s names %s)",
                         in_file(n->setter_in), n->environment_setter, in_file(variable_in), variable);
        else if (info->has_tls)
                snprintf(why, size, "it has thread-local variables of its own, which threads its toolkit starts "
                                    "early would lack");
        else if (image->plan.nrebinds || (unlike = unlike_binding(&image->plan)))
                binds_otherwise(&image->plan, unlike, file, why, size);
        else
                why[0] = '\0';
}

enum toolkit prepare_judge(const struct image_entry *image, bool has_schedule, struct prepare_terms *ret_terms,
                           char *why, size_t size) {
        struct needs n = { 0 };
        struct elf_info info = { 0 };
        struct elf_file file = { 0 };
        struct own_library own = { 0 };
        if (elf_file_read(image->fd, &file) < 0 || elf_needs_of(&file, on_library, on_import, &n) < 0 ||
            elf_info_of(&file, &info) < 0)
                n.refusal = "its file cannot be read";
        else if (!n.toolkit)
                n.toolkit = judge_own_library(&n, &own);
        judge(&n, &file, &own, &info, image, has_schedule, why, size);
        *ret_terms = (struct prepare_terms){ .names_itself = n.names_itself,
                                             .no_arguments = n.parses_options,
                                             .starts_adwaita = n.toolkit == TOOLKIT_GTK4 && n.starts_adwaita };
        elf_file_done(&own.file);
        elf_file_done(&file);
        for (size_t i = 0; i < n.nlibraries; i++)
                free(n.libraries[i]);
        return n.toolkit;
}
