/* SPDX-License-Identifier: MIT */
/* Symbol bindings counted per pair of objects (who asked, who defined the symbol), split at the
 * moment main was entered. glibc reports to la_symbind the bindings of PLT slots (at load for
 * objects bound immediately, at the first call otherwise), not those of data relocations. */
#pragma once

#include <stdbool.h>

void bindings_count(unsigned from, unsigned to, bool after_main);

/* One "binding" record per pair. */
void bindings_emit(void);
