/* SPDX-License-Identifier: MIT */
/* Loads the plugin named by argv[1] after main, as programs load GL drivers or input methods, and
 * prints what it says. On stderr it says whether the plugin was already loaded when main began
 * (which exec never does, and a daemon that preloads what it learned does). With "close" as argv[2]
 * it closes the plugin before it returns, as Mesa closes its driver when Qt closes its display. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int framework_initialised(void);
#ifdef WITH_IE_TLS
extern __thread int framework_tls __attribute__((tls_model("initial-exec")));
#endif

#ifdef EXPORTS_API
/* What hs-plugin-needs-program calls in the program (exported: -rdynamic). */
int program_api(void);
int program_api(void) {
        return 42;
}
#endif

int main(int argc, char *argv[]) {
        if (argc < 2 || (argc > 2 && strcmp(argv[2], "close") != 0)) {
                fprintf(stderr, "usage: uses-plugin PLUGIN [close]\n");
                return 2;
        }
        fprintf(stderr, "loaded before main: %s\n", dlopen(argv[1], RTLD_LAZY | RTLD_NOLOAD) ? "yes" : "no");
        fprintf(stderr, "framework initialised before main: %s\n", framework_initialised() ? "yes" : "no");
        void *h = dlopen(argv[1], RTLD_NOW);
        if (!h) {
                fprintf(stderr, "uses-plugin: %s\n", dlerror());
                return 1;
        }
        const char *(*hello)(void) = (const char *(*)(void)) dlsym(h, "plugin_hello");
        printf("%s\n", hello ? hello() : "no plugin_hello");
#ifdef WITH_IE_TLS
        printf("framework's thread-local counter: %d\n", framework_tls);
#endif
        if (argc > 2 && dlclose(h) != 0) {
                fprintf(stderr, "uses-plugin: %s\n", dlerror());
                return 1;
        }
        return 0;
}
