/* SPDX-License-Identifier: MIT */
/* Catching the program's call of __libc_start_main to wrap its main, so that the moment main is
 * entered is seen exactly. A PIE calls it through a GOT slot the loader fills without telling the
 * audit interface: that slot is rewritten once relocation is over. A program that calls it
 * through its PLT is caught in la_symbind, at load (immediate binding) or at the call (lazy). */
#pragma once

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

typedef void (*main_entered_fn)(void);

/* The function called first thing in the wrapped main. */
void start_main_on_entry(main_entered_fn fn);

/* From la_symbind: the address to bind a PLT reference to __libc_start_main to instead. */
uintptr_t start_main_redirect(uintptr_t real);

/* After relocation: rewrites the program's GOT slot for __libc_start_main, unless la_symbind has
 * caught it already. False when there is no such slot (the PLT may still catch it). */
bool start_main_patch(const struct link_map *program);

/* Whether one of the two has taken hold. */
bool start_main_caught(void);
