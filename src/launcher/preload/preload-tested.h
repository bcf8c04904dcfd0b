/* SPDX-License-Identifier: MIT */
/* Objects learned after main, loaded into the zygote only after a throwaway child has loaded them
 * (docs/architecture.md, "Preloading it"), and only if the registered programs still load beside
 * them. */
#pragma once

#include <stddef.h>

/* The registered programs, which each child loads (a warm one, this zygote). */
struct programs_to_check {
        const char *const *paths;
        size_t n;
        const char *interp; /* the daemon's own dynamic loader: a program needing another is not served */
};

/* Loads each object into the daemon with every symbol bound, after loading it in a throwaway child
 * first: one that cannot be loaded so, starts a thread or kills that child is left out, and so is
 * one with which one of the programs, loading without them, no longer loads in a child (a library's
 * thread-local block it made dynamic where the program needs it static); reasons[i] (allocated;
 * the array is the caller's, zeroed) says why. Returns how many it loaded. */
size_t preload_tested(const char *const *paths, size_t n, char **reasons, const struct programs_to_check *programs);
