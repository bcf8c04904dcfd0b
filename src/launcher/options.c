/* SPDX-License-Identifier: MIT */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "launch-report.h"
#include "throwaway.h"
#include "trusted-path.h"
#include "warm-up.h"

#define DEFAULT_MAX_CHILDREN 1024u

static int set_string(char **field, const char *value) {
        char *copy = strdup(value);
        if (!copy)
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

/* Where the setting being applied came from, for its error lines: "FILE:LINE: ", or "" (the command line). */
static char setting_origin[PATH_MAX + 32];

static int parse_bool(const char *key, const char *value, bool *ret) {
        if (!value || strcmp(value, "yes") == 0 || strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
                *ret = true;
        else if (strcmp(value, "no") == 0 || strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
                *ret = false;
        else
                return log_error("%s%s: expected yes or no, got '%s'", setting_origin, key, value), -EINVAL;
        return 0;
}

/* A whole number from min to max. 0, where allowed, means none or never. */
static int parse_number(const char *key, const char *value, unsigned min, unsigned max, unsigned *ret) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(value, &end, 10);
        /* Digits only: strtoul would take " 5", "+5" and "-1" (the last as a huge number). */
        if (errno || *end || end == value || !isdigit((unsigned char) value[0]) || v < min || v > max)
                return log_error("%s%s: expected a number from %u to %u, got '%s'", setting_origin, key, min, max,
                                 value),
                       -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

/* "fontconfig,gdk-pixbuf": each step known, each once. */
static int parse_warm_up(struct daemon_options *o, const char *value) {
        _cleanup_free_ char *copy = strdup(value);
        if (!copy)
                return log_error("out of memory"), -ENOMEM;
        char *save = NULL;
        for (char *step = strtok_r(copy, ", ", &save); step; step = strtok_r(NULL, ", ", &save)) {
                if (warm_up_check_name(step) < 0)
                        return log_error("%swarm-up: unknown step '%s' (known: %s)", setting_origin, step,
                                         warm_up_known()),
                               -EINVAL;
                if (string_list_add_new(&o->warm_up, step) < 0)
                        return log_error("out of memory"), -ENOMEM;
        }
        return 0;
}

/* One setting, the same for `--key value` and `key = value`. */
static int apply_setting(struct daemon_options *o, const char *key, const char *value) {
        int r;
        static const char *const named[] = { "app",    "warm",   "preload",   "terminal",
                                             "prepare-display", "schedule", "socket", "cache-dir" };
        for (size_t i = 0; i < ELEMENTSOF(named); i++)
                if (strcmp(key, named[i]) == 0 && !*value)
                        return log_error("%s%s: empty: name a file", setting_origin, key), -EINVAL;
        if (strcmp(key, "app") == 0)
                r = string_list_add(&o->apps, value);
        else if (strcmp(key, "warm") == 0)
                r = string_list_add(&o->warm, value);
        else if (strcmp(key, "preload") == 0)
                r = string_list_add(&o->preloads, value);
        else if (strcmp(key, "terminal") == 0)
                r = string_list_add(&o->terminal, value);
        else if (strcmp(key, "schedule") == 0)
                r = string_list_add(&o->schedules, value);
        else if (strcmp(key, "warm-up") == 0)
                return parse_warm_up(o, value);
        else if (strcmp(key, "socket") == 0)
                r = set_string(&o->socket_path, value);
        else if (strcmp(key, "cache-dir") == 0)
                r = set_string(&o->cache_dir, value);
        else if (strcmp(key, "allow-root") == 0)
                return parse_bool(key, value, &o->allow_root);
        else if (strcmp(key, "learn") == 0) {
                bool learn = true;
                r = parse_bool(key, value, &learn);
                o->no_learn = !learn;
                return r;
        } else if (strcmp(key, "report-launches") == 0)
                r = set_string(&o->report_launches, value);
        else if (strcmp(key, "learn-file") == 0)
                r = set_string(&o->learn_file, value);
        else if (strcmp(key, "learn-refresh") == 0)
                return parse_number(key, value, 1, 65536, &o->learn_refresh);
        else if (strcmp(key, "verbose") == 0)
                return parse_bool(key, value, &o->verbose);
        else if (strcmp(key, "exec-while-starting") == 0)
                return parse_bool(key, value, &o->exec_while_starting);
        else if (strcmp(key, "prepare-display") == 0)
                r = string_list_add(&o->prepare_display, value);
        else if (strcmp(key, "max-children") == 0)
                return parse_number(key, value, 1, 65536, &o->max_children);
        else if (strcmp(key, "pool") == 0)
                return parse_number(key, value, 0, 4096, &o->pool_size);
        else if (strcmp(key, "refresh-launches") == 0)
                return parse_number(key, value, 0, UINT_MAX, &o->refresh_launches);
        else if (strcmp(key, "refresh-seconds") == 0)
                return parse_number(key, value, 0, UINT_MAX / 1000, &o->refresh_seconds);
        else if (strcmp(key, "trial-timeout") == 0)
                return parse_number(key, value, 1, 86400, &o->trial_timeout_s);
        else if (strcmp(key, "request-timeout") == 0) {
                unsigned seconds = 0;
                r = parse_number(key, value, 1, 86400, &seconds);
                if (r >= 0)
                        o->request_timeout_ms = seconds * 1000u;
                return r;
        }
        else
                return log_error("%sunknown setting '%s'", setting_origin, key), -EINVAL;
        return r < 0 ? log_error_errno(r, "%scannot store setting '%s'", setting_origin, key) : 0;
}

/* --zygote LISTEN_FD,CONTROL_FD,LEARNED_FD,COUNTS_FD,GENERATION,REASON: how the supervisor starts a
 * zygote (LEARNED_FD, COUNTS_FD -1: none). */
static int parse_zygote(struct daemon_options *o, const char *value) {
        int listen_fd, control_fd, learned_fd, counts_fd, n = 0;
        unsigned generation;
        if (sscanf(value, "%d,%d,%d,%d,%u,%n", &listen_fd, &control_fd, &learned_fd, &counts_fd, &generation, &n) != 5 ||
            n == 0 || listen_fd < 0 || control_fd < 0 || learned_fd < -1 || counts_fd < -1)
                return log_error("--zygote is for headstartd's own use"), -EINVAL;
        o->zygote.active = true;
        o->zygote.listen_fd = listen_fd;
        o->zygote.control_fd = control_fd;
        o->zygote.learned_fd = learned_fd;
        o->zygote.counts_fd = counts_fd;
        o->zygote.generation = generation;
        return set_string(&o->zygote.reason, value + n);
}

static char *strip(char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        char *e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
                *--e = '\0';
        return s;
}

int options_parse_config(struct daemon_options *o, const char *path) {
        /* "-FILE": FILE may be missing, as systemd's EnvironmentFile=-FILE (the user unit names the
         * user's configuration, which a user who registers nothing has not written). */
        bool optional = path[0] == '-';
        path += optional;
        /* It names what the daemon loads into every program: a file someone else could change would
         * let them run code as us. Opened first, then checked, then read from the same fd. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 && optional && errno == ENOENT)
                return 0;
        if (fd < 0)
                return log_error_errno(errno, "cannot open configuration file %s", path);
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return log_error("cannot read configuration file %s: not a regular file", path), -EINVAL;
        char why[PATH_MAX + 128];
        int r = trusted_path_check_fd(fd, path, geteuid(), why, sizeof why);
        if (r == -EPERM)
                return log_error("refusing the configuration file %s: %s; only root or its user may be able to "
                                 "change it or the folders above it",
                                 path, why),
                       -EPERM;
        if (r < 0)
                return log_error_errno(r, "cannot check the configuration file %s", path);
        _cleanup_fclose_ FILE *f = fdopen(fd, "re");
        if (!f)
                return log_error_errno(errno, "cannot read configuration file %s", path);
        TAKE_FD(fd);
        return options_parse_config_stream(o, f, path);
}

int options_parse_config_stream(struct daemon_options *o, FILE *f, const char *path) {
        char *line = NULL;
        size_t cap = 0;
        unsigned lineno = 0;
        int r = 0;
        while (r >= 0 && getline(&line, &cap, f) >= 0) {
                lineno++;
                char *s = strip(line);
                if (*s == '\0' || *s == '#')
                        continue;
                char *eq = strchr(s, '=');
                if (!eq) {
                        r = log_error("%s:%u: expected 'key = value'", path, lineno);
                        r = -EINVAL;
                        break;
                }
                *eq = '\0';
                snprintf(setting_origin, sizeof setting_origin, "%s:%u: ", path, lineno);
                r = apply_setting(o, strip(s), strip(eq + 1));
                setting_origin[0] = '\0';
        }
        free(line);
        return r;
}

static void help(void) {
        static const char text[] =
                "Usage: headstartd [OPTIONS]\n"
                "Starts programs by fork and dlopen instead of exec, with their libraries loaded once.\n\n"
                "  --app PROGRAM        register PROGRAM: preload its libraries (repeatable)\n"
                "  --warm PROGRAM       register PROGRAM and load the program itself too: a launch is then\n"
                "                       fork and main; its constructors run once, here (repeatable)\n"
                "  --preload LIB        also preload LIB (repeatable)\n"
                "  --config [-]FILE     read settings from FILE, one 'key = value' per line ('-FILE':\n"
                "                       FILE may be missing)\n"
                "  --socket PATH        listen on PATH (default $XDG_RUNTIME_DIR/headstart/socket)\n"
                "  --cache-dir DIR      where loadable copies of PIE programs go (default: beside the socket)\n"
                "  --pool N             keep N children forked and waiting for a request (default none)\n"
                "  --refresh-launches N\n"
                "                       start a fresh zygote (new address layout and stack canary) after\n"
                "                       N launches; the old one finishes its programs (default never)\n"
                "  --refresh-seconds S  ... or after S seconds (default never); SIGHUP and a change on disk\n"
                "                       to a loaded library or registered program refresh too\n"
                "  --no-learn           do not learn which objects programs load after main, nor preload\n"
                "                       what was learned (config: learn = no)\n"
                "  --learn-file FILE    where learned objects are kept (default: beside the socket, 'learned')\n"
                "  --learn-refresh N    start a fresh zygote, which preloads them, once N new objects were\n"
                "                       learned (default 1)\n"
                "  --warm-up STEP,...   run this initialisation once in the zygote instead of in every\n"
                "                       launch: fontconfig (its configuration and caches), gdk-pixbuf (its\n"
                "                       loader list), gtk4-classes (GTK 4's widget classes initialised),\n"
                "                       LIBRARY:FUNCTION (a function with no argument of a loaded\n"
                "                       library); each is tested first and refused if it starts a thread\n"
                "                       or opens a socket (a passed test is kept beside the learned file\n"
                "                       until a loaded file or the environment changes)\n"
                "  --prepare-display PROGRAM  keep a child whose toolkit (GTK 3 or GTK 4) opened the\n"
                "                       display and read its theme ahead of PROGRAM's next launch, with\n"
                "                       the settings of its last (kept across restarts beside the\n"
                "                       learned file); only a launch exactly like that one takes it\n"
                "                       (a registered program; repeatable; docs/limitations.md)\n"
                "  --terminal PROGRAM   serve PROGRAM also to a client with a controlling terminal: it only\n"
                "                       writes to it (no /dev/tty, no job control of its own), as a\n"
                "                       compiler; others go to exec then (repeatable)\n"
                "  --schedule 'PROGRAM KEY=VALUE...'  how PROGRAM is scheduled when served:\n"
                "                       policy=other|batch|idle|fifo|rr|deadline, priority=1-99,\n"
                "                       runtime=, deadline=, period= (10ms, 500us), cpus=LIST, nice=N,\n"
                "                       uclamp-min=, uclamp-max= (0-1024), cpu-max=QUOTA/PERIOD and\n"
                "                       cpuset=LIST (a cgroup under the daemon's); tried at start, where\n"
                "                       what the daemon may not do stops it; exec'd after a decline, it\n"
                "                       keeps the client's scheduling (repeatable; docs/scheduling.md)\n"
                "  --report-launches SOCKET  tell headstart-pind (docs/pinning.md) each program served, so\n"
                "                       that its pages stay resident; 'none' to not (default\n"
                "                       " HS_LAUNCH_REPORT_SOCKET ")\n"
                "  --exec-while-starting  until the daemon is ready to serve, decline every launch at once,\n"
                "                       so that its client execs the program instead of waiting for the\n"
                "                       daemon's start (a program started with it at boot)\n"
                "  --max-children N     programs running at once before requests are declined (default 1024)\n"
                "  --request-timeout S  seconds a client has to send its whole request (default 10)\n"
                "  --trial-timeout S    seconds a test child may take to try a learned object, a\n"
                "                       warm-up step or a program's load before it is ended and what it\n"
                "                       tried is left out (default 30)\n"
                "  --allow-root         run as root (serves root only)\n"
                "  --verbose            log every launch\n"
                "  --check PROGRAM...   say for each program whether the daemon would serve it (and in\n"
                "                       which modes) or send it to exec, and why; one JSON object a line\n"
                "  --help, --version\n";
        fputs(text, stdout);
}

/* Long options only. libc's getopt is not used: its state (optind, optarg and hidden internals such
 * as the argument ordering) lives in libc, and a served program must find it as a fresh exec would. */
struct long_option {
        const char *name;
        bool has_value;
};

static const struct long_option long_options[] = {
        { "app", true },           { "warm", true },          { "preload", true },
        { "config", true },        { "socket", true },        { "cache-dir", true },
        { "max-children", true },  { "pool", true },          { "refresh-launches", true },
        { "refresh-seconds", true }, { "zygote", true } /* internal */,
        { "zygote-leave-out", true } /* internal */, { "request-timeout", true },
        { "allow-root", false },   { "verbose", false },      { "help", false },
        { "version", false },       { "check", false },        { "no-learn", false },
        { "learn-file", true },    { "learn-refresh", true },  { "warm-up", true },
        { "terminal", true },       { "report-launches", true }, { "schedule", true },
        { "prepare-display", true }, { "trial-timeout", true }, { "exec-while-starting", false },
};

static const struct long_option *find_option(const char *name, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(long_options); i++)
                if (strlen(long_options[i].name) == len && strncmp(long_options[i].name, name, len) == 0)
                        return &long_options[i];
        return NULL;
}

static int apply_option(struct daemon_options *o, const char *name, const char *value) {
        if (strcmp(name, "help") == 0)
                return help(), 0;
        if (strcmp(name, "version") == 0)
                return fputs("headstartd " HEADSTART_VERSION "\n", stdout), 0;
        if (strcmp(name, "config") == 0)
                return options_parse_config(o, value) < 0 ? -EINVAL : 1;
        if (strcmp(name, "zygote") == 0)
                return parse_zygote(o, value) < 0 ? -EINVAL : 1;
        if (strcmp(name, "zygote-leave-out") == 0)
                return string_list_add(&o->zygote.leave_out, value) < 0 ? (log_error("out of memory"), -ENOMEM) : 1;
        if (strcmp(name, "no-learn") == 0)
                return apply_setting(o, "learn", "no") < 0 ? -EINVAL : 1;
        return apply_setting(o, name, value) < 0 ? -EINVAL : 1;
}

/* --check takes every argument after it as a program. */
static int parse_check(struct daemon_options *o, char *programs[], int n) {
        if (n == 0)
                return log_error("--check needs at least one program"), -EINVAL;
        for (int i = 0; i < n; i++)
                if (string_list_add(&o->check, programs[i]) < 0)
                        return log_error("out of memory"), -ENOMEM;
        return 1;
}

int options_parse_argv(struct daemon_options *o, int argc, char *argv[]) {
        o->max_children = DEFAULT_MAX_CHILDREN;
        o->request_timeout_ms = 10000u;
        o->trial_timeout_s = THROWAWAY_DEFAULT_DEADLINE_S;
        o->learn_refresh = 1;
        for (int i = 1; i < argc; i++) {
                const char *arg = argv[i];
                if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
                        return log_error("unexpected argument '%s' (programs are registered with --app)", arg),
                               -EINVAL;
                const char *eq = strchr(arg + 2, '=');
                size_t len = eq ? (size_t) (eq - arg - 2) : strlen(arg + 2);
                const struct long_option *opt = find_option(arg + 2, len);
                if (!opt)
                        return log_error("unknown option '%s' (see --help)", arg), -EINVAL;
                const char *value = eq ? eq + 1 : NULL;
                if (opt->has_value && !value) {
                        if (i + 1 >= argc)
                                return log_error("option '--%s' needs a value", opt->name), -EINVAL;
                        value = argv[++i];
                }
                if (!opt->has_value && value)
                        return log_error("option '--%s' takes no value", opt->name), -EINVAL;
                if (strcmp(opt->name, "check") == 0)
                        return parse_check(o, argv + i + 1, argc - i - 1);
                int r = apply_option(o, opt->name, value);
                if (r <= 0)
                        return r;
        }
        return 1;
}

void options_done(struct daemon_options *o) {
        free(o->socket_path);
        free(o->cache_dir);
        free(o->learn_file);
        free(o->report_launches);
        free(o->zygote.reason);
        string_list_done(&o->zygote.leave_out);
        string_list_done(&o->apps);
        string_list_done(&o->check);
        string_list_done(&o->warm);
        string_list_done(&o->preloads);
        string_list_done(&o->warm_up);
        string_list_done(&o->terminal);
        string_list_done(&o->prepare_display);
        string_list_done(&o->schedules);
}
