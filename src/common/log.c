/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set once at start-up, before any fork; read-only afterwards. */
static const char *log_ident = "headstart";
static enum log_level log_max_level = LOG_LEVEL_INFO;

void log_setup(const char *ident, enum log_level max_level) {
        log_ident = ident;
        log_max_level = max_level;
}

enum log_level log_get_max_level(void) {
        return log_max_level;
}

void text_one_line(char *text, size_t len) {
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) text[i] < 0x20 || text[i] == 0x7f)
                        text[i] = '?';
}

int log_internal(enum log_level level, int error, const char *format, ...) {
        int saved = errno;
        int ret = error > 0 ? -error : error;

        if (level > log_max_level) {
                errno = saved;
                return ret;
        }

        char line[2048];
        int n = snprintf(line, sizeof line, "%s: ", log_ident);
        va_list ap;
        va_start(ap, format);
        n += vsnprintf(line + n, sizeof line - (size_t) n, format, ap);
        va_end(ap);
        if (n >= (int) sizeof line - 1)
                n = (int) sizeof line - 2;
        if (error != 0)
                n += snprintf(line + n, sizeof line - (size_t) n, ": %s", strerror(abs(error)));
        if (n >= (int) sizeof line - 1)
                n = (int) sizeof line - 2;
        text_one_line(line, (size_t) n);
        line[n++] = '\n';
        (void) !write(STDERR_FILENO, line, (size_t) n);

        errno = saved;
        return ret;
}
