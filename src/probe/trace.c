/* SPDX-License-Identifier: MIT */
/* A static buffer and no allocation: the probe shares the program's heap through nothing, and a
 * forked child gets an exact copy of what its parent had not written yet. */
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUFFER_SIZE (64 * 1024)
#define RECORD_MAX (16 * 1024) /* a record never needs more: two strings of 4 KiB escaped */
#define STRING_MAX 4096

static char buffer[BUFFER_SIZE];
static size_t used;
static pid_t buffer_pid; /* the process whose records the buffer holds */
static char path[PATH_MAX];
static int fd = -1;

bool trace_open(void) {
        const char *p = getenv("HEADSTART_PROBE_OUTPUT");
        const char *n = getenv("HEADSTART_PROBE_FD");
        if (p && *p && strlen(p) < sizeof path) {
                strcpy(path, p);
                fd = -1;
        } else if (n && *n) {
                char *end;
                long v = strtol(n, &end, 10);
                if (*end || v < 0 || v > INT_MAX)
                        return false;
                fd = (int) v;
        } else
                return false;
        buffer_pid = getpid();
        return true;
}

uint64_t trace_now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void put(const char *s, size_t n) {
        if (used + n > sizeof buffer)
                n = sizeof buffer - used; /* cannot happen within RECORD_MAX; never overflow */
        memcpy(buffer + used, s, n);
        used += n;
}

static void put_str(const char *s) {
        put(s, strlen(s));
}

static void put_escaped(const char *s) {
        static const char hex[] = "0123456789abcdef";
        put("\"", 1);
        for (size_t i = 0; s[i] && i < STRING_MAX; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c == '"' || c == '\\') {
                        char e[2] = { '\\', (char) c };
                        put(e, 2);
                } else if (c < 0x20 || c >= 0x7f) {
                        /* bytes, not characters: a path need not be UTF-8, and JSON readers get
                         * every byte back as one code point below 256 */
                        char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
                        put(e, 6);
                } else
                        put((const char *) &c, 1);
        }
        put("\"", 1);
}

static void put_key(const char *key) {
        put(",\"", 2);
        put_str(key);
        put("\":", 2);
}

static void put_u64(uint64_t v) {
        char digits[24];
        int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long) v);
        put(digits, (size_t) n);
}

void trace_begin(const char *event, uint64_t t) {
        if (getpid() != buffer_pid) {
                used = 0;
                buffer_pid = getpid();
        }
        if (used + RECORD_MAX > sizeof buffer)
                trace_flush();
        put_str("{\"event\":\"");
        put_str(event);
        put_str("\"");
        put_key("pid");
        put_u64((uint64_t) buffer_pid);
        put_key("t");
        put_u64(t);
}

void trace_str(const char *key, const char *value) {
        put_key(key);
        if (value)
                put_escaped(value);
        else
                put_str("null");
}

void trace_u64(const char *key, uint64_t value) {
        put_key(key);
        put_u64(value);
}

void trace_null(const char *key) {
        put_key(key);
        put_str("null");
}

void trace_end(void) {
        put("}\n", 2);
}

static void write_all(int out) {
        for (size_t done = 0; done < used;) {
                ssize_t n = write(out, buffer + done, used - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return; /* nowhere to report it: the program's own output is not ours */
                done += (size_t) n;
        }
}

void trace_flush(void) {
        if (getpid() != buffer_pid) {
                used = 0;
                buffer_pid = getpid();
                return;
        }
        if (used == 0)
                return;
        if (fd >= 0)
                write_all(fd);
        else if (*path) {
                int out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
                if (out >= 0) {
                        write_all(out);
                        close(out);
                }
        }
        used = 0;
}
