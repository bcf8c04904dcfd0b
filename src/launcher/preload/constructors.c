/* SPDX-License-Identifier: MIT */
#include "constructors.h"

typedef void (*init_fn)(int argc, char **argv, char **envp);

void program_constructors_run(const struct program_constructors *c, uintptr_t base, int argc, char **argv,
                              char **envp) {
        if (c->init)
                ((init_fn) (base + c->init))(argc, argv, envp);
        const uintptr_t *array = (const uintptr_t *) (base + c->array);
        for (uint64_t i = 0; i < c->count; i++)
                ((init_fn) array[i])(argc, argv, envp);
}
