/* SPDX-License-Identifier: MIT */
/* --prepare-display: which toolkit to start ahead for a program, read from its file once as the zygote
 * starts, or why none (docs/limitations.md lists the reasons): a program that sets its toolkit up
 * itself before it starts, may set a variable the toolkit reads, has thread-local variables or a
 * --schedule, or whose libraries bind to symbols it defines, would notice. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "prepare-toolkit.h"

struct image_entry;

/* The toolkit the program image links (itself or through a library it needs: TOOLKIT_NONE when
 * none), and in why (size bytes) why it is not prepared, or "" when it is, on the terms *ret_terms.
 * has_schedule: the daemon gives it a --schedule. */
enum toolkit prepare_judge(const struct image_entry *image, bool has_schedule, struct prepare_terms *ret_terms,
                           char *why, size_t size);
