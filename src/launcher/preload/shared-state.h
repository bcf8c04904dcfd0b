/* SPDX-License-Identifier: MIT */
/* What a warm program's constructors leave in the libraries every program of the daemon shares.
 *
 * A warm program's constructors run once, in the daemon. Whatever they store in a library's own
 * data stays there for every program the daemon starts afterwards: tesseract's training tools each
 * add their parameters to libtesseract's list, and served warm side by side, each listed the
 * others' (issue 30's corpus run); a Qt program's compiled-in resources would be found by another
 * program. Under exec each program sees only its own. So a program is loaded warm only if, loaded
 * in a throwaway child, it changed no byte of the shared libraries' writable data. The C and C++
 * runtimes are left out: the allocator's, stdio's and the loader's bookkeeping change with any
 * code that runs, and are not something another program can look up. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct shared_state {
        struct shared_object *objects;
        size_t n;
};

/* Takes the fingerprint of every loaded library's writable data (without its RELRO part). Returns
 * 0 or a negative errno. */
int shared_state_take(struct shared_state *s);

/* The first library taken in s whose writable data differs now (its file name, in buf), or NULL. */
const char *shared_state_changed(const struct shared_state *s, char *buf, size_t size);

void shared_state_done(struct shared_state *s);
