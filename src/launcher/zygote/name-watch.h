/* SPDX-License-Identifier: MIT */
/* The names the loader would look up again were the registered programs exec'd, beyond the files
 * the zygote maps (file-watch.h watches those): the name each loaded object was opened by and the
 * symlinks it leads through (dpkg upgrades a library by pointing its soname's symlink at a new
 * file, and the old file, still mapped here, is never freed), the names in the search path where
 * the loader looked for a library and found nothing (a library put there would come first), and
 * the loader's cache (ldconfig can move a soname to another directory). */
#pragma once

#include <stddef.h>

#include "file-watch.h"
#include "string-list.h"

/* Adds them to w (after file_watch_init): the objects loaded now but those under skip_dir (our
 * warm copies), and missing, as preload_resolve_closure found them. *ret_changed is set to one that
 * already names another file than was loaded, if any (caller frees). A name that cannot be watched
 * does not stop the others: how many, and why the first, go into problem (empty when none). A
 * directory that does not exist is not watched and not a problem: the loader passes it by, and a
 * library appearing in it with it is not noticed. */
void name_watch_add(struct file_watch *w, const char *skip_dir, const struct string_list *missing,
                    char **ret_changed, char *problem, size_t size);
