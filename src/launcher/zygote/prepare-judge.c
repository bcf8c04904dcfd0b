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

#define MAX_DIRECT_LIBRARIES 64

struct needs {
        enum toolkit toolkit;
        const char *refusal;
        const char *refused_import; /* the import refusal names, or NULL */
        char *libraries[MAX_DIRECT_LIBRARIES]; /* its DT_NEEDED, for a toolkit one of them links */
        size_t nlibraries;
        bool sets_environment; /* it imports setenv or the like */
        bool names_itself;     /* it imports g_set_prgname */
        bool reads_class;      /* it imports gdk_get_program_class */
        bool parses_options;   /* it imports gtk_init_with_args or gtk_parse_args */
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

/* Functions that change the environment, and the variables read as a toolkit starts: a program that
 * has both may set one before its toolkit starts, which a prepared toolkit would not see.
 * GLib's G_ENABLE_DIAGNOSTIC is not among them: GLib 2.74 reads it once, only to decide whether to
 * print deprecation warnings, and programs set it to "0", the value GLib takes when it is unset, to
 * keep those warnings out of the journal (gucharmap, gnome-terminal, gst-inspect). A program that set
 * it to "1" would print fewer warnings served than exec'd: docs/limitations.md says so. */
static const char *const environment_setters[] = { "setenv", "putenv", "unsetenv", "clearenv", "g_setenv",
                                                   "g_unsetenv" };
/* A name ending in '_' stands for every variable it begins (GTK_THEME, GTK_MODULES...). */
static const char *const toolkit_variables[] = {
        "GDK_",    "GTK_",    "GSK_",             "NO_AT_BRIDGE", "DISPLAY", "LANG",        "LC_",
        "XDG_",    "G_DEBUG", "G_MESSAGES_DEBUG", "G_SLICE",      "PANGO_",  "PANGOCAIRO_", "FONTCONFIG_",
        "FC_DEBUG"
};

static bool is_name_char(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether the text at `at` is the variable `name` as a program passes it to setenv or putenv: the
 * whole string ("GTK_THEME"), or what comes before its '=' ("GTK_THEME=Adwaita"). An assertion's
 * text that only begins like one ("GTK_IS_WIDGET (widget)") is not. */
static bool is_variable_at(const char *at, const char *end, const char *name) {
        size_t len = strlen(name);
        const char *p = at + len;
        if (name[len - 1] == '_')
                while (p < end && is_name_char(*p))
                        p++;
        return p < end && (*p == '\0' || *p == '=');
}

static bool has_toolkit_variable(const char *bytes, size_t size, void *data) {
        (void) data;
        const char *end = bytes + size;
        for (size_t i = 0; i < ELEMENTSOF(toolkit_variables); i++) {
                const char *name = toolkit_variables[i];
                for (const char *at = bytes; (at = memmem(at, (size_t) (end - at), name, strlen(name))); at++)
                        if (is_variable_at(at, end, name))
                                return true;
        }
        return false;
}

/* Whether the program names a variable its toolkit reads as it starts (a string, wherever it is in
 * what it loads). One that cannot be read does, to be safe. */
static bool names_toolkit_variable(const struct elf_file *file) {
        return elf_search_loaded(file, has_toolkit_variable, NULL) != 0;
}

static void on_library(const char *name, void *data) {
        struct needs *n = data;
        if (strcmp(name, "libgtk-3.so.0") == 0)
                n->toolkit = TOOLKIT_GTK3;
        else if (strcmp(name, "libgtk-4.so.1") == 0)
                n->toolkit = TOOLKIT_GTK4;
        else if (n->nlibraries < MAX_DIRECT_LIBRARIES && (n->libraries[n->nlibraries] = strdup(name)))
                n->nlibraries++;
}

static void ignore(const char *name, void *data) {
        (void) name;
        (void) data;
}

/* The toolkit of a program that links it through a library of its own (mousepad: libmousepad),
 * from the libraries it needs as the daemon loaded them. */
static enum toolkit toolkit_of_libraries(const struct needs *n) {
        struct needs inner = { 0 };
        for (size_t i = 0; !inner.toolkit && i < n->nlibraries; i++) {
                void *h = dlopen(n->libraries[i], RTLD_LAZY | RTLD_NOLOAD);
                struct link_map *map;
                if (!h)
                        continue;
                int fd = dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 ? open(map->l_name, O_RDONLY | O_CLOEXEC) : -1;
                if (fd >= 0) {
                        (void) elf_needs_read(fd, on_library, ignore, &inner);
                        close(fd);
                }
                dlclose(h);
        }
        for (size_t i = 0; i < inner.nlibraries; i++)
                free(inner.libraries[i]);
        return inner.toolkit;
}

static void on_import(const char *name, void *data) {
        struct needs *n = data;
        for (size_t i = 0; i < ELEMENTSOF(environment_setters); i++)
                if (strcmp(name, environment_setters[i]) == 0)
                        n->sets_environment = true;
        n->names_itself |= strcmp(name, "g_set_prgname") == 0;
        n->parses_options |= strcmp(name, "gtk_init_with_args") == 0 || strcmp(name, "gtk_parse_args") == 0;
        n->reads_class |= strcmp(name, "gdk_get_program_class") == 0;
        for (size_t i = 0; !n->refusal && i < ELEMENTSOF(refused_imports); i++)
                if (strcmp(name, refused_imports[i].symbol) == 0) {
                        n->refusal = refused_imports[i].why;
                        n->refused_import = refused_imports[i].symbol;
                }
}

/* Whether the launch's binding only points the libraries at the program's copies of their own
 * variables (stdout, optind...), which take the values the toolkit left in the originals, and at
 * the program's copies of C++ inline functions they also have (the same code, struct bind_slot):
 * what the toolkit ran before the binding behaves as it would after. */
static bool binds_alike_only(const struct bind_plan *plan) {
        if (plan->nrebinds)
                return false;
        for (uint32_t i = 0; i < plan->nslots; i++) {
                const struct bind_slot *slot = &plan->slots[i];
                bool copy = slot->same_code;
                for (uint32_t j = 0; !slot->absolute && !copy && j < plan->ncopies; j++)
                        copy = slot->value - plan->copies[j].offset < plan->copies[j].size;
                if (!copy)
                        return false;
        }
        return true;
}

/* Why the program's toolkit cannot be prepared (n filled from its file), or NULL. */
static const char *refusal(const struct needs *n, const struct elf_file *file, const struct elf_info *info,
                           const struct image_entry *image, bool has_schedule) {
        if (n->refusal)
                return n->refusal;
        if (n->names_itself && n->reads_class)
                return "it names itself and reads the class GTK 3 derives from its name as it starts";
        if (has_schedule)
                return "it has a --schedule, which the threads its toolkit starts early would not all get";
        if (n->toolkit == TOOLKIT_NONE)
                return "it does not link GTK 3 or GTK 4, itself or through a library it needs";
        if (n->sets_environment && names_toolkit_variable(file))
                return "it may set a variable its toolkit reads (it changes its environment and names one)";
        if (info->has_tls)
                return "it has thread-local variables of its own, which threads its toolkit starts early would lack";
        if (!binds_alike_only(&image->plan))
                return "its libraries' references go to functions it defines or another library interposes, "
                       "which its toolkit would not reach before the launch binds them";
        return NULL;
}

enum toolkit prepare_judge(const struct image_entry *image, bool has_schedule, struct prepare_terms *ret_terms,
                           char *why, size_t size) {
        struct needs n = { 0 };
        struct elf_info info = { 0 };
        struct elf_file file;
        if (elf_file_read(image->fd, &file) < 0 || elf_needs_of(&file, on_library, on_import, &n) < 0 ||
            elf_info_of(&file, &info) < 0)
                n.refusal = "its file cannot be read";
        else if (!n.toolkit)
                n.toolkit = toolkit_of_libraries(&n);
        for (size_t i = 0; i < n.nlibraries; i++)
                free(n.libraries[i]);
        const char *refused = refusal(&n, &file, &info, image, has_schedule);
        elf_file_done(&file);
        *ret_terms = (struct prepare_terms){ .wayland_only = n.names_itself, .no_arguments = n.parses_options };
        if (!refused)
                why[0] = '\0';
        else if (n.refused_import && refused == n.refusal)
                snprintf(why, size, "%s (it imports %s)", refused, n.refused_import);
        else
                snprintf(why, size, "%s", refused);
        return n.toolkit;
}

