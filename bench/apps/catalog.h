/* SPDX-License-Identifier: MIT */
/* The interface of libhs-catalog.so (catalog-lib.c), used by the catalog sample (catalog.c). */
#pragma once

#define CATALOG_SIZE 1000

typedef double catalog_fn(double);

extern double catalog_scale;
double catalog_weight(double x);
extern catalog_fn *const catalog_entries[CATALOG_SIZE];
extern const char *const catalog_names[CATALOG_SIZE];
/* The sum of the first `count` entries at 1.0; *last is the name of the last one summed. */
double catalog_total(unsigned count, const char **last);
