/* SPDX-License-Identifier: MIT */
/* Built twice, as VERSION 1 and 2 with one soname: the tests replace one by the other on disk. */
const char *versioned_name(void) {
        return "versioned library " VERSION;
}
