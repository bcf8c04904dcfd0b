/* SPDX-License-Identifier: MIT */
/* A library keeping a list that programs add to from their constructors, as libtesseract keeps the
 * parameters its tools define (issue 30) and Qt and GIO keep compiled-in resources. */
#include <stdio.h>

#define REGISTRY_MAX 16

static const char *entries[REGISTRY_MAX];
static int count;

void registry_add(const char *name);
void registry_add(const char *name) {
        if (count < REGISTRY_MAX)
                entries[count++] = name;
}

void registry_print(void);
void registry_print(void) {
        for (int i = 0; i < count; i++)
                printf("registered: %s\n", entries[i]);
}
