/* SPDX-License-Identifier: MIT */
#include "string-list.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int string_list_add(struct string_list *l, const char *s) {
        char *copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        char **items = realloc(l->items, (l->n + 1) * sizeof(char *));
        if (!items) {
                free(copy);
                return -ENOMEM;
        }
        items[l->n++] = copy;
        l->items = items;
        return 0;
}

bool string_list_contains(const struct string_list *l, const char *s) {
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->items[i], s) == 0)
                        return true;
        return false;
}

int string_list_add_new(struct string_list *l, const char *s) {
        return string_list_contains(l, s) ? 0 : string_list_add(l, s);
}

void string_list_done(struct string_list *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i]);
        free(l->items);
        *l = (struct string_list){ 0 };
}
