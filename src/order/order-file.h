/* SPDX-License-Identifier: MIT */
/* The file libheadstart-order writes (runtime.c) and `headstart order record` reads
 * (python/headstart/ordering/capture.py): fixed layout, native byte order, written in place while the
 * program runs. nobjects and nfunctions only grow, and an entry is complete before they count it. */
#pragma once

#include <stdint.h>

#define ORDER_OUTPUT_ENV "HEADSTART_ORDER_OUTPUT"
#define ORDER_MAGIC "HSORDER"
#define ORDER_VERSION 1u
#define ORDER_MAX_OBJECTS 256u
#define ORDER_MAX_FUNCTIONS (1u << 20)
#define ORDER_NO_OBJECT UINT32_MAX

struct order_object {
        uint64_t base; /* load address (dli_fbase) */
        char path[504];
};

struct order_function {
        uint32_t object;  /* index into objects */
        uint32_t reserved;
        uint64_t offset;  /* from the object's load address: a virtual address for a PIE or library */
};

struct order_file {
        char magic[8];  /* "HSORDER\0" */
        uint32_t version;
        uint32_t nobjects;
        uint32_t nfunctions;
        uint32_t reserved;
        struct order_object objects[ORDER_MAX_OBJECTS];
        struct order_function functions[ORDER_MAX_FUNCTIONS]; /* in the order of their first call */
};
