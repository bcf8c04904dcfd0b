/* SPDX-License-Identifier: MIT */
/* The daemon's status as one JSON object, for scripts: each key once, a number where the value is
 * a whole number, a string otherwise; the keys that can come more than once (one line per
 * program, object, step, reason or schedule) always as arrays, in the daemon's order. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "headstart/client.h"
#include "macro.h"

/* docs/protocol.md, the status keys that are one line per item. */
static const char *const list_keys[] = { "program", "preload", "learned", "warm-up", "declined", "schedule",
                                         "prepared", "read-at-load" };

static bool is_list(const char *key, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(list_keys); i++)
                if (strlen(list_keys[i]) == len && strncmp(list_keys[i], key, len) == 0)
                        return true;
        return false;
}

static bool is_number(const char *s, size_t len) {
        if (len == 0 || len > 18)
                return false;
        for (size_t i = 0; i < len; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return true;
}

static void put_string(FILE *out, const char *s, size_t len) {
        fputc('"', out);
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c == '"' || c == '\\')
                        fprintf(out, "\\%c", c);
                else if (c < 0x20)
                        fprintf(out, "\\u%04x", c);
                else
                        fputc(c, out);
        }
        fputc('"', out);
}

/* Each line "key: value". A list key's values are gathered where it first appears. */
static void put_json(FILE *out, const char *text) {
        fputc('{', out);
        bool first = true;
        for (const char *line = text; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n')) {
                size_t len = strcspn(line, "\n");
                const char *colon = memchr(line, ':', len);
                if (!colon)
                        continue;
                size_t klen = (size_t) (colon - line);
                const char *value = colon + (colon + 1 < line + len && colon[1] == ' ' ? 2 : 1);
                size_t vlen = (size_t) (line + len - value);
                bool list = is_list(line, klen);
                if (list) { /* gathered at its first line: skip the later ones */
                        bool seen = false;
                        for (const char *p = text; p < line && !seen; p += strcspn(p, "\n") + 1)
                                seen = strncmp(p, line, klen + 1) == 0;
                        if (seen)
                                continue;
                }
                fprintf(out, "%s", first ? "" : ", ");
                first = false;
                put_string(out, line, klen);
                fputs(": ", out);
                if (!list) {
                        if (is_number(value, vlen))
                                fprintf(out, "%.*s", (int) vlen, value);
                        else
                                put_string(out, value, vlen);
                        continue;
                }
                fputc('[', out);
                bool first_item = true;
                for (const char *p = line; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n')) {
                        size_t plen = strcspn(p, "\n");
                        if (plen <= klen || strncmp(p, line, klen + 1) != 0)
                                continue;
                        const char *v = p + klen + 1 + (p[klen + 1] == ' ');
                        fprintf(out, "%s", first_item ? "" : ", ");
                        first_item = false;
                        put_string(out, v, (size_t) (p + plen - v));
                }
                fputc(']', out);
        }
        fputs("}\n", out);
}

int hs_daemon_status_json(const char *socket, char **ret_json) {
        _cleanup_free_ char *text = NULL;
        int r = hs_daemon_status(socket, &text);
        if (r < 0)
                return r;
        char *json = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&json, &size);
        if (!out)
                return -errno;
        put_json(out, text);
        if (fclose(out) != 0) {
                free(json);
                return -ENOMEM;
        }
        *ret_json = json;
        return 0;
}
