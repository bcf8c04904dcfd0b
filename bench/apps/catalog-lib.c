/* SPDX-License-Identifier: MIT */
/* libhs-catalog.so, a library of our own for `headstart link check` (docs/linking.md): a catalogue of
 * a thousand entries, each an exported function with an exported name, listed in exported tables, as
 * a plug-in registry or a codec table is. Built as libraries usually are (-fPIC, every symbol
 * exported, no -Bsymbolic), each table slot is a relocation against a symbol the library defines
 * itself, so the loader looks each one up at every launch. */
#include "catalog.h"

/* The entry functions catalog_entry_000 to catalog_entry_999 and their names (1000 + N keeps the
 * number decimal). Each calls catalog_weight(), exported too. */
#define HS_ENTRY(n) \
        const char catalog_name_##n[] = "entry " #n; \
        double catalog_entry_##n(double x) { return catalog_weight(x) * (1##n - 1000); }
#define HS_TEN(p) HS_ENTRY(p##0) HS_ENTRY(p##1) HS_ENTRY(p##2) HS_ENTRY(p##3) HS_ENTRY(p##4) \
        HS_ENTRY(p##5) HS_ENTRY(p##6) HS_ENTRY(p##7) HS_ENTRY(p##8) HS_ENTRY(p##9)
#define HS_HUNDRED(p) HS_TEN(p##0) HS_TEN(p##1) HS_TEN(p##2) HS_TEN(p##3) HS_TEN(p##4) \
        HS_TEN(p##5) HS_TEN(p##6) HS_TEN(p##7) HS_TEN(p##8) HS_TEN(p##9)
#define HS_ALL(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9)

double catalog_scale = 0.5;

double catalog_weight(double x) {
        return x * catalog_scale;
}

HS_ALL(HS_HUNDRED)

#undef HS_ENTRY
#define HS_ENTRY(n) catalog_entry_##n,
catalog_fn *const catalog_entries[CATALOG_SIZE] = { HS_ALL(HS_HUNDRED) };
#undef HS_ENTRY
#define HS_ENTRY(n) catalog_name_##n,
const char *const catalog_names[CATALOG_SIZE] = { HS_ALL(HS_HUNDRED) };

double catalog_total(unsigned count, const char **last) {
        double total = 0;
        if (count > CATALOG_SIZE)
                count = CATALOG_SIZE;
        for (unsigned i = 0; i < count; i++) {
                total += catalog_entries[i](1.0);
                *last = catalog_names[i];
        }
        return total;
}
