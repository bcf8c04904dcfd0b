/* SPDX-License-Identifier: MIT */
/* Logging to stderr with one write(2) per line, never through stdio: the daemon forks children
 * that inherit its memory, and an stdio buffer with pending bytes would be written twice. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARNING, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_setup(const char *ident, enum log_level max_level);

/* Replaces each control character of text (len bytes) with '?': what quotes another's text (a
 * client's path or variable) stays one line, so that nobody adds lines of their own to a log or
 * a status. Every log line is made so. */
void text_one_line(char *text, size_t len);
enum log_level log_get_max_level(void);

/* Returns -abs(error) so that callers can write `return log_error_errno(r, "...")`. */
int log_internal(enum log_level level, int error, const char *format, ...) __attribute__((format(printf, 3, 4)));

#define log_error(...) log_internal(LOG_LEVEL_ERROR, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_LEVEL_WARNING, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_internal(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
#define log_error_errno(e, ...) log_internal(LOG_LEVEL_ERROR, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_LEVEL_WARNING, (e), __VA_ARGS__)
#define log_info_errno(e, ...) log_internal(LOG_LEVEL_INFO, (e), __VA_ARGS__)
