/* SPDX-License-Identifier: MIT */
/* A growable list of owned strings: programs, libraries, settings. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct string_list {
        char **items;
        size_t n;
};

/* Appends a copy of s. Returns 0 or -ENOMEM (the list is unchanged). */
int string_list_add(struct string_list *l, const char *s);
bool string_list_contains(const struct string_list *l, const char *s);
/* Appends a copy of s unless the list has it already. Returns 0 or -ENOMEM. */
int string_list_add_new(struct string_list *l, const char *s);
void string_list_done(struct string_list *l);
